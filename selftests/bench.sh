# The benchmark run inside the VM (ufg.mode=bench), driven by scripts/bench.sh. It loads
# ufgraph.ko and bench/ufgraph_bench.ko and prints "@@bench SECTION key=value..." lines,
# which host/bench-report turns into tables. ufg.bench= picks the sections:
#   icount  (QEMU -icount shift=0: guest ns = instructions)  per-call cost, memory
#   wall    (no -icount: wall-clock ns)                      per-call cost, concurrency
#   attach  (-icount shift=0,sleep=off, single-threaded TCG) mass attach: fprobes, then kprobes
#   profile (QEMU's gdbstub, single-threaded TCG)            one call per hook, single-stepped
#                                                            by gdb on the host
# ufg.benchq=1 makes everything small (a quick smoke run of the script itself).
. /selftests/lib.sh
B=$DBG/ufgraph_bench
pass=wall
quick=0
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	ufg.bench=*) pass=${arg#ufg.bench=} ;;
	ufg.benchq=*) quick=${arg#ufg.benchq=} ;;
	esac
done

# Per-call cost: CHUNKS chunks of CALLS calls, each chunk with interrupts off.
if [ "$quick" = 1 ]; then
	CHUNKS=5 CALLS=200 CONC=2000 ATTACH_NS="100 1000" KPROBE_CAP=5
else
	CHUNKS=41 CALLS=2000 CONC=200000 ATTACH_NS="100 1000 10000 all" KPROBE_CAP=30
fi

say() { echo "@@bench $*"; }
# Run one bench command; its result line on stdout, or an error line.
ctl() {
	if ! echo "$*" > $B/ctl; then
		say "error cmd=$(echo "$*" | tr ' ' '_')"
		return 1
	fi
	cat $B/ctl
}
# "@@bench SECTION name=NAME rest..." from a result line "SECTION rest...".
row() {
	name=$1
	shift
	set -- $*
	sec=$1
	shift
	say "$sec name=$name $*"
}

# Warnings and worse only on the console: printing inside a timed chunk would be measured.
echo 5 > /proc/sys/kernel/printk
insmod $KO/ufgraph.ko || { say "error cmd=insmod_ufgraph"; exit 1; }
insmod $KO/ufgraph_bench.ko || { say "error cmd=insmod_ufgraph_bench"; exit 1; }
# The clock ktime_get_ns() reads: on a loaded host the TSC's calibration can fail, and the
# kernel then times with jiffies (4 ms steps; a chunk with interrupts off measures 0).
sizes=$(ctl sizes)
# The architecture and whether the kernel has fprobe (6.12 has none on arm64: those rows are
# left out there, not reported as failures).
arch=unknown
kfprobe=1
for w in $sizes; do
	case "$w" in
	arch=*) arch=${w#arch=} ;;
	kfprobe=*) kfprobe=${w#kfprobe=} ;;
	esac
done
say "start pass=$pass quick=$quick arch=$arch kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
row vm "$sizes"
# "kfprobe kfprobe_exit" out of a list of hooks when the kernel has no fprobe.
hooks() {
	for h in "$@"; do
		case "$h" in kfprobe*) [ "$kfprobe" = 1 ] || continue ;; esac
		echo "$h"
	done
}

# Slab + VmallocUsed, in kB.
# ufgraph's shadow-stack count and bytes, from one read of its stats (tasks come and go).
ustacks() { awk '$1 == "tasks_with_stack" { t = $2 } $1 == "shadow_stack_bytes" { b = $2 } END { print "stats_tasks=" t, "stats_bytes=" b }' $DBG/ufgraph/stats; }
kmem() { awk '/^Slab:/ { s = $2 } /^VmallocUsed:/ { v = $2 } END { print s + v }' /proc/meminfo; }
ntasks() { ls -d /proc/[0-9]*/task/[0-9]* | wc -l; }

kernel_graph_on() {
	echo ufgraph_bench_target > $T/set_ftrace_filter
	echo "$1" > $T/tracing_on
	echo function_graph > $T/current_tracer
}
kernel_graph_off() {
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo 1 > $T/tracing_on
}

# The function_graph tracer in N tracefs instances (6.12's fgraph takes up to 16 users), each
# filtered to the target, with tracing off: N kernel fgraph users on one function.
kernel_graph_users() {
	i=0
	while [ $i -lt $1 ]; do
		d=$T/instances/ufgb$i
		mkdir $d && echo 1 > $d/buffer_size_kb && echo ufgraph_bench_target > $d/set_ftrace_filter &&
			echo 0 > $d/tracing_on && echo function_graph > $d/current_tracer || return 1
		i=$((i + 1))
	done
}
kernel_graph_users_off() {
	for d in $T/instances/ufgb*; do
		[ -d $d ] || continue
		echo nop > $d/current_tracer
		echo > $d/set_ftrace_filter
		rmdir $d
	done
}

