#!/usr/bin/env bash
# make check: set up, then run every test -- host (cargo test over src/pure) and
# in-VM (KUnit suites and shell tests) -- and end with "N passed, N failed".
#   UFG_KERNELS  the test kernels whose VM suite runs, ARCH[:FLAVOUR] (default:
#                "x86_64 x86_64:debug arm64")
set -uo pipefail
. "$(dirname "$0")/common.sh"

"$UFG_TOP/scripts/setup.sh" || exit 1

pass=0 failed=0
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

# In-VM tests, per kernel: ARCH or ARCH:FLAVOUR (debug: lockdep, KASAN, kmemleak...).
for config in ${UFG_KERNELS:-x86_64 x86_64:debug arm64}; do
	arch=${config%%:*}
	flavour=${config#"$arch"}; flavour=${flavour#:}
	tag=$arch${flavour:+-$flavour}
	if ! "$UFG_TOP/scripts/kernel.sh" "$arch" "$flavour" || ! "$UFG_TOP/scripts/module.sh" "$arch" "$flavour"; then
		echo "fail build:$tag"
		add 0 1
		continue
	fi
	"$UFG_TOP/scripts/vm.sh" "$arch" "$flavour" check
	r=$UFG_BUILD/results-$tag.txt
	add "$(grep -c '^ok ' "$r")" "$(grep -c '^fail ' "$r")"
	grep '^fail ' "$r" | sed "s/^/[$tag] /"
done

echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
