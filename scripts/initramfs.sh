#!/usr/bin/env bash
# Build the test initramfs for ARCH into OUT: busybox, our /init, the modules
# built for ARCH, and selftests/. The initramfs is rebuilt every time: it takes
# a second and always carries the freshly built modules.
set -euo pipefail
. "$(dirname "$0")/common.sh"

arch=${1:?arch}
out=${2:?output file}
modules_dir=${3:?directory holding the built .ko files}

busybox=$(ufg_busybox "$arch")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib/ufgraph}
install -m 0755 "$busybox" "$root/bin/busybox"
install -m 0755 "$UFG_TOP/selftests/init" "$root/init"
cp -a "$UFG_TOP/selftests" "$root/selftests"
# Upstream's ftracetest and the fprobe-event cases of the kernel source we build against, as
# shipped (tests/61-ftracetest.sh runs them against ufgraph's events).
ft="$UFG_SRC/tools/testing/selftests/ftrace"
if [ -x "$ft/ftracetest" ]; then
	mkdir -p "$root/ftrace/test.d/dynevent"
	install -m 0755 "$ft/ftracetest" "$root/ftrace/ftracetest"
	cp "$ft/test.d/functions" "$root/ftrace/test.d/"
	for t in add_remove_fprobe fprobe_args_vfs fprobe_entry_arg fprobe_syntax_errors \
		add_remove_tprobe tprobe_syntax_errors; do
		cp "$ft/test.d/dynevent/$t.tc" "$root/ftrace/test.d/dynevent/"
	done
	# Upstream's newest fprobe cases, if they were put there (they are not in this repository:
	# Documentation/events.md says which, and where from), run by the same ftracetest.
	up=${UFG_FTRACE_UPSTREAM:-$UFG_BUILD/ftrace-upstream}/test.d/dynevent
	if ls "$up"/*.tc > /dev/null 2>&1; then
		mkdir -p "$root/ftrace/upstream"
		cp "$up"/*.tc "$root/ftrace/upstream/"
	fi
fi
# Static x86_64 helpers (selftests/perfcount), built with the host's Rust toolchain: perfcount
# counts and samples an event with perf (tests 63 and 75; the VM has no perf tool), uringread
# reads a file on io_uring workers (test 74; the VM has no liburing), bpfhook sets a BPF
# fentry/fexit program on a function (the benchmarks; the VM has no libbpf or bpftool).
if [ "$arch" = x86_64 ] && [ "$(uname -m)" = x86_64 ]; then
	CARGO_TARGET_DIR="$UFG_BUILD/perfcount" RUSTFLAGS="-C target-feature=+crt-static" \
		cargo build -q --release --locked --target x86_64-unknown-linux-gnu \
		--manifest-path "$UFG_TOP/selftests/perfcount/Cargo.toml" || ufg_die "cannot build perfcount"
	for b in perfcount uringread bpfhook; do
		install -m 0755 "$UFG_BUILD/perfcount/x86_64-unknown-linux-gnu/release/$b" "$root/bin/$b"
	done
fi
find "$modules_dir" -maxdepth 2 -name '*.ko' -exec cp {} "$root/lib/ufgraph/" \;
[ -f "$root/lib/ufgraph/ufgraph.ko" ] || ufg_die "no ufgraph.ko in $modules_dir"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$out"
