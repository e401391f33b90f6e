# rmmod while another return hooker has stacked over ufgraph's frames: a hooker registered on
# the function before ufgraph runs after ufgraph's entry and saves ufgraph's trampoline as its
# own return address, so the frame would come back through ufgraph's text.
#
# - The kernel's own hookers (a kretprobe through rethook, function_graph): teardown rewrites
#   the trampoline in the copy they saved, so rmmod does not wait, and the tasks later return
#   through them straight to their callers (A, B; C with a return that skips a handed-back
#   frame above a stacked one).
# - Any other hooker (here: a second ufgraph, ufgraph_kunit.ko, loaded first): its copy cannot
#   be reached, so rmmod waits for those frames, and only for them, naming task and function,
#   whatever else happens meanwhile (another task exits: D).
#
# Before session 4, teardown waited on a count that other paths also decremented: rmmod
# finished while a stacked frame still existed, and the task later returned into freed module
# text (an Oops).
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
arch=$(uname -m)

# A task, named by its command ($1: cat or head), that blocks in pipe_read until
# /tmp/go-$1 exists, then reads "done-$1". Its pid goes to $pid (not printed: a command
# substitution would make it the child of a subshell, which this shell cannot wait for).
blocker() {
	rm -f /tmp/go-$1 /tmp/out-$1
	( while [ ! -e /tmp/go-$1 ]; do sleep 0.1; done; echo done-$1 ) | $1 > /tmp/out-$1 &
	pid=$!
}
inside() { wait_for "grep -q \" $1 depth $2: $3\" $DBG/ufgraph/frames" 50 || fail "$4: $1 not seen inside $3: $(cat $DBG/ufgraph/frames)"; }
finish() {
	touch /tmp/go-$1
	wait $2 || fail "$3: $1 failed"
	grep -qx done-$1 /tmp/out-$1 || fail "$3: $1 read '$(cat /tmp/out-$1)'"
}

# rmmod with two tasks inside, both stacked over by a kernel hooker: it hands both back through
# the hooker's copy and does not wait; the tasks then return normally.
rmmod_hands_back() {
	dmesg -c > /dev/null
	unload
	dmesg | grep -q "rmmod waits" && fail "$1: rmmod waited: $(dmesg | tail -4)"
	dmesg | grep -q "handed [2-9][0-9]* pending return addresses back to their tasks ([1-9][0-9]* through copies" \
		|| fail "$1: no hand-back through the hooker's copy: $(dmesg | grep -i 'handed\|left')"
	finish cat $t1 "$1"
	finish head $t2 "$1"
}

# A: the kernel's kretprobe first. (arm64's kprobes trap with BRK before ftrace runs: they
# never stack over ufgraph's frames there.)
if [ "$arch" = x86_64 ]; then
	echo 'r:ufgk pipe_read' > $T/kprobe_events || fail "A: kretprobe event"
	echo 1 > $T/events/kprobes/ufgk/enable
	load graph=pipe_read
	blocker head; t2=$pid
	inside head 1 pipe_read A
	# The kretprobe instance of head's call stays when the event goes.
	echo 0 > $T/events/kprobes/ufgk/enable
	blocker cat; t1=$pid
	inside cat 1 pipe_read A
	rmmod_hands_back A
	echo > $T/kprobe_events
fi

# B: function_graph first.
echo pipe_read > $T/set_graph_function
echo function_graph > $T/current_tracer
load graph=pipe_read
blocker head; t2=$pid
inside head 1 pipe_read B
blocker cat; t1=$pid
inside cat 1 pipe_read B
if [ "$arch" = x86_64 ]; then
	rmmod_hands_back B
else
	# arm64: function_graph keys its copies by frame pointer, which ufgraph's frames do not
	# record, and with pointer authentication the slots are signed: rmmod waits for the two
	# calls to return.
	rmmod ufgraph &
	rm_pid=$!
	wait_for "dmesg | grep -q 'pid $t2 (head) in pipe_read'" 100 || fail "B: rmmod does not name head: $(dmesg | tail -5)"
	finish cat $t1 B
	finish head $t2 B
	wait $rm_pid || fail "B: rmmod failed"
fi
echo nop > $T/current_tracer
echo > $T/set_graph_function

# C: two tasks two frames deep, vfs_read stacked over by a kretprobe, pipe_read handed back:
# cat's later return from vfs_read skips its handed-back pipe_read frame on the way.
if [ "$arch" = x86_64 ]; then
	echo 'r:ufgk vfs_read' > $T/kprobe_events || fail "C: kretprobe event"
	echo 1 > $T/events/kprobes/ufgk/enable
	load
	echo 'f:ufgs/vr vfs_read%return' >> $DE || fail "C: vfs_read event"
	echo 'f:ufgs/pr pipe_read%return' >> $DE || fail "C: pipe_read event"
	# (Events hook their functions only while enabled.)
	echo 1 > $T/events/ufgs/enable || fail "C: enable the events"
	blocker head; t2=$pid
	inside head 2 "pipe_read vfs_read" C
	blocker cat; t1=$pid
	inside cat 2 "pipe_read vfs_read" C
	echo 0 > $T/events/kprobes/ufgk/enable
	echo 0 > $T/events/ufgs/enable
	echo > $DE || fail "C: cannot remove the events"
	rmmod_hands_back C
	echo > $T/kprobe_events
fi

# D: a hooker ufgraph cannot reach: another ufgraph, loaded first on the same function.
insmod_kunit_quiet graph=pipe_read > /dev/null || fail "D: ufgraph_kunit"
load graph=pipe_read
blocker head; t2=$pid
inside head 1 pipe_read D
blocker cat; t1=$pid
inside cat 1 pipe_read D
dmesg -c > /dev/null
rmmod ufgraph &
rm_pid=$!
wait_for "dmesg | grep -q 'rmmod waits for returns'" 100 || fail "D: rmmod does not say what it waits for: $(dmesg | tail -5)"
dmesg | grep -q "pid $t2 (head) in pipe_read" || fail "D: the log does not name head in pipe_read: $(dmesg | tail -5)"
finish cat $t1 D
sleep 1.5
kill -0 $rm_pid 2>/dev/null || fail "D: rmmod finished while head's stacked frame still exists"
loaded ufgraph || fail "D: ufgraph went while head's stacked frame still exists"
finish head $t2 D
wait $rm_pid || fail "D: rmmod failed"
loaded ufgraph && fail "D: still loaded"
rmmod ufgraph_kunit || fail "D: rmmod ufgraph_kunit"
exit 0
