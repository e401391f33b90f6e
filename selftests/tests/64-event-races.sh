# fprobe events under churn: probes on hot functions are defined, enabled in two trace
# instances, toggled, appended to and removed over and over while both CPUs call the probed
# functions. Each instance gets its own records; nothing oopses, nothing is left behind, and
# the kernel checkers (on the debug kernel) stay quiet.
. /selftests/lib.sh
load
echo 1 > $T/tracing_on
mkdir $T/instances/ufgi || fail "cannot make an instance"
p1=$(busy_io)
p2=$(busy_io)
# 20 rounds (5 on the debug kernel, where 20 ran past 5 minutes), more under make stress.
n_rounds=$(($(rounds 20 5) + ${UFG_STRESS:-0} * 10))
i=0
while [ $i -lt $n_rounds ]; do
	echo 'f:ufgr/rd vfs_read count=$arg3:u32 comm=$comm' >> $DE || fail "round $i: define rd"
	echo 'f:ufgr/rd vfs_write count=$arg3:u32 comm=$comm' >> $DE || fail "round $i: append to rd"
	echo 'f:ufgr/ret vfs_read%return ret=$retval:s64 buf=+0($arg2):ustring' >> $DE || fail "round $i: define ret"
	echo 1 > $T/events/ufgr/enable
	echo 1 > $T/instances/ufgi/events/ufgr/rd/enable
	sleep 0.1
	echo 0 > $T/events/ufgr/ret/enable
	echo 'count > 1' > $T/instances/ufgi/events/ufgr/rd/filter
	sleep 0.1
	echo 0 > $T/events/ufgr/enable
	echo 0 > $T/instances/ufgi/events/ufgr/rd/enable
	echo 0 > $T/instances/ufgi/events/ufgr/rd/filter
	echo '-:ufgr/ret' >> $DE || fail "round $i: remove ret"
	echo > $DE || fail "round $i: clear"
	i=$((i+1))
done
# A last round checked while its events exist (records of a removed event cannot be shown).
echo > $T/trace
echo > $T/instances/ufgi/trace
# (busy_io writes; busybox cat may copy with sendfile, without vfs_read.)
echo 'f:ufgr/rd vfs_write count=$arg3:u32 comm=$comm' >> $DE || fail "define rd"
echo 'f:ufgr/ret vfs_write%return ret=$retval:s64' >> $DE || fail "define ret"
echo 1 > $T/events/ufgr/enable
echo 1 > $T/instances/ufgi/events/ufgr/rd/enable
for k in 1 2 3; do echo x > /tmp/ufgr-w; done
sleep 0.2
echo 0 > $T/events/ufgr/enable
echo 0 > $T/instances/ufgi/events/ufgr/rd/enable
kill $p1 $p2; wait $p1 $p2 2>/dev/null
grep -q ' rd: (vfs_write+0x[0-9a-f]*/0x[0-9a-f]*) count=2 comm="sh"$' $T/trace || fail "no rd records in the top instance: $(grep -v '^#' $T/trace | head)"
grep -q ' ret: (.* <- vfs_write) ret=2$' $T/trace || fail "no ret records: $(grep ' ret: ' $T/trace | head -3)"
grep -q ' rd: (vfs_write+0x[0-9a-f]*/0x[0-9a-f]*) count=2 comm="sh"$' $T/instances/ufgi/trace || fail "no rd records in the instance"
grep -q ' ret: (' $T/instances/ufgi/trace && fail "ret recorded in an instance that never enabled it"
echo > $DE || fail "clear"
[ "$(stat_of fprobes)" = 0 ] || fail "probes left: $(cat $DBG/ufgraph/stats)"
[ "$(stat_of events)" = 0 ] || fail "events left: $(cat $DBG/ufgraph/stats)"
rmdir $T/instances/ufgi || fail "cannot remove the instance"
unload
exit 0
