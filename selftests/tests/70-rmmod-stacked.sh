# rmmod while another return hooker has stacked over ufgraph's frames: the kernel's
# kretprobe (a kprobe event) or function_graph, registered on the function before ufgraph,
# runs after ufgraph's entry and saves ufgraph's trampoline as its own return address.
# Such a frame must come back through ufgraph's text, so rmmod must wait for it, and only
# for it, naming the task and function, whatever else happens meanwhile: another task whose
# frame was handed back exits (A, B), a return skips a handed-back frame above it (C).
# Before session 4, teardown waited on a count those paths also decremented: rmmod finished
# while a stacked frame still existed, and the task later returned into freed module text.
. /selftests/lib.sh
T=/sys/kernel/tracing
DE=$DBG/ufgraph/dynamic_events
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

# $1: name; $2: pid of the task whose frame is stacked over (head); $3: the other (cat).
# rmmod must wait while head's frame exists, across cat's exit, and finish after.
rmmod_waits() {
	dmesg -c > /dev/null
	rmmod ufgraph &
	rm_pid=$!
	wait_for "dmesg | grep -q 'rmmod waits for returns'" 100 || fail "$1: rmmod does not say what it waits for: $(dmesg | tail -5)"
	dmesg | grep -q "pid $2 (head) in pipe_read" || fail "$1: the log does not name head in pipe_read: $(dmesg | tail -5)"
	finish cat $3 "$1"
	sleep 1.5
	kill -0 $rm_pid 2>/dev/null || fail "$1: rmmod finished while head's stacked frame still exists"
	loaded ufgraph || fail "$1: ufgraph went while head's stacked frame still exists"
	finish head $2 "$1"
	wait $rm_pid || fail "$1: rmmod failed"
	loaded ufgraph && fail "$1: still loaded"
	return 0
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
	rmmod_waits A $t2 $t1
	echo > $T/kprobe_events
fi

# B: function_graph first.
echo pipe_read > $T/set_graph_function
echo function_graph > $T/current_tracer
load graph=pipe_read
blocker head; t2=$pid
inside head 1 pipe_read B
echo nop > $T/current_tracer
blocker cat; t1=$pid
inside cat 1 pipe_read B
rmmod_waits B $t2 $t1
echo > $T/set_graph_function

# C: two tasks two frames deep, vfs_read stacked over by a kretprobe, pipe_read handed back:
# cat's return from vfs_read skips its handed-back pipe_read frame on the way.
if [ "$arch" = x86_64 ]; then
	echo 'r:ufgk vfs_read' > $T/kprobe_events || fail "C: kretprobe event"
	echo 1 > $T/events/kprobes/ufgk/enable
	load
	echo 'f:ufgs/vr vfs_read%return' >> $DE || fail "C: vfs_read event"
	echo 'f:ufgs/pr pipe_read%return' >> $DE || fail "C: pipe_read event"
	blocker head; t2=$pid
	inside head 2 "pipe_read vfs_read" C
	blocker cat; t1=$pid
	inside cat 2 "pipe_read vfs_read" C
	echo 0 > $T/events/kprobes/ufgk/enable
	echo > $DE || fail "C: cannot remove the events"
	dmesg -c > /dev/null
	rmmod ufgraph &
	rm_pid=$!
	wait_for "dmesg | grep -q 'pid $t2 (head) in vfs_read'" 100 || fail "C: no wait for head in vfs_read: $(dmesg | tail -5)"
	finish cat $t1 C
	sleep 1.5
	kill -0 $rm_pid 2>/dev/null || fail "C: rmmod finished while head's stacked frame still exists"
	finish head $t2 C
	wait $rm_pid || fail "C: rmmod failed"
	echo > $T/kprobe_events
fi
exit 0
