# A glob hooks several functions and counts them apart.
. /selftests/lib.sh
load 'func=vfs_*'
cat /proc/version > /dev/null
echo x > /tmp/glob-test
r=$(count_of vfs_read); w=$(count_of vfs_write)
[ "$r" -gt 0 ] || fail "vfs_read not counted: $(cat $DBG/ufgraph/counts)"
[ "$w" -gt 0 ] || fail "vfs_write not counted: $(cat $DBG/ufgraph/counts)"
grep -q "^lost 0$" $DBG/ufgraph/counts || fail "lost hits: $(cat $DBG/ufgraph/counts)"
unload
exit 0
