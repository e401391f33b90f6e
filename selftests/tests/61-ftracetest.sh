# Upstream's own fprobe- and tprobe-event cases (tools/testing/selftests/ftrace) run by upstream's
# ftracetest against ufgraph's events, the .tc files unmodified: the 6.12 source's six (seven with
# BTF: add_remove_btfarg.tc), and upstream's
# newest ones when the initramfs has them (/ftrace/upstream, see Documentation/events.md).
# Plumbing: our control files (debugfs) are bind-mounted over tracefs's dynamic_events,
# error_log and README for the run, so the cases find them where they look; the kernel's
# trace-events sample module (built from the source we build against) is installed for
# modprobe. Before that, ufgraph's README is checked for upstream's syntax lines of what
# ufgraph has, and for the absence of those of what it has not.
. /selftests/lib.sh
[ -x /ftrace/ftracetest ] || skip "ftracetest is not in the initramfs"
grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' $T/README && \
	skip "this kernel has its own fprobe events (CONFIG_FPROBE_EVENTS): they would answer instead"
load
R=$DBG/ufgraph/README
# What the cases' `requires:` and checks grep for, for the features ufgraph has...
for s in 'f[:[<group>/][<event>]] <func-name>[%return] [<args>]' 'kernel return probes support:' \
	't[:[<group>/][<event>]] <tracepoint> [<args>]' \
	'%pd/%pD' 'imm-value' 'imm-string' 'Create/append/' ' <type>\[<array-size>\]' \
	'-:[<group>/][<event>]' 'error_log' '$current' 'this_cpu_read(<fetcharg>)'; do
	grep -qF -- "$s" $R || fail "README lacks '$s'"
done
grep -A1 'fetcharg:' $R | grep -q '\$comm' || fail "README: \$comm not on the line after fetcharg:"
# BTF arguments where vmlinux's BTF is there (the cases then try them), and not elsewhere.
btfcase= want=6
if [ -e /sys/kernel/btf/vmlinux ]; then
	grep -qF '<argname>[->field[->field|.field...]]' $R || fail "README lacks <argname>"
	grep -qF '[(structname[,field])]<argname>[->field[->field|.field...]]' $R ||
		fail "README lacks typecasts"
	grep -qF '[(structname[,field])](fetcharg)->field[->field|.field...]' $R ||
		fail "README lacks typecasts of a fetcharg"
	btfcase=test.d/dynevent/add_remove_btfarg.tc want=7
else
	grep -qF '<argname>' $R && fail "README advertises <argname> without BTF"
	grep -qF 'structname' $R && fail "README advertises typecasts without BTF"
fi
# ...and not for those it has not (eprobes, kprobe/uprobe files): a case that looks for them
# must not run against ufgraph's dynamic_events.
for s in \
	'e[:[<group>/][<event>]]' 'p[:[<group>/][<event>]]' 'kprobe_events' 'uprobe_events'; do
	grep -qF -- "$s" $R && fail "README advertises '$s'"
done
bound=
cleanup() {
	for f in $bound; do umount $T/$f; done
}
trap cleanup EXIT
for f in dynamic_events error_log README; do
	mount --bind $DBG/ufgraph/$f $T/$f || fail "cannot bind $f"
	bound="$bound $f"
done
# modprobe finds the trace-events sample where it looks.
mods=/lib/modules/$(uname -r)
if [ -f $KO/trace-events-sample.ko ]; then
	mkdir -p $mods/extra
	cp $KO/trace-events-sample.ko $mods/extra/
	depmod || fail "depmod"
fi
cd /ftrace || fail "no /ftrace"
# run LOG EXPECTED CASES...: every case passes.
run() {
	log=$1 want=$2
	shift 2
	./ftracetest --fail-unsupported --fail-unresolved -v "$@" > $log 2>&1
	rc=$?
	grep -E '^\[[0-9]+\]|^# of ' $log >&2
	if [ $rc != 0 ] || ! grep -q "^# of passed:  *$want$" $log; then
		tail -60 $log >&2
		fail "ftracetest exit $rc ($log)"
	fi
}
run /tmp/ftracetest.log $want test.d/dynevent/add_remove_fprobe.tc \
	test.d/dynevent/fprobe_args_vfs.tc \
	test.d/dynevent/fprobe_entry_arg.tc test.d/dynevent/fprobe_syntax_errors.tc \
	test.d/dynevent/add_remove_tprobe.tc test.d/dynevent/tprobe_syntax_errors.tc $btfcase
if [ -d upstream ]; then
	set -- upstream/*.tc
	echo "upstream's newest cases: $*" >&2
	run /tmp/ftracetest-upstream.log $# "$@"
else
	echo "no upstream newest cases in this initramfs (Documentation/events.md)" >&2
fi
cleanup
bound=
echo > $T/dynamic_events
lsmod | grep -q trace_events_sample && rmmod trace_events_sample
unload
exit 0
