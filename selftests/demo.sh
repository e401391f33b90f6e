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
echo "== fprobe events: upstream's f: syntax, real trace events (Documentation/events.md)"
# Appended with >>, as upstream's documentation does: `tee -a` would fopen(..., "a"), whose
# seek to the end the control file refuses (seq_lseek has no SEEK_END, upstream's neither).
def() { echo "$1"; echo "$1" >> $DE || echo "refused"; }
def 'f:demo/read vfs_read count=$arg3:u32 comm=$comm'
def 'f:demo/readret vfs_read%return ret=$retval:s64 count=$arg3:u32'
def 'f:demo/open do_sys_openat2 path=+0($arg2):ustring'
echo "== $DE"
cat $DE
echo > $T/trace
echo 1 > $T/events/demo/enable
dd if=/proc/version of=/dev/null bs=64 count=1 2>/dev/null
cat /proc/self/stat > /dev/null
echo 0 > $T/events/demo/enable
echo "== $T/trace (a dd of 64 bytes, a cat)"
grep -E ' (read|readret|open): ' $T/trace | head -12
echo "== $T/events/demo/readret/format"
cat $T/events/demo/readret/format
echo "== a bad definition is refused, with upstream's error_log entry"
echo 'f:demo/bad vfs_read $arg10000' >> $DE 2>/dev/null || echo "refused"
cat $DBG/ufgraph/error_log
echo > $DE
echo "== rmmod ufgraph"
rmmod ufgraph && echo "unloaded"
