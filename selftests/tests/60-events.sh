# fprobe events from a shell: definitions written to ufgraph's dynamic_events become real trace
# events (enable, format, filter, hist trigger), records carry the values the probed function
# saw, bad definitions are logged upstream's way and leave nothing behind, and rmmod is refused
# while an event is enabled.
. /selftests/lib.sh
load_tracing_off
[ -w $DE ] || fail "no $DE"

# Entry probe with a numeric argument; the format file is upstream's.
echo 'f:ufgt/rd vfs_read count=$arg3:u32' > $DE || fail "define rd"
grep -qx 'f:ufgt/rd vfs_read count=$arg3:u32' $DE || fail "dynamic_events shows: $(cat $DE)"
[ -d $T/events/ufgt/rd ] || fail "no events/ufgt/rd"
grep -q 'field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;' $T/events/ufgt/rd/format || fail "format: $(cat $T/events/ufgt/rd/format)"
grep -q 'field:u32 count;	offset:16;	size:4;	signed:0;' $T/events/ufgt/rd/format || fail "format: $(cat $T/events/ufgt/rd/format)"
grep -q 'print fmt: "(%lx) count=%u", REC->__probe_ip, REC->count' $T/events/ufgt/rd/format || fail "print fmt: $(grep 'print fmt' $T/events/ufgt/rd/format)"

# Exit probe: the return value and an entry argument read at return.
echo 'f:ufgt/rdret vfs_read%return ret=$retval:s64 cnt=$arg3:u32' >> $DE || fail "define rdret"
# Strings: a user string argument, and $comm.
echo 'f:ufgt/open do_sys_openat2 name=+0($arg2):ustring comm=$comm' >> $DE || fail "define open"
# A fault: the count is no pointer; the record says so, nothing oopses.
echo 'f:ufgt/flt vfs_read s=+0($arg3):string n=+0($arg3):u64' >> $DE || fail "define flt"
[ "$(grep -c . $DE)" = 4 ] || fail "dynamic_events: $(cat $DE)"

echo 1 > $T/events/ufgt/enable || fail "enable ufgt"
# rd (entry only) and rdret (exit) share fprobe's one ftrace_ops: one callback on vfs_read.
grep -q '^vfs_read (1) ' $T/enabled_functions || fail "vfs_read: $(grep '^vfs_read ' $T/enabled_functions)"
echo 1 > $T/tracing_on
dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
dd if=/proc/version of=/dev/null bs=17 count=1 2>/dev/null
cat /proc/self/stat > /dev/null
echo hello > /tmp/ufgt-file
cat /tmp/ufgt-file > /dev/null
echo 0 > $T/tracing_on
grep -q 'rd: (vfs_read+0x[0-9a-f]*/0x[0-9a-f]*) count=37$' $T/trace || fail "no rd count=37: $(grep ' rd:' $T/trace | head -3)"
grep -q 'rdret: (ksys_read+0x[0-9a-f]*/0x[0-9a-f]* <- vfs_read) ret=17 cnt=17$' $T/trace || fail "no rdret ret=17: $(grep rdret $T/trace | head -3)"
grep -q 'open: (do_sys_openat2+0x[0-9a-f]*/0x[0-9a-f]*) name="/tmp/ufgt-file" comm="cat"$' $T/trace || fail "no open: $(grep ' open:' $T/trace | head -3)"
grep -q 'flt: (vfs_read+0x[0-9a-f]*/0x[0-9a-f]*) s=(fault) n=0$' $T/trace || fail "no fault record: $(grep flt $T/trace | head -3)"

# rmmod is refused while events are enabled, and changes nothing.
rmmod ufgraph 2>/dev/null && fail "rmmod succeeded with events enabled"
loaded ufgraph || fail "ufgraph gone"
[ "$(grep -c . $DE)" = 4 ] || fail "rmmod changed dynamic_events: $(cat $DE)"
# Nor can an enabled event be removed (upstream: EBUSY).
echo '-:ufgt/rd' >> $DE 2>/dev/null && fail "removed an enabled event"
echo > $DE 2>/dev/null && fail "cleared enabled events"
echo 0 > $T/events/ufgt/enable

