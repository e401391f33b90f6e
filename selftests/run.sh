# Runs every in-VM test: the KUnit suites of ufgraph_kunit.ko, then the shell
# tests under tests/, each under a time limit. UFG_FILTER (a grep pattern) picks
# tests by name.
cd /selftests || exit 1
. ./lib.sh

# "@@ufg ok|fail|skip NAME [-- WHY]": a failure carries the test's last FAIL line, so the
# summary at the end of make check (all a CI log may keep) says why, not only what.
result() { echo "@@ufg $1 $2${3:+ -- $3}"; }

run_kunit() {
	if ! insmod "$KO/ufgraph_kunit.ko"; then
		result fail kunit:load
		return
	fi
	# KUnit has run the suites by the time insmod returns; each leaves its KTAP in debugfs.
	n=0
	for r in "$DBG"/kunit/*/results; do
		[ -f "$r" ] || continue
		suite=$(basename "$(dirname "$r")")
		case "$suite" in ufgraph*) ;; *) continue ;; esac
		while IFS= read -r line; do
			case "$line" in
			"    ok "*) set -- $line; result ok "kunit:$suite.$3"; n=$((n+1)) ;;
			"    not ok "*) set -- $line; result fail "kunit:$suite.$4"; n=$((n+1)) ;;
			esac
		done < "$r"
	done
	[ $n -gt 0 ] || result fail kunit:no-cases-ran
	rmmod ufgraph_kunit || result fail kunit:unload
}

if [ -z "$UFG_FILTER" ] || echo kunit | grep -q "$UFG_FILTER"; then
	run_kunit
fi

for t in tests/*.sh; do
	name=$(basename "$t" .sh)
	if [ -n "$UFG_FILTER" ] && ! echo "$name" | grep -q "$UFG_FILTER"; then
		continue
	fi
	echo "@@ufg run $name"
	# Each test gets 5 minutes; the long stress run (ufg.stress=R) gets what it needs (about
	# 5 s per registration and module cycle on the debug kernel, 10 cycles per round).
	# stderr (FAIL and SKIP lines) goes to a file, for the reason of a failure, then to the
	# console. Not a pipe through tee: a workload the test left in the background would hold
	# the pipe open.
	timeout $((300 + ${UFG_STRESS:-0} * 60)) sh "$t" 2> /tmp/test-err
	rc=$?
	cat /tmp/test-err >&2
	case $rc in
	0) result ok "$name" ;;
	4) result skip "$name" ;;
	124|137|143) result fail "$name" "killed by its time limit; $(grep '^FAIL' /tmp/test-err | tail -n 1 | cut -c 1-240)" ;;
	*) result fail "$name" "$(grep '^FAIL' /tmp/test-err | tail -n 1 | cut -c 1-300)" ;;
	esac
	# A test that failed half way must not leave anything behind for the next one. First its
	# processes: a test killed by the timeout leaves its background workloads running, which
	# would then call hooked functions under the next test. Every user process but this
	# shell and init goes (kernel threads have an empty cmdline).
	stray=0
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		{ [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ ! -s "$p/cmdline" ]; } && continue
		kill -9 "$pid" 2>/dev/null && stray=$((stray + 1))
	done
	[ $stray = 0 ] || { echo "note: killed $stray processes $name left behind"; sleep 0.5; }
	# Then clients (they hold ufgraph), then the kernel's own probes, then ufgraph.
	# Our events hold ufgraph while enabled (triggers enable them too): drop triggers,
	# disable and remove the events first.
	if [ -w "$DBG/ufgraph/dynamic_events" ]; then
		for f in /sys/kernel/tracing/events/*/*/trigger; do
			grep -v '^#' "$f" | while read -r l; do echo "!${l%% \[*}" >> "$f"; done
		done
		echo 0 > /sys/kernel/tracing/events/enable
		echo > "$DBG/ufgraph/dynamic_events"
	fi
	# A module still being removed (a test that failed while its rmmod waited for frames
	# another hooker stacked over, whose tasks were just killed) finishes going first.
	n=0
	while grep -q ' Unloading ' /proc/modules && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	for m in fprobe_client kretprobe_client ufgraph_client ufgraph_kunit ufgraph; do
		loaded $m && rmmod $m
	done
	if [ -d /sys/kernel/tracing/events ]; then
		echo nop > /sys/kernel/tracing/current_tracer
		echo 1 > /sys/kernel/tracing/tracing_on
		echo > /sys/kernel/tracing/dynamic_events
	fi
done
