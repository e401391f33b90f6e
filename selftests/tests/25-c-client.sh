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
exit 0
