# BTF arguments of a module's function (issue 17), from the module's split BTF
# (/sys/kernel/btf/globfns, whose types continue vmlinux's): parameters by name typed from the
# module's BTF, members of the module's own struct read through a pointer, a string member, a
# typed $retval, $arg* listed with the parameters' names, and a refusal with upstream's
# error_log entry and caret. Then the module goes: the definitions stay listed and removable
# (each keeps the copy of the BTF it was parsed with), and once it is back a new definition
# reads its BTF again. Values known in advance: each write of N to globfns's "run" calls
# ufgt_btf_pair(&{ .a = N, .b = -N, .name = "ufgt-pair" }, N * 3), which returns N * 3.
. /selftests/lib.sh
P=/sys/module/globfns/parameters
load_tracing_off
if [ ! -e /sys/kernel/btf/vmlinux ]; then
	unload
	skip "no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF): BTF arguments need it"
fi
insmod $KO/globfns.ko || fail "insmod globfns"
if [ ! -e /sys/kernel/btf/globfns ]; then
	rmmod globfns
	unload
	skip "no /sys/kernel/btf/globfns (kernel without CONFIG_DEBUG_INFO_BTF_MODULES, or the module built without BTF)"
fi
define() { echo "$1" >> $DE || fail "define $1: $(tail -3 $EL)"; }
define 'f:ufgm/e ufgt_btf_pair p k a=p->a b=p->b name=p->name:string'
define 'f:ufgm/x ufgt_btf_pair%return k $retval'
define 'f:ufgm/all ufgt_btf_pair $arg*'
grep -qx 'f:ufgm/e ufgt_btf_pair p=p k=k a=p->a b=p->b name=p->name:string' $DE || fail "listing: $(cat $DE)"
grep -qx 'f:ufgm/x ufgt_btf_pair%return k=k arg2=$retval' $DE || fail "listing: $(cat $DE)"
grep -qx 'f:ufgm/all ufgt_btf_pair p=p k=k' $DE || fail "listing: $(cat $DE)"
# Types from the module's BTF: unsigned int k, int a, long b and the long $retval.
F=$T/events/ufgm
grep -q 'field:u32 k;' $F/e/format || fail "format e: $(cat $F/e/format)"
grep -q 'field:s32 a;' $F/e/format || fail "format e: $(cat $F/e/format)"
grep -q 'field:s64 b;' $F/e/format || fail "format e: $(cat $F/e/format)"
grep -q 'field:s64 arg2;' $F/x/format || fail "format x: $(cat $F/x/format)"
# Refusals: upstream's error and caret; nothing left behind.
# (The caret under the member's name after `->`, under `$arg3`.)
cmd='f:ufgm/bad ufgt_btf_pair p->nosuch'
pre=${cmd%%>*}
refused_at "$cmd" "$((${#pre} + 1))" 'This field is not found.'
cmd='f:ufgm/bad ufgt_btf_pair $arg3'
pre=${cmd%%\$*}
refused_at "$cmd" "${#pre}" 'This variable is not found at this probe point'
[ -d $F/bad ] && fail "a refused definition left its event"

echo 1 > $F/enable
echo 1 > $T/tracing_on
echo 7 > $P/run
echo 0 > $T/tracing_on
echo 0 > $F/enable
tr=$(grep -v '^#' $T/trace)
echo "$tr" | grep -q " e: (ufgt_btf_pair+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) p=0x[0-9a-f]* k=21 a=7 b=-7 name=\"ufgt-pair\"$" \
	|| fail "e: $(echo "$tr" | grep ' e: ')"
echo "$tr" | grep -q " x: (run_set+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\] <- ufgt_btf_pair \[globfns\]) k=21 arg2=21$" \
	|| fail "x: $(echo "$tr" | grep ' x: ')"
echo "$tr" | grep -q " all: (ufgt_btf_pair+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) p=0x[0-9a-f]* k=21$" \
	|| fail "all: $(echo "$tr" | grep ' all: ')"

# The module goes: its definitions stay, listed as before, and can be removed one by one.
rmmod globfns || fail "rmmod globfns"
grep -qx 'f:ufgm/e ufgt_btf_pair p=p k=k a=p->a b=p->b name=p->name:string' $DE || fail "listing after rmmod: $(cat $DE)"
echo '-:ufgm/all' >> $DE || fail "remove all: $(tail -3 $EL)"
grep -q 'ufgm/all' $DE && fail "ufgm/all still listed"
# Without the module, its function has no BTF: a BTF argument is refused as upstream does.
cmd='f:ufgm/gone ufgt_btf_pair p'
refused_at "$cmd" "$((${#cmd} - 1))" 'No BTF entry for this probe point'
# Back: a new definition reads its BTF again.
insmod $KO/globfns.ko || fail "insmod globfns again"
define 'f:ufgm/again ufgt_btf_pair a=p->a'
echo > $T/trace
echo 1 > $F/again/enable
echo 1 > $T/tracing_on
echo 5 > $P/run
echo 0 > $T/tracing_on
echo 0 > $F/again/enable
grep -q " again: (ufgt_btf_pair+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) a=5$" $T/trace \
	|| fail "again: $(grep -v '^#' $T/trace | head -5)"
echo > $DE || fail "clear: $(cat $DE)"
[ -d $F ] && fail "events left: $(ls $F)"
rmmod globfns || fail "rmmod globfns"

# A module's tracepoint: its probe stub's parameters (without the stub's first, its data) from
# the module's BTF. The trace-events sample fires foo_bar("hello", cnt, ...) once a second.
if [ -f $KO/trace-events-sample.ko ]; then
	insmod $KO/trace-events-sample.ko || fail "insmod trace-events-sample"
	[ -e /sys/kernel/btf/trace_events_sample ] || fail "no /sys/kernel/btf/trace_events_sample"
	define 't:ufgm/tp foo_bar foo:string bar'
	define 't:ufgm/tpall foo_bar $arg*'
	grep -qx 't:ufgm/tpall foo_bar foo=foo bar=bar lst=lst string=string mask=mask fmt=fmt va=va' $DE ||
		fail "listing: $(cat $DE)"
	grep -q 'field:s32 bar;' $F/tp/format || fail "format tp: $(cat $F/tp/format)"
	echo > $T/trace
	echo 1 > $F/tp/enable
	echo 1 > $T/tracing_on
	sleep 3
	echo 0 > $T/tracing_on
	echo 0 > $F/tp/enable
	grep -q ' tp: (__probestub_foo_bar+0x[0-9a-f]*/0x[0-9a-f]* \[trace_events_sample\]) foo="hello" bar=[0-9]*$' $T/trace ||
		fail "tp: $(grep -v '^#' $T/trace | head -5)"
	echo > $DE || fail "clear: $(cat $DE)"
	rmmod trace_events_sample || fail "rmmod trace-events-sample"
fi
unload
exit 0