# The filter and a histogram: only count == 23, counted by count.
echo > $T/trace
echo 'count == 23' > $T/events/ufgt/rd/filter || fail "filter"
echo 'hist:keys=count' > $T/events/ufgt/rd/trigger || fail "hist trigger"
echo 1 > $T/events/ufgt/rd/enable
echo 1 > $T/tracing_on
for i in 1 2 3; do dd if=/proc/version of=/dev/null bs=23 count=1 2>/dev/null; done
dd if=/proc/version of=/dev/null bs=29 count=1 2>/dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgt/rd/enable
n=$(grep -c ' rd: ' $T/trace)
[ "$n" -ge 3 ] || fail "filter: $n records: $(grep ' rd: ' $T/trace | head)"
grep ' rd: ' $T/trace | grep -vq 'count=23$' && fail "filter let through: $(grep ' rd: ' $T/trace | grep -v 'count=23$' | head -2)"
grep -q '^{ count:         23 } hitcount:          [3-9]$' $T/events/ufgt/rd/hist || fail "hist: $(cat $T/events/ufgt/rd/hist)"
# Triggers see every hit: the event filter only decides what is recorded (as for any event).
grep -q '^{ count:         29 } hitcount:          [1-9]$' $T/events/ufgt/rd/hist || fail "hist: $(cat $T/events/ufgt/rd/hist)"
# A trigger keeps the event (soft) enabled: still no rmmod.
rmmod ufgraph 2>/dev/null && fail "rmmod succeeded with a hist trigger attached"
echo '!hist:keys=count' > $T/events/ufgt/rd/trigger
echo 0 > $T/events/ufgt/rd/filter

# The comparison of `trace`'s output with the format: the events share upstream's layout.
grep -q 'print fmt: "(%lx <- %lx) ret=%Ld cnt=%u", REC->__probe_func, REC->__probe_ret_ip, REC->ret, REC->cnt' $T/events/ufgt/rdret/format || fail "rdret print fmt: $(grep 'print fmt' $T/events/ufgt/rdret/format)"
grep -q 'field:__data_loc char\[\] name;	offset:16;	size:4;	signed:1;' $T/events/ufgt/open/format || fail "open format: $(cat $T/events/ufgt/open/format)"

# Removal by name, then everything. A removal naming the symbol and arguments must match them.
echo '-:ufgt/rd vfs_read count=$arg2:u32' >> $DE 2>/dev/null && fail "removed rd with other arguments"
echo '-:ufgt/rd vfs_read count=$arg3:u32' >> $DE || fail "remove rd"
[ -d $T/events/ufgt/rd ] && fail "events/ufgt/rd still there"
grep -q 'ufgt/rd ' $DE && fail "rd still listed"
echo > $DE || fail "clear"
[ -s $DE ] && fail "not cleared: $(cat $DE)"
[ -d $T/events/ufgt ] && fail "events/ufgt still there"

# Bad definitions: refused, logged with upstream's message and caret, nothing left.
echo > $EL
echo 'f vfs_read $arg10000' >> $DE 2>/dev/null && fail "accepted \$arg10000"
# With BTF, $argN is parameter N by name, and vfs_read has 4 (upstream's NO_BTFARG).
msg='Invalid argument number'
[ -e /sys/kernel/btf/vmlinux ] && msg='This variable is not found at this probe point'
grep -q "trace_fprobe: error: $msg" $EL || fail "error_log: $(cat $EL)"
grep -qx '  Command: f vfs_read $arg10000' $EL || fail "error_log command: $(cat $EL)"
grep -qx '                      ^' $EL || fail "error_log caret: $(cat $EL)"
echo 'f:ufgt/x ufg_no_such_function' >> $DE 2>/dev/null && fail "accepted an unknown function"
grep -q 'error: Invalid probed address or symbol' $EL || fail "error_log: $(cat $EL)"
echo 'f:ufgt/y vfs_read a=@ufg_no_such_symbol' >> $DE 2>/dev/null && fail "accepted an unknown @symbol"
echo 'p:kprobes/z vfs_read' >> $DE 2>/dev/null && fail "accepted a kprobe definition"
# An exit probe that would save more entry arguments than the entry data holds (15 words).
many=$(i=1; while [ $i -le 16 ]; do printf ' a%d=$arg%d' $i $i; i=$((i+1)); done)
echo "f:ufgt/many vfs_read%return$many" >> $DE 2>/dev/null && fail "accepted 16 entry args at return"
grep -q 'error: Failed to register probe event' $EL || fail "error_log: $(tail -3 $EL)"
[ -s $DE ] && fail "left behind: $(cat $DE)"
[ -d $T/events/ufgt ] && fail "events/ufgt left behind"
[ "$(stat_of fprobes)" = 0 ] || fail "probes left: $(cat $DBG/ufgraph/stats)"
[ "$(stat_of events)" = 0 ] && [ "$(stat_of event_probes)" = 0 ] || fail "events left: $(cat $DBG/ufgraph/stats)"

# Disabled events go with the module.
echo 'f:ufgt/last vfs_write' > $DE || fail "define last"
unload
[ -d $T/events/ufgt ] && fail "events/ufgt outlived the module"
exit 0
