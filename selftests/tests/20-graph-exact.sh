# The fgraph core sees every entry and every return of a hooked function, exactly.
. /selftests/lib.sh
load graph=version_proc_show
[ "$(stat_of registered_ops)" = 1 ] || fail "stats: $(cat $DBG/ufgraph/stats)"
[ "$(stat_of tasks_with_stack)" -gt 10 ] || fail "tasks without stacks: $(cat $DBG/ufgraph/stats)"
for i in $(seq 1 40); do cat /proc/version > /dev/null; done
set -- $(graph_of version_proc_show)
[ "$1" = 40 ] && [ "$2" = 40 ] || fail "entries/returns $1/$2, expected 40/40"
[ "$(stat_of live_frames)" = 0 ] || fail "live frames left: $(cat $DBG/ufgraph/stats)"
# /proc/version still reads right through the hooked function.
grep -q "^Linux version" /proc/version || fail "/proc/version broken: $(cat /proc/version)"
unload
exit 0
