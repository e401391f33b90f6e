# Entry-only probes give no task a shadow stack: fprobe's shared ops asks for stacks with its
# first exit probe (GraphHandler::STACKS_ON_DEMAND), so a user of entry-only probes alone costs
# what the kernel's entry-only fprobe costs, no page per task. An exit probe then does.
. /selftests/lib.sh
load_tracing_off
[ "$(stat_of tasks_with_stack)" = 0 ] || fail "stacks at load: $(cat $DBG/ufgraph/stats)"
echo 'f:ufgs/e vfs_read' > $DE || fail "define e"
echo 1 > $T/events/ufgs/e/enable || fail "enable e"
echo 1 > $T/tracing_on
dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
echo 0 > $T/tracing_on
grep -q ' e: (vfs_read' $T/trace || fail "the entry-only probe did not fire: $(tail -3 $T/trace)"
[ "$(stat_of tasks_with_stack)" = 0 ] || fail "stacks with an entry-only probe: $(cat $DBG/ufgraph/stats)"
# An exit probe on the same function: stacks for every task, and its records.
echo 'f:ufgs/x vfs_read%return ret=$retval' >> $DE || fail "define x"
echo 1 > $T/events/ufgs/x/enable || fail "enable x"
[ "$(stat_of tasks_with_stack)" -gt 0 ] || fail "no stacks with an exit probe: $(cat $DBG/ufgraph/stats)"
echo 1 > $T/tracing_on
dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
echo 0 > $T/tracing_on
grep -q ' x: (.* <- vfs_read) ret=' $T/trace || fail "the exit probe did not fire: $(tail -3 $T/trace)"
echo 0 > $T/events/ufgs/enable
echo > $DE || fail "clear definitions"
echo 1 > $T/tracing_on
unload
exit 0
