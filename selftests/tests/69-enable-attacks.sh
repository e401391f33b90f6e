# Register on enable, attacked (session 7's adversarial review): enables and disables of the
# same events racing from two instances and perf while the probed module loads and unloads and
# events are defined, appended to and removed beside them; removing an event while an
# instance, perf or a trigger uses it (EBUSY, nothing changes), or removing the instance; an
# event enabled across its module's reload; the misses of an event's probes counted once
# however often it is enabled. Each ends with nothing of ufgraph registered and, on the debug
# kernel, nothing leaked (the final kmemleak scan). Tests 83 and 84 go on: allocation failures
# under enable and disable, rmmod racing enables.
. /selftests/lib.sh
P=/sys/module/globfns/parameters
[ -d $T/events ] || skip "no tracefs"
st() { tr '\n' ' ' < $DBG/ufgraph/stats; }
ef0=$(grep -c . $T/enabled_functions)
idle() {
	[ "$(stat_of event_probes_registered)" = 0 ] && [ "$(stat_of fprobes)" = 0 ] &&
		[ "$(stat_of fprobe_functions)" = 0 ] || fail "$1: probes registered: $(st)"
	[ "$(grep -c . $T/enabled_functions)" = "$ef0" ] || fail "$1: hooked: $(cat $T/enabled_functions)"
}
now() { date +%s; }
load
insmod $KO/globfns.ko || fail "insmod globfns"
mkdir $T/instances/ufga || fail "cannot make an instance"
I=$T/instances/ufga

# 1. Races. Two events on the module's functions (one of them also on a kernel function),
# two on vfs_read, enabled and disabled one by one and as a group from the top instance and
# from another, perf opening and closing one of them, the module unloading and loading, and
# an event defined, appended to, enabled, removed (refused while enabled) and disabled beside
# them (in a group of its own: the group enables do not reach it). Enables of the module's events fail with ENOENT while it is away; nothing else may.
echo 'f:ufga/g ufgt_glob_* n=$arg1:s32' >> $DE || fail "define g"
echo 'f:ufga/m ufgt_glob_one%return r=$retval:s32' >> $DE || fail "define m"
echo 'f:ufga/m vfs_open%return r=$retval:s32' >> $DE || fail "append m"
echo 'f:ufga/r vfs_read count=$arg3:u32' >> $DE || fail "define r"
echo 'f:ufga/rr vfs_read%return r=$retval:s32' >> $DE || fail "define rr"
rid=$(cat $T/events/ufga/r/id)
end=$(($(now) + 20))
flip() { # ROOT: enable and disable the events there, one by one and all at once
	while [ "$(now)" -lt $end ]; do
		for e in g m r rr; do echo 1 > $1/events/ufga/$e/enable; done
		echo 7 > $P/run; cat /proc/version > /dev/null
		for e in rr g r m; do echo 0 > $1/events/ufga/$e/enable; done
		echo 1 > $1/events/ufga/enable; echo 0 > $1/events/ufga/enable
	done 2>/dev/null
}
flip $T & p1=$!
flip $I & p2=$!
(
	while [ "$(now)" -lt $end ]; do
		command -v perfcount > /dev/null && perfcount $rid /proc/version 41 3 > /dev/null
		rmmod globfns; insmod $KO/globfns.ko
	done 2>/dev/null
) & p3=$!
(
	while [ "$(now)" -lt $end ]; do
		echo 'f:ufgb/t vfs_write' >> $DE || exit 1
		echo 'f:ufgb/t vfs_writev' >> $DE || exit 1
		echo 1 > $T/events/ufgb/t/enable || exit 1
		echo 'f:ufgb/t vfs_readv' >> $DE || exit 1
		echo '-:ufgb/t' >> $DE && exit 2
		echo 0 > $T/events/ufgb/t/enable
		echo '-:ufgb/t' >> $DE || exit 3
	done 2>/dev/null
) & p4=$!
wait $p4; rc=$?
wait $p1 $p2 $p3
[ $rc = 0 ] || fail "the define/append/remove racer failed at step $rc: $(st)"
loaded globfns || insmod $KO/globfns.ko || fail "insmod globfns after the races"
for r in $T $I; do echo 0 > $r/events/ufga/enable; done
idle "after the races"
[ "$(stat_of event_probes)" = 5 ] || fail "probes after the races: $(st)"
# Everything works as before: enabled, each event records the calls made.
echo 1 > $T/events/ufga/enable || fail "enable ufga after the races"
echo > $T/trace
echo 7 > $P/run
cat /proc/version > /dev/null
tr=$(cat $T/trace)
[ "$(echo "$tr" | grep -c ' g: (ufgt_glob_')" = 3 ] || fail "g after the races: $tr"
[ "$(echo "$tr" | grep -c ' m: (run_set+')" = 1 ] || fail "m after the races: $tr"
echo "$tr" | grep -q ' r: (vfs_read+' || fail "r after the races: $tr"
echo 0 > $T/events/ufga/enable
idle "disabled after the races"

