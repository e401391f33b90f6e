# rmmod with a tail-call chain on one return slot hooked by ufgraph, function_graph and
# kretprobes, interleaved. Session 4's second review found the plan followed function_graph's
# copies by "topmost frame of this slot holding the trampoline", skipping frames that hold
# something else; at run time return_to_handler pops the topmost frame of the slot whatever it
# holds, so when that one holds rethook's trampoline the plan handed chain[0] to the wrong copy.
# Chain (ftrace order ufgraph, function_graph, kretprobe):
#   tcu_a: ufgraph u1{ret=caller}, fgraph g0{T}, kretprobe r0{G}
#   tcu_b (tail): ufgraph u2{K}, kretprobe r1{T}
#   tcx_c (tail): fgraph g1{K}                      -> slot = G
# Correct hand-back: r1 := K, g0 := caller. The old plan wrote g0 := K, r1 := caller: the return
# then consumed g1 and r1 only, leaving g0 and r0 behind (tcu_a's kretprobe never fired; the
# next fgraph return of the caller went through them: rethook WARNed "rhn->frame != frame").
. /selftests/lib.sh
P=/sys/module/tailchain/parameters
[ "$(uname -m)" = x86_64 ] || skip "x86_64 only"

setup() {
	insmod $KO/tailchain.ko || fail "insmod tailchain"
	grep -qw tcu_a $T/available_filter_functions || skip "tcu_a not traceable"
	echo 'r:tca tcu_a' > $T/kprobe_events || fail "kretprobe tca"
	echo 'r:tcb tcu_b' >> $T/kprobe_events || fail "kretprobe tcb"
	echo 1 > $T/events/kprobes/tca/enable
	echo 1 > $T/events/kprobes/tcb/enable
	echo tcu_a > $T/set_ftrace_filter
	echo tcx_c >> $T/set_ftrace_filter
	echo tc_outer >> $T/set_ftrace_filter
	echo function_graph > $T/current_tracer || fail "function_graph"
	echo > $T/trace
	load graph='tcu_*'
	echo 1 > $P/go
	wait_for "[ \$(cat $P/state) = 1 ]" 100 || fail "kthread not blocked"
	sleep 0.5
	grep tailchain $DBG/ufgraph/frames >&2
}
finish() {
	wait_for "[ \$(cat $P/state) = 2 ]" 100 || fail "$1: kthread did not finish"
	sleep 0.5
	a=$(grep -c ' tca: ' $T/trace); b=$(grep -c ' tcb: ' $T/trace)
	echo "$1: tca=$a tcb=$b" >&2
	grep -E 'tca:|tcb:|tcu_|tcx_|tc_outer' $T/trace | tail -20 >&2
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo 0 > $T/events/kprobes/tca/enable
	echo 0 > $T/events/kprobes/tcb/enable
	echo > $T/kprobe_events
	rmmod tailchain || fail "rmmod tailchain"
}

# Control: ufgraph stays loaded until the chain has returned.
dmesg -c > /dev/null
setup
echo 1 > $P/release
wait_for "[ \$(cat $P/state) = 2 ]" 100
unload
finish control
[ "$a" = 1 ] && [ "$b" = 1 ] || fail "control: tca=$a tcb=$b"
dmesg | grep -q 'WARNING' && fail "control warned: $(dmesg | grep -A5 WARNING)"

# rmmod while the chain is blocked in tcx_c.
dmesg -c > /dev/null
setup
timeout 60 rmmod ufgraph || fail "rmmod: $(dmesg | tail -4)"
dmesg | grep -i 'handed\|waits\|left' >&2
echo 1 > $P/release
finish rmmod
dmesg | grep -B2 -A12 'WARNING' >&2
[ "$a" = 1 ] && [ "$b" = 1 ] || fail "after rmmod: tca=$a tcb=$b (kernel hookers' frames left behind)"
dmesg | grep -q 'WARNING' && fail "after rmmod: kernel warned"
exit 0
