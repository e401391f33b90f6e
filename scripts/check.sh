#!/usr/bin/env bash
# make check: set up, then run every test -- host (cargo test over the host-testable files) and
# in-VM (KUnit suites and shell tests) -- and end with "N passed, N failed".
#   UFG_KERNELS  the test kernels whose VM suite runs, ARCH[:FLAVOUR] (default:
#                "x86_64 arm64 x86_64:debug"); set and empty, none: the host stages only
#                (cargo test and fuzzing)
# The debug kernel goes last: its VM run is the slowest per test, and last it runs with no
# kernel build beside it (the machine's two CPUs may be one core's two threads, and a build
# beside a VM run slows it by as much as half). On it runs the set of selftests/sets/debug.list
# (scripts/vm.sh); `make check-debug` runs everything there.
set -uo pipefail
. "$(dirname "$0")/common.sh"

# Seconds each stage took, printed above the count: CI must stay under an hour from nothing.
times=() t0=$(date +%s)
lap() { local now; now=$(date +%s); times+=("$1 $((now - t0))s"); t0=$now; }

"$UFG_TOP/scripts/setup.sh" || exit 1
lap setup

pass=0 failed=0
failed_tags=() build_failed=()
add() { pass=$((pass + $1)); failed=$((failed + $2)); }

