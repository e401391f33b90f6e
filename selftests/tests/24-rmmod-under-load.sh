# Load and unload 10 times (4 on the debug kernel) with vfs_* hooked (entry and return) while both CPUs keep
# calling them: every unload hands back whatever is in flight, nothing crashes, and
# the workload never notices.
. /selftests/lib.sh
p1=$(busy_io); p2=$(busy_io)
for i in $(seq 1 $(rounds 10 4)); do
	load 'graph=vfs_*'
	sleep 0.2
	set -- $(awk '$1 == "total" { print $2, $3 }' $DBG/ufgraph/graph)
	[ "$1" -gt 0 ] || { kill $p1 $p2; fail "round $i: nothing hooked"; }
	unload
done
kill -0 $p1 && kill -0 $p2 || fail "the workload died"
kill $p1 $p2
exit 0
