# Allocation failures (failslab, debug kernel) under the enable and the disable of an fprobe
# event (test 69 attacks register on enable otherwise). Before session 7 a disable whose
# allocation failed returned ENOMEM, which the kernel ignores (with a WARNING in 6.12): the
# instance it was disabled in kept getting records, the probes stayed registered and ufgraph
# held; and an fprobe unregistration whose allocation failed leaked an entry and left its
# function in the shared ops' filter.
. /selftests/lib.sh
F=$DBG/failslab
[ -d $T/events ] || skip "no tracefs"
[ -d $F ] || skip "no failslab (only on the debug kernel)"
[ -e $F/require-start ] || skip "failslab has no stack filter (FAULT_INJECTION_STACKTRACE_FILTER)"
st() { tr '\n' ' ' < $DBG/ufgraph/stats; }
ef0=$(grep -c . $T/enabled_functions)
idle() {
	[ "$(stat_of event_probes_registered)" = 0 ] && [ "$(stat_of fprobes)" = 0 ] &&
		[ "$(stat_of fprobe_functions)" = 0 ] || fail "$1: probes registered: $(st)"
	[ "$(grep -c . $T/enabled_functions)" = "$ef0" ] || fail "$1: hooked: $(cat $T/enabled_functions)"
}
load
mkdir $T/instances/ufga || fail "cannot make an instance"
I=$T/instances/ufga
# Allocation failures (failslab, debug kernel) in everything the kernel's enable and
# disable of an event call in ufgraph (the window: the event's reg callback's text, not its kCFI
# preamble `__cfi_...`, a separate symbol before it, with another between them). An enable
# either works or fails leaving nothing registered; a disable cannot fail (the kernel ignores
# what it returns, and would free an instance's file our hits still wrote to): every probe goes.
reg_fn=$(grep '\[ufgraph\]' /proc/kallsyms | sort | awk '$3 ~ /EventOps3reg$/ && $3 !~ /^__cfi_/ { a = $1; next } a != "" && e == "" { e = $1 } END { if (e != "") print a, e }')
[ -n "$reg_fn" ] || fail "no reg callback in /proc/kallsyms"
set -- $reg_fn
echo "0x$1" > $F/require-start
echo "0x$2" > $F/require-end
echo 32 > $F/stacktrace-depth
inject() { echo N > $F/task-filter; echo N > $F/ignore-gfp-wait; echo 100 > $F/probability; echo 1 > $F/interval; echo 1 > $F/times; echo $1 > $F/space; echo 0 > $F/verbose; }
off() { echo 0 > $F/probability; }
echo 'f:ufga/f vfs_read count=$arg3:u32' >> $DE || fail "define f"
echo 'f:ufga/f vfs_write count=$arg3:u32' >> $DE || fail "append f"
echo 1 > $I/events/ufga/f/enable || fail "enable f in the instance"
echo 0 > $I/events/ufga/f/enable
idle "f warmed up"
refused=0
k=0; while [ $k -le 1024 ]; do
	inject $k
	echo 1 > $T/events/ufga/f/enable 2>/dev/null; rc=$?
	off
	if [ $rc = 0 ]; then
		[ "$(stat_of event_probes_registered)" = 2 ] || fail "enabled (space $k): $(st)"
		echo 0 > $T/events/ufga/f/enable
	else
		refused=$((refused + 1))
		[ "$(cat $T/events/ufga/f/enable)" = 0 ] || fail "refused enable shows enabled (space $k)"
	fi
	idle "enable, space $k"
	k=$((k + 64))
done
echo "enable: $refused injected failures refused cleanly" >&2
[ $refused -gt 0 ] || fail "no allocation failure reached the enable"
# Disables with each allocation failing in turn, from one instance of two and from the last.
k=0; while [ $k -le 1024 ]; do
	echo 1 > $T/events/ufga/f/enable || fail "enable f (space $k)"
	echo 1 > $I/events/ufga/f/enable || fail "enable f in the instance (space $k)"
	inject $k; echo 0 > $T/events/ufga/f/enable; off
	[ "$(stat_of event_probes_registered)" = 2 ] || fail "f with the instance left (space $k): $(st)"
	echo > $I/trace
	cat /proc/version > /dev/null
	grep -q ' f: (vfs_read+' $I/trace || fail "the instance lost f's records (space $k)"
	echo > $T/trace
	cat /proc/version > /dev/null
	[ "$(grep -c ' f: ' $T/trace)" = 0 ] || fail "the top instance still gets f's records (space $k)"
	inject $k; echo 0 > $I/events/ufga/f/enable; off
	idle "disable, space $k"
	k=$((k + 128))
done
echo > $T/trace
echo > $I/trace
echo > $DE || fail "clear f"
rmdir $I || fail "rmdir instance"
unload
exit 0
