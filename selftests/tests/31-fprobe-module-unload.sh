# A module whose functions carry fprobes can be unloaded: its functions are dropped
# from the probes, which stay registered on the rest and unregister cleanly.
. /selftests/lib.sh
load
insmod_kunit_quiet || fail "insmod ufgraph_kunit"
insmod $KO/fprobe_client.ko 'filter=ufg_test_add' || fail "insmod fprobe_client"
[ "$(stat_of fprobe_functions)" = 1 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
dmesg -c > /dev/null
rmmod ufgraph_kunit || fail "rmmod ufgraph_kunit with a probe on its function"
dmesg | grep -q "dropped 1 probed functions of a module going away" || fail "not dropped: $(dmesg | tail -3)"
[ "$(stat_of fprobe_functions)" = 0 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
rmmod fprobe_client || fail "rmmod fprobe_client"
dmesg | grep -q "unregister=0" || fail "unregister failed: $(dmesg | grep fprobe_client)"
unload

# Registration by address uses a list of ftrace's locations that ufgraph keeps between
# registrations: a module that comes afterwards must be in it (the module notifier makes it
# stale). The first registration builds the list without ufgraph_kunit's functions.
load
kaddr=$(sym_addr version_proc_show)
insmod $KO/fprobe_client.ko mode=ips addr=0x$kaddr || fail "insmod fprobe_client mode=ips (kernel)"
rmmod fprobe_client || fail "rmmod fprobe_client (kernel)"
insmod_kunit_quiet || fail "insmod ufgraph_kunit (2)"
maddr=$(sym_addr ufg_test_add)
insmod $KO/fprobe_client.ko mode=ips addr=0x$maddr || fail "a function of a module loaded after the list was kept: $(dmesg | tail -3)"
[ "$(stat_of fprobe_functions)" = 1 ] || fail "stats after mode=ips on a module function: $(cat $DBG/ufgraph/stats)"
rmmod fprobe_client || fail "rmmod fprobe_client (module)"
rmmod ufgraph_kunit || fail "rmmod ufgraph_kunit (2)"
# And once it is gone, its old address is refused.
insmod $KO/fprobe_client.ko mode=ips addr=0x$maddr 2>/dev/null && fail "an address of an unloaded module was accepted"
unload
exit 0
