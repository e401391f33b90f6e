# A C module built only from <ufgraph/fgraph.h> registers a graph ops through the
# exported API: its entry stores data, its return reads it back, every call counted.
. /selftests/lib.sh
load
insmod $KO/ufgraph_client.ko func=version_proc_show || fail "insmod ufgraph_client failed"
dmesg | grep -q "ufgraph_client: hooked version_proc_show as ops [0-9]" || fail "client did not register: $(dmesg | tail -3)"
# ufgraph cannot go while a client uses it.
rmmod ufgraph 2>/dev/null && fail "ufgraph unloaded under its client"
for i in $(seq 1 25); do cat /proc/version > /dev/null; done
dmesg -c > /dev/null
rmmod ufgraph_client || fail "rmmod ufgraph_client failed"
dmesg | grep -q "ufgraph_client: entries=25 returns=25 data_ok=25 data_bad=0 " \
	|| fail "client saw: $(dmesg | grep ufgraph_client)"
unload

# gops->idx must hold the client's index before its first callback can run: entry
# callbacks pass it to ufgraph_reserve_data(). (It was once set only after the ftrace_ops
# went live: an entry in between reserved under a stale index, and a call that returned
# after registration found no data.) The client hooks mutex_unlock, which ufgraph's
# registration calls on this CPU once the ops is live, so an entry runs inside that window
# every time. ufgraph's own graph ops takes index 0, so the client's is not the stale 0.
load 'graph=vfs_read'
dmesg -c > /dev/null
insmod $KO/ufgraph_client.ko func=mutex_unlock || fail "insmod ufgraph_client func=mutex_unlock"
idx=$(dmesg | sed -n 's/.*ufgraph_client: hooked mutex_unlock as ops \([0-9]*\).*/\1/p')
early=$(dmesg | sed -n 's/.*ufgraph_client: an entry during registration saw idx \(-*[0-9]*\).*/\1/p')
rmmod ufgraph_client || fail "rmmod ufgraph_client (mutex_unlock)"
[ -n "$idx" ] && [ "$idx" != 0 ] || fail "the client's index: '$idx' ($(dmesg | grep ufgraph_client))"
[ -n "$early" ] || fail "no entry ran during registration: $(dmesg | grep ufgraph_client)"
[ "$early" = "$idx" ] || fail "an entry during registration saw idx $early, the client's is $idx"
dmesg | grep "ufgraph_client: entries=" | grep -q " data_bad=0 " || fail "mutex_unlock: $(dmesg | grep ufgraph_client)"
unload
exit 0
