# Tasks that never pass sched_process_fork: io_uring's workers (create_io_thread()) and
# vhost's. Before session 4 they got no shadow stack and their hooked calls were silently
# missed. A read forced onto an io_uring worker (IOSQE_ASYNC) runs io_wq_submit_work() there.
. /selftests/lib.sh
command -v uringread > /dev/null || skip "no uringread helper (x86_64 only)"
grep -qw io_wq_submit_work /sys/kernel/tracing/available_filter_functions || skip "io_wq_submit_work is not traceable"
load graph=io_wq_submit_work
out=$(uringread /proc/version 16 10)
[ "$out" = "ok 10" ] || fail "uringread: $out"
set -- $(graph_of io_wq_submit_work)
[ "$1" -ge 10 ] && [ "$1" = "$2" ] || fail "io_wq_submit_work entries/returns $1/$2 (the worker's calls were missed): $(cat $DBG/ufgraph/stats)"
grep -q "missed_nostack [1-9]" $DBG/ufgraph/stats && fail "calls missed for lack of a stack: $(cat $DBG/ufgraph/stats)"
unload
exit 0
