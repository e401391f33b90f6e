# Register on enable (upstream since 6.17): a defined fprobe event hooks nothing, costs no
# ftrace site and no ops; its first user (an instance enabling it, or perf) registers its
# probes, its last user leaving unregisters them. Several events on one function, enabled and
# disabled in any order, record exactly the calls made while each is enabled; perf opened on
# an event an instance enables shares its probes; a probe appended to an enabled event hooks at
# once; an event whose functions went away with their module while it was idle fails its
# enable with ENOENT and an error_log entry, leaving nothing registered (all of its probes or
# none); a module reloaded between definition and enable is matched again; rmmod ufgraph is
# refused while an event is enabled and takes idle events with it.
. /selftests/lib.sh
P=/sys/module/globfns/parameters
load_tracing_off
insmod $KO/globfns.ko || fail "insmod globfns"
hooked() { grep -c "$1" $T/enabled_functions; }
st() { tr '\n' ' ' < $DBG/ufgraph/stats; }
ops0=$(stat_of registered_ops)
ef0=$(grep -c . $T/enabled_functions)
# Nothing of ufgraph's registered: no probe, no function, no ops, no ftrace site.
idle() {
	[ "$(stat_of event_probes_registered)" = 0 ] && [ "$(stat_of fprobes)" = 0 ] &&
		[ "$(stat_of fprobe_functions)" = 0 ] || fail "$1: probes registered: $(st)"
	[ "$(stat_of registered_ops)" = "$ops0" ] || fail "$1: ops registered: $(st)"
	[ "$(grep -c . $T/enabled_functions)" = "$ef0" ] || fail "$1: hooked: $(cat $T/enabled_functions)"
}
# Calls each globfns function once with 7 (callers get 8 + 14 + 307 + 3 back) and checks how
# many records each event (A B C) got from them in the top instance.
phase() { # NAME A B C
	echo > $T/trace
	echo 1 > $T/tracing_on
	echo 7 > $P/run
	echo 0 > $T/tracing_on
	[ "$(cat $P/sum)" = 332 ] || fail "$1: sum $(cat $P/sum)"
	tr=$(grep -v '^#' $T/trace)
	a=$(echo "$tr" | grep -c ' a: (ufgt_glob_one+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) n=7$')
	b=$(echo "$tr" | grep -c ' b: (run_set+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\] <- ufgt_glob_one \[globfns\]) r=8$')
	c=$(echo "$tr" | grep -c ' c: (ufgt_glob_t')
	[ "$a $b $c" = "$2 $3 $4" ] || fail "$1: records a b c: $a $b $c, not $2 $3 $4: $tr"
	[ "$(echo "$tr" | grep -c .)" = $(($2 + $3 + $4)) ] || fail "$1: other records: $tr"
}

# Three events, two of them on one function (entry and exit), defined: nothing hooked, and
# calls record nothing.
echo 'f:ufge/a ufgt_glob_one n=$arg1:s32' >> $DE || fail "define a"
echo 'f:ufge/b ufgt_glob_one%return r=$retval:s32' >> $DE || fail "define b"
echo 'f:ufge/c ufgt_glob_t*' >> $DE || fail "define c"
[ "$(stat_of event_probes)" = 3 ] || fail "defined: $(st)"
idle defined
phase defined 0 0 0

# Enabled and disabled in any order: each records exactly the calls made while it is enabled,
# and each function stays hooked while any event on it is enabled.
echo 1 > $T/events/ufge/a/enable || fail "enable a"
[ "$(stat_of fprobes)" = 1 ] && [ "$(stat_of fprobe_functions)" = 1 ] || fail "a: $(st)"
[ "$(hooked '^ufgt_glob_one ')" = 1 ] && [ "$(hooked ufgt_glob_t)" = 0 ] || fail "a: $(grep ufgt $T/enabled_functions)"
phase a 1 0 0
echo 1 > $T/events/ufge/b/enable || fail "enable b"
[ "$(stat_of fprobes)" = 2 ] && [ "$(stat_of fprobe_functions)" = 1 ] || fail "a b: $(st)"
phase "a b" 1 1 0
echo 1 > $T/events/ufge/c/enable || fail "enable c"
[ "$(stat_of fprobe_functions)" = 3 ] && [ "$(hooked ufgt_glob_)" = 3 ] || fail "a b c: $(st)"
phase "a b c" 1 1 2
echo 0 > $T/events/ufge/a/enable
[ "$(stat_of fprobes)" = 2 ] && [ "$(hooked '^ufgt_glob_one ')" = 1 ] || fail "b c: $(st)"
phase "b c" 0 1 2
echo 0 > $T/events/ufge/b/enable
[ "$(hooked '^ufgt_glob_one ')" = 0 ] && [ "$(stat_of fprobe_functions)" = 2 ] || fail "c: $(st)"
phase c 0 0 2
echo 1 > $T/events/ufge/a/enable
phase "c a" 1 0 2
echo 0 > $T/events/ufge/c/enable
phase "a again" 1 0 0
echo 0 > $T/events/ufge/a/enable
idle "all disabled"
phase "all disabled" 0 0 0
# Enabled and disabled again, all at once (one write enables the group).
echo 1 > $T/events/ufge/enable || fail "enable ufge"
[ "$(stat_of event_probes_registered)" = 3 ] || fail "ufge: $(st)"
phase "ufge" 1 1 2
echo 0 > $T/events/ufge/enable
idle "ufge disabled"

