# Attack: two ufgraph cores hooking the same sleeping function (atk_nap,
# kthreads always inside it), each with a single exit probe or counting ops, and one core
# unloaded with the frames live: when the unloaded core's ops came second, its trampoline is
# saved in the other core's shadow frames, where it cannot hand it back; when it came first, the
# other core's trampoline is in its frames. Over and over, in both orders, both probe kinds.
. /selftests/lib.sh
ST=$DBG/atk_target/stats
N=${ATK_ROUNDS:-$(rounds 4 2)}
kgraph() { awk -v f="$1" '$1 == f { print $(NF-1), $NF; found=1 } END { if (!found) print 0, 0 }' $DBG/ufgraph_kunit/graph; }
wrong() { [ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$1: callers got wrong values: $(tr '\n' ' ' < $ST)"; }
ap_off() {
	dmesg -c > /dev/null
	timeout 120 rmmod atk_probe || fail "$1: rmmod atk_probe"
	l=$(dmesg | grep 'atk_probe: entries')
	echo "$1: $l" >&2
	echo "$l" | grep -q 'bad_ip=0 bad_ret=0 bad_data=0' || fail "$1: $l"
}
# (A failed earlier test may have left these.)
loaded atk_probe && rmmod atk_probe
loaded ufgraph_kunit && rmmod ufgraph_kunit
loaded ufgraph && rmmod ufgraph
loaded atk_target && rmmod atk_target
insmod $KO/atk_target.ko threads=4 hr_us=${ATK_HR_US:-$(rounds 500 2000)} nmi=1 naps=1 mig=1 tail=1 || fail "insmod atk_target"
echo go > $DBG/atk_target/ctl
i=0
while [ $i -lt $N ]; do
	for m in fprobe kretprobe; do
		# 1: the kunit core first, ufgraph.ko's probe over it; ufgraph.ko goes first.
		name="round $i $m: kunit core, then ufgraph.ko; ufgraph.ko unloaded"
		insmod_kunit_quiet graph=atk_nap > /dev/null || fail "$name: ufgraph_kunit"
		load
		insmod $KO/atk_probe.ko mode=$m func=atk_nap words=3 || fail "$name: atk_probe"
		sleep 0.5
		ap_off "$name"
		timeout 120 rmmod ufgraph || fail "$name: rmmod ufgraph: $(cat $DBG/ufgraph/stats 2>/dev/null)"
		sleep 0.3
		timeout 120 rmmod ufgraph_kunit || fail "$name: rmmod ufgraph_kunit"
		wrong "$name"
		# 2: ufgraph.ko's probe first, the kunit core over it; the kunit core goes first.
		name="round $i $m: ufgraph.ko, then kunit core; kunit core unloaded"
		load
		insmod $KO/atk_probe.ko mode=$m func=atk_nap words=2 || fail "$name: atk_probe"
		insmod_kunit_quiet graph=atk_nap > /dev/null || fail "$name: ufgraph_kunit"
		sleep 0.5
		set -- $(kgraph atk_nap)
		[ "$1" -gt 0 ] || fail "$name: the kunit core saw no call: $1 $2"
		timeout 120 rmmod ufgraph_kunit || fail "$name: rmmod ufgraph_kunit"
		sleep 0.3
		ap_off "$name"
		timeout 120 rmmod ufgraph || fail "$name: rmmod ufgraph"
		wrong "$name"
		# 3: both, then ufgraph.ko and the kunit core unloaded back to back, frames live in both.
		name="round $i $m: both unloaded back to back"
		insmod_kunit_quiet graph=atk_nap > /dev/null || fail "$name: ufgraph_kunit"
		load
		insmod $KO/atk_probe.ko mode=$m func=atk_nap words=1 second=exit flip_us=30 || fail "$name: atk_probe"
		sleep 0.5
		ap_off "$name"
		timeout 120 rmmod ufgraph_kunit || fail "$name: rmmod ufgraph_kunit"
		timeout 120 rmmod ufgraph || fail "$name: rmmod ufgraph"
		wrong "$name"
	done
	i=$((i + 1))
done
echo stop > $DBG/atk_target/ctl
echo "target: $(tr '\n' ' ' < $ST)" >&2
wrong end
rmmod atk_target || fail "rmmod atk_target"
exit 0
