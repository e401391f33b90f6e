# rmmod while exited tasks that died inside hooked functions are not yet reaped (zombies):
# their kernel stacks are already freed, so teardown must leave their frames alone, neither
# reading nor writing the return slots. Before session 4 the hand-back wrote real return
# addresses into the freed stacks (KASAN: slab-out-of-bounds on the debug kernel, silent
# writes into freed pages elsewhere).
. /selftests/lib.sh
load graph=do_exit
# A parent that never waits: 16 children exit inside do_exit (which never returns) and stay
# zombies, their do_exit frames on their shadow stacks.
sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do sleep 0 & done; exec sleep 600' &
parent=$!
zombies() {
	n=0
	for s in /proc/[0-9]*/stat; do
		set -- $(cat $s 2>/dev/null)
		[ "$3" = Z ] && [ "$4" = $parent ] && n=$((n + 1))
	done
	echo $n
}
wait_for '[ $(zombies) = 16 ]' 100 || fail "not 16 zombies: $(zombies)"
dmesg -c > /dev/null
unload
dmesg | grep -q "left \(1[6-9]\|[2-9][0-9]\|[0-9][0-9][0-9]*\) frames of tasks that can no longer run alone" \
	|| fail "teardown did not leave the zombies' frames alone: $(dmesg | grep -i 'frames\|handed')"
kill $parent
wait $parent 2>/dev/null
# Reaped now; ufgraph loads and unloads again.
load graph=do_exit
sleep 0
unload
exit 0
