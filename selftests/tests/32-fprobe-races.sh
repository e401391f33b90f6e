# Register and unregister an exit fprobe on vfs_* 30 times (8 on the debug kernel) while both CPUs call those
# functions: no crash, no handler after unregister (the module would be gone), exits
# never exceed entries, entry data always intact. (A round may see no call at all: the
# window between insmod and rmmod is short.)
. /selftests/lib.sh
load
p1=$(busy_io); p2=$(busy_io)
total=0
for i in $(seq 1 $(rounds 30 8)); do
	dmesg -c > /dev/null
	insmod $KO/fprobe_client.ko 'filter=vfs_*' || { kill $p1 $p2; fail "round $i: insmod"; }
	rmmod fprobe_client || { kill $p1 $p2; fail "round $i: rmmod"; }
	set -- $(dmesg | sed -n 's/.*entries=\([0-9]*\) exits=\([0-9]*\) bad=\([0-9]*\).*/\1 \2 \3/p')
	[ -n "$1" ] && [ "$2" -le "$1" ] && [ "$3" = 0 ] || { kill $p1 $p2; fail "round $i: entries/exits/bad $*"; }
	total=$((total + $1))
done
[ "$total" -gt 0 ] || fail "no round saw a call"

kill $p1 $p2
unload
exit 0
