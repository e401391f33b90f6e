# Tracepoint probe events (`t:`), as upstream's: a probe on a tracepoint's probestub
# (__probestub_<tp>), which ufgraph attaches to the tracepoint while a probe needs it. Checked:
# the records' $argN values (the tracepoint's own arguments, past the stub's data) for
# signal_generate, signal_deliver and sys_enter fired on purpose; several events and probes on
# one tracepoint (one attachment, counted); register on enable (nothing attached or hooked
# while idle); the kernel's own event on the same tracepoint undisturbed, before, during and
# after; a module's tracepoint (the module held while a probe is defined on it); an unknown
# tracepoint refused with upstream's error_log entry and caret; removal leaving nothing behind
# (no event, probe, attachment or hooked function).
. /selftests/lib.sh
load_tracing_off
st() { tr '\n' ' ' < $DBG/ufgraph/stats; }
stubs_hooked() { grep -c '^__probestub_' $T/enabled_functions; }
ef0=$(stubs_hooked)
# Nothing of the t: probes registered: no probe, no attachment, no hooked probestub.
idle() {
	[ "$(stat_of event_probes_registered)" = 0 ] && [ "$(stat_of event_tracepoint_stubs)" = 0 ] &&
		[ "$(stat_of fprobes)" = 0 ] || fail "$1: registered: $(st)"
	[ "$(stubs_hooked)" = "$ef0" ] || fail "$1: hooked: $(grep __probestub_ $T/enabled_functions)"
}
# Sends SIGUSR2 (12) to this shell with kill(2): signal_generate fires in kill(), and
# signal_deliver when the kernel hands the signal to the trap's handler on the way out of it
# (a signal that kills its target with the default action is delivered as SIGKILL instead).
# $tr holds what was recorded meanwhile.
caught=0
trap 'caught=$((caught+1))' USR2
fire() {
	echo > $T/trace
	echo 1 > $T/tracing_on
	kill -USR2 $$
	echo 0 > $T/tracing_on
	tr=$(grep -v '^#' $T/trace)
}

# An unknown tracepoint: EINVAL, logged as upstream does (caret under the name), nothing left.
echo > $EL
out=$(echo 't:tpt/x ufg_no_such_tracepoint' 2>&1 >> $DE) && fail "accepted an unknown tracepoint"
echo "$out" | grep -q 'Invalid argument' || fail "unknown tracepoint: not EINVAL: $out"
grep -q 'trace_fprobe: error: Tracepoint is not found' $EL || fail "error_log: $(cat $EL)"
grep -qx '  Command: t:tpt/x ufg_no_such_tracepoint' $EL || fail "error_log command: $(cat $EL)"
grep -qx "$(printf '%20s' '^')" $EL || fail "error_log caret: $(cat $EL)"
# Looked up before the arguments, as upstream: a bad argument of an unknown tracepoint is
# NO_TRACEPOINT too.
echo > $EL
echo 't ufg_no_such_tracepoint $arg10000' >> $DE 2>/dev/null && fail "accepted \$arg10000"
grep -q 'error: Tracepoint is not found' $EL || fail "error_log: $(cat $EL)"
grep -q 'error: Invalid argument number' $EL && fail "error_log: $(cat $EL)"
# A tracepoint probe takes no $retval and no %return (parser, upstream's errors).
echo 't signal_generate r=$retval' >> $DE 2>/dev/null && fail "accepted \$retval"
echo 't signal_generate%return' >> $DE 2>/dev/null && fail "accepted %return"
[ -s $DE ] && fail "left behind: $(cat $DE)"
[ "$(stat_of events)" = 0 ] || fail "events left: $(st)"

# Definitions: two events on signal_generate, one (two probes) on signal_generate and
# signal_deliver, one with the default group and name. Nothing is attached or hooked yet.
echo 't:tpt/gen signal_generate sig=$arg1:s32 grp=$arg4:s32 res=$arg5:s32' >> $DE ||
	fail "define gen"
