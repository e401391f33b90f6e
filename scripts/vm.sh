#!/usr/bin/env bash
# Boot the test kernel for ARCH [FLAVOUR] in QEMU (TCG only: KVM does not work on
# these machines) with an initramfs holding the modules and selftests/, in MODE
# (check, demo or shell), and collect the results.
#
#   scripts/vm.sh ARCH FLAVOUR MODE [FILTER]
#
# In check mode it prints one line per test and a summary, writes the results to
# build/results-ARCH[-FLAVOUR].txt ("ok|fail|skip NAME" lines) and exits non-zero
# when anything failed. The run fails as a whole when QEMU exceeds its time limit
# (UFG_VM_TIMEOUT seconds), when the VM never reports "@@ufg done", or when the
# kernel log shows a WARNING, BUG, Oops, panic, lockdep, KASAN or kmemleak report.
#
# UFG_VM_SHARD=K runs only shard K of the test set (the set list's second column, see
# selftests/run.sh), with its own log, results, time and initramfs files (NAME.sK): make check
# runs the debug kernel's set as two such VMs at once, one per CPU.
set -euo pipefail
. "$(dirname "$0")/common.sh"

arch=${1:-x86_64}
flavour=${2:-}
mode=${3:-check}
filter=${4:-}
tag=$arch${flavour:+-$flavour}
kdir=$(ufg_kdir "$arch" "$flavour")
moddir=$UFG_BUILD/modules-$tag
# The debug kernel (KASAN, lockdep, kmemleak) runs the suite about four times slower.
# The base run takes about 8 minutes with make check's kernel builds beside it; the limit leaves
# room for a busier machine.
case "$flavour:${UFG_DEBUG_ALL:-0}" in
debug:1) default_timeout=5400 ;; # make check-debug: every test
debug:*) default_timeout=1800 ;; # the set of selftests/sets/debug.list
*) default_timeout=1500 ;;
esac
timeout_s=${UFG_VM_TIMEOUT:-$default_timeout}
shard=${UFG_VM_SHARD:-}
sfx=${shard:+.s$shard}
log=$UFG_BUILD/vm-$tag-$mode$sfx.log
results=$UFG_BUILD/results-$tag$sfx.txt

# One run per kernel (and shard) at a time: runs share the log, results and initramfs files.
mkdir -p "$UFG_BUILD"
exec 9>"$UFG_BUILD/.vm-$tag$sfx.lock"
flock 9

initrd=$UFG_BUILD/initramfs-$tag$sfx.cpio.gz
"$UFG_TOP/scripts/initramfs.sh" "$arch" "$initrd" "$moddir"

# The debug kernel runs the suite several times slower than the others (KASAN, lockdep,
# kmemleak, PREEMPT_RT under TCG: about 40 minutes for all of it, which CI's hour cannot hold
# beside the rest): in check mode it runs the set in selftests/sets/debug.list, the tests whose
# code paths the debug checkers have most to say about, unless UFG_DEBUG_ALL=1 (`make
# check-debug`) or a filter picks tests by name.
set=
if [ "$flavour" = debug ] && [ "$mode" = check ] && [ -z "$filter" ] && [ "${UFG_DEBUG_ALL:-0}" != 1 ]; then
	set=debug
fi
# A shard is a part of a set: without one it would run everything, as many times as there are
# shards.
[ -z "$shard" ] || [ -n "$set" ] || ufg_die "UFG_VM_SHARD needs a test set (the debug kernel's check run)"
append="panic=-1 oops=panic ufg.mode=$mode${filter:+ ufg.filter=$filter}${set:+ ufg.set=$set}${shard:+ ufg.shard=$shard}${UFG_VM_APPEND:+ $UFG_VM_APPEND}"
case "$arch" in
x86_64)
	# Two sockets: with QEMU's default one-socket topology SeaBIOS's MP table lists one CPU
	# and the ACPI-less test kernel brings up only that one. tsc=reliable: two sockets' TSCs
	# look unsynchronised to the kernel, which would fall back to jiffies.
	# Single-threaded TCG (the two vCPUs take turns on one host thread): with a host thread
	# per vCPU, QEMU 7.2 lets a vCPU run a stale int3 after the kernel's text_poke_bp() has
	# finished patching an ftrace site ("Oops: int3" in the idle loop while function_graph
	# was being enabled, with ufgraph not even loaded). SMP semantics stay (IPIs, per-CPU
	# data, migration, interleaving at any instruction-block boundary).
	qemu=(qemu-system-x86_64 -accel tcg,thread=single -cpu max -smp 2,sockets=2 -kernel "$kdir/arch/x86/boot/bzImage")
	# retbleed=force: QEMU's CPU is not affected, so the kernel would patch its return thunks
	# (MITIGATION_RETHUNK) back into plain `ret`s at boot; forced, every return of the
	# kernel, of ufgraph and of its trampoline goes through the untrained return thunk, as on
	# the CPUs distribution kernels mitigate that way.
	append="console=ttyS0 tsc=reliable retbleed=force $append"
	;;
