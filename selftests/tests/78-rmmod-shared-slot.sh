# Several of ufgraph's frames on one return slot with another hooker between them, at rmmod:
# - two ufgraph users on pipe_read registered around a kernel kretprobe: at the entry the
#   second user's frame saves the kretprobe's trampoline, which saved ufgraph's for the first
#   ("sandwich");
# - a tail call: __x64_sys_read ends in a jump to ksys_read, which reuses its return slot, with a
#   kretprobe on ksys_read registered first.
# Handing back only the top frame's slot would leave the lower frame returning through the
# trampoline while the handed-back frame above it is still on the stack and popped in its place
# (found by session 4's review: rethook's "Return address not found", a kernel BUG). Teardown
# hands the whole chain back, through the kretprobe's copy, or waits for all of it.
. /selftests/lib.sh
[ "$(uname -m)" = x86_64 ] || skip "kretprobes do not stack over ufgraph on arm64"
reader() {
	rm -f /tmp/go-x /tmp/out-x
	( while [ ! -e /tmp/go-x ]; do sleep 0.1; done; echo done-x ) | head > /tmp/out-x &
	pid=$!
}
# The kretprobe stays for head's call, ufgraph's events go; then rmmod, which must not wait.
rmmod_under() {
	echo 0 > $T/events/kprobes/ufgk/enable
	echo 0 > $T/events/ufgs/enable
	echo > $DE || fail "$1: remove event"
	dmesg -c > /dev/null
	timeout 30 rmmod ufgraph || fail "$1: rmmod: $(dmesg | tail -4)"
}
release() {
	touch /tmp/go-x
	wait $pid || fail "$1: head failed"
	grep -qx done-x /tmp/out-x || fail "$1: head read '$(cat /tmp/out-x)'"
}

# Sandwich.
load graph=pipe_read
echo 'r:ufgk pipe_read' > $T/kprobe_events || fail "kretprobe event"
echo 1 > $T/events/kprobes/ufgk/enable
echo 'f:ufgs/pr pipe_read%return' >> $DE || fail "pipe_read event"
# (Events hook their functions only while enabled.)
echo 1 > $T/events/ufgs/enable || fail "enable pipe_read event"
reader
wait_for "grep -q ' head depth 2: pipe_read pipe_read' $DBG/ufgraph/frames" 50 || fail "sandwich: head not two frames deep: $(cat $DBG/ufgraph/frames)"
rmmod_under sandwich
dmesg | grep -q "handed 2 pending return addresses back" || fail "sandwich: $(dmesg | grep -i 'handed\|waits\|left')"
release sandwich
echo > $T/kprobe_events

# Tail call.
grep -qw __x64_sys_read $T/available_filter_functions || skip "__x64_sys_read is not traceable"
echo 'r:ufgk ksys_read' > $T/kprobe_events || fail "kretprobe event"
echo 1 > $T/events/kprobes/ufgk/enable
load graph=ksys_read
echo 'f:ufgs/sr __x64_sys_read%return' >> $DE || fail "__x64_sys_read event"
echo 1 > $T/events/ufgs/enable || fail "enable __x64_sys_read event"
reader
wait_for "grep -q ' head depth 2: ksys_read __x64_sys_read' $DBG/ufgraph/frames" 50 || skip "no tail call from __x64_sys_read to ksys_read here: $(grep head $DBG/ufgraph/frames)"
rmmod_under "tail call"
release "tail call"
echo > $T/kprobe_events
exit 0
