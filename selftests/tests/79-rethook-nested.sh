# ufgraph_rethook_hook() from inside an fprobe's entry handler, for the same call: refused
# and counted, whether the fprobe's entry handler then wants its exit handler (skip=0) or not
# (skip=1); the fprobe's exits are all there. Before session 4's review fixed it, the nested hook
# pushed a second frame under the one being built: lost exits, or a panic in the trampoline.
. /selftests/lib.sh
load
for skip in 0 1; do
	dmesg -c > /dev/null
	insmod $KO/rethook_nest.ko skip=$skip || fail "insmod rethook_nest skip=$skip"
	for i in 1 2 3 4 5; do cat /proc/version > /dev/null; done
	rmmod rethook_nest
	exits=$((5 * (1 - skip)))
	dmesg | grep -q "rethook_nest: entries=5 hooked=0 exits=$exits rh_rets=0 rh_missed=5" \
		|| fail "skip=$skip: $(dmesg | grep rethook_nest)"
done
[ "$(stat_of live_frames)" = 0 ] || fail "frames left: $(cat $DBG/ufgraph/frames)"
unload
exit 0
