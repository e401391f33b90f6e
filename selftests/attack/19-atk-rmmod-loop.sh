# Attack: rmmod at every point. Over and over: ufgraph loaded, a single
# exit probe (fprobe or the shim's kretprobe; alone or with a second probe flipping the ways)
# on functions that kthreads (and short-lived ones) sleep in, then the client unloaded and
# ufgraph unloaded at once, with one-step frames live on the sleepers' stacks, after varying
# delays (before, during and after the calls have settled), cpu1 going offline and online
# under it. Every caller must get the right value back; nothing may splat or hang.
. /selftests/lib.sh
ST=$DBG/atk_target/stats
C=/sys/devices/system/cpu/cpu1/online
N=${ATK_ROUNDS:-$(rounds 4 2)}
# (A failed earlier test may have left these.)
loaded atk_probe && rmmod atk_probe
loaded ufgraph_kunit && rmmod ufgraph_kunit
loaded ufgraph && rmmod ufgraph
loaded atk_target && rmmod atk_target
insmod $KO/atk_target.ko threads=4 hr_us=${ATK_HR_US:-$(rounds 400 2000)} nmi=1 naps=1 rec=3 churn=1 mig=1 tail=1 || fail "insmod atk_target"
echo go > $DBG/atk_target/ctl
hp_pid=
if [ -w $C ]; then
	( while :; do echo 0 > $C; sleep 0.3; echo 1 > $C; sleep 0.3; done ) > /dev/null 2>&1 &
	hp_pid=$!
fi
set -f # (the probe arguments hold globs)
i=0
while [ $i -lt $N ]; do
	for args in "mode=fprobe func=atk_nap words=3" "mode=kretprobe func=atk_nap" \
		"mode=fprobe func=atk_nap words=1 second=exit flip_us=20" "mode=kretprobe func=atk_nap second=kret flip_us=20" \
		"mode=fprobe func=atk_rec words=2" "mode=fprobe func=atk_fn words=15 second=entry" "mode=fprobe func=atk_tail* words=2 second=exit" "mode=fprobe func=atk_nap words=0 second=exit flip_us=20"; do
		load
		insmod $KO/atk_probe.ko $args || fail "round $i: insmod atk_probe $args: $(dmesg | tail -3)"
		case $((i % 3)) in 0) ;; 1) sleep 0.05 ;; 2) sleep 0.4 ;; esac
		dmesg -c > /dev/null
		timeout 120 rmmod atk_probe || fail "round $i: rmmod atk_probe ($args)"
		l=$(dmesg | grep 'atk_probe: entries')
		echo "$l" | grep -q 'bad_ip=0 bad_ret=0 bad_data=0' || fail "round $i ($args): $l"
		timeout 120 rmmod ufgraph || fail "round $i: rmmod ufgraph ($args): $(cat $DBG/ufgraph/stats 2>/dev/null)"
	done
	i=$((i + 1))
done
[ -n "$hp_pid" ] && { kill $hp_pid; wait $hp_pid 2>/dev/null; echo 1 > $C 2>/dev/null; }
echo stop > $DBG/atk_target/ctl
echo "target: $(tr '\n' ' ' < $ST)" >&2
[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "callers got wrong values: $(tr '\n' ' ' < $ST)"
rmmod atk_target || fail "rmmod atk_target"
exit 0
