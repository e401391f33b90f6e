# ufgraph.ko loads with no hook, makes its debugfs directory, and unloads without trace.
. /selftests/lib.sh
load
loaded ufgraph || fail "ufgraph not in /proc/modules after insmod"
[ -r $DBG/ufgraph/counts ] || fail "no $DBG/ufgraph/counts"
grep -qx "total 0" $DBG/ufgraph/counts || fail "counts without a hook: $(cat $DBG/ufgraph/counts)"
unload
[ ! -e $DBG/ufgraph ] || fail "$DBG/ufgraph left behind after rmmod"
loaded ufgraph && fail "still loaded after rmmod"
exit 0
