#!/usr/bin/env bash
# The kCFI audit (issue #18) of the modules scripts/module.sh built for ARCH [FLAVOUR]: every
# function of ufgraph.ko and ufgraph_kunit.ko whose address is taken must carry the kCFI hash
# of the type its indirect callers check (host/kcfi-audit says how; the types are in
# scripts/kcfi-audit.list). Static: reads build/mod-TAG, compiles one C file with the module's
# flags; no VM. module.sh runs it after every build against a kernel with CONFIG_CFI_CLANG.
#   scripts/kcfi-audit.sh ARCH [FLAVOUR] [-v]   (-v lists every function, not only problems)
set -euo pipefail
. "$(dirname "$0")/common.sh"
arch=${1:-x86_64}
flavour=${2:-}
tag=$arch${flavour:+-$flavour}
kdir=$(ufg_kdir "$arch" "$flavour")
if ! grep -qx 'CONFIG_CFI_CLANG=y' "$kdir/.config"; then
	ufg_log "kcfi-audit: the $tag kernel has no CONFIG_CFI_CLANG: nothing to check"
	exit 0
fi
# The tool is a host crate of the workspace (Rust, std only), built on first use (a few
# seconds) and then only when its source changes; cargo run finds it wherever the target
# directory is (CARGO_TARGET_DIR), and waits for a build another worktree runs in a shared
# one. --list and --src name this tree's files: a shared binary must not read another's.
exec cargo run --quiet --release --manifest-path "$UFG_TOP/Cargo.toml" -p kcfi-audit -- \
	--arch "$arch" --moddir "$UFG_BUILD/mod-$tag" --kdir "$kdir" --llvm "$(ufg_llvm)" \
	--list "$UFG_TOP/scripts/kcfi-audit.list" --src "$UFG_TOP/src" "${@:3}"