# Two instances: the probes stay registered while either enables the event.
mkdir $T/instances/ufge || fail "cannot make an instance"
echo 1 > $T/events/ufge/a/enable
echo 1 > $T/instances/ufge/events/ufge/a/enable || fail "enable a in the instance"
echo 0 > $T/events/ufge/a/enable
[ "$(stat_of fprobes)" = 1 ] || fail "a in the instance: $(st)"
echo > $T/instances/ufge/trace
echo 7 > $P/run
[ "$(grep -c ' a: (ufgt_glob_one' $T/instances/ufge/trace)" = 1 ] || fail "instance records: $(cat $T/instances/ufge/trace)"
echo 0 > $T/instances/ufge/events/ufge/a/enable
idle "instance disabled"
rmdir $T/instances/ufge || fail "rmdir instance"

# A probe appended to an enabled event hooks at once; to an idle one, not.
echo 1 > $T/events/ufge/a/enable
echo 'f:ufge/a ufgt_glob_three n=$arg1:s32' >> $DE || fail "append to a"
[ "$(stat_of fprobes)" = 2 ] && [ "$(stat_of event_probes_registered)" = 2 ] || fail "appended: $(st)"
echo > $T/trace; echo 1 > $T/tracing_on; echo 7 > $P/run; echo 0 > $T/tracing_on
[ "$(grep -c ' a: (ufgt_glob_\(one\|three\)+' $T/trace)" = 2 ] || fail "appended records: $(cat $T/trace)"
echo 0 > $T/events/ufge/a/enable
echo 'f:ufge/a ufgt_globx_four n=$arg1:s32' >> $DE || fail "append to idle a"
idle "appended to idle"

# perf alone registers the probes while it listens; perf beside an instance shares them.
if command -v perfcount > /dev/null; then
	echo 'f:ufge/rd vfs_read count=$arg3:u32' >> $DE || fail "define rd"
	id=$(cat $T/events/ufge/rd/id)
	out=$(perfcount $id /proc/version 41 25)
	echo "$out" | grep -qx 'count 25' || fail "perf alone counted: $out"
	idle "perf closed"
	echo 1 > $T/events/ufge/rd/enable || fail "enable rd"
	echo > $T/trace
	echo 1 > $T/tracing_on
	out=$(perfcount $id /proc/version 41 25)
	echo 0 > $T/tracing_on
	echo "$out" | grep -qx 'count 25' || fail "perf beside ftrace counted: $out"
	echo "$out" | grep -qx 'samples 25 raw_ok 25' || fail "perf beside ftrace sampled: $out"
	n=$(grep -c 'perfcount-[0-9]* .* rd: (vfs_read+0x[0-9a-f]*/0x[0-9a-f]*) count=41$' $T/trace)
	[ "$n" = 25 ] || fail "ftrace records beside perf: $n: $(grep perfcount $T/trace | head -3)"
	# perf closed: the instance still has the probe.
	[ "$(stat_of fprobes)" = 1 ] && [ "$(hooked '^vfs_read ')" = 1 ] || fail "after perf: $(st)"
	echo 0 > $T/events/ufge/rd/enable
	idle "rd disabled"
	echo '-:ufge/rd' >> $DE || fail "remove rd"
fi