arm64)
	# pauth-impdef: QEMU's own hash for pointer authentication instead of the architected QARMA5,
	# which TCG computes at great cost on every PACIASP and AUTIASP (nearly every kernel
	# function): the kernel signs and checks the same, much faster.
	qemu=(qemu-system-aarch64 -accel tcg -M virt -cpu max,pauth-impdef=on -smp 2 -kernel "$kdir/arch/arm64/boot/Image")
	append="console=ttyAMA0 $append"
	;;
esac
qemu+=(-m 1024 -display none -no-reboot -monitor none -serial stdio
	-initrd "$initrd" -append "$append")

ufg_log "booting $tag ($mode), time limit ${timeout_s}s, log in $log"
set +e
if [ "$mode" = shell ]; then
	"${qemu[@]}"
	exit
fi
timeout --kill-after=10 "$timeout_s" "${qemu[@]}" < /dev/null 2>&1 | tee "$log" | \
	if [ "$mode" = demo ]; then grep -v '^@@ufg'; else grep --line-buffered -E '^@@ufg (ok|fail|skip)|^FAIL|^SKIP'; fi
qrc=${PIPESTATUS[0]}
set -e

# Strip the CR the serial console adds.
sed -i 's/\r$//' "$log"
grep -E '^@@ufg (ok|fail|skip) ' "$log" | sed 's/^@@ufg //' > "$results" || true

problems=()
[ "$qrc" = 124 ] || [ "$qrc" = 137 ] && problems+=("QEMU killed after ${timeout_s}s")
grep -q '^@@ufg done' "$log" || problems+=("the VM never finished its run (crash or hang; see $log)")
# Lockdep's reports start with "WARNING:" or "BUG:"; KASAN's with "BUG: KASAN"; kmemleak's
# with "unreferenced object". (Not a bare "lockdep": boot says "RCU lockdep checking is enabled".)
splat_re='WARNING:|BUG:|Oops|Kernel panic|general protection fault|KASAN:|UBSAN:|unreferenced object|possible circular locking|possible recursive locking|inconsistent lock state|INFO: rcu_.*stall|INFO: task .* blocked|Call Trace:|sleeping function called from invalid context'
# Only the kernel's own lines count (they carry printk's timestamp): a test's message that
# merely quotes one of these words is not a splat. The kmemleak report the init script cats
# at the end has no timestamps: its "unreferenced object" lines count as they are.
splat_re="^\[ *[0-9]+\.[0-9]+\] .*($splat_re|suspected memory leak)|^unreferenced object"
if grep -Eq "$splat_re" "$log"; then
	problems+=("the kernel log has a splat:")
	while IFS= read -r l; do problems+=("    $l"); done < <(grep -E -m 10 "$splat_re" "$log")
fi
# The problems also go to a file that check.sh repeats at the very end of its output, where
# a CI log that keeps only its tail still shows them.
problems_file=$UFG_BUILD/problems-$tag$sfx.txt
: > "$problems_file"
for p in "${problems[@]}"; do printf "%s\n" "fail vm:$tag$sfx: ${p:0:400}"; done | tee "$problems_file"
if [ ${#problems[@]} -gt 0 ]; then
	echo "fail vm:$tag$sfx" >> "$results"
fi

if [ "$mode" = check ]; then
	# Where the time went (run.sh's "@@ufg time NAME SECONDS" lines): the slowest tests.
	grep -E '^@@ufg time ' "$log" | sed 's/^@@ufg time //' > "$UFG_BUILD/times-$tag$sfx.txt" || true
	slow=$(sort -k2,2nr "$UFG_BUILD/times-$tag$sfx.txt" | head -n 6 | awk '{ printf "%s %ss, ", $1, $2 }')
	[ -z "$slow" ] || ufg_log "$tag$sfx: slowest: ${slow%, }"
	pass=$(grep -c '^ok ' "$results" || true)
	failed=$(grep -c '^fail ' "$results" || true)
	ufg_log "$tag$sfx: $pass passed, $failed failed"
	[ "$failed" = 0 ] && [ "$pass" -gt 0 ]
fi
