# Helpers for the in-VM shell tests. A test is a script under tests/ that exits
# 0 on success, 4 to skip, anything else on failure; it says why on stderr.
# shellcheck shell=sh

KO=/lib/ufgraph
DBG=/sys/kernel/debug
# tracefs, and ufgraph's own dynamic_events and error_log (Documentation/events.md).
T=/sys/kernel/tracing
DE=$DBG/ufgraph/dynamic_events
EL=$DBG/ufgraph/error_log

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 4; }

# Count of FUNC in ufgraph's debugfs counts (0 if absent).
count_of() {
	awk -v f="$1" '$1 == f { print $2; found=1 } END { if (!found) print 0 }' "$DBG/ufgraph/counts"
}

# Load ufgraph.ko with arguments; fail the test if insmod fails.
# A failed insmod says why: already loaded (a test before left it), or the kernel's last words.
load() {
	insmod "$KO/ufgraph.ko" "$@" ||
		fail "insmod ufgraph.ko $* failed ($(loaded ufgraph && echo 'ufgraph still loaded; ')$(dmesg | tail -n 3 | tr '\n' ' '))"
}
# The start of an event test: load ufgraph (arguments passed on), turn tracing off and empty
# the trace, so that the test's records are the only ones there.
load_tracing_off() {
	load "$@"
	echo 0 > $T/tracing_on
	echo > $T/trace
}
unload() { rmmod ufgraph || fail "rmmod ufgraph failed: $(cat $DBG/ufgraph/stats 2>/dev/null)"; }
loaded() { grep -q "^$1 " /proc/modules; }
# Whether this is the debug kernel (configs/debug.config: KASAN, lockdep, kmemleak, PREEMPT_RT);
# kmemleak is only there.
debug_kernel() { [ -e $DBG/kmemleak ]; }
# Rounds of a repeated test: $1, or $2 on the debug kernel (each registration and module load
# there takes seconds under TCG, and the checkers see the same paths in a few rounds as in many).
rounds() {
	if debug_kernel; then echo "$2"; else echo "$1"; fi
}

# Load ufgraph_kunit.ko (arguments passed on) for what it holds besides its KUnit suites (a
# second ufgraph core, the test functions), without running the suites: loading it runs them
# all, which takes minutes on the debug kernel. KUnit filters a module's suites by its
# filter_glob parameter at load; it goes back to "*" (all) afterwards.
insmod_kunit_quiet() {
	g=/sys/module/kunit/parameters/filter_glob
	[ -w $g ] && echo ufgraph_no_suite > $g
	insmod "$KO/ufgraph_kunit.ko" "$@"
	rc=$?
	[ -w $g ] && echo '*' > $g
	return $rc
}
# The address (hex, no 0x) of function $1 from /proc/kallsyms (the kernel's or a module's).
sym_addr() { awk -v f="$1" '$3 == f && ($2 == "t" || $2 == "T") { print $1; exit }' /proc/kallsyms; }

# Start a background workload that keeps calling vfs_read/vfs_write; print its pid.
busy_io() {
	( while :; do cat /proc/version /proc/meminfo >/dev/null; echo x > /tmp/busy; done ) >/dev/null 2>&1 &
	echo $!
}

# Entries and returns of FUNC in ufgraph's debugfs graph file: "ENTRIES RETURNS".
graph_of() {
	awk -v f="$1" '$1 == f { print $2, $3; found=1 } END { if (!found) print 0, 0 }' "$DBG/ufgraph/graph"
}

# A value from ufgraph's debugfs stats.
stat_of() {
	awk -v k="$1" '$1 == k { print $2 }' "$DBG/ufgraph/stats"
}

# Wait up to $2 tenths of a second for command $1 to succeed.
wait_for() {
	n=0
	while ! eval "$1"; do
		n=$((n+1))
		[ $n -ge "$2" ] && return 1
		sleep 0.1
	done
}

# Unload the client modules (fprobe_client, kretprobe_client, ufgraph_client) and check what
# each reported: every return with its own data, and the kretprobe missed nothing. On failure,
# prints why and returns 1: `why=$(clients_off) || fail "$why"`.
clients_off() {
	dmesg -c > /dev/null
	rmmod ufgraph_client kretprobe_client fprobe_client || { echo "rmmod clients"; return 1; }
	for m in fprobe_client kretprobe_client ufgraph_client; do
		line=$(dmesg | grep "$m:" | tail -1)
		echo "$line" | grep -q " bad=0\| data_bad=0" ||
			{ echo "$m: $line; $(dmesg | grep 'first bad data'); $(tr '\n' ' ' < $DBG/ufgraph/stats)"; return 1; }
	done
	dmesg | grep "kretprobe_client:" | grep -q "missed=0" || { echo "kretprobe missed: $(dmesg | grep kretprobe_client)"; return 1; }
}

# A definition dynamic_events must refuse with upstream's error_log entry: the command, the
# caret under CARET-COLUMN (its column in the command), and MESSAGE; the log is cleared after.
refused_at() { # DEFINITION CARET-COLUMN MESSAGE
	echo "$1" >> $DE 2>/dev/null && fail "accepted: $1"
	grep -qxF "  Command: $1" $EL || fail "error_log command: $(cat $EL)"
	grep -qx "$(printf "%$((11 + $2))s^" '')" $EL || fail "error_log caret for $1: $(cat $EL)"
	grep -qF "$3" $EL || fail "error_log message for $1: $(cat $EL)"
	echo > $EL
}
