# CPU hotplug: the idle task of a CPU that goes offline never returns from the hooked calls it
# was in; when the CPU comes back, its idle task starts again from scratch on the same kernel
# stack. cpu_startup_entry (entered when a CPU is brought up, it never returns) shows it: each
# bring-up pushes a frame that the next offline makes dead. Before session 4 those frames stayed
# on the idle task's shadow stack for ever, one more per hotplug cycle, and teardown could wait
# for them for ever (the recipe hooked *play_dead*, whose calls ufgraph no longer hooks:
# callbacks on a CPU going offline are refused, as RCU no longer watches there). Now the frames
# are forgotten before the CPU is brought up again, and teardown leaves an offline CPU's idle
# frames alone.
. /selftests/lib.sh
C=/sys/devices/system/cpu/cpu1/online
F=cpu_startup_entry
[ -w $C ] || skip "no CPU hotplug for cpu1"
grep -qw $F /sys/kernel/tracing/available_filter_functions || skip "$F is not traceable here"
# Only idle tasks ever enter cpu_startup_entry, and it never returns: every live frame is one.
frames() { stat_of live_frames; }
cycle() { echo 0 > $C || fail "cannot offline cpu1"; echo 1 > $C || fail "cannot online cpu1"; }

# Several cycles: each bring-up's dead frame is forgotten before the next, one frame at a time.
load graph=$F
cycle
[ "$(frames)" = 1 ] || fail "not one $F frame after a bring-up: $(frames); $(cat $DBG/ufgraph/frames)"
cycle; cycle
[ "$(frames)" = 1 ] || fail "cpu1's idle stack kept dead frames: $(frames) frames; $(cat $DBG/ufgraph/frames)"
[ "$(stat_of dead_frames)" -ge 2 ] || fail "dead idle frames not counted: $(cat $DBG/ufgraph/stats)"
dmesg -c > /dev/null
timeout 60 rmmod ufgraph || fail "rmmod after cpu1 came back failed"
loaded ufgraph && fail "still loaded"
dmesg | grep -q "rmmod waits" && fail "teardown waited: $(dmesg | grep -A3 'rmmod waits')"

load graph=$F
cycle
# Offline: that frame is dead now. rmmod while the CPU is offline leaves it alone.
echo 0 > $C || fail "cannot offline cpu1"
dmesg -c > /dev/null
timeout 60 rmmod ufgraph || { echo 1 > $C; fail "rmmod with cpu1 offline failed"; }
echo 1 > $C || fail "cannot online cpu1"
dmesg | grep -q "left [1-9][0-9]* frames of tasks that can no longer run" || fail "the offline idle task's frame was not left alone: $(dmesg | grep -i 'handed\|left\|waits')"

exit 0
