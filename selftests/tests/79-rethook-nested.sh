# ufgraph_rethook_hook() from inside an fprobe's entry handler, for the same call: refused
# and counted, whether the fprobe's entry handler then wants its exit handler (skip=0) or not
# (skip=1); the fprobe's exits are all there. Before session 4's review fixed it, the nested hook
# pushed a second frame under the one being built: lost exits, or a panic in the trampoline.
# first=1: a C graph ops on the function runs before the fprobe and pushes the frame, which the
# fprobe's entry joins; the nested hook is refused all the same (it used to join the frame, and
# with skip=1 its handler then silently never ran).
. /selftests/lib.sh
load
for first in 0 1; do
for skip in 0 1; do
	dmesg -c > /dev/null
	insmod $KO/rethook_nest.ko skip=$skip first=$first || fail "insmod rethook_nest skip=$skip first=$first"
	for i in 1 2 3 4 5; do cat /proc/version > /dev/null; done
	rmmod rethook_nest
	exits=$((5 * (1 - skip)))
	dmesg | grep -q "rethook_nest: entries=5 hooked=0 exits=$exits rh_rets=0 rh_missed=5" \
		|| fail "skip=$skip first=$first: $(dmesg | grep rethook_nest)"
	[ $first = 0 ] || dmesg | grep -q "rethook_nest: other entries=5 returns=5 first=5" \
		|| fail "skip=$skip first=$first: $(dmesg | grep rethook_nest)"
done
done
[ "$(stat_of live_frames)" = 0 ] || fail "frames left: $(cat $DBG/ufgraph/frames)"
unload
exit 0
