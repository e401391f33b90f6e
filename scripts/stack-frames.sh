#!/usr/bin/env bash
# Reads `llvm-objdump -d` of a module on stdin and lists the functions whose stack frame is at
# least LIMIT bytes ($1, default 2048); exits 1 if there is one. Rust has no
# -Wframe-larger-than, and a kernel stack is 16 KiB for everything a call chain does: a value
# built on the stack in module init once overflowed it (see git log). The frame is what the
# prologue subtracts from the stack pointer: `sub $N, %rsp` (x86_64), `sub sp, sp, #N` (arm64).
set -euo pipefail
limit=${1:-2048}
awk -v limit="$limit" '
	# mawk has no strtonum: hexadecimal by hand.
	function num(s,   i, v) {
		if (s !~ /^0x/) return s + 0
		v = 0
		for (i = 3; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	/^[0-9a-f]+ <.*>:[[:space:]]*$/ { fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:[[:space:]]*$/, "", fn); next }
	fn != "" && match($0, /subq?[[:space:]]+\$(0x[0-9a-f]+|[0-9]+), ?%rsp/) {
		v = substr($0, RSTART, RLENGTH); sub(/^subq?[[:space:]]+\$/, "", v); sub(/, ?%rsp$/, "", v)
		if (num(v) >= limit) found[num(v) " " fn] = num(v)
	}
	fn != "" && match($0, /sub[[:space:]]+sp, sp, #(0x[0-9a-f]+|[0-9]+)/) {
		v = substr($0, RSTART, RLENGTH); sub(/^.*#/, "", v)
		if (num(v) >= limit) found[num(v) " " fn] = num(v)
	}
	END {
		n = 0
		for (k in found) { split(k, p, " "); printf "stack frame of %d bytes: %s\n", found[k], substr(k, index(k, " ") + 1); n++ }
		exit n > 0
	}' | sort -rn -k4
exit "${PIPESTATUS[0]}"