# 2. Removing an event while something uses it: EBUSY, and nothing changes (its probes stay
# registered, it stays listed); clearing every event likewise.
busy() { # WHAT
	echo '-:ufga/r' >> $DE 2>/dev/null && fail "removed r while $1"
	echo > $DE 2>/dev/null && fail "cleared the events while $1"
	[ "$(stat_of events)" = 4 ] && [ "$(stat_of event_probes_registered)" = 1 ] || fail "refused removal ($1) changed: $(st)"
	[ -d $T/events/ufga/r ] || fail "r gone ($1)"
}
echo 1 > $I/events/ufga/r/enable || fail "enable r in the instance"
busy "the instance enables it"
echo 0 > $I/events/ufga/r/enable
echo traceoff > $T/events/ufga/r/trigger || fail "trigger on r"
busy "a trigger uses it"
echo '!traceoff' > $T/events/ufga/r/trigger
echo 1 > $T/tracing_on
idle "trigger removed"
# An instance removed while it enables the event: the kernel disables it there first.
mkdir $T/instances/ufgc || fail "cannot make a second instance"
echo 1 > $T/instances/ufgc/events/ufga/r/enable || fail "enable r in the second instance"
cat /proc/version > /dev/null
grep -q ' r: (vfs_read+' $T/instances/ufgc/trace || fail "no records in the second instance"
rmdir $T/instances/ufgc || fail "rmdir the second instance with r enabled"
idle "instance removed"
if command -v perfcount > /dev/null; then
	perfcount $rid /proc/version 41 1000000 > /dev/null 2>&1 & pp=$!
	wait_for '[ "$(stat_of event_probes_registered)" = 1 ]' 100 || fail "perf did not enable r: $(st)"
	busy "perf listens"
	# A probe appended while only perf uses the event hooks at once, and goes when perf does.
	echo 'f:ufga/r vfs_readv count=$arg3:u32' >> $DE || fail "append to r under perf"
	[ "$(stat_of event_probes_registered)" = 2 ] || fail "appended under perf: $(st)"
	kill $pp; wait $pp
	wait_for '[ "$(stat_of event_probes_registered)" = 0 ]' 100
	idle "perf gone"
fi

# 3. An event enabled while its module goes keeps its probe (on nothing now) and records
# nothing; the module back, the event disabled and enabled again hooks its new functions.
echo 1 > $T/events/ufga/g/enable || fail "enable g"
[ "$(stat_of fprobe_functions)" = 3 ] || fail "g: $(st)"
rmmod globfns || fail "rmmod globfns under g"
[ "$(stat_of fprobe_functions)" = 0 ] && [ "$(stat_of event_probes_registered)" = 1 ] || fail "g after rmmod: $(st)"
insmod $KO/globfns.ko || fail "insmod globfns under g"
echo > $T/trace
echo 7 > $P/run
[ "$(grep -c ' g: ' $T/trace)" = 0 ] || fail "g recorded the reloaded module: $(cat $T/trace)"
echo 0 > $T/events/ufga/g/enable
idle "g disabled"
echo 1 > $T/events/ufga/g/enable || fail "enable g again"
echo 7 > $P/run
[ "$(grep -c ' g: (ufgt_glob_[a-z]*+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) n=7$' $T/trace)" = 3 ] || fail "g after the reload: $(cat $T/trace)"
echo 0 > $T/events/ufga/g/enable
idle "g disabled again"
echo > $T/trace
echo > $DE || fail "clear"

# 4. The misses of an event's probes count once in stats, however often it is enabled (its
# probes are registered at every enable): an event whose string fetch calls the function it
# probes has its nested calls refused and counted (test 72).
echo 'p:ufgakp/vp version_proc_show x=+0($stack):u64' > $T/kprobe_events || fail "kprobe event"
echo 'f:ufga/s copy_from_kernel_nofault s=+0($stack):string' >> $DE || fail "string event"
m0=$(stat_of fprobe_missed)
echo 1 > $T/events/ufga/s/enable
echo 1 > $T/events/ufgakp/vp/enable
for i in 1 2 3 4 5 6 7 8 9 10; do cat /proc/version > /dev/null; done
echo 0 > $T/events/ufgakp/vp/enable
echo 0 > $T/events/ufga/s/enable
m1=$(($(stat_of fprobe_missed) - m0))
# On arm64 (kCFI: no CALL_OPS) ftrace's list function refuses the nested call before ufgraph's
# guard sees it (arm64.md): no miss is counted there (test 72 fails the same way on arm64 now);
# KUnit's missed_total_counts_each_miss_once checks the accounting on every architecture.
if [ $m1 = 0 ] && [ "$(uname -m)" != x86_64 ]; then
	echo "note: no nested call missed on $(uname -m): $(st)" >&2
else
	[ $m1 -ge 1 ] || fail "no nested call counted as missed: $(st)"
	for i in 1 2 3; do
		echo 1 > $T/events/ufga/s/enable
		echo 0 > $T/events/ufga/s/enable
	done
	m2=$(($(stat_of fprobe_missed) - m0))
	echo "fprobe_missed: $m1 while the calls were made, $m2 after 3 more enables" >&2
	[ $m2 -lt $((2 * m1)) ] || fail "fprobe_missed grew from $m1 to $m2 with enables alone: misses counted again"
fi
echo > $T/trace
echo > $DE || fail "clear s"
echo > $T/kprobe_events
idle "misses"
rmdir $I || fail "rmdir instance"
unload
rmmod globfns || fail "rmmod globfns"
exit 0
