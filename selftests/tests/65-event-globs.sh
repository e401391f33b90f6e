# Globs in f: definitions, as upstream's: one event fires for every function its glob matches
# (module and kernel functions), with that function in each record; %return with a glob sees
# each function's own return value while callers still get theirs; a glob that matches nothing
# is refused with upstream's error_log entry and caret and leaves nothing behind; disabling the
# events (or unloading the module their functions live in) unhooks every function. (Test 68 has
# the details of register on enable.)
. /selftests/lib.sh
P=/sys/module/globfns/parameters
load_tracing_off
insmod $KO/globfns.ko || fail "insmod globfns"
# The functions ufgraph hooked, as ftrace lists them.
hooked() { grep -c "$1" $T/enabled_functions; }

# Entry: ufgt_glob_* is one, two and three, not ufgt_globx_four.
echo 'f:ufgg/ent ufgt_glob_* n=$arg1:s32' >> $DE || fail "define ent: $(tail -3 $EL)"
# Exit: t[wh]?* is two and three; the argument is read at entry, the return value at exit.
echo 'f:ufgg/ret ufgt_glob_t[wh]?*%return r=$retval:s32 n=$arg1:s32' >> $DE || fail "define ret: $(tail -3 $EL)"
# Without an event name: upstream's default, made from the glob ('*' becomes '_', '?' stays).
echo 'f ufgt_glob_?ne' >> $DE || fail "define ?ne: $(tail -3 $EL)"
echo 'f ufgt_glob_*%return' >> $DE || fail "define default exit: $(tail -3 $EL)"
grep -qx 'f:ufgg/ent ufgt_glob_\* n=$arg1:s32' $DE || fail "dynamic_events: $(cat $DE)"
grep -qx 'f:ufgg/ret ufgt_glob_t\[wh\]?\*%return r=$retval:s32 n=$arg1:s32' $DE || fail "dynamic_events: $(cat $DE)"
grep -qx 'f:fprobes/ufgt_glob_?ne__entry ufgt_glob_?ne' $DE || fail "dynamic_events: $(cat $DE)"
grep -qx 'f:fprobes/ufgt_glob____exit ufgt_glob_\*%return' $DE || fail "dynamic_events: $(cat $DE)"
[ -d "$T/events/fprobes/ufgt_glob_?ne__entry" ] || fail "no events/fprobes/ufgt_glob_?ne__entry: $(ls $T/events/fprobes)"
[ -d "$T/events/fprobes/ufgt_glob____exit" ] || fail "no events/fprobes/ufgt_glob____exit: $(ls $T/events/fprobes)"
# Defined, they hook nothing.
[ "$(stat_of fprobes)" = 0 ] && [ "$(stat_of event_probes)" = 4 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
[ "$(hooked ufgt_glob)" = 0 ] || fail "hooked while disabled: $(grep ufgt $T/enabled_functions)"

echo 1 > $T/events/ufgg/enable || fail "enable ufgg"
echo 1 > $T/events/fprobes/enable || fail "enable fprobes"
# Three functions hooked, by four probes; the fourth function is not.
[ "$(stat_of fprobes)" = 4 ] && [ "$(stat_of event_probes_registered)" = 4 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
[ "$(stat_of fprobe_functions)" = 3 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
[ "$(hooked 'ufgt_glob_[a-z]* \[globfns\]')" = 3 ] || fail "enabled_functions: $(grep ufgt $T/enabled_functions)"
[ "$(hooked ufgt_globx_four)" = 0 ] || fail "ufgt_globx_four hooked: $(grep ufgt $T/enabled_functions)"
echo 1 > $T/tracing_on
echo 7 > $P/run
echo 0 > $T/tracing_on
# Callers got their values back: 8 + 14 + 307 + 3.
[ "$(cat $P/sum)" = 332 ] || fail "sum $(cat $P/sum), not 332"
tr=$(grep -v '^#' $T/trace)
has() { echo "$tr" | grep -q "$1" || fail "no record like '$1' in: $tr"; }
n_of() { echo "$tr" | grep -c "$1"; }
for f in one two three; do
	has " ent: (ufgt_glob_$f+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) n=7$"
done
[ "$(n_of ' ent: ')" = 3 ] || fail "ent fired $(n_of ' ent: ') times: $tr"
has " ret: (run_set+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\] <- ufgt_glob_two \[globfns\]) r=14 n=7$"
has " ret: (run_set+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\] <- ufgt_glob_three \[globfns\]) r=307 n=7$"
[ "$(n_of ' ret: ')" = 2 ] || fail "ret fired $(n_of ' ret: ') times: $tr"
has " ufgt_glob_?ne__entry: (ufgt_glob_one+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\])$"
[ "$(n_of ' ufgt_glob_?ne__entry: ')" = 1 ] || fail "?ne fired $(n_of ' ufgt_glob_?ne__entry: ') times: $tr"
[ "$(n_of ' ufgt_glob____exit: ')" = 3 ] || fail "default exit fired $(n_of ' ufgt_glob____exit: ') times: $tr"
has " ufgt_glob____exit: (run_set+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\] <- ufgt_glob_one \[globfns\])$"
echo "$tr" | grep -q ufgt_globx_four && fail "ufgt_globx_four recorded: $tr"

# A second probe on an existing event with another glob: the event now fires for four functions.
echo 0 > $T/events/ufgg/ent/enable
echo 'f:ufgg/ent ufgt_globx_* n=$arg1:s32' >> $DE || fail "append to ent: $(tail -3 $EL)"
[ "$(grep -c '^f:ufgg/ent ' $DE)" = 2 ] || fail "dynamic_events: $(cat $DE)"
# The same glob again is the exact same probe.
echo 'f:ufgg/ent ufgt_globx_* n=$arg1:s32' >> $DE 2>/dev/null && fail "accepted the same probe twice"
grep -q 'error: There is already the exact same probe event' $EL || fail "error_log: $(tail -3 $EL)"
echo 0 > $T/events/enable
echo > $T/trace
echo 1 > $T/events/ufgg/ent/enable
echo 1 > $T/tracing_on
echo 5 > $P/run
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgg/ent/enable
tr=$(grep -v '^#' $T/trace)
[ "$(n_of ' ent: ')" = 4 ] || fail "ent fired $(n_of ' ent: ') times: $tr"
has " ent: (ufgt_globx_four+0x[0-9a-f]*/0x[0-9a-f]* \[globfns\]) n=5$"
[ "$(cat $P/sum)" = 322 ] || fail "sum $(cat $P/sum), not 322"

# Kernel functions: vfs_read* is vfs_read, vfs_readv and vfs_readlink.
echo 'f:ufgg/vfs vfs_read*' >> $DE || fail "define vfs: $(tail -3 $EL)"
[ "$(hooked '^vfs_read')" = 0 ] || fail "enabled_functions: $(grep vfs_read $T/enabled_functions)"
echo > $T/trace
echo 1 > $T/events/ufgg/vfs/enable
[ "$(hooked '^vfs_read')" = 3 ] || fail "enabled_functions: $(grep vfs_read $T/enabled_functions)"
echo 1 > $T/tracing_on
dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
ls -l /proc/self/exe > /dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgg/vfs/enable
tr=$(grep -v '^#' $T/trace)
has " vfs: (vfs_read+0x[0-9a-f]*/0x[0-9a-f]*)$"
has " vfs: (vfs_readlink+0x[0-9a-f]*/0x[0-9a-f]*)$"

# A plain name is a glob too: it selects every traceable function of that name (static functions
# of the same name in several files), as upstream's filter does.
dup=
for f in default_read_file c_start m_start; do
	[ "$(grep -cx "$f" $T/available_filter_functions)" -ge 2 ] && { dup=$f; break; }
done
[ -n "$dup" ] || fail "no duplicate function name among: default_read_file c_start m_start"
n=$(grep -cx "$dup" $T/available_filter_functions)
echo "f:ufgg/dup $dup" >> $DE || fail "define dup: $(tail -3 $EL)"
echo 1 > $T/events/ufgg/dup/enable || fail "enable dup"
[ "$(hooked "^$dup ")" = "$n" ] || fail "$dup hooked $(hooked "^$dup ") times, not $n: $(grep "^$dup " $T/enabled_functions)"
echo 0 > $T/events/ufgg/dup/enable
echo '-:ufgg/dup' >> $DE || fail "remove dup"
[ "$(hooked "^$dup ")" = 0 ] || fail "$dup still hooked: $(grep "^$dup " $T/enabled_functions)"

# A glob that matches nothing: refused with upstream's entry, caret under the symbol, and
# nothing changes.
probes=$(stat_of fprobes); funcs=$(stat_of fprobe_functions); ef=$(grep -c . $T/enabled_functions)
listed=$(cat $DE)
echo > $EL
refused() { # DEFINITION: refused, logged with the caret at the symbol (its second word)
	echo "$1" >> $DE 2>/dev/null && fail "accepted '$1'"
	grep -q 'trace_fprobe: error: Invalid probed address or symbol' $EL || fail "error_log: $(cat $EL)"
	grep -qxF "  Command: $1" $EL || fail "error_log command: $(cat $EL)"
	head=${1%% *}
	caret=$(printf "%$((11 + ${#head} + 1))s^" '')
	grep -qxF "$caret" $EL || fail "error_log caret for '$1' (want '$caret'): $(cat $EL)"
	echo > $EL
}
refused 'f:ufgg/none ufgt_nomatch_*'
refused 'f:ufgg/none ufgt_glob_[xyz]*%return r=$retval'
refused 'f ufgt_nomatch_?'
# No module-qualified names (upstream 6.12 refuses them too); '!' does not invert (upstream's
# filter would then hook every function).
refused 'f:ufgg/none globfns:ufgt_glob_*'
refused 'f:ufgg/none !ufgt_glob_one'
[ "$(cat $DE)" = "$listed" ] || fail "dynamic_events changed: $(cat $DE)"
[ -d $T/events/ufgg/none ] && fail "events/ufgg/none left behind"
[ -d "$T/events/fprobes/ufgt_nomatch_?__entry" ] && fail "default-named event left behind"
[ "$(stat_of fprobes)" = "$probes" ] && [ "$(stat_of fprobe_functions)" = "$funcs" ] ||
	fail "probes left: $(cat $DBG/ufgraph/stats)"
[ "$(grep -c . $T/enabled_functions)" = "$ef" ] || fail "enabled_functions changed: $(cat $T/enabled_functions)"

# Disabled, and removed, the events hook nothing.
echo '-:ufgg/vfs' >> $DE || fail "remove vfs"
[ "$(hooked '^vfs_read')" = 0 ] || fail "vfs_read* still hooked: $(grep vfs_read $T/enabled_functions)"
echo '-:fprobes/ufgt_glob_?ne__entry' >> $DE || fail "remove ?ne"
echo > $DE || fail "clear"
[ -s $DE ] && fail "not cleared: $(cat $DE)"
[ -d $T/events/ufgg ] && fail "events/ufgg still there"
[ "$(stat_of fprobes)" = 0 ] && [ "$(stat_of fprobe_functions)" = 0 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
[ "$(hooked ufgt_glob)" = 0 ] || fail "still hooked: $(grep ufgt $T/enabled_functions)"
echo 7 > $P/run
[ "$(cat $P/sum)" = 332 ] || fail "sum $(cat $P/sum) after removal"

# A module going away takes its functions out of an enabled glob's probe; the event stays,
# and goes.
echo 'f:ufgg/late ufgt_glob*%return r=$retval:s32' >> $DE || fail "define late: $(tail -3 $EL)"
echo 1 > $T/events/ufgg/late/enable || fail "enable late"
[ "$(stat_of fprobe_functions)" = 4 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
dmesg -c > /dev/null
rmmod globfns || fail "rmmod globfns with a glob probe on its functions"
dmesg | grep -q "dropped 4 probed functions of a module going away" || fail "not dropped: $(dmesg | tail -3)"
[ "$(stat_of fprobe_functions)" = 0 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
grep -q '^f:ufgg/late ' $DE || fail "late gone with the module: $(cat $DE)"
echo 0 > $T/events/ufgg/late/enable || fail "disable late"
echo '-:ufgg/late' >> $DE || fail "remove late"
[ "$(stat_of fprobes)" = 0 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
unload
exit 0
