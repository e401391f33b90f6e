# Mixed-user stress: every return hooker on the same functions at once, under load, while
# ufgraph comes and goes. ufgraph's own users (an exit fprobe, the kretprobe shim, a C graph
# ops, the graph= counter) share pipe_read and vfs_read with the kernel's kretprobe events
# and its function_graph tracer (and, where the kernel has them, its own fprobe events),
# registered before ufgraph in some rounds and after it in others; tasks keep sleeping inside
# pipe_read, so rmmod always finds frames handed back, frames stacked over by the kernel's
# hooks and frames in flight. Each round's clients must see their own data on every return,
# rmmod must finish (it waits only for stacked frames, which return), the sleepers must read
# what was written, and the kernel must not complain. UFG_STRESS (rounds) scales it: short in
# make check, long in make stress.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
R=${UFG_STRESS:-1}
KFPROBE=0
grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' $T/README && KFPROBE=1

# Load: file I/O, forks, and pipes whose readers sleep in pipe_read for varying times.
busy_io > /tmp/mix-pids
( while :; do for i in 1 2 3 4; do (true) & done; wait; done ) > /dev/null 2>&1 &
echo $! >> /tmp/mix-pids
for n in 1 2 3; do
	( i=0; while :; do
		i=$((i + 1))
		out=$( ( sleep 0.$((i % 7)); echo "pipe-$n-$i" ) | cat )
		[ "$out" = "pipe-$n-$i" ] || echo "BAD pipe-$n-$i: $out" >> /tmp/mix-bad
	done ) > /dev/null 2>&1 &
	echo $! >> /tmp/mix-pids
done
rm -f /tmp/mix-bad
stop() { kill $(cat /tmp/mix-pids) 2>/dev/null; wait 2>/dev/null; }

kernel_on() {
	echo 'r:ufgmk/pr pipe_read ret=$retval' > $T/kprobe_events || { stop; fail "kretprobe event"; }
	echo 'r:ufgmk/vr vfs_read ret=$retval' >> $T/kprobe_events
	echo 1 > $T/events/ufgmk/enable
	if [ $KFPROBE = 1 ]; then
		echo 'f:ufgmf/pr pipe_read%return ret=$retval' >> $T/dynamic_events || { stop; fail "kernel fprobe event"; }
		echo 1 > $T/events/ufgmf/enable
	fi
	# Only these two functions (not their callees, which set_graph_function would trace:
	# far too slow on the debug kernel).
	echo 'pipe_read vfs_read' > $T/set_ftrace_filter
	echo function_graph > $T/current_tracer
}
kernel_off() {
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo 0 > $T/events/ufgmk/enable
	[ $KFPROBE = 1 ] && echo 0 > $T/events/ufgmf/enable
	echo > $T/dynamic_events
	echo > $T/kprobe_events
	echo > $T/trace
}
ufgraph_on() {
	load graph=pipe_read
	insmod $KO/fprobe_client.ko filter=pipe_read || { stop; fail "round $1: fprobe client"; }
	insmod $KO/kretprobe_client.ko func=vfs_read || { stop; fail "round $1: kretprobe client"; }
	insmod $KO/ufgraph_client.ko func=pipe_read || { stop; fail "round $1: graph client"; }
}
ufgraph_off() {
	why=$(clients_off) || { stop; fail "round $1: $why"; }
	rmmod ufgraph || { stop; fail "round $1: rmmod ufgraph: $(cat $DBG/ufgraph/stats 2>/dev/null)"; }
}

for i in $(seq 1 $((4 * R))); do
	case $((i % 4)) in
	0) kernel_on; ufgraph_on $i; sleep 1; kernel_off; ufgraph_off $i ;;
	1) ufgraph_on $i; kernel_on; sleep 1; ufgraph_off $i; kernel_off ;;
	2) kernel_on; ufgraph_on $i; sleep 1; ufgraph_off $i; kernel_off ;;
	3) ufgraph_on $i; kernel_on; sleep 1; kernel_off; ufgraph_off $i ;;
	esac
	[ -e /tmp/mix-bad ] && { stop; fail "round $i: a pipe reader got the wrong data: $(head -3 /tmp/mix-bad)"; }
done
stop
[ -e /tmp/mix-bad ] && fail "a pipe reader got the wrong data: $(head -3 /tmp/mix-bad)"
exit 0