# ---- memory: a graph user, P fprobes (entry+exit) and P kretprobes, all on the target ----
memory() {
	sleep 1
	m0=$(kmem)
	ctl hook ufgraph1 > /dev/null
	m1=$(kmem)
	say "memgraph name=ufgraph tasks=$(ntasks) $(ustacks) delta_kb=$((m1 - m0))"
	for p in 1 10 100; do
		sleep 1
		a=$(kmem)
		ctl mem ufprobe_exit $p > /dev/null
		ctl mem ukretprobe $p > /dev/null
		b=$(kmem)
		say "mem name=ufgraph p=$p delta_kb=$((b - a)) $(ustacks)"
		ctl unmem > /dev/null
	done
	ctl unhook > /dev/null

	sleep 1
	m0=$(kmem)
	kernel_graph_on 1
	m1=$(kmem)
	say "memgraph name=kernel tasks=$(ntasks) delta_kb=$((m1 - m0))"
	for p in 1 10 100; do
		sleep 1
		a=$(kmem)
		ctl mem kfprobe_exit $p > /dev/null
		ctl mem kretprobe $p > /dev/null
		b=$(kmem)
		say "mem name=kernel p=$p delta_kb=$((b - a))"
		ctl unmem > /dev/null
	done
	kernel_graph_off
}

