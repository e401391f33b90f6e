# Attack: the single exit probe flipped between its own ways and the general way while calls
# are in flight in every context: a second probe (exit, entry-only, kretprobe; on the same
# function or another) registered and unregistered in a loop, the probe disabled and enabled
# in a loop, handlers that call the probed function (re-entry), sleeping calls in flight.
. /selftests/lib.sh
SECS=${ATK_SECS:-$(rounds 6 4)}
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# round NAME EXACT PROBE-ARGS: EXACT=1: entries == exits once quiet; 0: exits <= entries.
round() {
	name=$1; exact=$2; shift 2
	insmod $KO/atk_probe.ko "$@" || fail "$name: insmod atk_probe $*: $(dmesg | tail -3)"
	echo go > $DBG/atk_target/ctl
	sleep $SECS
	echo stop > $DBG/atk_probe/ctl
	echo stop > $DBG/atk_target/ctl
	s=$(cat $PS)
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$name: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$name: $line" >&2
	[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$name: callers got wrong values: $(tr '\n' ' ' < $ST)"
	for k in bad_ip bad_ret bad_data second_bad; do
		[ "$(val "$line" $k)" = 0 ] || fail "$name: $k: $line"
	done
	e=$(val "$s" entries); x=$(val "$s" exits)
	if [ "$exact" = 1 ]; then
		[ "$e" = "$x" ] || fail "$name: entries $e != exits $x when quiet: $s"
	else
		[ "$x" -le "$e" ] || fail "$name: more exits than entries: $s"
	fi
	[ "$(val "$s" task)" -gt 0 ] || fail "$name: no exit seen: $s"
	grep -q "fprobes 0" $DBG/ufgraph/stats || fail "$name: probes left: $(cat $DBG/ufgraph/stats)"
}
load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-200} nmi=1 naps=1 rec=8 || fail "insmod atk_target"
round second-exit 1 second=exit
round second-entry 1 second=entry
round second-kret 1 second=kret
round second-exit-other 1 second=exit func2=vfs_read
round second-entry-other 1 second=entry func2=vfs_read
round second-exit-fast 1 second=exit flip_us=20
round flip 0 flip=1
round flip-second 0 flip=1 second=exit
round reenter1 1 reenter=1
round reenter2 1 reenter=2
round reenter2-second 1 reenter=2 second=exit
round kret-second 1 mode=kretprobe second=exit
round kret-reenter 1 mode=kretprobe reenter=2
round kret-reenter-second 1 mode=kretprobe reenter=2 second=kret
round rec 1 func=atk_rec words=2
round rec-second 1 func=atk_rec words=2 second=exit
round nap-kret-second 1 mode=kretprobe func=atk_nap second=entry
rmmod atk_target || fail "rmmod atk_target"
unload
exit 0
