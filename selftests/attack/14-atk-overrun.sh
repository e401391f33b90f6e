# Attack: the single exit probe on a recursive function deeper than the shadow stack holds
# (an overrun at every call past the top), while interrupts and NMIs call probed functions
# on the full stack, with a second probe flipping the ways, and with the kernel's
# function_graph tracer on the same function.
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
SECS=${ATK_SECS:-$(rounds 5 12)}
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
round() {
	name=$1; shift
	insmod $KO/atk_probe.ko "$@" || fail "$name: insmod atk_probe $*: $(dmesg | tail -3)"
	echo go > $DBG/atk_target/ctl
	sleep $SECS
	echo stop > $DBG/atk_probe/ctl
	echo stop > $DBG/atk_target/ctl
	for d in 1 30 60 200; do echo "rec $d" > $DBG/atk_target/ctl; done
	read -r s < $PS
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$name: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$name: $line" >&2
	[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$name: callers got wrong values: $(tr '\n' ' ' < $ST)"
	for k in bad_ip bad_ret bad_data second_bad; do
		[ "$(val "$line" $k)" = 0 ] || fail "$name: $k: $line"
	done
	[ "$(val "$s" entries)" = "$(val "$s" exits)" ] || fail "$name: entries != exits: $s"
	[ "$(val "$s" missed)" -gt 0 ] || fail "$name: no overrun counted: $s; $(cat $DBG/ufgraph/stats)"
}
load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-200} nmi=1 rec=150 || fail "insmod atk_target"
for w in 1 4 15; do
	round "rec words=$w" func=atk_rec words=$w
	round "rec+fn words=$w" 'func=atk_[fr]*' words=$w
done
round "rec+fn second" 'func=atk_[fr]*' words=2 second=exit
round "rec+fn reenter" 'func=atk_[fr]*' words=2 reenter=2
round "rec kretprobe" mode=kretprobe func=atk_rec
echo atk_rec > $T/set_graph_function
echo function_graph > $T/current_tracer
round "rec under function_graph" func=atk_rec words=3
round "rec+fn under function_graph, second" 'func=atk_[fr]*' words=3 second=exit
echo nop > $T/current_tracer
echo > $T/set_graph_function
grep -i 'overrun\|missed' $DBG/ufgraph/stats >&2
rmmod atk_target || fail "rmmod atk_target"
unload
exit 0
