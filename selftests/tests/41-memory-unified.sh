# One shadow stack per task, whatever the number of users: a graph user, fprobes and
# kretprobes at once cost no more per task than one of them, and each user's missed
# counts are reported.
. /selftests/lib.sh
load graph=version_proc_show
# Both numbers from one read of the file: every command of this shell forks tasks.
snapshot() { awk '$1 == "tasks_with_stack" { t = $2 } $1 == "shadow_stack_bytes" { b = $2 } END { print t, b }' $DBG/ufgraph/stats; }
set -- $(snapshot)
per_task_one=$(($2 / $1))
insmod $KO/fprobe_client.ko filter=vfs_read || fail "fprobe client"
insmod $KO/kretprobe_client.ko func=vfs_write || fail "kretprobe client"
insmod $KO/ufgraph_client.ko func=vfs_open || fail "graph client"
for i in $(seq 1 10); do cat /proc/version > /tmp/x; done
set -- $(snapshot)
per_task_all=$(($2 / $1))
[ "$per_task_one" = 4096 ] && [ "$per_task_all" = 4096 ] || fail "per task: $per_task_one with one user, $per_task_all with four"
[ "$(stat_of registered_ops)" = 3 ] || fail "expected 3 graph ops (graph=, fprobes, C client): $(cat $DBG/ufgraph/stats)"
grep -q "^ops " $DBG/ufgraph/stats || fail "no per-user lines: $(cat $DBG/ufgraph/stats)"
rmmod ufgraph_client kretprobe_client fprobe_client
unload
exit 0