# A BPF program on the target (bpfhook: fentry or fexit), what a user would pick instead of
# ufgraph: the BPF trampoline. Its program counts its calls (bpf=N in the row), as ufgraph's
# handlers count theirs. The x86_64 test kernel has the BPF JIT and BTF; elsewhere, no rows.
bpf_row() {
	k=$1
	[ -e /sys/kernel/btf/ufgraph_bench ] && command -v bpfhook > /dev/null || return 0
	rm -f /tmp/bpfin
	mkfifo /tmp/bpfin
	bpfhook $k ufgraph_bench_target ufgraph_bench < /tmp/bpfin > /tmp/bpfhook.out 2>&1 &
	pid=$!
	# Its standard input: open until the row is measured; closing it ends bpfhook.
	exec 8> /tmp/bpfin
	n=0
	while ! grep -q attached /tmp/bpfhook.out && kill -0 $pid 2> /dev/null && [ $n -lt 300 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if grep -q attached /tmp/bpfhook.out; then
		r=$(ctl cost $CHUNKS $CALLS)
		exec 8>&-
		wait $pid
		row bpf_$k "$r bpf=$(sed -n 's/^bpfhook count=//p' /tmp/bpfhook.out)"
	else
		exec 8>&-
		kill $pid 2> /dev/null
		wait $pid
		say "error cmd=bpfhook_$k $(tr ' \n' '__' < /tmp/bpfhook.out | head -c 300)"
	fi
}

# ---- per-call cost ----
cost() {
	for h in $(hooks none ftrace_ops kfprobe kfprobe_exit kretprobe ufprobe ufprobe_exit ukretprobe \
		ufgraph1 ufgraph4 ufgraph16); do
		r=$(ctl hook $h) || continue
		row $h "$(ctl cost $CHUNKS $CALLS)"
		ctl unhook > /dev/null
	done
	# The kernel's function_graph tracer on the target: with tracing on (it writes the ring
	# buffer), and with tracing_on=0 (the fgraph path and the tracer's callbacks, no write).
	for on in 1 0; do
		kernel_graph_on $on
		row function_graph_on$on "$(ctl cost $CHUNKS $CALLS)"
		kernel_graph_off
	done
	for n in 1 4 16; do
		if kernel_graph_users $n; then
			row kgraph$n "$(ctl cost $CHUNKS $CALLS)"
		else
			say "error cmd=function_graph_in_${n}_instances"
		fi
		kernel_graph_users_off
	done
	bpf_row fentry
	bpf_row fexit
}

# ---- mass attach ----
# vmlinux's traceable functions (modules' have a "[mod]" column), by ftrace location.
load_funcs() {
	ctl clearfuncs > /dev/null
	grep -v '\[' $T/available_filter_functions_addrs | cut -d' ' -f1 > $B/funcs
	row all "$(ctl nfuncs)"
}

# Between two timed rows: a second of guest time (idle: under -icount sleep=off it passes at
# once) for what a detach left to run later to run then, not inside the next row's timing:
# ufgraph's reaper frees the last probe's entries and the shared ops' filter after a grace
# period, the kernel's fprobe frees its rethook pool from an RCU callback.
settle() {
	sleep 1
}

attach() {
	load_funcs
	# ufgraph reads ftrace's list of traceable functions at its first registration by address
	# after it is loaded, then keeps it up to date as modules come and go: time that one apart.
	r=$(ctl attach ufprobe 1 0) && say "$(echo "$r" | sed 's/kind=ufprobe /kind=ufprobe_first /')"
	settle
	for n in $ATTACH_NS; do
		[ $n = all ] && n=0
		for kind in ufprobe kfprobe ftrace_ops; do
			r=$(ctl attach $kind $n 0) && say "$r"
			settle
		done
	done
	# With an exit handler: the kernel's fprobe allocates a rethook pool sized to the number
	# of functions, ufgraph's rides the shadow stacks.
	for n in $ATTACH_NS; do
		[ $n = all ] && n=0
		for kind in ufprobe_exit kfprobe_exit; do
			r=$(ctl attach $kind $n 0) && say "$r"
			settle
		done
	done
	# A second probe on the functions a first one hooks (FIRST:SECOND): issue #15 wants it to
	# cost ufgraph no ftrace patching; the kernel's fprobe has an ftrace_ops per probe.
	for n in $ATTACH_NS; do
		[ $n = all ] && n=0
		for pair in ufprobe:ufprobe kfprobe:kfprobe ufprobe_exit:ufprobe_exit kfprobe_exit:kfprobe_exit \
			ufprobe:ufprobe_exit kfprobe:kfprobe_exit; do
			r=$(ctl second ${pair%:*} ${pair#*:} $n) && say "$r"
			settle
		done
	done
}

# One kprobe per function, registered one by one for at most KPROBE_CAP seconds.
kprobes() {
	load_funcs
	capped=0
	for n in $ATTACH_NS; do
		[ $n = all ] && n=0
		if [ $capped = 1 ]; then
			say "attach kind=kprobe n=$n skipped=1"
			continue
		fi
		r=$(ctl attach kprobe $n $KPROBE_CAP) || continue
		say "$r"
		case "$r" in *capped=1*) capped=1 ;; esac
	done
}

# ---- concurrency: every CPU calling the hooked target at once ----
concurrency() {
	for set in "ufprobe_exit ukretprobe" "kfprobe_exit kretprobe" "ufgraph1"; do
		name=$(echo $set | tr ' ' '+')
		ctl hook $set > /dev/null || continue
		row $name "$(ctl conc $CONC)"
		ctl unhook > /dev/null
	done
}

# ---- one call per hook, single-stepped by gdb (scripts/bench.sh --profile) ----
# The modules' symbols first (the host has System.map for vmlinux's), then per hook: the
# addresses gdb needs, and a call that waits for gdb's go.
profile() {
	grep '\]$' /proc/kallsyms | sed 's/^/@@sym /'
	sed 's/^/@@mod /' /proc/modules
	for h in none ftrace_ops kfprobe kfprobe_exit kretprobe ufprobe ufprobe_exit ukretprobe \
		ufgraph1 ufgraph4 function_graph; do
		if [ $h = function_graph ]; then
			kernel_graph_on 0
		else
			ctl hook $h > /dev/null || continue
		fi
		row $h "$(ctl profarm)"
		r=$(ctl profile) || say "error cmd=profile_$h"
		say "profiled name=$h $r"
		if [ $h = function_graph ]; then kernel_graph_off; else ctl unhook > /dev/null; fi
	done
}

section() {
	say "section name=$1 uptime=$(cut -d' ' -f1 /proc/uptime)"
	$1
}
case "$pass" in
icount)
	# Memory compares with the kernel's fprobe and rethook pools: x86_64 only (arm64's 6.12
	# has neither).
	[ "$kfprobe" = 1 ] && section memory
	section cost
	;;
wall)
	section cost
	[ "$kfprobe" = 1 ] && section concurrency
	;;
attach)
	section attach
	section kprobes
	;;
profile)
	section profile
	;;
esac
say "section name=end uptime=$(cut -d' ' -f1 /proc/uptime)"
awk 'NF == 2 { printf " %s=%s", $1, $2 } END { print "" }' $DBG/ufgraph/stats | sed 's/^/@@bench ufgraph_stats/'
rmmod ufgraph_bench
rmmod ufgraph
say "end pass=$pass"
