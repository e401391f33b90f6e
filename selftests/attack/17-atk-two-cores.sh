# Attack: two ufgraph cores at once (ufgraph.ko and ufgraph_kunit.ko: two shadow stacks per
# task, two trampolines, two per-CPU caches, one recursion word), each with a single exit
# probe of its own on the same function called from every context, stacked both ways; then
# the whole KUnit run while ufgraph.ko's single exit probe hooks hot functions and the calls
# run.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
KDE=$DBG/ufgraph_kunit/dynamic_events
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
kgraph() { awk -v f="$1" '$1 == f { print $(NF-1), $NF; found=1 } END { if (!found) print 0, 0 }' $DBG/ufgraph_kunit/graph; }
check_probe() {
	read -r s < $PS
	rmmod atk_probe || fail "$1: rmmod atk_probe"
	echo "$1: $s" >&2
	for k in bad_ip bad_ret bad_data; do [ "$(val "$s" $k)" = 0 ] || fail "$1: $k: $s"; done
	[ "$(val "$s" entries)" = "$(val "$s" exits)" ] || fail "$1: entries != exits: $s"
}
run() { echo go > $DBG/atk_target/ctl; sleep $(rounds 4 10); echo stop > $DBG/atk_target/ctl
	[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$1: callers got wrong values: $(tr '\n' ' ' < $ST)"; }
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-$(rounds 300 3000)} nmi=1 naps=1 || fail "insmod atk_target"

# A: ufgraph_kunit first (its counting graph ops and an exit event), ufgraph.ko's probe over it.
insmod_kunit_quiet graph=atk_fn > /dev/null || fail "A: ufgraph_kunit"
load
insmod $KO/atk_probe.ko mode=kretprobe || fail "A: atk_probe"
run A
set -- $(kgraph atk_fn)
check_probe A
[ "$1" -gt 0 ] && [ "$1" = "$2" ] || fail "A: the kunit core counted $1 entries, $2 returns"
unload
rmmod ufgraph_kunit || fail "A: rmmod ufgraph_kunit"

# B: ufgraph.ko first, the kunit core's single exit event over it (fprobe on its own core).
load
insmod $KO/atk_probe.ko mode=fprobe words=5 || fail "B: atk_probe"
insmod_kunit_quiet > /dev/null || fail "B: ufgraph_kunit"
if [ -w $KDE ]; then
	echo 'f:kug/fnret atk_fn%return ret=$retval x=$arg1' > $KDE || fail "B: kunit event: $(cat $DBG/ufgraph_kunit/error_log)"
	echo 'hist:keys=common_pid' > $T/events/kug/fnret/trigger
	echo 1 > $T/events/kug/fnret/enable || fail "B: enable the kunit event"
	echo 'f:kug/napret atk_nap%return ret=$retval' >> $KDE 2>/dev/null && echo 1 > $T/events/kug/napret/enable
else
	echo "B: no $KDE" >&2
fi
run B
[ -w $KDE ] && { echo 0 > $T/events/kug/enable; grep -m3 hitcount $T/events/kug/fnret/hist >&2; echo '!hist:keys=common_pid' > $T/events/kug/fnret/trigger; echo > $KDE; }
rmmod ufgraph_kunit || fail "B: rmmod ufgraph_kunit"
check_probe B

# C: the KUnit suites, all of them, with ufgraph.ko's single exit probe on vfs_read and the
# target's calls running (through its probe on atk_fn: a second... no, one probe: vfs_read).
insmod $KO/atk_probe.ko mode=fprobe func=vfs_read words=2 || fail "C: atk_probe"
echo go > $DBG/atk_target/ctl
dmesg -c > /dev/null
# (lib.sh's insmod_kunit_quiet leaves filter_glob "*\n": charp parameters keep the newline,
# and that glob matches no suite.)
printf '*' > /sys/module/kunit/parameters/filter_glob
insmod $KO/ufgraph_kunit.ko || fail "C: ufgraph_kunit (suites)"
echo stop > $DBG/atk_target/ctl
nf=0
nok=0
for r in $DBG/kunit/*/results; do
	case "$(basename "$(dirname "$r")")" in ufgraph*) ;; *) continue ;; esac
	f=$(grep -c '^    not ok' "$r")
	nok=$((nok + $(grep -c '^    ok' "$r")))
	[ "$f" = 0 ] || { grep -B3 '^    not ok' "$r" | head -40 >&2; nf=$((nf + f)); }
done
rmmod ufgraph_kunit || fail "C: rmmod ufgraph_kunit"
read -r s < $PS
rmmod atk_probe
echo "C: $s" >&2
for k in bad_ip bad_data; do [ "$(val "$s" $k)" = 0 ] || fail "C: $k: $s"; done
echo "C: $nok KUnit cases passed, $nf failed" >&2
[ $nok -gt 10 ] || fail "C: the suites did not run: $(cat /sys/module/kunit/parameters/filter_glob)"
[ $nf = 0 ] || fail "C: $nf KUnit cases failed beside ufgraph.ko's single exit probe"
rmmod atk_target
unload
exit 0
