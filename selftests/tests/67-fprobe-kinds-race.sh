# Entry-only and exit probes come and go on fprobe's one ftrace_ops while both CPUs call their
# functions: every transition of the dispatch word and the single-probe shortcuts (only an
# entry-only probe, only an exit probe, both kinds, both on one function), in several orders.
# A stale shortcut would run a probe on a function it does not hook: every record must name its
# own event's function. No crash, nothing left behind. (Records are read from trace_pipe as they
# come: a record read after its event went prints as "Unknown type" and is not judged.)
. /selftests/lib.sh
load_tracing_off
io() {
	( while :; do dd if=/proc/version of=/dev/null bs=64 count=1 2>/dev/null; echo x > /tmp/ufgr; done ) > /dev/null 2>&1 &
	echo $!
}
p1=$(io); p2=$(io)
on() { echo "$2" >> $DE && echo 1 > $T/events/ufgr/$1/enable || { kill $p1 $p2; fail "define $1: $2"; }; sleep 0.05; }
off() { echo 0 > $T/events/ufgr/$1/enable && echo "-:ufgr/$1" >> $DE || { kill $p1 $p2; fail "remove $1"; }; }
A='f:ufgr/a vfs_read'
B='f:ufgr/b vfs_write%return ret=$retval'
C='f:ufgr/c vfs_write'
cat $T/trace_pipe > /tmp/ufgr-trace &
reader=$!
echo 1 > $T/tracing_on
# Six rounds (87 s on x86_64 under TCG at ten, the slowest test there: CI's hour is tight);
# two on the debug kernel (KASAN, lockdep, PREEMPT_RT: every registration waits for grace
# periods there, and ten rounds ran past the test's 5 minutes under TCG).
for i in $(seq 1 $(rounds 6 2)); do
	on a "$A"; on b "$B"; off a; on c "$C"; off b; off c
	on b "$B"; on c "$C"; on a "$A"; off c; off b; off a
done
echo 0 > $T/tracing_on
kill $p1 $p2
sleep 1
kill $reader
wait 2> /dev/null
R=/tmp/ufgr-trace
for e in a b c; do
	[ "$(grep -c " $e: " $R)" -gt 0 ] || fail "no record of $e: $(grep -c . $R) lines; $(awk '{print $5}' $R | sort | uniq -c | head)"
done
bad=$(grep ' a: ' $R | grep -v ' a: (vfs_read+0x[0-9a-f]*/' | head -3)
[ -z "$bad" ] || fail "a (vfs_read, entry only) fired elsewhere: $bad"
bad=$(grep ' c: ' $R | grep -v ' c: (vfs_write+0x[0-9a-f]*/' | head -3)
[ -z "$bad" ] || fail "c (vfs_write, entry only) fired elsewhere: $bad"
bad=$(grep ' b: ' $R | grep -v ' <- vfs_write) ret=' | head -3)
[ -z "$bad" ] || fail "b (vfs_write%return) fired elsewhere: $bad"
[ "$(stat_of fprobes)" = 0 ] || fail "probes left: $(cat $DBG/ufgraph/stats)"
[ "$(stat_of fprobe_functions)" = 0 ] || fail "functions left: $(cat $DBG/ufgraph/stats)"
[ -z "$(grep -v '^#' $T/enabled_functions)" ] || fail "still hooked: $(head -3 $T/enabled_functions)"
echo > $T/trace
echo 1 > $T/tracing_on
unload
exit 0
