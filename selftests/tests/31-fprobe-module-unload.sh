# A module whose functions carry fprobes can be unloaded: its functions are dropped
# from the probes, which stay registered on the rest and unregister cleanly.
. /selftests/lib.sh
load
insmod $KO/ufgraph_kunit.ko || fail "insmod ufgraph_kunit"
insmod $KO/fprobe_client.ko 'filter=ufg_test_add' || fail "insmod fprobe_client"
[ "$(stat_of fprobe_functions)" = 1 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
dmesg -c > /dev/null
rmmod ufgraph_kunit || fail "rmmod ufgraph_kunit with a probe on its function"
dmesg | grep -q "dropped 1 probed functions of a module going away" || fail "not dropped: $(dmesg | tail -3)"
[ "$(stat_of fprobe_functions)" = 0 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
rmmod fprobe_client || fail "rmmod fprobe_client"
dmesg | grep -q "unregister=0" || fail "unregister failed: $(dmesg | grep fprobe_client)"
unload
exit 0
