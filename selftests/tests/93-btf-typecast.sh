# Typecasts and $current in fprobe and tprobe events (issue 17, upstream's later BTF syntax),
# on a kernel with vmlinux BTF. Every value recorded is checked against what is known of the
# read(2) the test makes: the reader's pid (written by its own shell, which execs dd), comm and
# task (its own group leader), the file's name, and its f_mode as vfs_read's file->f_mode reads
# it. A typecast of a pointer to its own struct reads what the member access reads; the field
# option reads the struct file around touch_atime()'s &file->f_path (container_of); a
# tracepoint's task, cast, is the shell that signals itself; this CPU's pcpu_hot (x86_64) holds
# the current task and the record's CPU. Refusals give upstream's error
# and caret and leave nothing behind. Without BTF: typecasts and $current->x are refused, and
# $current (entry and exit of dd's read) and, on x86_64, this_cpu_read(@pcpu_hot) record dd's
# task.
. /selftests/lib.sh
R=$DBG/ufgraph/README
load
define() { echo "$1" >> $DE || fail "define $1: $(tail -3 $EL)"; }
grep -A1 'fetcharg:' $R | grep -qF '$current' || fail "README lacks \$current: $(cat $R)"
grep -qF 'this_cpu_read(<fetcharg>), this_cpu_ptr(<fetcharg>)' $R || fail "README lacks this_cpu_*"
x86=; [ "$(uname -m)" = x86_64 ] && x86=1
if [ ! -e /sys/kernel/btf/vmlinux ]; then
	grep -qF 'structname' $R && fail "README advertises typecasts without BTF"
	echo 'f:ufgc/bad vfs_read (file)file->f_mode' >> $DE 2>/dev/null && fail "a typecast without BTF"
	grep -q 'BTF is not available or not supported' $EL || fail "error_log: $(cat $EL)"
	echo 'f:ufgc/bad vfs_read $current->pid' >> $DE 2>/dev/null && fail "\$current->pid without BTF"
	grep -q 'Invalid \$-variable specified' $EL || fail "error_log: $(cat $EL)"
	# $current and this_cpu_* need no BTF: dd's task at entry and at exit of its read, and
	# (x86_64) this CPU's pcpu_hot.current_task, are one and the same task.
	define 'f:ufgc/c vfs_read cur=$current'
	define 'f:ufgc/cx vfs_read%return cur=$current'
	[ -n "$x86" ] && define 'f:ufgc/h vfs_read cur=$current hot=this_cpu_read(@pcpu_hot)'
	grep -q 'field:u64 cur;' $T/events/ufgc/c/format || fail "format c: $(cat $T/events/ufgc/c/format)"
	echo 0 > $T/tracing_on
	echo > $T/trace
	echo 1 > $T/events/ufgc/enable
	echo 1 > $T/tracing_on
	sh -c "echo \$\$ > /tmp/ufgc-pid; exec dd if=/proc/version of=/dev/null bs=8 count=1 2>/dev/null"
	echo 0 > $T/tracing_on
	echo 0 > $T/events/ufgc/enable
	P=$(cat /tmp/ufgc-pid)
	tr=$(grep "^ *dd-$P " $T/trace)
	cur=$(echo "$tr" | sed -n 's/.* c: .* cur=\(0x[0-9a-f]*\)$/\1/p' | head -1)
	[ -n "$cur" ] && [ "$cur" != 0x0 ] || fail "c: $(grep ' c: ' $T/trace | head -3)"
	echo "$tr" | grep -q " cx: .* cur=$cur$" || fail "cx: not $cur: $(echo "$tr" | grep ' cx: ' | head -3)"
	[ -z "$x86" ] || echo "$tr" | grep -q " h: .* cur=$cur hot=$cur$" ||
		fail "h: $(echo "$tr" | grep ' h: ' | head -3)"
	echo > $DE
	unload
	skip "no /sys/kernel/btf/vmlinux: typecasts and \$current->member need it (\$current and this_cpu_* checked)"
