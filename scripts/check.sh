#!/usr/bin/env bash
# make check: set up, then run every test -- host (cargo test over src/pure) and
# in-VM (KUnit suites and shell tests) -- and end with "N passed, N failed".
#   UFG_KERNELS  the test kernels whose VM suite runs, ARCH[:FLAVOUR] (default:
#                "x86_64 x86_64:debug arm64"); set and empty, none: the host stages only
#                (cargo test and fuzzing)
set -uo pipefail
. "$(dirname "$0")/common.sh"

"$UFG_TOP/scripts/setup.sh" || exit 1

pass=0 failed=0
failed_tags=() build_failed=()
add() { pass=$((pass + $1)); failed=$((failed + $2)); }

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

# Coverage-guided fuzzing (scripts/fuzz.sh): each libFuzzer target a bounded run, one test each.
ufg_log "host: fuzz"
fuzzlog=$UFG_BUILD/results-fuzz.txt
"$UFG_TOP/scripts/fuzz.sh"
frc=$?
fp=$(grep -c '^ok ' "$fuzzlog" 2>/dev/null)
ff=$(grep -c '^fail ' "$fuzzlog" 2>/dev/null)
[ "$frc" = 0 ] || [ "${ff:-0}" -gt 0 ] || ff=1   # the script failing counts as a failure
add "${fp:-0}" "${ff:-0}"

# In-VM tests, per kernel: ARCH or ARCH:FLAVOUR (debug: lockdep, KASAN, kmemleak...).
for config in ${UFG_KERNELS-x86_64 x86_64:debug arm64}; do
	arch=${config%%:*}
	flavour=${config#"$arch"}; flavour=${flavour#:}
	tag=$arch${flavour:+-$flavour}
	if ! "$UFG_TOP/scripts/kernel.sh" "$arch" "$flavour" || ! "$UFG_TOP/scripts/module.sh" "$arch" "$flavour"; then
		echo "fail build:$tag"
		build_failed+=("$tag")
		add 0 1
		continue
	fi
	"$UFG_TOP/scripts/vm.sh" "$arch" "$flavour" check
	r=$UFG_BUILD/results-$tag.txt
	add "$(grep -c '^ok ' "$r")" "$(grep -c '^fail ' "$r")"
	grep '^fail ' "$r" | sed "s/^/[$tag] /"
	grep -q '^fail ' "$r" && failed_tags+=("$tag")
done

# Repeat every failure last, just above the count: a CI log that keeps only its tail must
# still say what failed and, for a kernel splat, its first lines.
if [ "$failed" -gt 0 ]; then
	echo "---- failures ----"
	[ "$hf" = 0 ] || grep -E '^test .*FAILED|^error' "$hostlog" | head -n 10 | sed 's/^/[host] /'
	[ "$hf" = 0 ] || [ "$hp" -gt 0 ] || echo "[host] cargo test failed to build or run; see $hostlog"
	[ "${ff:-0}" = 0 ] || { grep '^fail ' "$fuzzlog" 2>/dev/null || echo "fuzz: scripts/fuzz.sh failed"; } | sed 's/^/[host] /'
	for t in "${failed_tags[@]}"; do
		grep '^fail ' "$UFG_BUILD/results-$t.txt" | grep -v '^fail vm:' | sed "s/^/[$t] /"
		[ -s "$UFG_BUILD/problems-$t.txt" ] && cut -c1-200 "$UFG_BUILD/problems-$t.txt" | head -n 12 | sed "s/^/[$t] /"
	done
	for t in "${build_failed[@]}"; do echo "[$t] the kernel or module build failed"; done
fi
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
