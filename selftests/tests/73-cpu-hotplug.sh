# CPU hotplug: the idle task of a CPU that goes offline never returns from the hooked calls
# it was in (do_idle: the CPU dies inside it); when the CPU comes back its idle task starts
# from scratch on the same kernel stack. Before session 4 those frames stayed on its shadow
# stack for ever, and teardown waited for them for ever (rmmod hung). Now the frames are
# forgotten before the CPU is brought up again, and teardown leaves an offline CPU's idle
# frames alone.
. /selftests/lib.sh
C=/sys/devices/system/cpu/cpu1/online
[ -w $C ] || skip "no CPU hotplug for cpu1"
grep -qw do_idle /sys/kernel/tracing/available_filter_functions || skip "do_idle is not traceable here"
idle1() { grep "idle/1 depth" $DBG/ufgraph/frames; }

# Offline, then rmmod while the CPU is still offline: its idle frames are left alone.
load graph=do_idle
echo 0 > $C || fail "cannot offline cpu1"
idle1 | grep -q do_idle || { echo 1 > $C; fail "cpu1's idle task has no do_idle frame: $(cat $DBG/ufgraph/frames)"; }
timeout 60 rmmod ufgraph || { echo 1 > $C; fail "rmmod with cpu1 offline failed"; }
echo 1 > $C || fail "cannot online cpu1"

# Offline and online again, then rmmod: the dead frames were forgotten at bring-up, so
# teardown does not wait for them.
load graph=do_idle
echo 0 > $C || fail "cannot offline cpu1"
echo 1 > $C || fail "cannot online cpu1"
sleep 0.5
# cpu1's idle task is in a fresh do_idle (depth 1 at most), not in the dead one too.
d=$(idle1 | sed 's/.*depth \([0-9]*\):.*/\1/')
[ "${d:-0}" -le 1 ] || fail "cpu1's idle stack kept its dead frames: $(idle1)"
[ "$(stat_of dead_frames)" -ge 1 ] || fail "dead idle frames not counted: $(cat $DBG/ufgraph/stats)"
dmesg -c > /dev/null
timeout 60 rmmod ufgraph || fail "rmmod after cpu1 came back failed (waiting for dead frames?)"
loaded ufgraph && fail "still loaded"
dmesg | grep -q "rmmod waits" && fail "teardown waited: $(dmesg | grep -A3 'rmmod waits')"
exit 0
