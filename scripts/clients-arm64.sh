#!/usr/bin/env bash
# Debian's trace-cmd and perf for the arm64 test VM (tests/88-real-clients.sh), as on x86_64
# where scripts/initramfs.sh copies in the host's own. The host cannot run or ldd arm64
# binaries, so this builds their tree here once, under build/tools/arm64/clients:
#
#   usr/bin/trace-cmd, usr/bin/perf           from trace-cmd:arm64 and linux-perf:arm64
#   lib/ld-linux-aarch64.so.1                 the loader their PT_INTERP names
#   lib/aarch64-linux-gnu/*.so.*, usr/lib/... every library they load, and the libraries those
#                                             load, at the paths the loader searches
#
# The libraries come from the packages the two depend on, fetched round by round: each round
# reads the ELF files' DT_NEEDED entries (readelf reads any architecture) and, while one has
# no file yet, downloads the library packages (lib*, zlib1g) that the packages already fetched
# depend on. Only the files named by DT_NEEDED go into the tree, not whole packages (perf's
# Python and Perl libraries are loaded by perf itself; their modules are not needed to record
# and report). A library that stays missing is an error, rather than a binary the VM's loader
# refuses. Needs root once (apt's arm64 index, as for the arm64 busybox); quick afterwards.
set -euo pipefail
. "$(dirname "$0")/common.sh"

out=$UFG_TOOLS/arm64/clients
if [ -x "$out/usr/bin/trace-cmd" ] && [ -x "$out/usr/bin/perf" ]; then
	exit 0
fi
command -v readelf >/dev/null || ufg_die "readelf (binutils) is needed to read the arm64 clients' libraries"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debs" "$tmp/root"

# Downloads packages $@ (arm64) and unpacks them into $tmp/root.
fetch() {
	local before
	before=$(ls "$tmp/debs")
	(cd "$tmp/debs" && apt-get download -qq "${@/%/:arm64}" >/dev/null 2>&1) ||
		ufg_die "cannot download the arm64 packages: $*"
	for d in "$tmp"/debs/*.deb; do
		echo "$before" | grep -qxF "$(basename "$d")" || dpkg -x "$d" "$tmp/root"
	done
}

# The file in the unpacked tree for soname $1, relative to it, or nothing.
find_lib() {
	local d
	for d in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib; do
		if [ -e "$tmp/root/$d/$1" ]; then
			echo "$d/$1"
			return
		fi
	done
}

# The file path $1 (in the unpacked tree) leads to through its symlinks, which may be absolute
# (meant for the arm64 root, not this host's).
resolve() {
	local f=$tmp/root/$1 t n
	for n in 1 2 3 4 5 6 7 8; do
		[ -L "$f" ] || break
		t=$(readlink "$f")
		case "$t" in /*) f=$tmp/root$t ;; *) f=$(dirname "$f")/$t ;; esac
	done
	[ -f "$f" ] || ufg_die "arm64 clients: $1 leads to no file"
	echo "$f"
}

# The closure of DT_NEEDED from the two binaries: prints "soname path" for each library found
# and "soname -" for each missing one.
closure() {
	local -A seen=()
	local todo=(usr/bin/trace-cmd usr/bin/perf) f n p
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for n in $(readelf -d "$tmp/root/$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			[ -z "${seen[$n]-}" ] || continue
			p=$(find_lib "$n")
			seen[$n]=${p:--}
			echo "$n ${p:--}"
			[ -z "$p" ] || todo+=("$p")
		done
	done
}

ufg_log "fetching trace-cmd and perf for arm64 (test 88 in the arm64 VM)"
fetch trace-cmd linux-perf
got=" trace-cmd linux-perf "
for round in 1 2 3 4 5 6 7 8; do
	missing=$(closure | awk '$2 == "-" { print $1 }')
	[ -n "$missing" ] || break
	# The library packages the packages fetched so far depend on ("a (>= 1) | b" takes a).
	want=()
	for d in "$tmp"/debs/*.deb; do
		for p in $( (dpkg-deb -f "$d" Depends; dpkg-deb -f "$d" Pre-Depends) | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g'); do
			case "$p" in lib* | zlib1g) ;; *) continue ;; esac
			case "$got" in *" $p "*) continue ;; esac
			got="$got$p "
			want+=("$p")
		done
	done
	[ ${#want[@]} -gt 0 ] || ufg_die "arm64 clients: no package left to fetch for: $missing"
	fetch "${want[@]}"
done
missing=$(closure | awk '$2 == "-" { print $1 }')
[ -z "$missing" ] || ufg_die "arm64 clients: libraries not found: $missing"

rm -rf "$out.new"
mkdir -p "$out.new"
for f in usr/bin/trace-cmd usr/bin/perf $(closure | awk '{ print $2 }'); do
	# -L: the file itself under the name the loader asks for (most are symlinks to it).
	install -D -m 0755 "$(resolve "$f")" "$out.new/$f"
done
interp=$(readelf -l "$tmp/root/usr/bin/perf" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
[ -n "$interp" ] || ufg_die "arm64 clients: no program interpreter ($interp)"
install -D -m 0755 "$(resolve "$interp")" "$out.new$interp"
rm -rf "$out"
mv "$out.new" "$out"
ufg_log "arm64 trace-cmd and perf in $out ($(du -sh "$out" | cut -f1))"
