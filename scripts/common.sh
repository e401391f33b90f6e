# Shared settings for ufgraph's scripts. Sourced, not run.
# shellcheck shell=bash

UFG_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UFG_BUILD=${UFG_BUILD:-$UFG_TOP/build}
UFG_SRC=$UFG_BUILD/src/linux-source-6.12
UFG_TARBALL=${UFG_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
UFG_TOOLS=$UFG_BUILD/tools
UFG_BINDGEN_VERSION=0.73.2
UFG_BINDGEN=$UFG_TOOLS/bin/bindgen
UFG_JOBS=${UFG_JOBS:-$(nproc)}

# cargo (host tests, bindgen-cli's install) comes from rustup, in ~/.cargo/bin, which a
# non-login shell may not have on its PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
	PATH="$PATH:$HOME/.cargo/bin"
	export PATH
fi

# ARCH names as the kernel spells them, and our flavours: "" (test kernel),
# "debug" (lockdep, KASAN, kmemleak...), "bench" (no debugging at all).
ufg_karch() {
	case "$1" in
	x86_64) echo x86 ;;
	arm64) echo arm64 ;;
	*) echo "unknown arch $1" >&2; return 1 ;;
	esac
}

# The kernel output directory for ARCH [FLAVOUR].
ufg_kdir() {
	echo "$UFG_BUILD/kernel-$1${2:+-$2}"
}

# The LLVM toolchain every kernel and module is built with: Debian 12's clang-19 (lld-19,
# llvm-19), the oldest Debian clang with kCFI (CFI_CLANG) and return thunks
# (-mfunction-return=thunk-extern), which the test kernels enable (issue #18; clang 14, Debian's
# default, has neither). UFG_LLVM_VERSION overrides it: a major version, or "default" for the
# unversioned clang/ld.lld (LLVM=1).
ufg_llvm_version() {
	local v=${UFG_LLVM_VERSION:-19}
	[ "$v" = default ] && v=
	echo "$v"
}
# The suffix of its tools (clang-19: "-19"; the default: "") and the kernel's LLVM= for it.
ufg_llvm() { local v; v=$(ufg_llvm_version); echo "${v:+-$v}"; }
ufg_llvm_make() { local v; v=$(ufg_llvm); echo "${v:-1}"; }
# bindgen loads libclang at run time and takes the newest it finds, which need not be the
# clang the kernel is built with: with libclang-19 installed beside a kernel built by clang 14,
# the bindings fail on flags only clang 14 knows (`unknown argument:
# '-enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang'`, issue #18). Pin
# it to the libclang of the compiler actually used.
ufg_libclang() {
	local major
	major=$("clang$(ufg_llvm)" -dumpversion 2>/dev/null | cut -d. -f1)
	[ -n "$major" ] && [ -d "/usr/lib/llvm-$major/lib" ] && echo "/usr/lib/llvm-$major/lib"
}

# The make command line every kernel and module build uses.
ufg_kmake() {
	local arch=$1 flavour=$2; shift 2
	LIBCLANG_PATH=${LIBCLANG_PATH:-$(ufg_libclang)} \
	make -C "$UFG_SRC" O="$(ufg_kdir "$arch" "$flavour")" ARCH="$arch" \
		LLVM="$(ufg_llvm_make)" RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc \
		BINDGEN="$UFG_BINDGEN" -j"$UFG_JOBS" "$@"
}

# Signs the modules KO... with the key the ARCH [FLAVOUR] kernel's build generated, when that
# kernel checks signatures (CONFIG_MODULE_SIG; the test kernels enforce them). `make M=...
# modules` leaves external modules unsigned (kbuild signs at modules_install), and a module
# must not change after it is signed, so this runs on the final copies.
ufg_sign() {
	local kdir hash key cert ko
	kdir=$(ufg_kdir "$1" "$2"); shift 2
	grep -qx 'CONFIG_MODULE_SIG=y' "$kdir/.config" || return 0
	hash=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"$/\1/p' "$kdir/.config")
	key=$(sed -n 's/^CONFIG_MODULE_SIG_KEY="\(.*\)"$/\1/p' "$kdir/.config")
	case $key in /*) ;; *) key=$kdir/$key ;; esac
	cert=$kdir/certs/signing_key.x509
	for ko in "$@"; do
		"$kdir/scripts/sign-file" "$hash" "$key" "$cert" "$ko" || ufg_die "cannot sign $ko with $key"
	done
}

ufg_log() { printf '[ufgraph] %s\n' "$*" >&2; }
ufg_die() { printf '[ufgraph] error: %s\n' "$*" >&2; exit 1; }

# A static busybox for ARCH: the host's for x86_64, Debian's arm64 package
# (fetched by setup.sh) for arm64.
ufg_busybox() {
	case "$1" in
	x86_64) echo /bin/busybox ;;
	arm64) echo "$UFG_TOOLS/arm64/bin/busybox" ;;
	esac
}