echo 't:tpt/gen2 signal_generate s=$arg1:u8' >> $DE || fail "define gen2"
echo 't:tpt/any signal_generate n=$arg1:s32' >> $DE || fail "define any"
echo 't:tpt/any signal_deliver n=$arg1:s32' >> $DE || fail "append to any"
echo 't signal_deliver' >> $DE || fail "define the default"
[ -d $T/events/tracepoints/signal_deliver ] || fail "no events/tracepoints/signal_deliver"
grep -qx 't:tpt/gen signal_generate sig=$arg1:s32 grp=$arg4:s32 res=$arg5:s32' $DE ||
	fail "listing: $(cat $DE)"
grep -qx 't:tracepoints/signal_deliver signal_deliver' $DE || fail "listing: $(cat $DE)"
[ "$(grep -c '^t:tpt/any ' $DE)" = 2 ] || fail "listing: $(cat $DE)"
grep -q 'field:s32 sig;' $T/events/tpt/gen/format || fail "format: $(cat $T/events/tpt/gen/format)"
[ "$(stat_of event_probes)" = 5 ] || fail "defined: $(st)"
idle defined
fire
[ -z "$tr" ] || fail "idle events recorded: $tr"

# One event enabled: the stub attached and hooked; the record holds signal_generate's sig,
# group (kill(2): 1) and result (delivered: 0), once.
echo 1 > $T/events/tpt/gen/enable || fail "enable gen"
[ "$(stat_of event_tracepoint_stubs)" = 1 ] && [ "$(stat_of event_probes_registered)" = 1 ] ||
	fail "gen: $(st)"
grep -q '^__probestub_signal_generate ' $T/enabled_functions ||
	fail "stub not hooked: $(cat $T/enabled_functions)"
fire
[ "$(echo "$tr" | grep -c ' gen: (__probestub_signal_generate+0x[0-9a-f]*/0x[0-9a-f]*) sig=12 grp=1 res=0$')" = 1 ] ||
	fail "gen records: $tr"
echo "$tr" | grep -v ' gen: ' | grep -q . && fail "other records: $tr"

# A second event on the same tracepoint: one attachment for both; each records once.
echo 1 > $T/events/tpt/gen2/enable || fail "enable gen2"
[ "$(stat_of event_tracepoint_stubs)" = 1 ] && [ "$(stat_of event_probes_registered)" = 2 ] ||
	fail "gen gen2: $(st)"
fire
[ "$(echo "$tr" | grep -c ' gen: .* sig=12 grp=1 res=0$')" = 1 ] || fail "gen records: $tr"
[ "$(echo "$tr" | grep -c ' gen2: (__probestub_signal_generate+0x[0-9a-f]*/0x[0-9a-f]*) s=12$')" = 1 ] ||
	fail "gen2 records: $tr"
# The kernel's own event on the tracepoint records beside them, once.
echo 1 > $T/events/signal/signal_generate/enable || fail "enable the kernel's signal_generate"
fire
[ "$(echo "$tr" | grep -c ' signal_generate: sig=12 .* grp=1 res=0$')" = 1 ] ||
	fail "kernel's records: $tr"
[ "$(echo "$tr" | grep -c ' gen: .* sig=12 ')" = 1 ] && [ "$(echo "$tr" | grep -c ' gen2: .* s=12$')" = 1 ] ||
	fail "records beside the kernel's: $tr"
# The first event disabled: the stub stays for the second.
echo 0 > $T/events/tpt/gen/enable
[ "$(stat_of event_tracepoint_stubs)" = 1 ] && [ "$(stat_of event_probes_registered)" = 1 ] ||
	fail "gen2 alone: $(st)"
fire
[ "$(echo "$tr" | grep -c ' gen2: .* s=12$')" = 1 ] || fail "gen2 alone: $tr"
echo "$tr" | grep -q ' gen: ' && fail "disabled gen recorded: $tr"
echo 0 > $T/events/tpt/gen2/enable
idle "gen gen2 disabled"
# The kernel's own event still works: its probe was not touched by ours coming and going.
fire
[ "$(echo "$tr" | grep -c ' signal_generate: sig=12 ')" = 1 ] || fail "kernel's alone: $tr"
echo "$tr" | grep -qE ' gen2?: ' && fail "disabled events recorded: $tr"
echo 0 > $T/events/signal/signal_generate/enable

