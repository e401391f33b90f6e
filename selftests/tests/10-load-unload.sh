# ufgraph.ko loads with no hook, makes its debugfs directory, and unloads without trace.
. /selftests/lib.sh
load
loaded ufgraph || fail "ufgraph not in /proc/modules after insmod"
[ -r $DBG/ufgraph/counts ] || fail "no $DBG/ufgraph/counts"
grep -qx "total 0" $DBG/ufgraph/counts || fail "counts without a hook: $(cat $DBG/ufgraph/counts)"
unload
[ ! -e $DBG/ufgraph ] || fail "$DBG/ufgraph left behind after rmmod"
loaded ufgraph && fail "still loaded after rmmod"
# The test kernels enforce module signatures (configs/base.config) and ufgraph's modules are
# signed at build: an unsigned copy of a client module is refused before any of its code runs.
# (scripts/module.sh leaves that copy for kernels with CONFIG_MODULE_SIG, which ours enforce.)
if [ -f $KO/unsigned_client.ko ]; then
	[ "$(cat /sys/module/module/parameters/sig_enforce 2>/dev/null)" = Y ] ||
		fail "the kernel checks module signatures but does not enforce them"
	insmod $KO/unsigned_client.ko 2>/dev/null && { rmmod ufgraph_client; fail "an unsigned module loaded"; }
	loaded ufgraph_client && fail "the unsigned module is in /proc/modules"
	dmesg | grep -q "Loading of unsigned module is rejected" ||
		fail "no 'unsigned module is rejected' in the kernel log: $(dmesg | tail -n 3)"
fi
exit 0
