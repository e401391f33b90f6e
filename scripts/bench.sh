#!/usr/bin/env bash
# `make bench`: ufgraph against the kernel's own return hooks, measured in one run.
#
#   scripts/bench.sh [--arch x86_64|arm64] [--quick] [--report-only] [--profile]
#
# Builds the non-debug x86_64 test kernel (if needed), ufgraph.ko and the benchmark client
# bench/ufgraph_bench.ko, then boots the VM three times (TCG, two vCPUs; KVM is never used):
#
#   1. with `-icount shift=0`: guest time advances one nanosecond per instruction, so the
#      per-call figures are deterministic instruction counts (also: memory);
#   2. without it: wall-clock per-call cost, and concurrency (both vCPUs on host threads);
#   3. mass attach (and a second probe on the same functions), with single-threaded TCG:
#      with a host thread per vCPU, patching ftrace's call sites in 10000 functions while
#      the other vCPU ran crashed the guest twice in our runs (an int3 left behind in a
#      patched function; a jump to 0 in the idle loop right after a kprobe handler), in the
#      kernel's own text patching, whoever asked for it. Under `-icount shift=0,sleep=off`:
#      guest time is the instructions both vCPUs execute, and an idle wait (a grace period)
#      jumps to the next timer, so the figures do not depend on the host (wall clock under
#      TCG read 0.65x to 1.27x for the same code in two runs).
#
# Two vCPUs are given as two sockets: with QEMU 7.2's default topology (one socket, two
# cores) SeaBIOS's MP table lists one CPU, and a kernel without ACPI then brings up one.
# UFG_BENCH_PASSES (default "icount wall attach") runs fewer passes; --report-only reuses the logs.
#
# --profile (only that) boots once more with QEMU's gdbstub and has gdb single-step one call
# of the target per hook; the report lists, per hook, the instructions spent in each function
# and the locked read-modify-write instructions among them (Documentation/benchmarks.md,
# "Where the instructions go"). The Targets of the other report take that count from the
# profile when both measured the same build (build/bench-x86_64/build-id: the sources and the
# kernel image); a profile run refreshes them when the last full run measured its build.
#
# --arch arm64 (`make bench-arm64`, under a minute; `make bench` runs it first): the arm64 test
# kernel in qemu-system-aarch64 -M virt, as scripts/vm.sh boots it, for the icount and wall
# passes' per-call cost only (6.12 has no kernel fprobe on arm64, so those rows are absent, and
# so are memory and concurrency, which compare with it; no attach pass), into the
# "bench-arm64" markers of Documentation/benchmarks.md. Logs in build/bench-arm64/. The
# x86_64 report's Targets read build/bench-arm64/icount.log for their arm64 line.
# --profile is x86_64 only.
#
# host/bench-report turns the logs into tables in Documentation/benchmarks.md (between
# its "bench:begin"/"bench:end" markers) and plots in Documentation/bench-*.svg, and prints
# the tables. Logs: build/bench-x86_64/{icount,wall,attach}.log.
set -euo pipefail
. "$(dirname "$0")/common.sh"

arch=x86_64
quick=0
report_only=0
profile=0
usage="usage: scripts/bench.sh [--arch x86_64|arm64] [--quick] [--report-only] [--profile]"
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--report-only) report_only=1 ;;
	--profile) profile=1 ;;
	--arch) [ $# -ge 2 ] || ufg_die "$usage"; arch=$2; shift ;;
	--arch=*) arch=${1#--arch=} ;;
	*) ufg_die "$usage" ;;
	esac
	shift
done
case "$arch" in
x86_64) image=arch/x86/boot/bzImage ;;
arm64)
	image=arch/arm64/boot/Image
	[ $profile = 0 ] || ufg_die "--profile is x86_64 only (its gdb script steps x86_64 code)"
	;;
*) ufg_die "$usage" ;;
esac
bdir=$UFG_BUILD/bench-$arch
kdir=$(ufg_kdir "$arch" "")
timeout_s=${UFG_BENCH_TIMEOUT:-480}
mkdir -p "$bdir"

