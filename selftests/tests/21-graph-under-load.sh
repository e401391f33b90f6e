# Many functions on both CPUs: once the workload stops, every entry has its return.
. /selftests/lib.sh
load 'graph=vfs_*'
p1=$(busy_io); p2=$(busy_io)
# The functions whose every entry must have its return below.
checked="vfs_write vfs_open vfs_readlink"
entered_enough() {
	for f in $checked; do
		set -- $(graph_of $f)
		[ "$1" -gt 10 ] || return 1
	done
}
# Until each has been entered more than 10 times (2 s used to be enough, but on the debug
# kernel with a second VM busy beside it the two loops made only 10 writes in 2 s once), at
# least 2 s, at most 60.
sleep 2
wait_for entered_enough 600 || echo "the workload stayed slow: $(cat $DBG/ufgraph/graph)"
kill $p1 $p2; wait $p1 $p2 2>/dev/null
sleep 0.3
# Nothing can be inside these once the workload is gone (proc and tmpfs do not block)...
for f in $checked; do
	set -- $(graph_of $f)
	[ "$1" -gt 10 ] && [ "$1" = "$2" ] || fail "$f entries/returns $1/$2: $(cat $DBG/ufgraph/graph)"
done
# ...but vfs_read is: the shell reading our command substitutions, and awk reading the file.
set -- $(graph_of vfs_read)
[ $(($1 - $2)) -ge 0 ] && [ $(($1 - $2)) -le 3 ] || fail "vfs_read entries/returns $1/$2"
set -- $(awk '$1 == "total" { print $2, $3 }' $DBG/ufgraph/graph)
[ "$1" -gt 100 ] || fail "too few calls seen: $1"
[ "$(stat_of skipped_frames)" = 0 ] || fail "skipped frames: $(cat $DBG/ufgraph/stats)"
unload
exit 0
