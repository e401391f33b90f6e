# Probes appended to an fprobe event record what their own fetch arguments read, as upstream's
# (each trace_fprobe keeps its own args; the event keeps one field layout): entry and exit
# probes, on one function and on two, an exit probe saving other arguments at entry than the
# event's first one (or none), and a probe appended to an enabled event. An append whose
# fields differ (name, type, count) is refused with EEXIST and upstream's DIFF_ARG_TYPE, its
# caret under the first differing argument; other kinds and exact duplicates as upstream.
. /selftests/lib.sh
load_tracing_off

F=/tmp/ufgx-file
NONE=/tmp/ufgx-none
# The first 4 bytes of $F, "/tmp", as a little-endian s32: 0x706d742f.
TMP=1886221359
# The opener's comm: busybox may run cat in the shell itself.
C='"\(sh\|cat\)"'
# A record's head: "(func+0x../0x..)" at entry, "(caller+0x../0x.. <- func)" at return.
AT='+0x[0-9a-f]*/0x[0-9a-f]*'
RET="[a-z_0-9.]*$AT <-"

define() { echo "$1" >> $DE || fail "define $1: $(tail -3 $EL)"; }

echo > $DE
# a: two entry probes on one function, with other fetches (and another string size).
define 'f:ufgx/a do_sys_openat2 v=$arg1:s32 s=$comm'
define 'f:ufgx/a do_sys_openat2 v=+0($arg2):s32 s=+0($arg2):string'
# b: entry probes on two functions.
define 'f:ufgx/b do_sys_openat2 v=$arg1:s32 s=+0($arg2):string'
define 'f:ufgx/b vfs_read v=$arg3:s32 s=$comm'
# c: exit probes on one function: the first saves $arg1 and $arg2 at entry, the second only
# $arg2, the third nothing (no entry handler at all).
define 'f:ufgx/c do_sys_openat2%return w=$arg1:s32 s=+0($arg2):string'
define 'f:ufgx/c do_sys_openat2%return w=+0($arg2):s32 s=$comm'
define 'f:ufgx/c do_sys_openat2%return w=$retval:s32 s=$comm'
# d: exit probes on two functions, each saving another argument in its entry slot 0.
define 'f:ufgx/d vfs_read%return w=$arg3:s32 n=$retval:s64'
define 'f:ufgx/d do_sys_openat2%return w=$arg1:s32 n=$retval:s64'
# e: upstream's own shape: $arg2 then $arg1 at return.
define 'f:ufgx/e do_sys_openat2%return w=$arg2:x64'
define 'f:ufgx/e do_sys_openat2%return w=$arg1:x64'
[ "$(grep -c . $DE)" = 11 ] || fail "dynamic_events: $(cat $DE)"
grep -qx 'f:ufgx/c do_sys_openat2%return w=+0($arg2):s32 s=$comm' $DE || fail "dynamic_events: $(cat $DE)"
# One layout per event: the first definition's.
grep -q 'field:s32 v;	offset:16;	size:4;	signed:1;' $T/events/ufgx/a/format || fail "a format: $(cat $T/events/ufgx/a/format)"
grep -q 'field:__data_loc char\[\] s;	offset:20;	size:4;	signed:1;' $T/events/ufgx/a/format || fail "a format: $(cat $T/events/ufgx/a/format)"
grep -q 'print fmt: "(%lx <- %lx) w=%d n=%Ld", REC->__probe_func, REC->__probe_ret_ip, REC->w, REC->n' $T/events/ufgx/d/format || fail "d print fmt: $(grep 'print fmt' $T/events/ufgx/d/format)"

echo 1 > $T/events/ufgx/enable || fail "enable ufgx"
echo 1 > $T/tracing_on
echo data > $F
cat $F > /dev/null
cat $NONE 2>/dev/null
dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgx/enable || fail "disable ufgx"

