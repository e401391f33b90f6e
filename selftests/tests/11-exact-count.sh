# Every call is counted, exactly: reading /proc/version calls version_proc_show once.
. /selftests/lib.sh
load func=version_proc_show
for i in $(seq 1 50); do cat /proc/version > /dev/null; done
n=$(count_of version_proc_show)
[ "$n" = 50 ] || fail "version_proc_show counted $n times, expected 50"
grep -qx "total 50" $DBG/ufgraph/counts || fail "total: $(cat $DBG/ufgraph/counts)"
unload
# Once unloaded nothing hooks it any more: loading again starts from zero.
load func=version_proc_show
cat /proc/version > /dev/null
n=$(count_of version_proc_show)
[ "$n" = 1 ] || fail "after reload counted $n, expected 1"
unload
exit 0
