#!/usr/bin/env bash
# The Rust code's form, as `make check` checks it (one result line each in
# build/results-lint.txt, "ok NAME" or "fail NAME"):
#   lint:rustfmt      every Rust file is formatted as rustfmt formats it with the kernel's own
#                     .rustfmt.toml (what `make rustfmtcheck` holds in-tree code to);
#   lint:clippy-host  the host crates (the host-testable files, their tests, the fuzzers,
#                     bench-report, kcfi-audit) have no clippy warning;
#   lint:host-files   the files whose first comment says "Host-tested" are exactly those
#                     host/src/lib.rs builds: each of them, and every file the host crate
#                     compiles is one of them or in the folder of one (a marked mod.rs);
#   lint:layers       each subsystem of src/ uses only those below it, in the order of
#                     src/sys/mod.rs's diagram (sys, fgraph, fprobe, kretprobe, events, demo):
#                     no import cycle between them (src/tests and the crate root use all).
#                     Paths as rustc reads them (scripts/layers.awk): grouped imports
#                     (`crate::{sys, fprobe}`), `super::` chains up to the root, `$crate::`,
#                     paths broken over lines, and the names the root imports from a subsystem.
# The module's own clippy run is part of its build (scripts/module.sh builds with the kernel's
# CLIPPY=1, and in CI any warning there fails the build).
# `scripts/lint.sh fix` reformats instead of checking.
set -uo pipefail
. "$(dirname "$0")/common.sh"
out=$UFG_BUILD/results-lint.txt
mkdir -p "$UFG_BUILD"
: > "$out"
# The kernel's .rustfmt.toml: from the unpacked source, or straight from the tarball (the
# kernel builds of `make check` may be unpacking the source right now).
cfg=$UFG_SRC/.rustfmt.toml
if [ ! -f "$cfg" ]; then
	cfg=$UFG_BUILD/kernel.rustfmt.toml
	tar -xOf "$UFG_TARBALL" linux-source-6.12/.rustfmt.toml > "$cfg" 2>/dev/null || rm -f "$cfg"
fi
[ -f "$cfg" ] || { ufg_log "lint: no .rustfmt.toml in $UFG_TARBALL"; echo "fail lint:rustfmt" >> "$out"; }

# Every Rust file git knows of (symlinks are formatted through their targets).
files=()
while IFS= read -r f; do
	[ -L "$UFG_TOP/$f" ] || [ ! -e "$UFG_TOP/$f" ] || files+=("$UFG_TOP/$f")
done < <(git -C "$UFG_TOP" ls-files '*.rs')

if [ -f "$cfg" ]; then
	if [ "${1:-}" = fix ]; then
		rustfmt --edition 2021 --config-path "$cfg" "${files[@]}"
		exit
	fi
	ufg_log "lint: rustfmt --check (the kernel's .rustfmt.toml)"
	if rustfmt --check --edition 2021 --config-path "$cfg" "${files[@]}" > "$UFG_BUILD/lint-rustfmt.log" 2>&1; then
		echo "ok lint:rustfmt" >> "$out"
	else
		grep '^Diff in' "$UFG_BUILD/lint-rustfmt.log" | head -n 10 >&2
		echo "fail lint:rustfmt (scripts/lint.sh fix reformats)" >> "$out"
	fi
fi

ufg_log "lint: cargo clippy (host crates)"
if (cd "$UFG_TOP" && cargo clippy --workspace --all-targets --quiet -- -D warnings) > "$UFG_BUILD/lint-clippy.log" 2>&1; then
	echo "ok lint:clippy-host" >> "$out"
else
	grep -E -A5 '^(warning|error)' "$UFG_BUILD/lint-clippy.log" | head -n 30 >&2
	echo "fail lint:clippy-host" >> "$out"
