# Attack: frames the single exit probe's own entry pushed, still on the stacks of sleeping
# tasks, returning after the probe changed under them: unregistered and registered again (same
# data size: the same one-step words, another header), a second exit probe added or removed
# (the general way then meets a one-step frame, or the own way a general frame), the kernel's
# function_graph stacked over them, and ufgraph unloaded under them.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
N=6
sleepers() {
	rm -f /tmp/go-atk
	pids=
	for i in $(seq 1 $N); do
		( while [ ! -e /tmp/go-atk ]; do sleep 0.1; done; echo done-$i ) | cat > /tmp/out-atk-$i &
		pids="$pids $!"
	done
	wait_for "[ \$(grep -c ' cat depth [0-9]*: pipe_read' $DBG/ufgraph/frames) -ge $N ]" 100 ||
		fail "$1: sleepers not inside pipe_read: $(cat $DBG/ufgraph/frames)"
}
wake() {
	touch /tmp/go-atk
	for p in $pids; do wait $p || fail "$1: a sleeper failed"; done
	for i in $(seq 1 $N); do grep -qx done-$i /tmp/out-atk-$i || fail "$1: sleeper $i read '$(cat /tmp/out-atk-$i)'"; done
}
ap_check() { # NAME LINE: no bad values, and no more exits than entries (a stale return would be one)
	for k in bad_ip bad_ret bad_data; do
		[ "$(val "$2" $k)" = 0 ] || fail "$1: $k: $2"
	done
	[ "$(val "$2" exits)" -le "$(val "$2" entries)" ] || fail "$1: more exits than entries: $2"
}
ap_off() {
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$1: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$1: $line" >&2
	ap_check "$1" "$line"
}
fc_off() {
	dmesg -c > /dev/null
	rmmod fprobe_client || fail "$1: rmmod fprobe_client"
	l=$(dmesg | grep 'fprobe_client:.*entries')
	echo "$1: $l" >&2
	echo "$l" | grep -q " bad=0 .* stale=0" || fail "$1: fprobe_client: $l"
}

for m in fprobe kretprobe; do
	load
	# A: sleepers entered under the single probe; the probe goes and comes back; they wake
	# into the new registration, which must not get their returns.
	name="$m A"
	insmod $KO/atk_probe.ko mode=$m func=pipe_read words=4 || fail "$name: insmod"
	sleepers "$name"
	ap_off "$name (first)"
	insmod $KO/atk_probe.ko mode=$m func=pipe_read words=4 || fail "$name: insmod again"
	wake "$name"
	sleep 0.5
	ap_off "$name (second)"
	e=$(val "$line" entries); x=$(val "$line" exits)
	[ "$e" = "$x" ] || echo "$name: note: second registration entries $e exits $x" >&2

	# B: sleepers entered under the single probe (one-step frames), then a second exit probe
	# joins: they return the general way, each to the probe that entered it.
	name="$m B"
	insmod $KO/atk_probe.ko mode=$m func=pipe_read words=4 || fail "$name: insmod"
	sleepers "$name"
	insmod $KO/fprobe_client.ko filter=pipe_read || fail "$name: fprobe_client"
	wake "$name"
	sleep 0.5
	fc_off "$name"
	read -r s < $PS
	[ "$(val "$s" entries)" = "$(val "$s" exits)" ] || fail "$name: entries != exits: $s"
	ap_off "$name"

	# C: sleepers entered under two exit probes (general frames), then the second goes: they
	# return while the first is the single probe again (its own way tried first).
	name="$m C"
	insmod $KO/atk_probe.ko mode=$m func=pipe_read words=4 || fail "$name: insmod"
	insmod $KO/fprobe_client.ko filter=pipe_read || fail "$name: fprobe_client"
	sleepers "$name"
	fc_off "$name"
	wake "$name"
	sleep 0.5
	read -r s < $PS
	[ "$(val "$s" entries)" = "$(val "$s" exits)" ] || fail "$name: entries != exits: $s"
	ap_off "$name"

	# D: sleepers under the single probe with the kernel's function_graph stacked over (and
	# a kernel kretprobe event), then ufgraph unloaded: it hands the frames back.
	name="$m D"
	insmod $KO/atk_probe.ko mode=$m func=pipe_read words=4 || fail "$name: insmod"
	echo pipe_read > $T/set_graph_function
	echo function_graph > $T/current_tracer
	echo 'r:atkk pipe_read ret=$retval' > $T/kprobe_events
	echo 1 > $T/events/kprobes/atkk/enable
	sleepers "$name"
	ap_off "$name"
	dmesg -c > /dev/null
	unload
	dmesg | grep -i 'handed\|waits\|left' >&2
	wake "$name"
	echo 0 > $T/events/kprobes/atkk/enable
	echo > $T/kprobe_events
	echo nop > $T/current_tracer
	echo > $T/set_graph_function
done

# E: kthreads sleeping inside the probed function (atk_nap) all the time, the probe
# registered and unregistered over and over under them, in both kinds, with a second probe
# toggling too.
load
insmod $KO/atk_target.ko threads=4 hr_us=0 nmi=0 naps=1 || fail "insmod atk_target"
echo go > $DBG/atk_target/ctl
for i in 1 2 3 4 5 6; do
	for m in fprobe kretprobe; do
		insmod $KO/atk_probe.ko mode=$m func=atk_nap words=$((i + 1)) || fail "E: insmod $m"
		sleep 0.5
		ap_off "E $m $i"
	done
done
insmod $KO/atk_probe.ko mode=fprobe func=atk_nap second=exit flip_us=50 || fail "E: insmod second"
sleep 3
ap_off "E second"
echo stop > $DBG/atk_target/ctl
[ "$(awk '$1 == "wrong" { print $2 }' $DBG/atk_target/stats)" = 0 ] || fail "E: wrong values: $(cat $DBG/atk_target/stats)"
rmmod atk_target
unload
exit 0
