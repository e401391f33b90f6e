# Attack: the single exit probe on functions of the task life cycle and the scheduler while
# tasks fork and exit in a storm (task_structs reused, the per-CPU cache of the current task's
# stack), a CPU goes offline and online under it, io_uring workers run probed calls; then rmmod
# of the client and of ufgraph with tasks asleep in schedule.
. /selftests/lib.sh
SECS=${ATK_SECS:-$(rounds 5 4)}
PS=$DBG/atk_probe/stats
C=/sys/devices/system/cpu/cpu1/online
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
storm() {
	( while :; do for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait; done ) > /dev/null 2>&1 &
	storm_pid=$!
}
hotplug() {
	( while :; do echo 0 > $C; sleep 0.3; echo 1 > $C; sleep 0.3; done ) > /dev/null 2>&1 &
	hp_pid=$!
}
stop_bg() {
	for p in "$@"; do kill $p 2>/dev/null; done
	for p in "$@"; do wait $p 2>/dev/null; done
	[ -w $C ] && echo 1 > $C 2>/dev/null
	true
}
ap_off() {
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$1: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$1: $line" >&2
	for k in bad_ip bad_ret bad_data second_bad; do
		[ "$(val "$line" $k)" = 0 ] || fail "$1: $k: $line"
	done
	[ "$(val "$line" exits)" -le "$(val "$line" entries)" ] || fail "$1: more exits than entries: $line"
	[ "$(val "$line" exits)" -gt 0 ] || fail "$1: no exits: $line"
}
load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-300} nmi=1 naps=1 || fail "insmod atk_target"
echo go > $DBG/atk_target/ctl
for f in kernel_clone wake_up_new_task 'exit_*' schedule atk_fn; do
	for m in fprobe kretprobe; do
		case "$f" in *'*'*) [ $m = kretprobe ] && continue ;; esac
		name="$f $m"
		insmod $KO/atk_probe.ko mode=$m "func=$f" words=3 || fail "$name: insmod: $(dmesg | tail -2)"
		storm
		pids=$storm_pid
		if [ -w $C ]; then hotplug; pids="$pids $hp_pid"; fi
		sleep $SECS
		stop_bg $pids
		ap_off "$name"
	done
done
# With a second probe flipping the ways under the storm and the hotplug.
insmod $KO/atk_probe.ko mode=fprobe func=schedule words=2 second=exit func2=kernel_clone || fail "second: insmod"
storm; pids=$storm_pid
if [ -w $C ]; then hotplug; pids="$pids $hp_pid"; fi
sleep $SECS
stop_bg $pids
ap_off "schedule, second on kernel_clone"
echo stop > $DBG/atk_target/ctl
[ "$(awk '$1 == "wrong" { print $2 }' $DBG/atk_target/stats)" = 0 ] || fail "wrong values: $(cat $DBG/atk_target/stats)"
rmmod atk_target
# io_uring workers.
if command -v uringread > /dev/null && grep -qw io_wq_submit_work $T/available_filter_functions; then
	for m in fprobe kretprobe; do
		insmod $KO/atk_probe.ko mode=$m func=io_wq_submit_work words=2 || fail "io_uring $m: insmod"
		out=$(uringread /proc/version 16 50)
		[ "$out" = "ok 50" ] || fail "uringread: $out"
		read -r s < $PS
		[ "$(val "$s" entries)" -ge 50 ] && [ "$(val "$s" entries)" = "$(val "$s" exits)" ] ||
			fail "io_uring $m: $s; $(cat $DBG/ufgraph/stats)"
		ap_off "io_uring $m"
	done
fi
# rmmod of the client, then of ufgraph, with every sleeping task's schedule() frame live
# (the kretprobe shim: the one-step frames of the shim's own return).
insmod $KO/atk_probe.ko mode=kretprobe func=schedule || fail "schedule: insmod"
storm
sleep 2
ap_off "schedule before rmmod"
dmesg -c > /dev/null
unload
dmesg | grep -i 'handed\|waits\|left' >&2
sleep 2
stop_bg $storm_pid
load
unload
exit 0
