# ufgraph, the kernel's function_graph tracer, a kretprobe and a kernel fprobe, all on
# the same function at once, in both stacking orders: every one of them sees every
# return with the right value, and the callers get their values back.
. /selftests/lib.sh
F=version_proc_show

# The kernel's own fprobe events exist on x86_64 only (6.12 arm64 has no fprobe).
KFPROBE=0
grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' $T/README && KFPROBE=1

kernel_hooks_on() {
	echo > $T/trace
	echo "r:ufgkret $F ret=\$retval" > $T/kprobe_events || fail "kretprobe event"
	echo 1 > $T/events/kprobes/ufgkret/enable
	if [ $KFPROBE = 1 ]; then
		# (>> : truncating dynamic_events would delete the kprobe event too)
		echo "f:ufgfp/ufgfexit $F%return ret=\$retval" >> $T/dynamic_events || fail "fprobe event"
		echo 1 > $T/events/ufgfp/ufgfexit/enable
	fi
	echo $F > $T/set_graph_function
	echo function_graph > $T/current_tracer
}

kernel_hooks_off() {
	echo nop > $T/current_tracer
	echo > $T/set_graph_function
	echo 0 > $T/events/kprobes/ufgkret/enable
	[ $KFPROBE = 1 ] && echo 0 > $T/events/ufgfp/ufgfexit/enable
	echo > $T/dynamic_events
	echo > $T/kprobe_events
}

check_round() {
	for i in $(seq 1 20); do
		grep -q "^Linux version" /proc/version || fail "$1: /proc/version broken"
	done
	set -- "$1" $(graph_of $F)
	[ "$2" = 20 ] && [ "$3" = 20 ] || fail "$1: ufgraph saw $2/$3 entries/returns"
	# $retval prints as hex, or typed from BTF (a kernel with BTF: decimal, 6.12's
	# PROBE_EVENTS_BTF_ARGS).
	n=$(grep -cE "ufgkret:.*ret=(0x0|0)( |$)" $T/trace)
	[ "$n" = 20 ] || { head -30 $T/trace; fail "$1: kretprobe saw $n returns with ret=0"; }
	if [ $KFPROBE = 1 ]; then
		n=$(grep -cE "ufgfexit:.*ret=(0x0|0)( |$)" $T/trace)
		[ "$n" = 20 ] || fail "$1: fprobe saw $n returns with ret=0"
	fi
	n=$(grep -c " $F()" $T/trace)
	[ "$n" -ge 20 ] || fail "$1: function_graph saw $n calls"
}

[ -d $T/events ] || skip "no tracefs"
# ufgraph first, the kernel's hooks stacked over it.
load graph=$F
kernel_hooks_on
check_round "ufgraph below"
kernel_hooks_off
unload
# The kernel's hooks first, ufgraph over them.
kernel_hooks_on
load graph=$F
check_round "ufgraph above"
unload
kernel_hooks_off
exit 0