# Appending to an event checks the probe against the event before its function, as upstream
# (which verifies the target last): a probe of another kind on a function that does not exist
# is DIFF_PROBE_TYPE, caret at the start, not BAD_PROBE_ADDR.
echo 'f:ufge/kind vfs_read' >> $DE || fail "define kind"
echo > $EL
echo 'f:ufge/kind ufg_no_such_function%return' >> $DE 2>/dev/null && fail "appended an exit probe"
grep -q 'trace_fprobe: error: Probe type is different from existing probe' $EL || fail "error_log: $(cat $EL)"
grep -qxF "$(printf '%11s^' '')" $EL || fail "error_log caret: $(cat $EL)"
echo '-:ufge/kind' >> $DE || fail "remove kind"

# Functions gone with their module while the event was idle: the enable fails with ENOENT, is
# logged against the definition, and leaves nothing registered: not even the event's other
# probe, on a kernel function.
echo 'f:ufge/mix vfs_read' >> $DE || fail "define mix"
echo 'f:ufge/mix ufgt_glob_two' >> $DE || fail "append to mix"
rmmod globfns || fail "rmmod globfns"
echo > $EL
dmesg -c > /dev/null
err=$(echo 1 2>&1 > $T/events/ufge/mix/enable) && fail "enabled mix without its functions"
echo "$err" | grep -q "No such file or directory" || fail "enable mix: '$err', not ENOENT"
[ "$(cat $T/events/ufge/mix/enable)" = 0 ] || fail "mix shows enabled"
grep -q 'trace_fprobe: error: Invalid probed address or symbol' $EL || fail "error_log: $(cat $EL)"
grep -qxF '  Command: f:ufge/mix ufgt_glob_two' $EL || fail "error_log command: $(cat $EL)"
grep -qxF "$(printf '%22s^' '')" $EL || fail "error_log caret: $(cat $EL)"
dmesg | grep -q "Could not enable event mix" || fail "kernel log: $(dmesg | tail -3)"
idle "failed enable"
[ "$(hooked '^vfs_read ')" = 0 ] || fail "vfs_read left hooked"
echo 1 > $T/events/ufge/enable 2>/dev/null && fail "enabled ufge with mix's functions gone"
idle "failed group enable"
echo '-:ufge/mix' >> $DE || fail "remove mix"
# The other events' probes on the module's functions fail the same way; without them (a and c
# match nothing any more), only b is left, which fails too: remove them all.
echo 1 > $T/events/ufge/b/enable 2>/dev/null && fail "enabled b without its function"
idle "b refused"
echo > $DE || fail "clear"

# A module reloaded between definition and enable (its functions elsewhere now): the glob is
# matched again when the event is enabled, and the new functions record.
insmod $KO/globfns.ko || fail "insmod globfns again"
echo 'f:ufge/late ufgt_glob_* n=$arg1:s32' >> $DE || fail "define late"
rmmod globfns || fail "rmmod globfns (late)"
insmod $KO/globfns.ko || fail "insmod globfns (late)"
echo 1 > $T/events/ufge/late/enable || fail "enable late after the reload: $(tail -3 $EL)"
[ "$(hooked 'ufgt_glob_[a-z]* \[globfns\]')" = 3 ] || fail "late hooked: $(grep ufgt $T/enabled_functions)"
echo > $T/trace; echo 1 > $T/tracing_on; echo 7 > $P/run; echo 0 > $T/tracing_on
[ "$(grep -c ' late: (ufgt_glob_[a-z]*+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) n=7$' $T/trace)" = 3 ] ||
	fail "late records: $(cat $T/trace)"
[ "$(cat $P/sum)" = 332 ] || fail "late: sum $(cat $P/sum)"

# rmmod ufgraph: refused while an event is enabled, changing nothing; with the events idle it
# goes, and takes them with it.
rmmod ufgraph 2>/dev/null && fail "rmmod ufgraph with an event enabled"
[ "$(stat_of fprobes)" = 1 ] || fail "refused rmmod changed: $(st)"
echo 0 > $T/events/ufge/late/enable
echo 'f:ufge/idle vfs_write' >> $DE || fail "define idle"
unload
[ -d $T/events/ufge ] && fail "events/ufge left after rmmod"
[ "$(grep -c . $T/enabled_functions)" = "$ef0" ] || fail "hooked after rmmod: $(cat $T/enabled_functions)"
echo 7 > $P/run
[ "$(cat $P/sum)" = 332 ] || fail "after rmmod: sum $(cat $P/sum)"
rmmod globfns || fail "rmmod globfns (end)"
exit 0
