# Allocation failures injected (failslab) into ufgraph's own work: module init and
# graph registration, fprobe registration, and the stack given to each forked task.
# Each attempt either succeeds or fails cleanly; nothing is left half registered, and
# the final kmemleak scan (debug kernels) finds nothing.
. /selftests/lib.sh
F=$DBG/failslab
[ -d $F ] || skip "no failslab (only on the debug kernel)"
# Only allocations made from module text (ufgraph's, and its clients') fail: the module
# loader and execve must not be where the failure lands.
[ -e $F/require-start ] || skip "failslab has no stack filter (FAULT_INJECTION_STACKTRACE_FILTER)"
# Where modules land: load once and read the address; modules are placed close together,
# far (hundreds of MiB) from the kernel's text, so a 64 MiB window around it is module code.
load
base=$(awk '$1 == "ufgraph" { print $6 }' /proc/modules)
unload
[ -n "$base" ] || fail "no address for ufgraph in /proc/modules"
printf '0x%x\n' $((base - 0x4000000)) > $F/require-start
printf '0x%x\n' $((base + 0x4000000)) > $F/require-end
echo 32 > $F/stacktrace-depth
echo "failslab limited to $(cat $F/require-start)..$(cat $F/require-end)"
inject() { echo Y > $F/task-filter; echo N > $F/ignore-gfp-wait; echo 100 > $F/probability; echo 1 > $F/interval; echo 1 > $F/times; echo $1 > $F/space; echo 0 > $F/verbose; }
off() { echo 0 > $F/probability; }

# busybox insmod retries with init_module() when finit_module() fails, so an attempt
# whose init refused (and cleaned up) is followed by one that loads: refusals are counted
# from the log, and the reload succeeding is itself the proof that nothing was left over.
dmesg -c > /dev/null
for space in 0 64 256 1024 2048 4096 8192 16384 32768 65536 131072 262144 524288; do
	inject $space
	(echo 1 > /proc/self/make-it-fail; exec insmod $KO/ufgraph.ko 'graph=vfs_read') 2>/dev/null
	rc=$?
	off
	if [ $rc = 0 ]; then
		grep -q "^Linux" /proc/version || fail "space $space: /proc/version broken"
		unload
	else
		loaded ufgraph && fail "insmod failed but ufgraph is loaded (space $space)"
		[ ! -e $DBG/ufgraph ] || fail "debugfs left behind (space $space)"
	fi
done
refused=$(dmesg | grep -c "init failed (Error(12))")
echo "ufgraph init: $refused injected failures refused cleanly"
[ "$refused" -gt 0 ] || fail "no allocation failure reached ufgraph's init"

# Where a budget lands depends on the kernel's own allocations on the way (opening the
# function list with filp_open takes a 4 KiB name buffer first, and has a fallback path) and
# on the build, so budgets step finely past that: each one fails a different allocation.
load
dmesg -c > /dev/null
spaces="0 64 256 1024 4096"
k=1; while [ $k -le 40 ]; do spaces="$spaces $((4096 + 256 * k))"; k=$((k + 1)); done
for space in $spaces 16384 24576 32768 65536 262144; do
	inject $space
	(echo 1 > /proc/self/make-it-fail; exec insmod $KO/fprobe_client.ko 'filter=vfs_*') 2>/dev/null
	rc=$?
	off
	if [ $rc = 0 ]; then
		rmmod fprobe_client
	fi
	[ "$(stat_of fprobes)" = 0 ] && [ "$(stat_of fprobe_functions)" = 0 ] || fail "half-registered probe (space $space): $(cat $DBG/ufgraph/stats)"
done
refused=$(dmesg | grep -c "fprobe_client: register (filter) failed: -12")
echo "fprobe registration: $refused injected failures refused cleanly"
[ "$refused" -gt 0 ] || fail "no allocation failure reached fprobe registration"
unload

