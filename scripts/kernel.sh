#!/usr/bin/env bash
# Build the ufgraph test kernel for ARCH (x86_64, arm64) and FLAVOUR ("", debug, bench).
#
# The source is unpacked once from Debian's linux-source-6.12 under build/src; each
# (arch, flavour) pair has its own output directory, build/kernel-ARCH[-FLAVOUR].
# The config is `make tinyconfig` plus our fragments from configs/; the build is
# skipped when neither the fragments nor the source changed since the last
# successful build (a stamp holds their hash).
set -euo pipefail
. "$(dirname "$0")/common.sh"

arch=${1:-x86_64}
flavour=${2:-}
[ -f "$UFG_TARBALL" ] || ufg_die "$UFG_TARBALL is missing: run scripts/setup.sh"

# Unpack the source once; a changed tarball (a new Debian revision) unpacks again.
tarstamp=$(stat -c '%s-%Y' "$UFG_TARBALL")
if [ "$(cat "$UFG_BUILD/src/.stamp" 2>/dev/null)" != "$tarstamp" ]; then
	ufg_log "unpacking $UFG_TARBALL"
	rm -rf "$UFG_BUILD/src"
	mkdir -p "$UFG_BUILD/src"
	tar -C "$UFG_BUILD/src" -xf "$UFG_TARBALL"
	echo "$tarstamp" > "$UFG_BUILD/src/.stamp"
fi
[ "$arch" = --unpack-only ] && exit 0

ufg_karch "$arch" >/dev/null
kdir=$(ufg_kdir "$arch" "$flavour")
[ -x "$UFG_BINDGEN" ] || ufg_die "$UFG_BINDGEN is missing: run scripts/setup.sh"

fragments=("$UFG_TOP/configs/base.config" "$UFG_TOP/configs/$arch.config")
[ -n "$flavour" ] && fragments+=("$UFG_TOP/configs/$flavour.config")
[ -n "$flavour" ] && [ -f "$UFG_TOP/configs/$arch-$flavour.config" ] && \
	fragments+=("$UFG_TOP/configs/$arch-$flavour.config")

# One build per kernel directory at a time (make bench, make check and a shell may race). The
# lock is taken on the directory's real path: a build directory whose kernels are symlinks to
# another's (a second work tree) must wait for the same lock.
mkdir -p "$kdir"
kdir=$(readlink -f "$kdir")
exec 8>"$kdir.lock"
flock 8

want=$( (echo "$tarstamp"; cat "${fragments[@]}"; /usr/bin/rustc --version; "$UFG_BINDGEN" --version; "clang$(ufg_llvm)" --version; "ld.lld$(ufg_llvm)" --version) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$kdir/.ufgraph-stamp" 2>/dev/null)" = "$want" ] && [ -f "$kdir/Module.symvers" ]; then
	ufg_log "kernel $arch${flavour:+-$flavour} is up to date"
	exit 0
fi

mkdir -p "$kdir"
rm -f "$kdir/.ufgraph-stamp"
ufg_log "configuring kernel $arch${flavour:+-$flavour} in $kdir"
ufg_kmake "$arch" "$flavour" tinyconfig >/dev/null
"$UFG_SRC/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "${fragments[@]}" >/dev/null
ufg_kmake "$arch" "$flavour" olddefconfig >/dev/null

# Kconfig drops what it cannot satisfy without a word: check every line we asked for.
# A later fragment overrides an earlier one (as merge_config.sh does), so only the last
# line naming a symbol is checked.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*) grep -qx -- "$line" "$kdir/.config" || { ufg_log "config: wanted $line, got: $(grep -- "^${line%%=*}=\|# ${line%%=*} " "$kdir/.config" || echo unset)"; missing=1; } ;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }; sym=${sym%% *}
		grep -q "^$sym=[ym]" "$kdir/.config" && { ufg_log "config: wanted $sym off"; missing=1; } ;;
	esac
done < <(cat "${fragments[@]}" | sed -n 's/^\(CONFIG_[A-Za-z0-9_]*\)=.*/\1 &/p; s/^# \(CONFIG_[A-Za-z0-9_]*\) is not set/\1 &/p' |
	awk '{ sym=$1; sub(/^[^ ]* /, ""); last[sym]=$0; if (!(sym in seen)) { seen[sym]=1; order[++n]=sym } }
	     END { for (i = 1; i <= n; i++) print last[order[i]] }')
[ $missing = 0 ] || ufg_die "the kernel config lacks what ufgraph needs (see above); is 'make rustavailable' happy?"

ufg_log "building kernel $arch${flavour:+-$flavour} (about 10 minutes on 2 cores the first time)"
ufg_kmake "$arch" "$flavour" >"$kdir/build.log" 2>&1 || { tail -40 "$kdir/build.log"; ufg_die "kernel build failed; full log in $kdir/build.log"; }
echo "$want" > "$kdir/.ufgraph-stamp"
ufg_log "kernel $arch${flavour:+-$flavour} built"
