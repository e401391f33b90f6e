# Runs every in-VM test: the KUnit suites of ufgraph_kunit.ko, then the shell
# tests under tests/, each under a time limit. UFG_FILTER (a grep pattern) picks
# tests by name; UFG_SET (ufg.set=NAME) picks those listed in sets/NAME.list, and UFG_SHARD
# (ufg.shard=K) those of the set whose second column is K (no column: shard 1), for a run
# split over several VMs at once (scripts/vm.sh, UFG_VM_SHARD).
cd /selftests || exit 1
. ./lib.sh

# The tests of the set (and shard), read once: each program a test run starts costs a
# noticeable part of a second on the debug kernel under TCG (KASAN, lockdep), and the loop
# below asks for every test of tests/.
set_tests=
if [ -n "$UFG_SET" ] && [ -f "sets/$UFG_SET.list" ]; then
	set_tests=" $(awk -v k="${UFG_SHARD:-}" \
		'/^[^#]/ && (k == "" || ($2 == "" ? "1" : $2) == k) { printf "%s ", $1 }' \
		"sets/$UFG_SET.list")"
fi
# Whether test $1 runs: it matches the filter, and it is in the set if one is given.
wanted() {
	if [ -n "$UFG_FILTER" ] && ! echo "$1" | grep -q "$UFG_FILTER"; then
		return 1
	fi
	[ -z "$UFG_SET" ] && return 0
	case "$set_tests" in *" $1 "*) return 0 ;; esac
	return 1
}

# "@@ufg ok|fail|skip NAME [-- WHY]": a failure carries the test's last FAIL line, so the
# summary at the end of make check (all a CI log may keep) says why, not only what.
result() { echo "@@ufg $1 $2${3:+ -- $3}"; }

# A set that names a test which does not exist (renamed, removed) fails, rather than
# silently running less than its list says.
if [ -n "$UFG_SET" ]; then
	if [ ! -f "sets/$UFG_SET.list" ]; then
		result fail "set:$UFG_SET" "no sets/$UFG_SET.list"
	else
		for n in $(awk '/^[^#]/ { print $1 }' "sets/$UFG_SET.list"); do
			[ "$n" = kunit ] || [ -f "tests/$n.sh" ] || result fail "set:$UFG_SET" "no test $n"
		done
	fi
fi

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

# "@@ufg time NAME SECONDS" after each: vm.sh lists the slowest, since make check must stay
# within CI's hour and the debug kernel runs everything several times slower.
if wanted kunit; then
	start=$(date +%s)
	run_kunit
	echo "@@ufg time kunit $(($(date +%s) - start))"
fi

# The attack set (attack/, UFG_ATTACK=1: make attack) runs after them: long runs that try to
# break ufgraph from every context with the kernel's hookers stacked on it, not part of
# make check.
attack=
[ "${UFG_ATTACK:-0}" = 1 ] && attack="attack/*.sh"
for t in tests/*.sh $attack; do
	name=$(basename "$t" .sh)
	wanted "$name" || continue
	echo "@@ufg run $name"
	start=$(date +%s)
	# Each test gets 5 minutes, 10 on the debug kernel (52-mixed-stress takes about 5 there);
	# the long stress run (ufg.stress=R) gets what it needs (about 5 s per registration and
	# module cycle on the debug kernel, 10 cycles per round).
	# stderr (FAIL and SKIP lines) goes to a file, for the reason of a failure, then to the
	# console. Not a pipe through tee: a workload the test left in the background would hold
	# the pipe open.
	limit=$(rounds 300 600)
	timeout $((limit + ${UFG_STRESS:-0} * 60)) sh "$t" 2> /tmp/test-err
	rc=$?
	cat /tmp/test-err >&2
	case $rc in
	0) result ok "$name" ;;
	4) result skip "$name" ;;
	124|137|143) result fail "$name" "killed by its time limit; $(grep '^FAIL' /tmp/test-err | tail -n 1 | cut -c 1-240)" ;;
	*) result fail "$name" "$(grep '^FAIL' /tmp/test-err | tail -n 1 | cut -c 1-300)" ;;
	esac
	echo "@@ufg time $name $(($(date +%s) - start))"
	# A test that failed half way must not leave anything behind for the next one. First its
	# processes: a test killed by the timeout leaves its background workloads running, which
	# would then call hooked functions, and take CPU, under the next tests. Every user process
	# but this shell and init goes (kernel threads have an empty cmdline). A file's size does
	# not tell: /proc's files all have size 0, which is what an earlier `[ -s cmdline ]` test
	# here found, so it never killed anything (a workload left by a killed test ran on under
	# every test after it). Passes repeat while they find some: a fork loop may spawn more.
	stray=0
	pass=0
	while [ $pass -lt 5 ]; do
		pass=$((pass + 1))
		found=0
		for p in /proc/[0-9]*; do
			pid=${p#/proc/}
			{ [ "$pid" = 1 ] || [ "$pid" = $$ ]; } && continue
			c=
			read -r c < "$p/cmdline" 2> /dev/null
			[ -n "$c" ] || continue
			kill -9 "$pid" 2> /dev/null && found=$((found + 1))
		done
		stray=$((stray + found))
		[ $found = 0 ] && break
		sleep 0.2
	done
	[ $stray = 0 ] || echo "note: killed $stray processes $name left behind"
	[ $found = 0 ] || result fail "cleanup:$name" "processes it left behind survive five kill passes"
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
	# (/proc/modules read once per poll and matched by the shell: a grep per module cost about
	# a second per test on the debug kernel.)
	n=0
	while modules=$(cat /proc/modules) &&
		case "$modules" in *" Unloading "*) true ;; *) false ;; esac &&
		[ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	for m in atk_probe atk_kprobe fprobe_client kretprobe_client ufgraph_client ufgraph_kunit ufgraph atk_target; do
		case "
$modules" in *"
$m "*) rmmod $m ;; esac
	done
	if [ -d /sys/kernel/tracing/events ]; then
		echo nop > /sys/kernel/tracing/current_tracer
		echo 1 > /sys/kernel/tracing/tracing_on
		echo > /sys/kernel/tracing/dynamic_events
	fi
done
