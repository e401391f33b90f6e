# rmmod ufgraph racing enables of an fprobe event: refused (EBUSY) while the event is enabled;
# once rmmod has passed its refcount check no enable may slip in before the module's exit (its
# own users, torn down first, make that window several grace periods long), which found the
# event enabled, leaked it with its probe registered, and freed the text the probe's ops still
# called (an Oops within a second, before session 7).
. /selftests/lib.sh
[ -d $T/events ] || skip "no tracefs"
ef0=$(grep -c . $T/enabled_functions)
dmesg -c > /dev/null
gone=0
for round in 1 2 3 4 5; do
	load func=vfs_write graph=vfs_open
	echo 'f:ufga/x vfs_read' >> $DE || fail "define x"
	( while :; do echo 1 > $T/events/ufga/x/enable; echo 0 > $T/events/ufga/x/enable; done 2>/dev/null ) & pe=$!
	n=0
	while loaded ufgraph && [ $n -lt 200 ]; do rmmod ufgraph 2>/dev/null; n=$((n + 1)); done
	kill $pe; wait $pe
	if loaded ufgraph; then
		echo 0 > $T/events/ufga/x/enable
		unload
	else
		gone=$((gone + 1))
	fi
	dmesg | grep -q 'still in use at unload\|still registered at teardown' && fail "rmmod round $round: $(dmesg | grep ufgraph | tail -3)"
	[ -d $T/events/ufga ] && fail "events/ufga left after rmmod (round $round)"
	[ "$(grep -c . $T/enabled_functions)" = "$ef0" ] || fail "hooked after rmmod (round $round): $(cat $T/enabled_functions)"
done
echo "rmmod won against the enables in $gone rounds of 5" >&2
exit 0