# Two probes of one event, on two tracepoints: the signal generated, then delivered, each
# with its number; the default-named event on signal_deliver too.
echo 1 > $T/events/tpt/any/enable || fail "enable any"
echo 1 > $T/events/tracepoints/signal_deliver/enable || fail "enable signal_deliver"
[ "$(stat_of event_tracepoint_stubs)" = 2 ] && [ "$(stat_of event_probes_registered)" = 3 ] ||
	fail "any: $(st)"
fire
[ "$(echo "$tr" | grep -c ' any: (__probestub_signal_generate+0x[0-9a-f]*/0x[0-9a-f]*) n=12$')" = 1 ] ||
	fail "any (generate) records: $tr"
[ "$(echo "$tr" | grep -c ' any: (__probestub_signal_deliver+0x[0-9a-f]*/0x[0-9a-f]*) n=12$')" = 1 ] ||
	fail "any (deliver) records: $tr"
[ "$(echo "$tr" | grep -c ' signal_deliver: (__probestub_signal_deliver+0x[0-9a-f]*/0x[0-9a-f]*)$')" = 1 ] ||
	fail "signal_deliver records: $tr"
# Enabled events cannot be removed.
echo '-:tpt/any' >> $DE 2>/dev/null && fail "removed an enabled event"
echo 0 > $T/events/tpt/any/enable
echo 0 > $T/events/tracepoints/signal_deliver/enable
idle "any disabled"

# sys_enter: $arg1 is the pt_regs of the syscall, $arg2 its number. umask(0123) is the one
# call with that argument (ash's umask also calls umask(0) and umask(old)).
case $(uname -m) in
x86_64) nr=95 a0='+112($arg1)' ;;	# pt_regs.di
aarch64) nr=166 a0='+0($arg1)' ;;	# pt_regs.regs[0]
*) nr= ;;
esac
if [ -n "$nr" ]; then
	echo "t:tpt/sys sys_enter nr=\$arg2:s64 a0=$a0:x64" >> $DE || fail "define sys"
	echo "nr == $nr" > $T/events/tpt/sys/filter || fail "filter sys"
	echo 1 > $T/events/tpt/sys/enable || fail "enable sys"
	echo > $T/trace
	echo 1 > $T/tracing_on
	(umask 0123)
	echo 0 > $T/tracing_on
	echo 0 > $T/events/tpt/sys/enable
	tr=$(grep -v '^#' $T/trace)
	[ "$(echo "$tr" | grep -c " sys: (__probestub_sys_enter+0x[0-9a-f]*/0x[0-9a-f]*) nr=$nr a0=0x53$")" = 1 ] ||
		fail "sys records: $tr"
	echo "$tr" | grep -v " nr=$nr " | grep -q . && fail "filter let through: $tr"
	idle "sys disabled"
fi

[ "$caught" -gt 0 ] || fail "the shell never caught its SIGUSR2"

# The kernel's own tracepoint probe events (CONFIG_FPROBE_EVENTS: the debug kernel) on the
# same tracepoint: ufgraph's stub attachment is its own (its data is ufgraph's, not NULL), so
# neither side's coming or going takes the other's away, and ufgraph's records only its own
# attachment's calls. The kernel's event sees the stub's calls from both attachments (it has
# no way to tell them apart): two records per hit while ufgraph's is attached.
if grep -qF 't[:[<group>/][<event>]] <tracepoint> [<args>]' $T/README; then
	echo 't:ktp/kgen signal_generate s=$arg1:s32' >> $T/dynamic_events || fail "the kernel's t: event"
	echo 't:tpt/gen3 signal_generate s=$arg1:s32' >> $DE || fail "define gen3"
	echo 1 > $T/events/ktp/kgen/enable || fail "enable kgen"
	echo 1 > $T/events/tpt/gen3/enable || fail "enable gen3"
	fire
	[ "$(echo "$tr" | grep -c ' gen3: .* s=12$')" = 1 ] || fail "gen3 beside kgen: $tr"
	[ "$(echo "$tr" | grep -c ' kgen: .* s=12$')" = 2 ] || fail "kgen beside gen3: $tr"
	echo 0 > $T/events/tpt/gen3/enable
	fire
	[ "$(echo "$tr" | grep -c ' kgen: .* s=12$')" = 1 ] || fail "kgen after gen3: $tr"
	echo "$tr" | grep -q ' gen3: ' && fail "disabled gen3 recorded: $tr"
	echo 1 > $T/events/tpt/gen3/enable || fail "enable gen3 again"
	echo 0 > $T/events/ktp/kgen/enable
	echo '-:ktp/kgen' >> $T/dynamic_events || fail "remove kgen"
	fire
	[ "$(echo "$tr" | grep -c ' gen3: .* s=12$')" = 1 ] || fail "gen3 after kgen went: $tr"
	echo 0 > $T/events/tpt/gen3/enable
	echo '-:tpt/gen3' >> $DE || fail "remove gen3"
	idle "gen3 removed"
