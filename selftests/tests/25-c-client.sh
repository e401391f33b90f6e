# A C module built only from <ufgraph/fgraph.h> registers a graph ops through the
# exported API: its entry stores data, its return reads it back, every call counted.
# Both ways of filtering: a filter on the client's own ftrace_ops (shared=0), and ufgraph's
# shared filter (shared=1: ops on the one hub ftrace_ops, whose filter follows them).
. /selftests/lib.sh
hub() { sed -n 's/^hub_functions //p' $DBG/ufgraph/stats; }
for shared in 0 1; do
	load
	insmod $KO/ufgraph_client.ko func=version_proc_show shared=$shared || fail "insmod ufgraph_client shared=$shared failed"
	dmesg | grep -q "ufgraph_client: hooked version_proc_show as ops [0-9]" || fail "client did not register: $(dmesg | tail -3)"
	[ "$(hub)" = $shared ] || fail "shared=$shared: $(hub) functions on the hub"
	# ufgraph cannot go while a client uses it.
	rmmod ufgraph 2>/dev/null && fail "ufgraph unloaded under its client"
	for i in $(seq 1 25); do cat /proc/version > /dev/null; done
	dmesg -c > /dev/null
	rmmod ufgraph_client || fail "rmmod ufgraph_client failed"
	dmesg | grep -q "ufgraph_client: entries=25 returns=25 data_ok=25 data_bad=0 " \
		|| fail "shared=$shared: client saw: $(dmesg | grep ufgraph_client)"
	[ "$(hub)" = 0 ] || fail "shared=$shared: $(hub) functions left on the hub"
	unload
done
# A glob that matches nothing is refused by the shared filter, and nothing is left.
load
insmod $KO/ufgraph_client.ko func='no_such_function_*' shared=1 2>/dev/null && fail "a glob matching nothing was accepted"
[ "$(hub)" = 0 ] || fail "a refused client left $(hub) functions on the hub"
unload

# gops->idx must hold the client's index before its first callback can run: entry
# callbacks pass it to ufgraph_reserve_data(). (It was once set only after the ftrace_ops
# went live: an entry in between reserved under a stale index, and a call that returned
# after registration found no data.) The client hooks mutex_unlock, which ufgraph's
# registration calls on this CPU once the ops is live, so an entry runs inside that window
# every time. ufgraph's own graph ops takes index 0, so the client's is not the stale 0.
for shared in 0 1; do
load 'graph=vfs_read'
dmesg -c > /dev/null
insmod $KO/ufgraph_client.ko func=mutex_unlock shared=$shared || fail "insmod ufgraph_client func=mutex_unlock shared=$shared"
idx=$(dmesg | sed -n 's/.*ufgraph_client: hooked mutex_unlock as ops \([0-9]*\).*/\1/p')
early=$(dmesg | sed -n 's/.*ufgraph_client: an entry during registration saw idx \(-*[0-9]*\).*/\1/p')
rmmod ufgraph_client || fail "rmmod ufgraph_client (mutex_unlock)"
[ -n "$idx" ] && [ "$idx" != 0 ] || fail "the client's index: '$idx' ($(dmesg | grep ufgraph_client))"
[ -n "$early" ] || fail "no entry ran during registration: $(dmesg | grep ufgraph_client)"
[ "$early" = "$idx" ] || fail "an entry during registration saw idx $early, the client's is $idx"
dmesg | grep "ufgraph_client: entries=" | grep -q " data_bad=0 " || fail "mutex_unlock: $(dmesg | grep ufgraph_client)"
unload
done
exit 0
