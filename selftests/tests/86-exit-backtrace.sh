# A backtrace taken at a return, as a user takes one: the `stacktrace` trigger on a
# `%return` event runs the kernel's own unwinder (stack_trace_save) inside ufgraph's return
# path. It must name the function's real caller and go on past it to the system call
# entry, not stop at (or show) ufgraph's trampoline. A second event on the caller itself
# checks the trace still names the caller when the caller is hooked too, the trampoline it
# will return to then standing for the caller's own return address (Documentation/fgraph.md,
# "Unwinding": on x86_64 the kernel's ORC unwinder stops there cleanly, on arm64 it goes on).
. /selftests/lib.sh
load_tracing_off
# Offsets in the trace: the trampoline's own frame (its call of the return handler) is
# ufgraph_return_trampoline+0x<n>, a return address that is our trampoline is +0x0.
echo 1 > $T/options/sym-offset
echo 'f:ufgb/rr vfs_read%return ret=$retval:s64' > $DE || fail "define: $(cat $DBG/ufgraph/error_log)"
echo 'stacktrace if ret == 5' > $T/events/ufgb/rr/trigger || fail "trigger"
echo 1 > $T/events/ufgb/rr/enable
echo hello > /tmp/ufgb-file
echo 1 > $T/tracing_on
dd if=/tmp/ufgb-file of=/dev/null bs=5 count=1 2>/dev/null
echo 0 > $T/tracing_on

# (dd reads with read(); busybox cat may use sendfile.)
# The first stack trace after a 5-byte read's return event: its "=> function" lines.
first_trace() {
	awk '/ rr: .* ret=5$/ { hit = 1; next }
	     hit && /<stack trace>/ { inside = 1; next }
	     inside && /^ => / { print $2; next }
	     inside { exit }' $T/trace
}
case $(uname -m) in
	x86_64) entry=do_syscall_64 ;;
	*) entry='el0_svc\|do_el0_svc' ;;
esac
st=$(first_trace)
[ -n "$st" ] || fail "no stack trace after a 5-byte vfs_read return: $(grep -c ' rr: ' $T/trace) events; $(head -c 2000 $T/trace)"
echo "$st" | grep -q '^ksys_read+' || fail "ksys_read (vfs_read's caller) is not in the trace: $(echo $st)"
echo "$st" | grep -q "^\($entry\)+" || fail "the walk stopped before $entry: $(echo $st)"
echo "$st" | grep -q '^ufgraph_return_trampoline+0x0/' && fail "the trampoline is in the trace: $(echo $st)"

# The caller hooked too.
echo 0 > $T/events/ufgb/rr/enable
echo 'f:ufgb/kr ksys_read%return' >> $DE || fail "define kr: $(cat $DBG/ufgraph/error_log)"
echo 1 > $T/events/ufgb/enable
echo > $T/trace
echo 1 > $T/tracing_on
dd if=/tmp/ufgb-file of=/dev/null bs=5 count=1 2>/dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufgb/enable
st=$(first_trace)
[ -n "$st" ] || fail "both hooked: no stack trace: $(head -c 2000 $T/trace)"
echo "$st" | grep -q '^ksys_read+' || fail "both hooked: ksys_read is not in the trace: $(echo $st)"
echo "$st" | grep -q '^ufgraph_return_trampoline+0x0/' || fail "both hooked: ksys_read's own return (our trampoline) is not in the trace: $(echo $st)"
if [ "$(uname -m)" = x86_64 ]; then
	# ORC stops at the trampoline: it is the last entry.
	[ "$(echo "$st" | tail -1 | cut -d+ -f1)" = ufgraph_return_trampoline ] || fail "both hooked: the walk went on past the trampoline: $(echo $st)"
else
	echo "$st" | grep -q "^\($entry\)+" || fail "both hooked: the walk stopped before $entry: $(echo $st)"
fi
echo '!stacktrace if ret == 5' > $T/events/ufgb/rr/trigger
echo 0 > $T/options/sym-offset
echo > $DE || fail "clear"
unload
exit 0
