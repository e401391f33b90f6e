#!/usr/bin/env bash
# Build ufgraph.ko and ufgraph_kunit.ko against the ARCH [FLAVOUR] test kernel into
# build/modules-ARCH[-FLAVOUR]/.
#
# Kbuild writes its objects next to the sources of an external module, and
# `make M=... clean` deletes every *.o and *.ko below M, build/ included. So we
# never build in the work tree: the sources are copied to build/mod-TAG/ and
# built there, which also lets several architectures build at once.
set -euo pipefail
. "$(dirname "$0")/common.sh"
arch=${1:-x86_64}
flavour=${2:-}
tag=$arch${flavour:+-$flavour}
moddir=$UFG_BUILD/modules-$tag
src=$UFG_BUILD/mod-$tag

[ -f "$(ufg_kdir "$arch" "$flavour")/Module.symvers" ] || "$UFG_TOP/scripts/kernel.sh" "$arch" "$flavour"

rm -rf "$src" "$moddir"
mkdir -p "$src" "$moddir"
cp -a "$UFG_TOP"/{Kbuild,src,include} "$src/"
log=$UFG_BUILD/module-$tag.log
if ! ufg_kmake "$arch" "$flavour" M="$src" modules >"$log" 2>&1; then
	cat "$log"
	ufg_die "module build for $tag failed"
fi
# Warnings are bugs: show them, and fail in CI (UFG_WERROR=1).
if grep -E 'warning:|WARNING:' "$log"; then
	[ "${UFG_WERROR:-0}" = 1 ] && ufg_die "module build for $tag has warnings"
fi
cp "$src"/*.ko "$moddir/"
for ko in "$src"/ufgraph.ko "$src"/ufgraph_kunit.ko; do
	"llvm-objdump$(ufg_llvm)" -d --no-show-raw-insn "$ko" | "$UFG_TOP/scripts/stack-frames.sh" 2048 ||
		ufg_die "$(basename "$ko"): a function's stack frame is too big for a kernel stack (see above)"
done
# kCFI (issue #18): every function whose address reaches C must carry the hash of the type C
# calls it through, or the first call stops the kernel. The audit checks every address-taken
# function of both modules, including those no test reaches (Documentation/building.md).
"$UFG_TOP/scripts/kcfi-audit.sh" "$arch" "$flavour" ||
	ufg_die "kcfi-audit: a function handed to C has the wrong kCFI type (see above)"

# Clippy, with the kernel's lint set (CLIPPY=1: undocumented unsafe blocks, missing `# Safety`
# sections...), once per architecture (the base flavour): a second build in its own copy, whose
# objects are thrown away. clippy-driver compiles with MIR optimisations off, so its code is not
# what ships (nor what objtool should judge: only the Rust diagnostics count). Its warnings are
# build warnings: shown, and fatal in CI. UFG_CLIPPY=0 skips it.
if [ -z "$flavour" ] && [ "${UFG_CLIPPY:-1}" = 1 ]; then
	lint=$UFG_BUILD/mod-$tag-clippy
	rm -rf "$lint"
	mkdir -p "$lint"
	cp -a "$UFG_TOP"/{Kbuild,src,include} "$lint/"
	if ! ufg_kmake "$arch" "$flavour" M="$lint" CLIPPY=1 CLIPPY_DRIVER=/usr/bin/clippy-driver \
		modules >"$log.clippy" 2>&1; then
		cat "$log.clippy"
		ufg_die "clippy build for $tag failed"
	fi
	if grep -E '^warning:|^error' -A6 "$log.clippy"; then
		[ "${UFG_WERROR:-0}" = 1 ] && ufg_die "clippy has warnings for $tag"
	fi
	rm -rf "$lint"
fi

# Client modules of the C API (selftests/modules), built like an outside module would
# be: against the installed headers and ufgraph.ko's Module.symvers.
clients=$src/clients
mkdir -p "$clients"
cp -a "$UFG_TOP"/selftests/modules/. "$clients/"
cp -a "$UFG_TOP"/include "$clients/include"
# The kernel's own trace-events sample module, from the source we build against, as shipped:
# upstream's newest ftracetest fprobe cases load it with modprobe (tests/61-ftracetest.sh).
sample=$UFG_SRC/samples/trace_events
if [ -f "$sample/trace-events-sample.c" ]; then
	cp "$sample/trace-events-sample.c" "$sample/trace-events-sample.h" "$clients/"
fi
if ! ufg_kmake "$arch" "$flavour" M="$clients" KBUILD_EXTRA_SYMBOLS="$src/Module.symvers" modules >"$log.clients" 2>&1; then
	cat "$log.clients"
	ufg_die "client module build for $tag failed"
fi
if grep -E 'warning:|WARNING:' "$log.clients"; then
	[ "${UFG_WERROR:-0}" = 1 ] && ufg_die "client module build for $tag has warnings"
fi
cp "$clients"/*.ko "$moddir/"
# The VM's copies lose their DWARF, as `make modules_install INSTALL_MOD_STRIP=1` strips a
# distribution's (.BTF stays: it is not a debug section). On the x86_64 kernel, whose modules
# carry DWARF for their BTF, ufgraph.ko went from 9.6 MB to 1 MB and each insmod under TCG from
# about 0.95 s to 0.4 s (the loader copies and hashes the whole file); the suite loads it some
# 170 times. The unstripped modules stay in build/mod-TAG/ for gdb and llvm-objdump.
for ko in "$moddir"/*.ko; do
	"llvm-objcopy$(ufg_llvm)" --strip-debug "$ko" || ufg_die "cannot strip $ko"
done
# Signed with the kernel's key: the test kernels refuse unsigned modules. One client stays
# unsigned too, for test 10 to check that refusal.
if grep -qx 'CONFIG_MODULE_SIG=y' "$(ufg_kdir "$arch" "$flavour")/.config"; then
	cp "$clients/ufgraph_client.ko" "$moddir/unsigned_client.ko"
	ufg_sign "$arch" "$flavour" $(ls "$moddir"/*.ko | grep -v '/unsigned_client.ko$')
fi
ufg_log "modules for $tag in $moddir"
