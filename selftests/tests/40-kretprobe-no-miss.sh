# Many tasks asleep inside one function at once, more than a kretprobe's maxactive:
# the kernel's own kretprobe (maxactive 5) misses returns, the ufgraph shim (maxactive 5
# too, ignored) handles every one. Both in the same run, on the same function.
. /selftests/lib.sh
load
echo 'r5:kk pipe_read' > $T/kprobe_events || fail "kernel kretprobe"
echo 1 > $T/events/kprobes/kk/enable
insmod $KO/kretprobe_client.ko func=pipe_read maxactive=5 || fail "insmod kretprobe_client"
dmesg | grep -q "kretprobe_client: planted return probe at pipe_read" || fail "not planted"
# The readers must all be asleep at once: they sleep longer than starting the 30 of them takes
# (on the debug kernel under TCG that took more than 7 seconds: 90 forks and execs).
nap=$(rounds 8 40)
pids=""
for i in $(seq 1 30); do
	(sleep $nap; echo x) | cat > /dev/null &
	pids="$pids $!"
done
wait_for '[ "$(stat_of live_frames)" -ge 30 ]' $((nap * 10 - 10)) || fail "readers not all asleep: $(grep live_frames $DBG/ufgraph/stats)"
wait $pids
echo 0 > $T/events/kprobes/kk/enable
kmiss=$(awk '$1 == "kk" { print $3 }' $T/kprobe_profile)
echo > $T/kprobe_events
dmesg -c > /dev/null
rmmod kretprobe_client
line=$(dmesg | grep "kretprobe_client: pipe_read")
echo "kernel kretprobe missed $kmiss; ufgraph: $line"
[ "$kmiss" -ge 20 ] || fail "the kernel's kretprobe missed only $kmiss (expected >= 20 with maxactive 5)"
set -- $(echo "$line" | sed -n 's/.*entries=\([0-9]*\) returns=\([0-9]*\) bad=\([0-9]*\) missed=\([0-9]*\).*/\1 \2 \3 \4/p')
[ "$1" -ge 30 ] && [ "$2" -ge 30 ] && [ "$3" = 0 ] && [ "$4" = 0 ] || fail "ufgraph shim: $line"
unload
exit 0
