# rmmod while tasks sleep under two nested hooked calls (vfs_read, then pipe_read): teardown
# hands both frames of each task back, innermost first, and does not wait; the tasks later
# return normally, straight to their callers.
#
# On arm64 with a shadow call stack, a frame's return slot is its shadow-call-stack entry, found
# by counting the entries that hold the trampoline. Before session 10, handing the inner frame
# back first (its entry then holds the real address) made the outer frame's count disagree with
# its frame records, and rmmod waited forever for a task that only sleeps.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"

# A task, named by its command ($1), that blocks in pipe_read until /tmp/go-$1 exists, then
# reads "done-$1". Its pid goes to $pid.
blocker() {
	rm -f /tmp/go-$1 /tmp/out-$1
	( while [ ! -e /tmp/go-$1 ]; do sleep 0.1; done; echo done-$1 ) | $1 > /tmp/out-$1 &
	pid=$!
}
inside() { wait_for "grep -q \" $1 depth 2: pipe_read vfs_read\" $DBG/ufgraph/frames" 50 || fail "$1 not two deep in pipe_read, vfs_read: $(cat $DBG/ufgraph/frames)"; }
finish() {
	touch /tmp/go-$1
	wait $2 || fail "$1 failed"
	grep -qx done-$1 /tmp/out-$1 || fail "$1 read '$(cat /tmp/out-$1)'"
}

load
# A kernel whose returns come from signed frame records (arm64 with pointer authentication and
# no shadow call stack) cannot have them handed back: rmmod waits there, by design (test 70).
[ "$(stat_of return_slots)" = signed ] && { unload; skip "return addresses are signed on this kernel"; }
echo 'f:ufgn/vr vfs_read%return' >> $DE || fail "vfs_read event"
echo 'f:ufgn/pr pipe_read%return' >> $DE || fail "pipe_read event"
echo 1 > $T/events/ufgn/enable || fail "enable the events"
blocker head; t2=$pid
inside head
blocker cat; t1=$pid
inside cat
# The frames stay when the probes go.
echo 0 > $T/events/ufgn/enable
echo > $DE || fail "cannot remove the events"
dmesg -c > /dev/null
rmmod ufgraph &
rm_pid=$!
# rmmod ends once the grace periods pass (slow under TCG): it must neither wait for these
# frames (it says so at once when it does) nor take long.
if ! wait_for "! loaded ufgraph || dmesg | grep -q 'rmmod waits'" 600 || loaded ufgraph; then
	why="rmmod waits: $(dmesg | tail -4 | tr '\n' ' ')"
	# Let it finish, so that the next test starts clean.
	touch /tmp/go-cat /tmp/go-head
	wait $rm_pid
	fail "$why"
fi
wait $rm_pid || fail "rmmod failed"
dmesg | grep -q "rmmod waits" && fail "rmmod waited: $(dmesg | tail -4 | tr '\n' ' ')"
dmesg | grep -Eq "handed ([4-9]|[1-9][0-9]+) pending return addresses back" || fail "not all four frames handed back: $(dmesg | grep -i hand | tail -2)"
finish cat $t1
finish head $t2
exit 0