has() { grep -q "$1" $T/trace || fail "no record $1: $(grep " $2: " $T/trace | head -8)"; }
hasnt() { grep -q "$1" $T/trace && fail "record $1: $(grep "$1" $T/trace | head -3)"; }
# a: each open of $F has both records, each with its own probe's values.
has " a: (do_sys_openat2$AT) v=-100 s=$C\$" a
has " a: (do_sys_openat2$AT) v=$TMP s=\"$F\"\$" a
hasnt " a: .* v=-100 s=\"/tmp/"
hasnt " a: .* v=$TMP s=$C\$"
# b: an open and a read.
has " b: (do_sys_openat2$AT) v=-100 s=\"$F\"\$" b
has " b: (vfs_read$AT) v=37 s=\"\(sh\|dd\)\"\$" b
# c: the failed open, three times, each probe with what it saved at entry (or nothing).
has " c: ($RET do_sys_openat2) w=-100 s=\"$NONE\"\$" c
has " c: ($RET do_sys_openat2) w=$TMP s=$C\$" c
has " c: ($RET do_sys_openat2) w=-2 s=$C\$" c
n=$(grep -c " c: ($RET do_sys_openat2) w=.* s=\"$NONE\"\$" $T/trace)
[ "$n" = 1 ] || fail "c: $n records of $NONE's path: $(grep " c: " $T/trace | grep -F $NONE)"
# d: a read's count and an open's directory fd, both from entry slot 0.
has " d: ($RET vfs_read) w=37 n=37\$" d
has " d: ($RET do_sys_openat2) w=-100 n=-2\$" d
# e: $arg1 (AT_FDCWD, its upper half as the caller left it) and $arg2 (a user pointer).
FDCWD='w=0x\(ffffffff\)\?ffffff9c$'
has " e: ($RET do_sys_openat2) $FDCWD" e
grep " e: ($RET do_sys_openat2) w=0x" $T/trace | grep -v "$FDCWD" | grep -q 'w=0x[1-9a-f][0-9a-f]*$' \
	|| fail "no e record of \$arg2: $(grep ' e: ' $T/trace | head -6)"

# A probe appended to an enabled event is registered at once, with its own programs.
echo > $T/trace
echo 1 > $T/events/ufgx/d/enable || fail "enable d"
define 'f:ufgx/d vfs_write%return w=$arg3:s32 n=$retval:s64'
echo 1 > $T/tracing_on
dd if=/proc/version of=/dev/null bs=41 count=1 2>/dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgx/d/enable
has " d: ($RET vfs_write) w=41 n=41\$" d

# Refused appends. refused ERR 'COMMAND' 'MARK': the command fails with EEXIST, and error_log
# holds upstream's message ERR, the command, and the caret under the first occurrence of MARK
# in it ('' for the command's start, '$' for just past its end, where upstream puts a
# missing argument).
refused() {
	echo > $EL
	out=$(echo "$2" 2>&1 >> $DE) && fail "accepted $2"
	echo "$out" | grep -q 'File exists' || fail "$2: not EEXIST: $out"
	case "$3" in
	'') pos=0 ;;
	'$') pos=$((${#2} + 1)) ;;
	*) pre=${2%%"$3"*}; pos=${#pre} ;;
	esac
	grep -q "trace_fprobe: error: $1\$" $EL || fail "$2: error_log: $(cat $EL)"
	grep -qxF "  Command: $2" $EL || fail "$2: error_log command: $(cat $EL)"
	grep -qx "$(printf "%$((pos + 12))s" '^')" $EL || fail "$2: caret not at $pos: $(cat $EL)"
}
DIFF='Argument type or name is different from existing probe'
refused "$DIFF" 'f:ufgx/a do_sys_openat2 x=$arg1:s32 s=$comm' 'x='
refused "$DIFF" 'f:ufgx/a do_sys_openat2 v=$arg1:u32 s=$comm' 'v='
refused "$DIFF" 'f:ufgx/a vfs_read v=$arg1:s32 s=+0($arg2):ustring' 's='
refused "$DIFF" 'f:ufgx/a do_sys_openat2 v=$arg1:s32 s=$comm t=$arg2' 't='
refused "$DIFF" 'f:ufgx/a do_sys_openat2 v=$arg1:s32' '$'
refused "$DIFF" 'f:ufgx/a do_sys_openat2 v=+0($arg2):s32[2] s=$comm' 'v='
refused "$DIFF" 'f:ufgx/d vfs_read%return n=$retval:s64 w=$arg3:s32' 'n='
refused "$DIFF" 'f:ufgx/c vfs_read%return w=$arg1:s32 s=$arg2' 's='
refused 'Probe type is different from existing probe' 'f:ufgx/a do_sys_openat2%return v=$arg1:s32 s=$comm' ''
refused 'Probe type is different from existing probe' 'f:ufgx/d vfs_read w=$arg3:s32 n=$arg1:s64' ''
refused 'There is already the exact same probe event' 'f:ufgx/b vfs_read v=$arg3:s32 s=$comm' ''
# Nothing of them was added.
[ "$(grep -c . $DE)" = 12 ] || fail "dynamic_events after refusals: $(cat $DE)"
[ "$(stat_of events)" = 5 ] && [ "$(stat_of event_probes)" = 12 ] || fail "stats: $(cat $DBG/ufgraph/stats)"

echo > $DE || fail "clear"
[ -d $T/events/ufgx ] && fail "events/ufgx left behind"
rm -f $F
unload
exit 0
