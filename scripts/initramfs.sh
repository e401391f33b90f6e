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
		add_remove_tprobe tprobe_syntax_errors add_remove_btfarg; do
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
# counts and samples an event with perf (tests 63 and 75: exact counts, raw records and registers), uringread
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
# Real clients (tests/88-real-clients.sh): Debian's trace-cmd and perf, as a user runs them,
# with every shared library they load and the dynamic loader, at the paths ldd names (the
# loader searches /lib/x86_64-linux-gnu without an ld.so.cache). The host's binaries cannot run
# on the arm64 VM: it gets Debian's arm64 ones, which scripts/clients-arm64.sh (run by setup)
# fetched with their libraries into build/tools/arm64/clients. A client the host lacks is left out
# (its test skips, saying so; scripts/setup.sh installs both); a client whose library is
# missing fails the build, rather than leaving a binary the loader refuses in the VM.
if [ "$arch" = x86_64 ] && [ "$(uname -m)" = x86_64 ]; then
	# Debian's /usr/bin/perf is perf itself (linux-perf 6.1) or a wrapper script that runs
	# perf_<version> matching `uname -r` (other linux-perf versions), which finds none for the
	# VM's 6.12: take the ELF binary, newest version first, and install it as /usr/bin/perf.
	perf=
	for f in /usr/bin/perf $(ls /usr/bin/perf_[0-9]* 2>/dev/null | sort -rV); do
		[ -f "$f" ] && [ "$(head -c 4 "$f" | tail -c 3)" = ELF ] && { perf=$f; break; }
	done
	libs=()
	for pair in "/usr/bin/trace-cmd:trace-cmd" "$perf:perf"; do
		bin=${pair%:*}
		if [ -z "$bin" ] || [ ! -x "$bin" ]; then
			ufg_log "initramfs: no ${pair##*:} on this host (scripts/setup.sh installs it): test 88 skips it"
			continue
		fi
		deps=$(ldd "$bin") || ufg_die "initramfs: ldd $bin failed"
		if echo "$deps" | grep -q 'not found'; then
			ufg_die "initramfs: $bin needs libraries this host lacks:
$(echo "$deps" | grep 'not found')"
		fi
		install -D -m 0755 "$bin" "$root/usr/bin/${pair##*:}"
		# "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
		while read -r lib; do libs+=("$lib"); done < <(echo "$deps" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
	done
	for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
		[ -f "$lib" ] || ufg_die "initramfs: ldd named $lib, which is not a file"
		# -L: the file itself under the name the loader asks for (most are symlinks to it).
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
fi
if [ "$arch" = arm64 ]; then
	if [ -x "$UFG_TOOLS/arm64/clients/usr/bin/perf" ]; then
		cp -a "$UFG_TOOLS/arm64/clients/." "$root/"
	else
		ufg_log "initramfs: no arm64 trace-cmd and perf (scripts/clients-arm64.sh, as root): test 88 skips"
	fi
fi
find "$modules_dir" -maxdepth 2 -name '*.ko' -exec cp {} "$root/lib/ufgraph/" \;
[ -f "$root/lib/ufgraph/ufgraph.ko" ] || ufg_die "no ufgraph.ko in $modules_dir"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$out"
