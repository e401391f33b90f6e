# Load and unload 20 times (5 on the debug kernel) while the hooked function is being hit on every CPU.
. /selftests/lib.sh
p1=$(busy_io); p2=$(busy_io)
i=0
n_rounds=$(rounds 20 5)
while [ $i -lt $n_rounds ]; do
	load func=vfs_read
	sleep 0.1
	n=$(count_of vfs_read)
	[ "$n" -gt 0 ] || { kill $p1 $p2; fail "round $i: vfs_read not counted while busy"; }
	unload
	i=$((i+1))
done
kill $p1 $p2
loaded ufgraph && fail "left loaded"
exit 0