# The hub: a function added to a registered C ops' shared filter (ufgraph_set_filter_ips(),
# the hub's add, from the client's work item), with each allocation made under the hub's add
# failing in turn (the window is that function's text; any task, as no other calls it):
# refused cleanly, nothing left on the hub, and nothing leaked (kmemleak: the entries of an
# add that failed half way were once dropped unfreed).
load
insmod $KO/ufgraph_client.ko func=version_proc_show shared=1 || fail "insmod ufgraph_client shared=1"
P=/sys/module/ufgraph_client/parameters
client_cmd() {
	echo "$1" > $P/cmd || fail "cmd $1"
	wait_for '[ "$(cat $P/cmd_ret)" != 1 ]' 100 || fail "cmd $1 did not finish"
	cat $P/cmd_ret
}
window="$(cat $F/require-start) $(cat $F/require-end)"
# (kCFI kernels put a __cfi_ symbol, the type hash, right before each function: not the one.)
set -- $(grep '\[ufgraph\]' /proc/kallsyms | sort | awk '$3 ~ /3Hub3add$/ && $3 !~ /^__cfi_/ { a = $1; next } a != "" && e == "" { e = $1 } END { print a, e }')
[ -n "$2" ] || fail "no Hub::add in /proc/kallsyms"
echo "0x$1" > $F/require-start
echo "0x$2" > $F/require-end
vfs_read=$(sym_addr vfs_read)
# The list of ftrace's locations read before any failure.
[ "$(client_cmd +$vfs_read)" = 0 ] && [ "$(client_cmd -$vfs_read)" = 0 ] || fail "vfs_read on and off the filter"
spaces=""
k=0; while [ $k -le 256 ]; do spaces="$spaces $k"; k=$((k + 8)); done
k=320; while [ $k -le 2048 ]; do spaces="$spaces $k"; k=$((k + 64)); done
refused=0
for space in $spaces; do
	inject $space
	echo N > $F/task-filter
	r=$(client_cmd +$vfs_read)
	off
	case $r in
	0) r=$(client_cmd -$vfs_read); [ "$r" = 0 ] || fail "removing vfs_read (space $space): $r";;
	-12) refused=$((refused + 1));;
	*) fail "adding vfs_read (space $space): $r";;
	esac
	[ "$(stat_of hub_functions)" = 1 ] || fail "space $space: hub_functions $(stat_of hub_functions)"
done
set -- $window
echo $1 > $F/require-start
echo $2 > $F/require-end
echo "hub add: $refused injected failures refused cleanly"
[ "$refused" -gt 0 ] || fail "no allocation failure reached the hub's add"
for i in 1 2 3; do cat /proc/version > /dev/null; done
dmesg -c > /dev/null
rmmod ufgraph_client || fail "rmmod ufgraph_client"
# vfs_read was hooked too while it was on the filter: every entry returned with its data.
set -- $(dmesg | sed -n 's/.*ufgraph_client: entries=\([0-9]*\) returns=\([0-9]*\) data_ok=\([0-9]*\) data_bad=0 .*/\1 \2 \3/p')
[ -n "$1" ] && [ "$1" -ge 3 ] && [ "$1" = "$2" ] && [ "$1" = "$3" ] || fail "client saw: $(dmesg | grep ufgraph_client)"
[ "$(stat_of hub_functions)" = 0 ] || fail "hub_functions $(stat_of hub_functions) after the client"
unload

# Forks while every allocation of the forking task fails: the fork probe takes the child's
# stack from the pool (refilled by a work item, which does not fail), so every child still
# gets one and none of its hooked calls is missed. (Before session 7 the probe allocated with
# GFP_ATOMIC, and these children went without a stack: forbidden on PREEMPT_RT anyway.) A burst
# that empties the pool leaves a child to the refill work's walk (fork_deferred; KUnit
# forks_with_an_empty_pool tests that path on every kernel).
load graph=vfs_open
echo Y > $F/task-filter; echo Y > $F/ignore-gfp-wait; echo 100 > $F/probability; echo 1 > $F/interval; echo -1 > $F/times; echo 0 > $F/space
(echo 1 > /proc/self/make-it-fail; for i in 1 2 3 4 5; do (cat /proc/version > /dev/null) & done; wait) 2>/dev/null
off
[ "$(stat_of fork_no_stack)" = 0 ] || fail "forks without a stack: $(cat $DBG/ufgraph/stats)"
grep -q "missed_nostack [1-9]" $DBG/ufgraph/stats && fail "hooked calls missed for want of a stack: $(cat $DBG/ufgraph/stats)"
echo "forks deferred to the refill walk: $(stat_of fork_deferred)"
set -- $(graph_of vfs_open)
[ "$1" = "$2" ] || fail "vfs_open entries/returns $1/$2"
unload
exit 0
