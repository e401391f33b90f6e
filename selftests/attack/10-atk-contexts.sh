# Attack: the single exit probe (fprobe with entry data, or the kretprobe shim) on a function
# called at once from kthreads, a hardirq hrtimer, a softirq hrtimer and NMIs (sent to the
# other CPU from the hrtimer, so they land anywhere, ufgraph's entry and return code included),
# with perf sampling callchains from a timer. Every call's return value, ip and entry data are
# checked by the caller and the handlers; entries and exits must match once quiet.
. /selftests/lib.sh
export HOME=/tmp
SECS=${ATK_SECS:-$(rounds 6 4)}
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# round NAME PROBE-ARGS: one run of the target with atk_probe loaded with PROBE-ARGS.
round() {
	name=$1; shift
	insmod $KO/atk_probe.ko "$@" || fail "$name: insmod atk_probe $*: $(dmesg | tail -3)"
	echo go > $DBG/atk_target/ctl
	sleep $SECS
	echo stop > $DBG/atk_target/ctl
	s=$(cat $PS)
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$name: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$name: $line" >&2
	echo "$name: target $(tr '\n' ' ' < $ST)" >&2
	[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$name: callers got wrong values: $(tr '\n' ' ' < $ST)"
	for k in bad_ip bad_ret bad_data second_bad; do
		[ "$(val "$line" $k)" = 0 ] || fail "$name: $k: $line"
	done
	[ "$(val "$s" entries)" = "$(val "$s" exits)" ] || fail "$name: entries != exits when quiet: $s"
	[ "$(val "$s" nmi)" -gt 0 ] || echo "$name: note: no exit seen in NMI" >&2
	[ "$(val "$s" hard)" -gt 0 ] && [ "$(val "$s" soft)" -gt 0 ] && [ "$(val "$s" task)" -gt 0 ] ||
		fail "$name: a context saw no exit: $s"
}
load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-100} nmi=1 || fail "insmod atk_target"
round fprobe-w4 mode=fprobe words=4
round fprobe-w1 mode=fprobe words=1
round fprobe-w15 mode=fprobe words=15
round kretprobe mode=kretprobe
# perf sampling with callchains from a timer interrupt at a high rate, on both CPUs.
if command -v perf > /dev/null; then
	perf record -N -q -o /tmp/atk.data -g -F 10000 -a -- sleep $((SECS + 2)) > /tmp/atk-perf.log 2>&1 &
	pp=$!
	round fprobe-perf mode=fprobe words=3
	wait $pp || echo "perf record: $(tail -3 /tmp/atk-perf.log)" >&2
	perf report -i /tmp/atk.data --stdio 2>/dev/null | grep -m3 'atk_fn\|return_to\|ufgraph' >&2
	rm -f /tmp/atk.data
fi
rmmod atk_target || fail "rmmod atk_target"
unload
exit 0