build() {
	"$UFG_TOP/scripts/kernel.sh" "$arch"
	# ufgraph.ko and the client are built here, from copies (as scripts/module.sh does, in
	# directories of their own): ufgraph from the work tree, or with UFG_BENCH_REV=REV from
	# a git revision (to measure a commit while the work tree is being edited).
	rm -rf "$bdir/modules" "$bdir/src" "$bdir/ufgraph"
	mkdir -p "$bdir/modules" "$bdir/src" "$bdir/ufgraph"
	if [ -n "${UFG_BENCH_REV:-}" ]; then
		git -C "$UFG_TOP" archive "$UFG_BENCH_REV" Kbuild src include arch | tar -C "$bdir/ufgraph" -x
		echo "commit $(git -C "$UFG_TOP" rev-parse --short "$UFG_BENCH_REV")" > "$bdir/source"
	else
		cp -a "$UFG_TOP"/{Kbuild,src,include} "$bdir/ufgraph/"
		local dirty=""
		git -C "$UFG_TOP" diff --quiet HEAD -- Kbuild src include arch || dirty=" with uncommitted changes"
		echo "the work tree at $(git -C "$UFG_TOP" rev-parse --short HEAD)$dirty" > "$bdir/source"
	fi
	ufg_log "bench: ufgraph from $(cat "$bdir/source")"
	# The client, like the selftest clients: against the headers and ufgraph's exports.
	cp -a "$UFG_TOP/bench/." "$bdir/src/"
	cp -a "$bdir/ufgraph/include" "$bdir/src/include"
	# What this build measures, before anything is built in these directories: the profile is
	# a boot of its own, and the report uses its figures only for logs of the same build.
	{
		(cd "$bdir" && find ufgraph src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		sha256sum < "$kdir/$image"
	} | sha256sum | cut -d' ' -f1 > "$bdir/build-id"
	local log=$bdir/build.log
	if ! ufg_kmake "$arch" "" M="$bdir/ufgraph" modules >"$log" 2>&1 ||
		! ufg_kmake "$arch" "" M="$bdir/src" KBUILD_EXTRA_SYMBOLS="$bdir/ufgraph/Module.symvers" modules >>"$log" 2>&1; then
		cat "$log"
		ufg_die "bench module build failed"
	fi
	if grep -E 'warning:|WARNING:' "$log"; then
		[ "${UFG_WERROR:-0}" = 1 ] && ufg_die "bench module build has warnings"
	fi
	cp "$bdir/ufgraph/ufgraph.ko" "$bdir/src/ufgraph_bench.ko" "$bdir/modules/"
	ufg_sign "$arch" "" "$bdir/modules/ufgraph.ko" "$bdir/modules/ufgraph_bench.ko"
	"$UFG_TOP/scripts/initramfs.sh" "$arch" "$bdir/initramfs.cpio.gz" "$bdir/modules"
}

# boot PASS QEMU-ARGS...: one VM run of selftests/bench.sh; its console in PASS.log.
boot() {
	local pass=$1 log=$bdir/$1.log
	shift
	local append="panic=-1 oops=panic ufg.mode=bench ufg.bench=$pass ufg.benchq=$quick" machine
	case "$arch" in
	x86_64)
		# tsc=reliable: with two sockets and no invariant-TSC flag the kernel would find the
		# TSCs "unsynchronized" and fall back to jiffies, which do not advance with interrupts off.
		machine=(qemu-system-x86_64 "$@" -cpu max -smp 2,sockets=2)
		append="console=ttyS0 tsc=reliable $append"
		;;
	arm64)
		# As scripts/vm.sh boots it. The clock is the arch timer (62.5 MHz in QEMU: under
		# -icount shift=0 it ticks every 16 instructions, 0.008 per call over a chunk of 2000).
		machine=(qemu-system-aarch64 "$@" -M virt -cpu max,pauth-impdef=on -smp 2)
		append="console=ttyAMA0 $append"
		;;
	esac
	ufg_log "bench: booting the $arch $pass pass (time limit ${timeout_s}s), log in $log"
	local start=$SECONDS
	set +e
	timeout --kill-after=10 "$timeout_s" "${machine[@]}" \
		-kernel "$kdir/$image" -m 1024 -display none -no-reboot \
		-monitor none -serial stdio -initrd "$bdir/initramfs.cpio.gz" -append "$append" \
		</dev/null 2>&1 | tee "$log" | grep --line-buffered -E '^@@bench (start|end|error)|WARNING|BUG|Oops|panic'
	local qrc=${PIPESTATUS[0]}
	set -e
	sed -i 's/\r$//' "$log"
	ufg_log "bench: $pass pass took $((SECONDS - start))s"
	[ "$qrc" = 124 ] || [ "$qrc" = 137 ] && ufg_log "bench: QEMU killed after ${timeout_s}s (the report shows what finished)"
	grep -q "^@@bench end pass=$pass" "$log" || ufg_log "bench: the $pass pass did not finish (see $log)"
}