# The test kernels and modules build in the background, one after the other, at the lowest
# priority, from the start: the host stages and then each kernel's VM run (one QEMU thread for
# x86_64) leave a CPU idle most of the time, and a build soaks it up without slowing them. Each
# kernel's VM run waits for its build. (From nothing, the builds are most of make check.)
kernels=(${UFG_KERNELS-x86_64 arm64 x86_64:debug})
tag_of() { local arch=${1%%:*} flavour=${1#*:}; [ "$flavour" = "$1" ] && flavour=; echo "$arch${flavour:+-$flavour}"; }
mkdir -p "$UFG_BUILD"
rm -f "$UFG_BUILD"/.built-*
(
	renice -n 19 -p "$BASHPID" > /dev/null
	for config in "${kernels[@]}"; do
		arch=${config%%:*} tag=$(tag_of "$config")
		flavour=${config#"$arch"}; flavour=${flavour#:}
		{ "$UFG_TOP/scripts/kernel.sh" "$arch" "$flavour" && "$UFG_TOP/scripts/module.sh" "$arch" "$flavour"; } \
			> "$UFG_BUILD/build-$tag.log" 2>&1
		echo $? > "$UFG_BUILD/.built-$tag"
	done
) &
builder=$!

# Host tests.
ufg_log "host: cargo test"
hostlog=$UFG_BUILD/host-test.log
mkdir -p "$UFG_BUILD"
(cd "$UFG_TOP" && cargo test --workspace 2>&1) | tee "$hostlog" | grep -E '^test |test result' 
hrc=${PIPESTATUS[0]}
hp=$(awk '/^test result:/ { for (i=1;i<=NF;i++) if ($(i+1) ~ /^passed/) s+=$i } END { print s+0 }' "$hostlog")
hf=$(awk '/^test result:/ { for (i=1;i<=NF;i++) if ($(i+1) ~ /^failed/) s+=$i } END { print s+0 }' "$hostlog")
[ "$hrc" = 0 ] || [ "$hf" -gt 0 ] || hf=1   # a build failure counts as a failure
add "$hp" "$hf"
lap host-test

# The Rust code's form: rustfmt with the kernel's config, clippy on the host crates (the
# module's clippy run is part of its build).
ufg_log "host: lint"
"$UFG_TOP/scripts/lint.sh" > /dev/null
lintlog=$UFG_BUILD/results-lint.txt
cat "$lintlog"
add "$(grep -c '^ok ' "$lintlog")" "$(grep -c '^fail ' "$lintlog")"
lap lint

# Coverage-guided fuzzing (scripts/fuzz.sh): each libFuzzer target a bounded run, one test each.
ufg_log "host: fuzz"
fuzzlog=$UFG_BUILD/results-fuzz.txt
"$UFG_TOP/scripts/fuzz.sh"
frc=$?
fp=$(grep -c '^ok ' "$fuzzlog" 2>/dev/null)
ff=$(grep -c '^fail ' "$fuzzlog" 2>/dev/null)
[ "$frc" = 0 ] || [ "${ff:-0}" -gt 0 ] || ff=1   # the script failing counts as a failure
add "${fp:-0}" "${ff:-0}"
lap fuzz

# One kernel's VM run. The debug kernel's comes last, with nothing building beside it: its set
# (selftests/sets/debug.list) is split into shards by the list's second column, run as that
# many VMs at once (single-threaded TCG: one CPU each), and their results put together as one
# run's. The other kernels' runs overlap the next kernel's build, which takes the other CPU.
run_vm() {
	local arch=$1 flavour=$2 tag=$3 shards=1 k pids=()
	if [ "$flavour" = debug ]; then
		shards=$(awk '/^[^#]/ && $2 + 0 > n { n = $2 + 0 } END { print (n > 1 ? n : 1) }' \
			"$UFG_TOP/selftests/sets/debug.list")
	fi
	if [ "$shards" = 1 ]; then
		"$UFG_TOP/scripts/vm.sh" "$arch" "$flavour" check
		return
	fi
	rm -f "$UFG_BUILD"/{results,problems,times}-"$tag".s*.txt
	for k in $(seq 1 "$shards"); do
		UFG_VM_SHARD=$k "$UFG_TOP/scripts/vm.sh" "$arch" "$flavour" check \
			> "$UFG_BUILD/vm-$tag.s$k.out" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	for k in $(seq 1 "$shards"); do cat "$UFG_BUILD/vm-$tag.s$k.out"; done
	local f
	for f in results problems times; do
		cat "$UFG_BUILD/$f-$tag".s*.txt > "$UFG_BUILD/$f-$tag.txt" 2>/dev/null
	done
}

# In-VM tests, per kernel: ARCH or ARCH:FLAVOUR (debug: lockdep, KASAN, kmemleak...).
for config in "${kernels[@]}"; do
	arch=${config%%:*}
	flavour=${config#"$arch"}; flavour=${flavour#:}
	tag=$(tag_of "$config")
	# Wait for the background build of this kernel and its modules, and show its log.
	while [ ! -e "$UFG_BUILD/.built-$tag" ]; do
		kill -0 "$builder" 2>/dev/null || break
		sleep 2
	done
	cat "$UFG_BUILD/build-$tag.log" 2>/dev/null
	if [ "$(cat "$UFG_BUILD/.built-$tag" 2>/dev/null)" != 0 ]; then
		echo "fail build:$tag"
		build_failed+=("$tag")
		add 0 1
		lap "build:$tag"
		continue
	fi
	lap "build:$tag"
	run_vm "$arch" "$flavour" "$tag"
	lap "vm:$tag"
	r=$UFG_BUILD/results-$tag.txt
	# A run that reports nothing (no shard ran, a results file lost) is a failure, never a pass.
	grep -qE '^(ok|fail) ' "$r" 2>/dev/null || echo "fail vm:$tag: no test results" >> "$r"
	add "$(grep -c '^ok ' "$r")" "$(grep -c '^fail ' "$r")"
	grep '^fail ' "$r" | sed "s/^/[$tag] /"
	grep -q '^fail ' "$r" && failed_tags+=("$tag")
done
wait

# Repeat every failure last, just above the count: a CI log that keeps only its tail must
# still say what failed and, for a kernel splat, its first lines.
if [ "$failed" -gt 0 ]; then
	echo "---- failures ----"
	[ "$hf" = 0 ] || grep -E '^test .*FAILED|^error' "$hostlog" | head -n 10 | sed 's/^/[host] /'
	[ "$hf" = 0 ] || [ "$hp" -gt 0 ] || echo "[host] cargo test failed to build or run; see $hostlog"
	grep '^fail ' "$lintlog" | sed 's/^/[host] /'
	[ "${ff:-0}" = 0 ] || { grep '^fail ' "$fuzzlog" 2>/dev/null || echo "fuzz: scripts/fuzz.sh failed"; } | sed 's/^/[host] /'
	for t in "${failed_tags[@]}"; do
		grep '^fail ' "$UFG_BUILD/results-$t.txt" | grep -v '^fail vm:' | sed "s/^/[$t] /"
		[ -s "$UFG_BUILD/problems-$t.txt" ] && cut -c1-200 "$UFG_BUILD/problems-$t.txt" | head -n 12 | sed "s/^/[$t] /"
	done
	for t in "${build_failed[@]}"; do echo "[$t] the kernel or module build failed"; done
fi
echo "time: ${times[*]}"
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
