# Fork and exit storms while fork and exit paths are hooked: new tasks get stacks,
# dead tasks' stacks are freed, and frames of tasks that die inside hooked functions
# (do_exit never returns) are accounted for, so none is left pending.
. /selftests/lib.sh
load 'graph=copy_process'
before=$(stat_of tasks_with_stack)
for round in 1 2 3 4 5; do
	for i in $(seq 1 40); do (true) & done
	wait
done
set -- $(graph_of copy_process)
[ "$1" -ge 200 ] && [ "$1" = "$2" ] || fail "copy_process entries/returns $1/$2"
[ "$(stat_of fork_no_stack)" = 0 ] || fail "forks without a stack: $(cat $DBG/ufgraph/stats)"
sleep 0.5
after=$(stat_of tasks_with_stack)
[ "$after" -le $((before + 5)) ] || fail "stacks leak: $before before, $after after the storm"
unload

load 'graph=do_exit'
for i in $(seq 1 30); do (true) & done
wait
sleep 0.5
set -- $(graph_of do_exit)
[ "$1" -ge 30 ] && [ "$2" = 0 ] || fail "do_exit entries/returns $1/$2"
wait_for '[ "$(stat_of dead_frames)" -ge 30 ]' 30 || fail "dead frames not accounted: $(cat $DBG/ufgraph/stats)"
# Their frames go with their stacks: what is pending is only the few tasks of this
# shell's own command substitutions that exited but are not freed yet (an RCU grace
# period), not the 30+ that died above.
[ "$(stat_of live_frames)" -le 5 ] || fail "live frames: $(cat $DBG/ufgraph/stats)"
unload
exit 0
