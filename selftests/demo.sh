# make demo: load ufgraph counting vfs_* calls, run a workload, show the counts.
. /selftests/lib.sh
echo "== insmod ufgraph.ko func='vfs_*'"
insmod $KO/ufgraph.ko 'func=vfs_*' || exit 1
pid=$(busy_io)
for i in 1 2 3; do
	sleep 1
	echo "== /sys/kernel/debug/ufgraph/counts after ${i}s of workload"
	cat $DBG/ufgraph/counts
done
kill $pid
echo "== rmmod ufgraph"
rmmod ufgraph