# The profile pass: QEMU with its gdbstub; for each "@@bench profile name=H target=T flag=F"
# line the VM prints, gdb attaches, puts a hardware breakpoint on the target, sets the flag
# the VM waits for, and single-steps the call until it is back in its caller, printing every
# instruction's address and its disassembly ("@pc ADDR => 0xADDR:<tab>INSN") to profile-H.pcs.
# The disassembly is gdb's of the bytes executed (`x/i $pc`), not of vmlinux or a .ko: it holds
# what was patched at run time (alternatives, static calls, ftrace's call sites) and the
# trampolines ftrace and kprobes generate, which no file holds. Then gdb detaches and the VM
# goes on.
profile_pass() {
	local log=$bdir/profile.log port=$((20000 + RANDOM % 20000)) n=0 line name target flag
	command -v gdb > /dev/null || ufg_die "the profile pass needs gdb (apt-get install gdb)"
	rm -f "$bdir"/profile-*.pcs
	cat > "$bdir/step.gdb" <<-'GDB'
	set pagination off
	set confirm off
	set $ret = *(unsigned long *)$rsp
	set $n = 0
	while $pc != $ret && $n < 200000
	  printf "@pc %lx ", $pc
	  x/i $pc
	  stepi
	  set $n = $n + 1
	end
	delete
	GDB
	local append="console=ttyS0 panic=-1 oops=panic tsc=reliable ufg.mode=bench ufg.bench=profile ufg.benchq=0"
	ufg_log "bench: booting the profile pass (gdbstub on port $port), log in $log"
	# Created here: the loop below reads it before the background QEMU's redirection may have.
	: > "$log"
	timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=single -cpu max \
		-kernel "$kdir/arch/x86/boot/bzImage" -smp 2,sockets=2 -m 1024 -display none -no-reboot \
		-monitor none -serial stdio -gdb "tcp:127.0.0.1:$port" -initrd "$bdir/initramfs.cpio.gz" \
		-append "$append" < /dev/null > "$log" 2>&1 &
	local qpid=$!
	# shellcheck disable=SC2064
	trap "kill $qpid 2>/dev/null" EXIT
	while kill -0 $qpid 2>/dev/null; do
		line=$(tr -d '\r' < "$log" | { grep '^@@bench profile name=' || true; } | sed -n "$((n + 1))p")
		if [ -z "$line" ]; then
			sleep 0.5
			continue
		fi
		n=$((n + 1))
		name=$(echo "$line" | sed -n 's/.* name=\([^ ]*\).*/\1/p')
		target=$(echo "$line" | sed -n 's/.* target=\(0x[0-9a-f]*\).*/\1/p')
		flag=$(echo "$line" | sed -n 's/.* flag=\(0x[0-9a-f]*\).*/\1/p')
		ufg_log "bench: single-stepping one call with hook $name"
		timeout 300 gdb -batch -nx -ex "target remote 127.0.0.1:$port" -ex "hbreak *$target" \
			-ex "set var *(int *)$flag = 1" -ex continue -x "$bdir/step.gdb" -ex detach \
			2>&1 | tee "$bdir/profile-$name.gdb.log" | grep "^@pc " > "$bdir/profile-$name.pcs" || true
		ufg_log "bench: $name: $(wc -l < "$bdir/profile-$name.pcs") instructions"
	done
	wait $qpid || true
	trap - EXIT
	sed -i 's/\r$//' "$log"
	grep -q "^@@bench end pass=profile" "$log" || ufg_log "bench: the profile pass did not finish (see $log)"
}

