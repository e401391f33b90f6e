# make demo: load ufgraph hooking the entries (func=) and the returns (graph=, through the
# fgraph core's shadow stack) of vfs_* while a workload runs; show what it sees.
. /selftests/lib.sh
echo "== insmod ufgraph.ko func='vfs_*' graph='vfs_*'"
insmod $KO/ufgraph.ko 'func=vfs_*' 'graph=vfs_*' || exit 1
pid=$(busy_io)
for i in 1 2 3; do
	sleep 1
	echo "== after ${i}s of workload: calls per function (counts)"
	cat $DBG/ufgraph/counts
done
kill $pid; wait $pid 2>/dev/null
echo "== entries and returns per function, through the shadow stack (graph);"
echo "   (the one vfs_read without its return yet is this cat, reading the file)"
cat $DBG/ufgraph/graph
echo "== the fgraph core (stats)"
cat $DBG/ufgraph/stats
echo "== rmmod ufgraph"
rmmod ufgraph && echo "unloaded"