fi
grep -qF '[(structname[,field])]<argname>[->field[->field|.field...]]' $R || fail "README lacks typecasts"
grep -qF '[(structname[,field])](fetcharg)->field[->field|.field...]' $R || fail "README lacks (fetcharg)"
echo 0 > $T/tracing_on
echo > $T/trace
echo > $DE
echo > $EL
N=4321
SIZE=100
F=/tmp/ufgc-file
PIDF=/tmp/ufgc-pid
define 'f:ufgc/e vfs_read pid=$current->pid comm=$current->comm:string cur=$current gl=$current->group_leader tg=(task_struct)$current->tgid n1=file->f_path.dentry->d_name.name:string n2=(file)file->f_path.dentry->d_name.name:string n3=(dentry)((file)file->f_path.dentry)->d_name.name:string m1=file->f_mode m2=(file)$arg1->f_mode'
define 'f:ufgc/x vfs_read%return r=$retval nm=(file)file->f_path.dentry->d_name.name:string pid=$current->pid'
define 'f:ufgc/a touch_atime pid=$current->pid fm=(file,f_path)path->f_mode fn=(file,f_path)path->f_path.dentry->d_name.name:string d1=(file,f_path)path->f_path.dentry d2=path->dentry'
define 't:ufgc/sig signal_generate sig=$arg1:s32 tp=(task_struct)task->pid cp=$current->pid'
# x86_64's per-CPU pcpu_hot: current_task first, then cpu_number (what `current` and
# smp_processor_id() read).
[ -n "$x86" ] && define 'f:ufgc/p vfs_read pid=$current->pid cur=$current hot=this_cpu_read(@pcpu_hot) cpu=(pcpu_hot)this_cpu_ptr(@pcpu_hot)->cpu_number'
grep -qF 'f:ufgc/a touch_atime pid=$current->pid fm=(file,f_path)path->f_mode ' $DE || fail "listing: $(cat $DE)"
# Types from BTF through the casts: pid_t, fmode_t (unsigned int), pointers.
F_=$T/events/ufgc
grep -q 'field:s32 pid;' $F_/e/format || fail "format e: $(cat $F_/e/format)"
grep -q 'field:s32 tg;' $F_/e/format || fail "format e: $(cat $F_/e/format)"
grep -q 'field:u32 m2;' $F_/e/format || fail "format e: $(cat $F_/e/format)"
grep -q 'field:u64 gl;' $F_/e/format || fail "format e: $(cat $F_/e/format)"
grep -q 'field:u32 fm;' $F_/a/format || fail "format a: $(cat $F_/a/format)"