fi
# The host crate's dep-info lists every source file it compiled (cfg(test) files aside).
ufg_log "lint: host-testable files against host/src/lib.rs"
dep=$UFG_TOP/target/debug/libufgraph_pure.d
if (cd "$UFG_TOP" && cargo build --quiet -p ufgraph-pure) > "$UFG_BUILD/lint-host-files.log" 2>&1 && [ -f "$dep" ]; then
	bad=0
	built=$(sed -n '1s/^[^:]*: //p' "$dep" | tr ' ' '\n' | sed "s#/host/src/\.\./\.\./#/#" | sed -n "s#^$UFG_TOP/##p" | grep '^src/' | sort -u)
	marked=$(cd "$UFG_TOP" && git ls-files 'src/*.rs' | xargs grep -l '^//! Host-tested:' | sort -u)
	for f in $marked; do
		grep -qx "$f" <<<"$built" || { ufg_log "lint: $f says Host-tested, host/src/lib.rs does not build it"; bad=1; }
	done
	for f in $built; do
		d=$f ok=0
		while [ "$d" != src ] && [ "$d" != . ]; do
			case $d in
			*.rs) grep -qx "$d" <<<"$marked" && ok=1 ;;
			*) grep -qx "$d/mod.rs" <<<"$marked" && ok=1 ;;
			esac
			[ $ok = 1 ] && break
			d=$(dirname "$d")
		done
		[ $ok = 1 ] || { ufg_log "lint: host/src/lib.rs builds $f, which is not marked Host-tested (nor in a marked folder)"; bad=1; }
	done
	[ $bad = 0 ] && echo "ok lint:host-files" >> "$out" || echo "fail lint:host-files" >> "$out"
else
	cat "$UFG_BUILD/lint-host-files.log" >&2
	echo "fail lint:host-files (the host crate does not build)" >> "$out"
fi
ufg_log "lint: layers (src/sys/mod.rs)"
layers=(sys fgraph fprobe kretprobe events demo)
# The names the crate root imports from subsystem $1 (`use fprobe::Fprobes;`, `use demo::x::{self,
# A, B as C};`): its descendants reach them as crate::NAME, a way up past the subsystem's name.
root_names() {
	sed 's#//.*##' "$UFG_TOP/src/ufgraph_main.rs" | tr '\n' ' ' | tr ';' '\n' |
		sed -n "s/^[[:space:]]*\(pub[^ ]* \)\?use[[:space:]]*$1::\(.*\)$/\2/p" |
		while IFS= read -r path; do
			head=${path%%::\{*}
			items=$path
			case $path in
			*'{'*) items=${path#*\{} items=${items%\}*} ;;
			esac
			tr ',' '\n' <<<"$items" | sed 's/.*[[:space:]]as[[:space:]]//; s/[[:space:]]//g' |
				while IFS= read -r it; do
					it=${it##*::}
					[ "$it" = self ] && it=${head##*::}
					[ -n "$it" ] && echo "$it"
				done
		done
}
bad=0
for i in "${!layers[@]}"; do
	l=${layers[$i]}
	above=("${layers[@]:$((i + 1))}")
	[ ${#above[@]} -gt 0 ] || continue
	names="${above[*]}"
	for a in "${above[@]}"; do
		names="$names $(root_names "$a" | tr '\n' ' ')"
	done
	# Each file with its depth below the crate root (src/fgraph/capi.rs: 2; src/fgraph/mod.rs: 1),
	# for its `super::` paths (scripts/layers.awk).
	hits=$(cd "$UFG_TOP" && { find "src/$l" -name '*.rs'; [ -f "src/$l.rs" ] && echo "src/$l.rs"; } | sort |
		while IFS= read -r f; do
			m=${f#src/}
			m=${m%.rs}
			m=${m%/mod}
			awk -v depth="$(tr -cd / <<<"$m/" | wc -c)" -v bad="$names" -f "$UFG_TOP/scripts/layers.awk" "$f"
		done)
	if [ -n "$hits" ]; then
		ufg_log "lint: $l uses a subsystem above it:"
		echo "$hits" | head -n 5 >&2
		bad=1
	fi
done
[ $bad = 0 ] && echo "ok lint:layers" >> "$out" || echo "fail lint:layers" >> "$out"
cat "$out"
! grep -q '^fail ' "$out"
