#!/usr/bin/env bash
# Coverage-guided fuzzing of the host-testable files (host/src/lib.rs): the libFuzzer targets of host/fuzz/cov/,
# built on the project's stable Rust with the libfuzzer-sys crate and rustc's SanitizerCoverage
# pass (Documentation/building.md, "Fuzzing").
#
#   scripts/fuzz.sh [TARGET...]          bounded runs, as `make check` does them: each target a
#                                        fixed number of inputs from a fixed seed, starting from
#                                        its committed seeds only (deterministic)
#   scripts/fuzz.sh --long [TARGET...]   `make fuzz`: each target for UFG_FUZZ_TIME seconds
#                                        (default 600), from a random seed, growing its corpus
#                                        in $UFG_BUILD/fuzz/corpus-TARGET across runs
#
# Targets: probedef fetch shadow symbols btf (default: all). Writes "ok fuzz:TARGET ..." or
# "fail fuzz:TARGET ..." lines to $UFG_BUILD/results-fuzz.txt; a crash input is saved as
# $UFG_BUILD/fuzz/crash-TARGET-*, and its target's binary reruns it:
#   $UFG_BUILD/fuzz/target/<host triple>/release/cov-TARGET FILE
# Exits non-zero if a target failed or the build did.
set -uo pipefail
. "$(dirname "$0")/common.sh"
TIMEFORMAT=%U

long=0
if [ "${1:-}" = --long ]; then
	long=1
	shift
fi
all=(probedef fetch shadow symbols btf)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# Inputs per target in `make check`: 7 to 25 s of CPU each on an idle machine, more beside
# make check's kernel build (the counts and times of a run are in Documentation/building.md).
# `make fuzz` is the long run.
declare -A runs=([probedef]=150000 [fetch]=500000 [shadow]=20000 [symbols]=500000 [btf]=250000)
# Longest input per target: a command of up to MAX_COMMAND_LEN (4095) bytes and past it; a
# definition with memory for its hits; a whole stack image (506 words of 9 bytes); a BTF blob
# twice the size of the largest seed (clang's sample.btf, 1.9 KB: about 50 types).
declare -A max_len=([probedef]=4200 [fetch]=8192 [shadow]=4800 [symbols]=4096 [btf]=4096)

fdir=$UFG_BUILD/fuzz
results=$UFG_BUILD/results-fuzz.txt
mkdir -p "$fdir"
: >"$results"

# The instrumentation cargo-fuzz asks rustc for, without its nightly-only part (-Zsanitizer):
# SanitizerCoverage's edge counters and PC table, which libFuzzer's coverage feedback reads,
# and comparison tracing, from which it learns the values inputs are compared with. Debug
# assertions and overflow checks on, as overflow checks are in the kernel build. --target
# keeps the flags off build scripts, which would otherwise need libFuzzer's runtime to link.
triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# libfuzzer-sys compiles libFuzzer (C++): with clang++, which setup.sh installs.
export CXX=${CXX:-clang++}
bins=()
for t in "${targets[@]}"; do
	[[ " ${all[*]} " == *" $t "* ]] || ufg_die "unknown fuzz target $t (targets: ${all[*]})"
	bins+=(--bin "cov-$t")
done
ufg_log "fuzz: building ${targets[*]}"
if ! cargo build --release --locked --quiet --manifest-path "$UFG_TOP/host/fuzz/cov/Cargo.toml" \
	--target "$triple" --target-dir "$fdir/target" "${bins[@]}"; then
	echo "fail fuzz:build" | tee -a "$results"
	exit 1
fi

failed=0
for t in "${targets[@]}"; do
	bin=$fdir/target/$triple/release/cov-$t
	seeds=$UFG_TOP/host/fuzz/seeds/$t
	log=$fdir/$t.log
	args=(-max_len="${max_len[$t]}" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1
		-artifact_prefix="$fdir/crash-$t-")
	[ -f "$seeds.dict" ] && args+=(-dict="$seeds.dict")
	if [ "$long" = 1 ]; then
		# New inputs go to the first directory: a corpus kept between runs.
		corpus=$fdir/corpus-$t
		mkdir -p "$corpus"
		args+=(-max_total_time="${UFG_FUZZ_TIME:-600}" -seed=0)
	else
		# A fresh corpus each time: the same seed and inputs give the same run. The time limit
		# only guards a machine far slower than expected; the run reports the inputs it did.
		corpus=$fdir/run-$t
		rm -rf "$corpus"
		mkdir -p "$corpus"
		args+=(-runs="${runs[$t]}" -seed="${UFG_FUZZ_SEED:-1}" -max_total_time=120)
	fi
	ufg_log "fuzz: $t"
	start=$SECONDS
	# Wall and CPU time: on a machine other jobs share, the CPU time says what the run costs.
	cpu=$( { time { "$bin" "${args[@]}" "$corpus" "$seeds" >"$log" 2>&1; echo $? >"$log.rc"; }; } 2>&1)
	rc=$(cat "$log.rc")
	secs=$((SECONDS - start))
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
	seed=$(sed -n 's/^INFO: Seed: *//p' "$log" | head -n 1)
	if [ "$rc" = 0 ]; then
		echo "ok fuzz:$t ${n:-?} inputs in ${secs}s (${cpu}s CPU; ${cov:-no coverage line}; seed ${seed:-?})" |
			tee -a "$results"
	else
		failed=1
		crash=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -n 1)
		echo "fail fuzz:$t after ${n:-?} inputs in ${secs}s: ${crash:-see $log}" | tee -a "$results"
		grep -E 'broken promise|panicked at|^thread ' "$log" | head -n 5 | cut -c1-400
	fi
done
[ "$failed" = 0 ]