# Refusals: upstream's error and caret (its column in the command); nothing left behind.
cmd='f:ufgc/bad vfs_read (nosuch_struct)file->f_mode'
pre=${cmd%%(*}
refused_at "$cmd" "$((${#pre} + 1))" 'This is not a pointer to union/structure.'
cmd='f:ufgc/bad vfs_read (file)file'
refused_at "$cmd" "${#cmd}" 'Typecast requires a field access'
cmd='f:ufgc/bad vfs_read (file,f_path->dentry)file->f_mode'
pre=${cmd%%-*}
refused_at "$cmd" "${#pre}" 'Typecast field option does not support -> operator'
cmd='f:ufgc/bad vfs_read $current->nosuch'
pre=${cmd%%>*}
refused_at "$cmd" "$((${#pre} + 1))" 'This field is not found.'
[ -d $F_/bad ] && fail "a refused definition left its event"
grep -q 'ufgc/bad' $DE && fail "a refused definition is listed"

head -c $SIZE /dev/zero > $F
caught=0
trap 'caught=$((caught+1))' USR2
echo 1 > $F_/enable
echo 1 > $T/tracing_on
sh -c "echo \$\$ > $PIDF; exec dd if=$F of=/dev/null bs=$N count=1 2>/dev/null"
kill -USR2 $$
echo 0 > $T/tracing_on
echo 0 > $F_/enable
[ "$caught" = 1 ] || fail "the shell did not get its signal"
P=$(cat $PIDF)
tr=$(grep -v '^#' $T/trace)
# vfs_read of the file by dd: its own pid, comm, task (its own group leader), the same name
# three ways and the same f_mode two ways.
e=$(echo "$tr" | grep " e: .* pid=$P comm=\"dd\" " | grep 'n1="ufgc-file"' | head -1)
[ -n "$e" ] || fail "e: no record of dd's read: $(echo "$tr" | grep ' e: ' | head -5)"
echo "$e" | grep -q "^ *dd-$P " || fail "e: the record's task is not dd-$P: $e"
cur=$(echo "$e" | sed -n 's/.* cur=\(0x[0-9a-f]*\) .*/\1/p')
[ -n "$cur" ] && [ "$cur" != 0x0 ] || fail "e: cur: $e"
echo "$e" | grep -q " gl=$cur tg=$P " || fail "e: group_leader/tgid of a single-threaded dd: $e"
echo "$e" | grep -q ' n1="ufgc-file" n2="ufgc-file" n3="ufgc-file" ' || fail "e: names: $e"
m1=$(echo "$e" | sed -n 's/.* m1=\([0-9]*\) .*/\1/p')
[ -n "$m1" ] && [ "$m1" != 0 ] || fail "e: m1: $e"
echo "$e" | grep -q " m1=$m1 m2=$m1$" || fail "e: f_mode two ways: $e"
# Its return: the bytes read, the file's name from the entry data, dd's pid.
echo "$tr" | grep -q " x: .* r=$SIZE nm=\"ufgc-file\" pid=$P$" ||
	fail "x: $(echo "$tr" | grep ' x: ' | head -5)"
# touch_atime(&file->f_path) in the same read: the struct file around it.
a=$(echo "$tr" | grep " a: .* pid=$P fm=" | grep 'fn="ufgc-file"' | head -1)
[ -n "$a" ] || fail "a: no record of dd's touch_atime: $(echo "$tr" | grep ' a: ' | head -5)"
echo "$a" | grep -q " fm=$m1 " || fail "a: f_mode through (file,f_path) is not vfs_read's $m1: $a"
d1=$(echo "$a" | sed -n 's/.* d1=\(0x[0-9a-f]*\) .*/\1/p')
[ -n "$d1" ] && [ "$d1" != 0x0 ] || fail "a: d1: $a"
echo "$a" | grep -q " d1=$d1 d2=$d1$" || fail "a: f_path.dentry two ways: $a"
# This CPU's pcpu_hot: its current_task is $current, its cpu_number the record's CPU.
p=$(echo "$tr" | grep " p: .* pid=$P cur=" | head -1)
[ -z "$x86" ] || [ -n "$p" ] || fail "p: no record of dd's read: $(echo "$tr" | grep ' p: ' | head -5)"
[ -z "$x86" ] || {
	pcur=$(echo "$p" | sed -n 's/.* cur=\(0x[0-9a-f]*\) .*/\1/p')
	[ "$pcur" = "$cur" ] || fail "p: \$current $pcur is not e's $cur: $p"
	echo "$p" | grep -q " hot=$cur cpu=" || fail "p: this_cpu_read(@pcpu_hot) is not current: $p"
	c=$(echo "$p" | sed -n 's/^ *dd-[0-9]* *\[0*\([0-9][0-9]*\)\] .*/\1/p')
	[ -n "$c" ] || fail "p: no CPU column: $p"
	echo "$p" | grep -q " cpu=$c$" || fail "p: cpu_number is not the record's CPU $c: $p"
}
# The shell's signal to itself: the target task, cast, and the sender are the shell.
echo "$tr" | grep -q " sig: .* sig=12 tp=$$ cp=$$$" ||
	fail "sig: $(echo "$tr" | grep ' sig: ' | head -5)"
echo > $DE || fail "clear"
unload
exit 0
