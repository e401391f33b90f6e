# rmmod's own call stacked over: a kretprobe on the syscall rmmod itself is in
# (delete_module), registered before ufgraph hooks it too. That frame can only return after
# rmmod does, so waiting for it would never end (it did, for a while, during session 4);
# teardown rewrites the kretprobe's copy of the trampoline instead.
. /selftests/lib.sh
[ "$(uname -m)" = x86_64 ] || skip "kretprobes do not stack over ufgraph on arm64"
f=__x64_sys_delete_module
grep -qw $f $T/available_filter_functions || skip "$f is not traceable"
echo "r:ufgk $f ret=\$retval" > $T/kprobe_events || fail "kretprobe event"
echo 1 > $T/events/kprobes/ufgk/enable
echo > $T/trace
load graph=$f
dmesg -c > /dev/null
timeout 30 rmmod ufgraph || fail "rmmod did not finish: $(dmesg | tail -4)"
loaded ufgraph && fail "still loaded"
echo 0 > $T/events/kprobes/ufgk/enable
# The kretprobe saw rmmod's delete_module return 0, through its own trampoline.
# ($retval in hex, or typed from BTF: decimal.)
grep -qE "ufgk:.*ret=(0x0|0)( |$)" $T/trace || fail "the kretprobe did not see delete_module return 0: $(grep ufgk $T/trace | tail -3)"
echo > $T/kprobe_events
exit 0
