# Attack: the single exit probe (fprobe and the kretprobe shim) on a function called from every
# context, stacked with the kernel's own hookers on the same function: a kretprobe and a
# kernel fprobe (both rethook, checking the return value against the argument) and the
# function_graph tracer, enabled and disabled in several orders while the calls run.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
[ -f $KO/atk_kprobe.ko ] || skip "no kernel fprobe to stack (atk_kprobe.ko: arm64 6.12 has none)"
SECS=${ATK_SECS:-$(rounds 4 3)}
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# ATK_FG_FILTER=1 (the default on the debug kernel): function_graph hooks atk_fn alone
# (set_ftrace_filter), not every function: set_graph_function only filters what it records, and
# with every function hooked each registration's ftrace update took ~20 s on the debug kernel.
FGF=${ATK_FG_FILTER:-$(rounds 0 1)}
fg_on() {
	[ "$FGF" = 1 ] && echo atk_fn > $T/set_ftrace_filter
	echo atk_fn > $T/set_graph_function; echo function_graph > $T/current_tracer || fail "function_graph"
}
fg_off() { echo nop > $T/current_tracer; echo > $T/set_graph_function; [ "$FGF" = 1 ] && echo > $T/set_ftrace_filter; true; }
# Each step's time, to tell slowness from a hang.
tstamp() { echo "$name: $1 at $(cut -d' ' -f1 /proc/uptime)" >&2; }
kp_on() { insmod $KO/atk_kprobe.ko || fail "insmod atk_kprobe: $(dmesg | tail -2)"; }
kp_off() {
	dmesg -c > /dev/null
	rmmod atk_kprobe || fail "rmmod atk_kprobe"
	l=$(dmesg | grep 'atk_kprobe: kret')
	echo "$name: $l" >&2
	set -- $(echo "$l" | sed -n 's/.*kret entries=\([0-9]*\) returns=\([0-9]*\) bad=\([0-9]*\) missed=[0-9]* fprobe entries=\([0-9]*\) exits=\([0-9]*\) bad=\([0-9]*\).*/\1 \2 \3 \4 \5 \6/p')
	# (Some are taken down while the calls run: those in flight lose their return.)
	[ "$2" -le "$1" ] && [ $(($1 - $2)) -le 8 ] && [ "$3" = 0 ] && [ "$5" -le "$4" ] && [ $(($4 - $5)) -le 8 ] && [ "$6" = 0 ] ||
		fail "$name: kernel hookers: $l"
}
ap_on() { insmod $KO/atk_probe.ko "$@" || fail "insmod atk_probe $*: $(dmesg | tail -3)"; }
ap_off() {
	s=$(cat $PS)
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$name: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$name: $line" >&2
	for k in bad_ip bad_ret bad_data; do
		[ "$(val "$line" $k)" = 0 ] || fail "$name: $k: $line"
	done
	# Taken down while the calls run (ATK_INFLIGHT=1): the calls in flight lose their exit.
	e=$(val "$line" entries); x=$(val "$line" exits)
	if [ "${ATK_INFLIGHT:-0}" = 1 ]; then
		[ "$x" -le "$e" ] && [ $((e - x)) -le 8 ] || fail "$name: entries/exits: $line"
	else
		[ "$e" = "$x" ] || fail "$name: entries != exits: $line"
	fi
}
go() { echo go > $DBG/atk_target/ctl; sleep $SECS; }
stop() {
	echo stop > $DBG/atk_target/ctl
	[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$name: callers got wrong values: $(tr '\n' ' ' < $ST)"
}
fg_seen() { grep -q 'atk_fn' $T/trace || fail "$name: function_graph recorded no atk_fn: $(tail -5 $T/trace)"; }

load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-200} nmi=1 || fail "insmod atk_target"
for m in fprobe kretprobe; do
	# ufgraph first, the kernel's hookers then function_graph over it; taken down while calls run.
	name="$m: ufgraph, kprobes, function_graph"
	ap_on mode=$m; kp_on; fg_on; go; fg_seen
	ATK_INFLIGHT=1 ap_off; sleep 1; kp_off; fg_off; stop
	# function_graph first, then the kernel's hookers, then ufgraph.
	name="$m: function_graph, kprobes, ufgraph"
	fg_on; kp_on; ap_on mode=$m; go; fg_seen
	fg_off; sleep 1; ATK_INFLIGHT=1 ap_off; kp_off; stop
	# The kernel's hookers, ufgraph, function_graph; function_graph toggled while it runs.
	name="$m: kprobes, ufgraph, function_graph toggled"
	kp_on; ap_on mode=$m; echo go > $DBG/atk_target/ctl
	# (function_graph on atk_fn alone here, on both kernels: on every function each switch
	# took ~30 s under TCG with the calls running, 120 s a phase, and the test overran its
	# 300 s limit on the normal kernel too, every count still exact: slowness, not a hang.)
	sv=$FGF; FGF=1
	for i in 1 2 3 4; do tstamp "fg toggle $i"; fg_on; sleep 1; fg_off; sleep 0.5; done
	FGF=$sv
	stop; ap_off; kp_off
	# ufgraph's probe added and removed under running kernel hookers.
	name="$m: kprobes and function_graph, ufgraph toggled"
	kp_on; fg_on; echo go > $DBG/atk_target/ctl
	for i in 1 2 3; do tstamp "round $i"; ap_on mode=$m; sleep 1; ATK_INFLIGHT=1 ap_off; done
	tstamp done
	stop; fg_off; kp_off
done
# function_graph over everything traceable for a moment (ufgraph's own functions too, if
# ftrace lists any), with the single probe running.
n=$(grep -c '\[ufgraph\]' $T/available_filter_functions)
echo "ufgraph functions ftrace can trace: $n" >&2
grep '\[ufgraph\]' $T/available_filter_functions | head -5 >&2
name="function_graph on all"
ap_on mode=fprobe
echo go > $DBG/atk_target/ctl
echo function_graph > $T/current_tracer
sleep 2
echo nop > $T/current_tracer
stop
ap_off
rmmod atk_target || fail "rmmod atk_target"
unload
exit 0
