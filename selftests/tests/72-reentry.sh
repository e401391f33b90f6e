# Re-entry: a callback that calls the function it hooks must not be re-entered without bound.
# An event on copy_from_kernel_nofault whose own argument fetch calls copy_from_kernel_nofault
# recursed until the stack overflowed before session 4 (no recursion guard on ufgraph's ftrace
# callbacks: a storm of NULL dereferences, or KASAN); with a numeric argument only the ring
# buffer's own recursion limit stopped it, refusing the innermost records. Now ftrace's
# recursion guard refuses the nested call and counts it as missed. As everywhere in ftrace,
# one nested level may pass through the guard's transition bit (an interrupt that arrives
# before the preempt count says so looks like recursion): never more.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
load
# A caller we control: a kprobe event whose argument reads kernel memory (probe_mem_read() is
# copy_from_kernel_nofault()), on a function `cat /proc/version` calls once.
echo 'p:ufgkp/vp version_proc_show x=+0($stack):u64' > $T/kprobe_events || fail "kprobe event"
run() {
	echo 1 > $T/events/ufgr/$1/enable
	echo 1 > $T/events/ufgkp/vp/enable
	for i in 1 2 3 4 5; do cat /proc/version > /dev/null; done
	echo 0 > $T/events/ufgkp/vp/enable
	echo 0 > $T/events/ufgr/$1/enable
}
# The string form: its fetch calls the probed function again, and again...
echo 'f:ufgr/s copy_from_kernel_nofault s=+0($stack):string' >> $DE || fail "string event"
run s
[ "$(grep -c ' s: ' $T/trace)" -ge 5 ] || fail "the string event fired $(grep -c ' s: ' $T/trace) times"
# On arm64 with kCFI every call site goes through ftrace's list function whenever another
# ftrace_ops is registered (Documentation/arm64.md): its own guard may refuse the nested call
# before ufgraph's counts it. The nesting is bounded all the same (checked below).
if [ "$(uname -m)" != aarch64 ]; then
	[ "$(stat_of fprobe_missed)" -ge 1 ] || fail "no nested call counted as missed: $(cat $DBG/ufgraph/stats)"
fi
echo > $T/trace
echo > $DE || fail "remove string event"
# The numeric form, recording who called copy_from_kernel_nofault: the kprobe's fetch, other
# kernel code, or ufgraph's own fetch (a nested record).
echo 'f:ufgr/n copy_from_kernel_nofault caller=+0($stack):symbol' >> $DE || fail "numeric event"
run n
kp=$(grep -c ' vp: ' $T/trace)
nested=$(grep ' n: ' $T/trace | grep -c 'caller=.*\[ufgraph\]')
top=$(grep ' n: ' $T/trace | grep -vc 'caller=.*\[ufgraph\]')
echo "kprobe hits $kp, records: $top top-level, $nested nested; $(grep 'refused\|fprobe_missed' $DBG/ufgraph/stats | tr '\n' ' ')" >&2
[ "$kp" = 5 ] || fail "kprobe event fired $kp times"
[ "$top" -ge 5 ] || fail "$top top-level records for 5 kprobe hits"
[ "$nested" -le "$top" ] || fail "$nested nested records for $top top-level ones: nested more than once"
# On x86_64 the kprobe runs on ftrace, in the same context as ufgraph's callbacks: a record the
# ring buffer refused for recursion could only come from a nested call the guard let through
# (what happened before). arm64's kprobes run in a debug exception, where the ring buffer
# refuses writes nested in the kprobe's own reservation whatever ufgraph does.
if [ "$(uname -m)" = x86_64 ]; then
	[ "$(stat_of event_records_refused)" = 0 ] || fail "records refused by the ring buffer's recursion limit: the guard let the recursion through"
fi
echo > $T/trace
echo > $DE
echo > $T/kprobe_events
unload
exit 0
