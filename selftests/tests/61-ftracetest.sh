# Upstream's own fprobe-event cases (tools/testing/selftests/ftrace, from the 6.12 source, the
# .tc files unmodified) run by upstream's ftracetest against ufgraph's events. Plumbing: our
# control files (debugfs) are bind-mounted over tracefs's dynamic_events, error_log and README
# for the run, so the cases find them where they look (Documentation/events.md).
. /selftests/lib.sh
T=/sys/kernel/tracing
[ -x /ftrace/ftracetest ] || skip "ftracetest is not in the initramfs"
grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' $T/README && \
	skip "this kernel has its own fprobe events (CONFIG_FPROBE_EVENTS): they would answer instead"
load
bound=
cleanup() {
	for f in $bound; do umount $T/$f; done
}
trap cleanup EXIT
for f in dynamic_events error_log README; do
	mount --bind $DBG/ufgraph/$f $T/$f || fail "cannot bind $f"
	bound="$bound $f"
done
cd /ftrace || fail "no /ftrace"
./ftracetest --fail-unsupported --fail-unresolved -v \
	test.d/dynevent/add_remove_fprobe.tc test.d/dynevent/fprobe_args_vfs.tc \
	test.d/dynevent/fprobe_entry_arg.tc test.d/dynevent/fprobe_syntax_errors.tc > /tmp/ftracetest.log 2>&1
rc=$?
grep -E '^\[[0-9]+\]|^# of ' /tmp/ftracetest.log >&2
if [ $rc != 0 ] || ! grep -q '^# of passed:  *4$' /tmp/ftracetest.log; then
	tail -60 /tmp/ftracetest.log >&2
	fail "ftracetest exit $rc"
fi
cleanup
bound=
echo > $T/dynamic_events
unload
exit 0
