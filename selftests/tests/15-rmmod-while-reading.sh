# rmmod while a reader holds the counts file open: the reader keeps the module
# pinned (EBUSY), and once it closes, rmmod succeeds.
. /selftests/lib.sh
load func=vfs_read
exec 3< $DBG/ufgraph/counts
if rmmod ufgraph 2>/dev/null; then
	exec 3<&-
	fail "rmmod succeeded with the counts file open"
fi
cat <&3 > /dev/null
exec 3<&-
unload
exit 0