fi

# A module's tracepoint: the kernel's trace-events sample fires foo_bar("hello", cnt, ...) once
# a second from its thread, cnt counting up. The module is held while a probe is defined on
# its tracepoint; once it is unloaded, its tracepoint is not found.
if [ -f $KO/trace-events-sample.ko ]; then
	insmod $KO/trace-events-sample.ko || fail "insmod trace-events-sample"
	echo > $EL
	echo 't:tpt/foo foo_bar s=+0($arg1):string bar=$arg2:s32' >> $DE ||
		fail "define foo: $(cat $EL) $(grep trace_events /proc/modules) $(dmesg | tail -3)"
	rmmod trace_events_sample 2>/dev/null && fail "rmmod while a probe is defined on its tracepoint"
	idle "foo defined"
	echo 1 > $T/events/tpt/foo/enable || fail "enable foo"
	[ "$(stat_of event_tracepoint_stubs)" = 1 ] || fail "foo: $(st)"
	echo > $T/trace
	echo 1 > $T/tracing_on
	sleep 3
	echo 0 > $T/tracing_on
	echo 0 > $T/events/tpt/foo/enable
	idle "foo disabled"
	tr=$(grep -v '^#' $T/trace)
	recs=$(echo "$tr" | grep -c ' foo: (__probestub_foo_bar+0x[0-9a-f]*/0x[0-9a-f]* \[trace_events_sample\]) s="hello" bar=[0-9]*$')
	[ "$recs" -ge 2 ] && [ "$recs" = "$(echo "$tr" | grep -c .)" ] || fail "foo records: $tr"
	echo "$tr" | sed 's/.* bar=//' | awk 'NR > 1 && $1 != prev + 1 { exit 1 } { prev = $1 }' ||
		fail "foo: bar does not count up by one: $tr"
	echo '-:tpt/foo' >> $DE || fail "remove foo"
	rmmod trace_events_sample || fail "rmmod trace-events-sample after the probe went"
	echo > $EL
	echo 't:tpt/foo foo_bar' >> $DE 2>/dev/null && fail "accepted the tracepoint of an unloaded module"
	grep -q 'error: Tracepoint is not found' $EL || fail "error_log: $(cat $EL)"
fi


# Removal: one event, then the rest; nothing is left.
echo '-:tpt/gen2' >> $DE || fail "remove gen2"
[ -d $T/events/tpt/gen2 ] && fail "events/tpt/gen2 still there"
grep -q 'tpt/gen2 ' $DE && fail "gen2 still listed"
echo 1 > $T/events/tpt/gen/enable || fail "enable gen after removing gen2"
fire
[ "$(echo "$tr" | grep -c ' gen: .* sig=12 ')" = 1 ] || fail "gen after removing gen2: $tr"
echo 0 > $T/events/tpt/gen/enable
echo > $DE || fail "clear"
[ -s $DE ] && fail "not cleared: $(cat $DE)"
[ -d $T/events/tpt ] && fail "events/tpt still there"
[ -d $T/events/tracepoints/signal_deliver ] && fail "events/tracepoints/signal_deliver still there"
[ "$(stat_of events)" = 0 ] && [ "$(stat_of event_probes)" = 0 ] || fail "events left: $(st)"
idle removed
# Defined but idle events go with the module.
echo 't:tpt/last signal_generate' > $DE || fail "define last"
unload
[ -d $T/events/tpt ] && fail "events/tpt outlived the module"
exit 0
