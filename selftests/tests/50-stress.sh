# Stress, bounded: a graph user on vfs_*, an exit fprobe on the spinlock functions, a
# kretprobe on schedule (a sleeping function) and a C graph client, all at once, while
# both vCPUs do file I/O, fork storms and sleep. Then registration and module load
# cycles under the same load. UFG_STRESS (rounds; `make stress` raises it) scales it.
. /selftests/lib.sh
R=${UFG_STRESS:-1}

workload() {
	busy_io; busy_io
	( while :; do for i in 1 2 3 4 5 6 7 8; do (true) & done; wait; done ) > /dev/null 2>&1 &
	echo $!
	( while :; do sleep 0.05; done ) > /dev/null 2>&1 &
	echo $!
}
pids=$(workload)
stop() { kill $pids 2>/dev/null; wait $pids 2>/dev/null; }

load 'graph=vfs_*'
insmod $KO/fprobe_client.ko 'filter=*spin_lock*' || { stop; fail "fprobe client"; }
insmod $KO/kretprobe_client.ko func=schedule || { stop; fail "kretprobe client"; }
insmod $KO/ufgraph_client.ko func=do_sys_openat2 || { stop; fail "graph client"; }
# Three seconds per round of stress, two minutes at most: the cycles below are the long part.
t=$((3 * R)); [ $t -gt 120 ] && t=120
sleep $t
why=$(clients_off) || { stop; fail "$why"; }
stop
sleep 0.3
for f in vfs_write vfs_open; do
	set -- $(graph_of $f)
	[ "$1" -gt 0 ] && [ "$1" = "$2" ] || fail "$f entries/returns $1/$2 after the storm"
done
unload

# Register and unregister an exit fprobe, and load and unload ufgraph, under load.
pids=$(workload)
for i in $(seq 1 $((10 * R))); do
	load 'graph=vfs_*'
	insmod $KO/fprobe_client.ko 'filter=vfs_*' || { stop; fail "round $i: fprobe client"; }
	rmmod fprobe_client || { stop; fail "round $i: rmmod fprobe client"; }
	unload
done
stop
exit 0
