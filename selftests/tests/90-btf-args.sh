# BTF arguments of fprobe events (issue 17), on a kernel with vmlinux BTF: parameters by name
# typed from BTF, a member through pointers read as a string, a typed $retval, $arg* listed
# with every parameter's name, and a refusal with upstream's error that leaves nothing behind.
# Values known in advance: a read(2) of $N bytes from a file of $SIZE bytes.
. /selftests/lib.sh
R=$DBG/ufgraph/README
load
if [ ! -e /sys/kernel/btf/vmlinux ]; then
	# Without BTF, the events are upstream's without CONFIG_PROBE_EVENTS_BTF_ARGS.
	grep -qF '<argname>' $R && fail "README advertises <argname> without BTF"
	echo 'f:ufgb/e vfs_read count' > $DE 2>/dev/null && fail "a BTF argument without BTF"
	grep -q 'BTF is not available or not supported' $EL || fail "error_log: $(cat $EL)"
	echo > $DE
	unload
	skip "no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF): BTF arguments need it"
fi
grep -qF '<argname>[->field[->field|.field...]]' $R || fail "README lacks <argname>"
define() { echo "$1" >> $DE || fail "define $1: $(tail -3 $EL)"; }
echo 0 > $T/tracing_on
echo > $T/trace
echo > $DE
N=4321
SIZE=100
F=/tmp/ufgb-file
define 'f:ufgb/e vfs_read count pos name=file->f_path.dentry->d_name.name:string'
define 'f:ufgb/x vfs_read%return count $retval'
define 'f:ufgb/a vfs_read $arg*'
grep -q '^f:ufgb/a vfs_read file=file buf=buf count=count pos=pos$' $DE || fail "listing: $(cat $DE)"
grep -q '^f:ufgb/x vfs_read%return count=count arg2=$retval$' $DE || fail "listing: $(cat $DE)"
# Types from BTF: size_t count is u64, loff_t *pos a pointer (x64), ssize_t $retval s64.
grep -q 'field:u64 count;' $T/events/ufgb/e/format || fail "format e: $(cat $T/events/ufgb/e/format)"
grep -q 'field:s64 arg2;' $T/events/ufgb/x/format || fail "format x: $(cat $T/events/ufgb/x/format)"
# A refusal: upstream's error, its caret, and no event left.
echo 'f:ufgb/bad vfs_read file->nosuch' >> $DE 2>/dev/null && fail "a member that is not there"
grep -q 'This field is not found.' $EL || fail "error_log: $(cat $EL)"
[ -d $T/events/ufgb/bad ] && fail "a refused definition left its event"
grep -q 'ufgb/bad' $DE && fail "a refused definition is listed"

head -c $SIZE /dev/zero > $F
echo 1 > $T/events/ufgb/enable
echo 1 > $T/tracing_on
dd if=$F of=/dev/null bs=$N count=1 2>/dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgb/enable
grep -q " e: (vfs_read+0x[0-9a-f]*/0x[0-9a-f]*) count=$N pos=0x[0-9a-f]* name=\"ufgb-file\"$" $T/trace \
	|| fail "e: $(grep ' e: ' $T/trace | grep count=$N | head -3)"
grep -q " x: ([a-z_0-9.]*+0x[0-9a-f]*/0x[0-9a-f]* <- vfs_read) count=$N arg2=$SIZE$" $T/trace \
	|| fail "x: $(grep ' x: ' $T/trace | grep count=$N | head -3)"
grep -q " a: (vfs_read+0x[0-9a-f]*/0x[0-9a-f]*) file=0x[0-9a-f]* buf=0x[0-9a-f]* count=$N pos=0x[0-9a-f]*$" $T/trace \
	|| fail "a: $(grep ' a: ' $T/trace | head -3)"
echo > $DE || fail "clear"
unload
exit 0