# The tables of the bench passes' logs (and the profile's summary, if of the same build). On
# x86_64 the Targets also say whether the arm64 rows were measured (the last arm64 run's log,
# if there is one: `make bench` runs it first).
report() {
	local src
	src=$(cat "$bdir/bench.source" 2>/dev/null || cat "$bdir/source" 2>/dev/null || echo unknown)
	if [ "$arch" = arm64 ]; then
		cargo run --quiet --release --manifest-path "$UFG_TOP/Cargo.toml" -p bench-report -- \
			--arch arm64 --source "$src" --icount "$bdir/icount.log" --wall "$bdir/wall.log" \
			--text "$bdir/report.txt" "$@"
		return
	fi
	local a64=$UFG_BUILD/bench-arm64 arm=()
	[ -s "$a64/icount.log" ] && arm=(--arm64 "$a64/icount.log" --arm64-source "$(cat "$a64/bench.source" 2>/dev/null || echo unknown)")
	cargo run --quiet --release --manifest-path "$UFG_TOP/Cargo.toml" -p bench-report -- \
		--source "$src" \
		--build-id "$(cat "$bdir/bench.build-id" 2>/dev/null || echo unknown)" \
		--profile-summary "$bdir/profile.tsv" "${arm[@]}" \
		--icount "$bdir/icount.log" --wall "$bdir/wall.log" --attach "$bdir/attach.log" --text "$bdir/report.txt" "$@"
}

if [ $profile = 1 ]; then
	build
	profile_pass
	cargo run --quiet --release --manifest-path "$UFG_TOP/Cargo.toml" -p bench-report -- \
		--profile "$bdir" --system-map "$kdir/System.map" --text "$bdir/profile.txt" \
		--doc "$UFG_TOP/Documentation/benchmarks.md"
	# The Targets count locked instructions from this profile: write them again when the last
	# full (not --quick) run measured this same build, so that the two orders of make bench
	# and make bench-profile give the same document.
	if [ -s "$bdir/profile.tsv" ] && [ "$(cat "$bdir/bench.build-id" 2>/dev/null)" = "$(cat "$bdir/build-id")" ] &&
		grep -q '^@@bench start pass=icount quick=0 ' "$bdir/icount.log" 2>/dev/null; then
		ufg_log "bench: the last make bench measured this build: its Targets again, with this profile"
		report --doc "$UFG_TOP/Documentation/benchmarks.md" --svg-dir "$UFG_TOP/Documentation" > /dev/null
	fi
	exit 0
fi

# boot_clocked PASS QEMU-ARGS...: boot, and on x86_64 boot again (up to three runs in all) when
# the guest did not get the TSC as its clocksource. On a loaded host the kernel's calibration of
# the TSC against the PIT can fail ("Unable to calibrate against PIT"); it then runs on jiffies,
# which stand still while a chunk runs with interrupts off: every wall figure would read 0.
boot_clocked() {
	local pass=$1 n cs
	for n in 1 2 3; do
		boot "$@"
		[ "$arch" = x86_64 ] || return 0
		cs=$(sed -n 's/^@@bench start .*clocksource=\([^ ]*\).*/\1/p' "$bdir/$pass.log")
		[ "$cs" = tsc ] && return 0
		ufg_log "bench: the $pass pass ran on clocksource '${cs:-none}', not tsc (run $n of 3)"
	done
	ufg_log "bench: the $pass pass never got the TSC: its wall-clock figures are not usable"
}

if [ $report_only = 0 ]; then
	build
	default_passes="icount wall attach"
	[ "$arch" = arm64 ] && default_passes="icount wall"
	for pass in ${UFG_BENCH_PASSES:-$default_passes}; do
		case $pass in
		icount) boot icount -accel tcg -icount shift=0 ;;
		wall) boot_clocked wall -accel tcg ;;
		attach)
			[ "$arch" = x86_64 ] || ufg_die "the attach pass is x86_64 only"
			boot_clocked attach -accel tcg,thread=single -icount shift=0,sleep=off
			;;
		*) ufg_die "unknown pass $pass (icount, wall, attach)" ;;
		esac
	done
	# The build these logs measured (a later --profile builds again, and writes build-id).
	cp "$bdir/build-id" "$bdir/bench.build-id"
	cp "$bdir/source" "$bdir/bench.source"
fi

out=()
if [ $quick = 0 ]; then
	out=(--doc "$UFG_TOP/Documentation/benchmarks.md")
	[ "$arch" = x86_64 ] && out+=(--svg-dir "$UFG_TOP/Documentation")
fi
report "${out[@]}"
