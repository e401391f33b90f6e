# Attack: the per-CPU cache of the current task's stack against task
# exit and task_struct reuse, migration and CPU hotplug. Short-lived kthreads (atk_target
# churn=N) and short-lived processes (a shell storm of `echo chk N > ctl` subshells) make
# checked calls of the probed functions and exit, so their task_structs are freed and reused at
# once, while a kthread moves the workers between CPUs all the time (mig=1: frames live in
# atk_nap across migrations) and cpu1 goes offline and online. Exact counts once quiet (every
# caller has returned), no wrong value, ip, return or entry data; with the own ways and the
# general way flipping (second=exit), and with the second core (ufgraph_kunit) loaded too.
. /selftests/lib.sh
SECS=${ATK_SECS:-$(rounds 5 3)}
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
C=/sys/devices/system/cpu/cpu1/online
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
chk_storm() {
	( n=1; while :; do for i in 1 2 3 4 5 6; do ( echo "chk $n$i" > $DBG/atk_target/ctl ) & done; wait; n=$((n + 1)); done ) > /dev/null 2>&1 &
	storm_pid=$!
}
hotplug() {
	( while :; do echo 0 > $C; sleep 0.2; echo 1 > $C; sleep 0.2; done ) > /dev/null 2>&1 &
	hp_pid=$!
}
stop_bg() {
	for p in "$@"; do kill $p 2>/dev/null; done
	for p in "$@"; do wait $p 2>/dev/null; done
	[ -w $C ] && echo 1 > $C 2>/dev/null
	sleep 0.5
	true
}
# EXACT: 1 entries == exits once quiet; 0 exits <= entries (declines); 2 no count (no entry handler).
round() { # NAME EXACT PROBE-ARGS
	name=$1; exact=$2; shift 2
	insmod $KO/atk_probe.ko "$@" || fail "$name: insmod atk_probe $*: $(dmesg | tail -3)"
	echo go > $DBG/atk_target/ctl
	chk_storm; pids=$storm_pid
	if [ -w $C ]; then hotplug; pids="$pids $hp_pid"; fi
	sleep $SECS
	stop_bg $pids
	echo stop > $DBG/atk_probe/ctl
	echo stop > $DBG/atk_target/ctl
	sleep 0.3
	s=$(cat $PS)
	dmesg -c > /dev/null
	rmmod atk_probe || fail "$name: rmmod atk_probe"
	line=$(dmesg | grep 'atk_probe: entries')
	echo "$name: $line" >&2
	echo "$name: target: $(tr '\n' ' ' < $ST)" >&2
	[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$name: callers got wrong values: $(tr '\n' ' ' < $ST)"
	for k in bad_ip bad_ret bad_data second_bad bad_decline bad_zero; do
		[ "$(val "$line" $k)" = 0 ] || fail "$name: $k: $line"
	done
	e=$(val "$s" entries); x=$(val "$s" exits)
	if [ "$exact" = 1 ]; then
		[ "$e" = "$x" ] || fail "$name: entries $e != exits $x when quiet: $s"
	elif [ "$exact" = 2 ]; then
		: # no entry handler (noentry=1): no entries counted
	else
		[ "$x" -le "$e" ] || fail "$name: more exits than entries: $s"
	fi
	[ "$x" -gt 0 ] || fail "$name: no exit seen: $s"
	grep -q "fprobes 0" $DBG/ufgraph/stats || fail "$name: probes left: $(cat $DBG/ufgraph/stats)"
}
# (A failed earlier test may have left these.)
loaded atk_probe && rmmod atk_probe
loaded atk_target && rmmod atk_target
loaded ufgraph_kunit && rmmod ufgraph_kunit
loaded ufgraph && rmmod ufgraph
load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-$(rounds 300 2000)} nmi=1 naps=1 rec=4 churn=2 mig=1 tail=1 || fail "insmod atk_target"
round fn-fprobe 1 func=atk_fn words=3
round fn-kret 1 mode=kretprobe func=atk_fn
round nap-fprobe 1 func=atk_nap words=5
round nap-kret 1 mode=kretprobe func=atk_nap
round rec-fprobe 1 func=atk_rec words=1
# No entry data (entry_data_size 0: a one-step frame of its header alone, NULL data pointers).
round fn-words0 1 func=atk_fn words=0
round nap-words0-second 1 func=atk_nap words=0 second=exit flip_us=30
round fn-words15-second 1 func=atk_fn words=15 second=exit flip_us=30
round nap-second 1 func=atk_nap words=2 second=exit flip_us=30
round fn-second-kret 1 mode=kretprobe func=atk_fn second=kret flip_us=30
round nap-decline 0 func=atk_nap words=2 decline=1 second=exit
round fn-noentry 2 func=atk_fn words=2 noentry=1 second=exit
# Tail calls: atk_tail's frame (the own way) under atk_tail2's (its return slot holds the
# trampoline already: the general way), with the ways flipping under them.
round tail-glob 1 'func=atk_tail*' words=3
round tail-glob-second 1 'func=atk_tail*' words=2 second=exit func2=atk_tail2 flip_us=30
round tail-kret-second 1 mode=kretprobe func=atk_tail second=kret func2=atk_tail2 flip_us=30
round tail2-kret-second 1 mode=kretprobe func=atk_tail2 second=exit func2=atk_tail flip_us=30
# The second core loaded too, its counting graph ops on atk_nap (two shadow stacks per task,
# two per-CPU caches), ufgraph.ko's single exit probe on the same function.
if insmod_kunit_quiet graph=atk_nap > /dev/null; then
	round two-cores-nap 1 func=atk_nap words=4
	round two-cores-kret 1 mode=kretprobe func=atk_nap second=exit
	set -- $(awk '$1 == "atk_nap" { print $(NF-1), $NF; f=1 } END { if (!f) print 0, 0 }' $DBG/ufgraph_kunit/graph)
	echo "kunit core: atk_nap $1 entries $2 returns" >&2
	[ "$1" -gt 0 ] && [ "$1" = "$2" ] || fail "the kunit core counted $1 entries, $2 returns on atk_nap"
	rmmod ufgraph_kunit || fail "rmmod ufgraph_kunit"
fi
rmmod atk_target || fail "rmmod atk_target"
unload
exit 0
