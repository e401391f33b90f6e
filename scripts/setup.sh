#!/usr/bin/env bash
# Install what ufgraph needs to build and test, if it is missing: Debian packages
# (needs root; otherwise it prints the command to run) and a pinned bindgen-cli
# from crates.io under build/tools. Quick when everything is already there.
set -euo pipefail
. "$(dirname "$0")/common.sh"

packages=(linux-source-6.12 rustc-web rust-web-src clang lld llvm libclang-dev
	qemu-system-x86 qemu-system-arm busybox-static bc flex bison libelf-dev
	libssl-dev cpio xz-utils make gzip
	lz4 # lz4: the x86_64 kernels' image compression (configs/x86_64.config)
	libc6-dev # libc6-dev: the static C library for the in-VM helpers (selftests/perfcount)
	dwarves # dwarves: pahole, which makes the x86_64 test kernel's BTF (BPF fentry/fexit in the benchmarks)
	rust-web-clippy # clippy-driver for rustc-web: the module builds through it (scripts/module.sh)
	trace-cmd linux-perf # the real clients test 88 runs on ufgraph's events in the x86_64 VM (scripts/initramfs.sh copies them in with their libraries; scripts/clients-arm64.sh fetches the arm64 ones)
	binutils # readelf: the arm64 clients' libraries (scripts/clients-arm64.sh)
	clang-19 lld-19 llvm-19 libclang-19-dev) # clang-19: every kernel and module (kCFI, return thunks; scripts/common.sh)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# bindgen-cli compiles from crates.io while apt installs the packages, when apt cannot change
# what it compiles with: a cargo not from Debian (rustup's), a C linker and libc's development
# files already there (bindgen loads libclang at run time), and apt about to run (root) or
# nothing to install. On a fresh machine the two took about a minute each, one after the other.
# The job does not outlive this script.
bindgen_pid=
trap '[ -z "$bindgen_pid" ] || kill "$bindgen_pid" 2>/dev/null' EXIT
need_bindgen() { ! "$UFG_BINDGEN" --version 2>/dev/null | grep -qx "bindgen $UFG_BINDGEN_VERSION"; }
install_bindgen() {
	command -v cargo >/dev/null || ufg_die "cargo is needed to install bindgen-cli $UFG_BINDGEN_VERSION"
	ufg_log "installing bindgen-cli $UFG_BINDGEN_VERSION into $UFG_TOOLS"
	mkdir -p "$UFG_TOOLS"
	cargo install --quiet --locked bindgen-cli --version "$UFG_BINDGEN_VERSION" --root "$UFG_TOOLS" \
		> "$UFG_TOOLS/bindgen-install.log" 2>&1 &
	bindgen_pid=$!
}
cargo_path=$(command -v cargo || true)
if need_bindgen && [ -n "$cargo_path" ] && ! dpkg -S "$(readlink -f "$cargo_path")" >/dev/null 2>&1 &&
	command -v cc >/dev/null &&
	dpkg-query -W -f='${Status}' libc6-dev 2>/dev/null | grep -q 'install ok installed' &&
	{ [ "$(id -u)" = 0 ] || [ ${#missing[@]} = 0 ]; }; then
	install_bindgen
fi

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		ufg_die "missing Debian packages; as root run:
    apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
	fi
	ufg_log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -n "$bindgen_pid" ] || ! need_bindgen || install_bindgen
if [ -n "$bindgen_pid" ]; then
	rc=0
	wait "$bindgen_pid" || rc=$?
	bindgen_pid=
	if [ "$rc" != 0 ]; then
		cat "$UFG_TOOLS/bindgen-install.log" >&2
		ufg_die "cannot install bindgen-cli $UFG_BINDGEN_VERSION (see above)"
	fi
fi

# The coverage-guided fuzz targets (host/fuzz/cov, scripts/fuzz.sh) use the libfuzzer-sys
# crate, which compiles libFuzzer with clang++ (the clang package above): fetch it now.
if ! cargo fetch --locked --quiet --manifest-path "$UFG_TOP/host/fuzz/cov/Cargo.toml"; then
	ufg_die "cannot fetch the fuzz targets' crates from crates.io (host/fuzz/cov/Cargo.lock)"
fi

# arm64 test VMs need an arm64 static busybox: Debian's package, unpacked under build/tools.
arm64_busybox=$(ufg_busybox arm64)
case " ${UFG_KERNELS-x86_64 x86_64:debug arm64} " in
*" arm64"*)
	if [ ! -x "$arm64_busybox" ]; then
		[ "$(id -u)" = 0 ] || ufg_die "an arm64 busybox is needed; as root run: dpkg --add-architecture arm64 && apt-get update"
		if ! dpkg --print-foreign-architectures | grep -qx arm64; then
			dpkg --add-architecture arm64
			apt-get update -qq
		fi
		tmp=$(mktemp -d)
		(cd "$tmp" && apt-get download -qq busybox-static:arm64 >/dev/null) ||
			{ apt-get update -qq && (cd "$tmp" && apt-get download -qq busybox-static:arm64 >/dev/null); } ||
			ufg_die "cannot download busybox-static:arm64"
		mkdir -p "$UFG_TOOLS/arm64"
		dpkg -x "$tmp"/busybox-static_*_arm64.deb "$tmp/x"
		install -D -m 0755 "$tmp/x/bin/busybox" "$arm64_busybox"
		rm -rf "$tmp"
		ufg_log "arm64 busybox in $arm64_busybox"
	fi
	# Debian's arm64 trace-cmd and perf with their libraries (test 88 in the arm64 VM).
	if [ "$(id -u)" = 0 ]; then
		"$UFG_TOP/scripts/clients-arm64.sh"
	elif [ ! -x "$UFG_TOOLS/arm64/clients/usr/bin/perf" ]; then
		ufg_log "not root: no arm64 trace-cmd and perf (test 88 skips in the arm64 VM); as root run scripts/clients-arm64.sh"
	fi
	;;
esac

# The kernel's own check that this rustc/bindgen/libclang set builds Rust code, with the
# toolchain the builds use (scripts/common.sh); redone when any of them changes.
avail=$( (/usr/bin/rustc --version; "$UFG_BINDGEN" --version; "clang$(ufg_llvm)" --version; ufg_libclang) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$UFG_TOOLS/.rustavailable" 2>/dev/null)" != "$avail" ]; then
	[ -f "$UFG_SRC/Makefile" ] || "$UFG_TOP/scripts/kernel.sh" --unpack-only
	LIBCLANG_PATH=${LIBCLANG_PATH:-$(ufg_libclang)} make -s -C "$UFG_SRC" LLVM="$(ufg_llvm_make)" \
		RUSTC=/usr/bin/rustc BINDGEN="$UFG_BINDGEN" rustavailable >&2 ||
		ufg_die "make rustavailable says no: see above"
	echo "$avail" > "$UFG_TOOLS/.rustavailable"
fi
ufg_log "setup done"
