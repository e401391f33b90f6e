# Real clients on ufgraph's events (issue 17): Debian's trace-cmd and perf, run as a user
# runs them, record an entry and an exit event of vfs_read around a dd that reads exactly 5
# bytes of /proc/version, and their reports show both events with the values of that read:
# the file's name, count=5, the comm, and ret=5 at the return. The clients find the events
# through tracefs (events/GROUP/EVENT/format and id) like any other, and must let go of them
# when done: afterwards the events are removed and ufgraph unloads.
. /selftests/lib.sh
# scripts/initramfs.sh puts them in /usr/bin: the host's on x86_64, Debian's arm64 ones
# (scripts/clients-arm64.sh) on arm64.
have_tc=$(command -v trace-cmd)
have_perf=$(command -v perf)
[ -n "$have_tc$have_perf" ] || skip "neither trace-cmd nor perf in this initramfs (scripts/setup.sh installs them, as root)"
# Once per architecture is enough for what the clients see (the same format files and records);
# under KASAN and lockdep (the debug kernel, with kmemleak) they take minutes of make check's
# hour. The events' own tests run there.
debug_kernel && skip "run on the base kernel only (the debug kernel is about four times slower)"
# perf wants a home for its build-id cache; -N below keeps it from writing one.
export HOME=/tmp
cd /tmp || fail "cd /tmp"
load
# A string from a file pointer (%pD), an unsigned count, the task's comm; on return the
# return value and the entry's count again.
# Not "rd" or "read": perf's event parser takes r<hex digits> for a raw event number.
echo 'f:ufgc/vread vfs_read name=$arg1:%pD count=$arg3:u32 comm=$comm' > $DE || fail "define vread: $(cat $DBG/ufgraph/error_log)"
echo 'f:ufgc/vread_ret vfs_read%return ret=$retval:s64 count=$arg3:u32' >> $DE || fail "define vread_ret: $(cat $DBG/ufgraph/error_log)"
# Both reports print a record through the event's print format: the head as raw addresses,
# "(IP)" at the entry and "(FUNC <- RETIP)" at the exit, then the fields as defined.
# The kernel symbol holding address $1 (16 hex digits, as kallsyms and %lx print kernel
# addresses: compared as strings, which awk's doubles could not do as numbers).
sym_of() {
	awk -v a="$1" '($2 == "t" || $2 == "T") && $1 <= a && $1 > best { best = $1; name = $3 } END { print name }' /proc/kallsyms
}
VFS_READ=$(sym_addr vfs_read)
# Checks what client $1 reported, given as "COMM EVENT FIELDS..." lines ($2): exactly one
# record of each event (dd is the only process recorded), from dd, with the values of its
# read: at vfs_read, of /proc/version, 5 bytes asked, 5 vread, returning into ksys_read.
check_report() {
	n=$(echo "$2" | grep -c '^[^ ]* vread ')
	[ "$n" = 1 ] || fail "$1: $n vread records, not 1: $(echo "$2" | head -5)"
	n=$(echo "$2" | grep -c '^[^ ]* vread_ret ')
	[ "$n" = 1 ] || fail "$1: $n vread_ret records, not 1: $(echo "$2" | head -5)"
	read=$(echo "$2" | grep '^[^ ]* vread ')
	ip=$(echo "$read" | sed -n 's/^dd vread (\([0-9a-f]\{16\}\)) name="version" count=5 comm="dd"$/\1/p')
	[ -n "$ip" ] || fail "$1 vread fields: $read"
	# The probe's ip is vfs_read's ftrace site, a few bytes into it (after endbr64).
	[ "$(sym_of "$ip")" = vfs_read ] && [ $((0x$ip - 0x$VFS_READ)) -lt 16 ] ||
		fail "$1 vread ip $ip is not vfs_read's (at $VFS_READ): $read"
	ret=$(echo "$2" | grep '^[^ ]* vread_ret ')
	addrs=$(echo "$ret" | sed -n 's/^dd vread_ret (\([0-9a-f]\{16\}\) <- \([0-9a-f]\{16\}\)) ret=5 count=5$/\1 \2/p')
	[ -n "$addrs" ] || fail "$1 vread_ret fields: $ret"
	set -- "$1" $addrs
	# The function is named by the same ftrace site as the entry's ip (as upstream's fprobe
	# events do: the text output prints it with %ps, "<- vfs_read").
	[ "$2" = "$ip" ] || fail "$1 vread_ret func $2 is not the entry's ip $ip: $ret"
	[ "$(sym_of "$3")" = ksys_read ] || fail "$1 vread_ret return ip $3 is in $(sym_of "$3"), not ksys_read: $ret"
}

# What trace-cmd sets up for a recording, which it must put back afterwards. (Not the buffer
# size: the first use of tracing expands the ring buffer to its full size for good.)
tracing_state() {
	echo "pid=[$(cat $T/set_event_pid)] on=$(cat $T/tracing_on) tracer=$(cat $T/current_tracer)" \
		"event-fork=$(cat $T/options/event-fork) instances=[$(ls $T/instances)]"
}

if [ -n "$have_tc" ]; then
	before=$(tracing_state)
	# -F: only the command's own events (not trace-cmd's reads).
	trace-cmd record -q -o /tmp/ufgc.dat -e ufgc:vread -e ufgc:vread_ret -F \
		dd if=/proc/version of=/dev/null bs=5 count=1 > /tmp/ufgc.log 2>&1 ||
		fail "trace-cmd record: $(tail -n 5 /tmp/ufgc.log)"
	rep=$(trace-cmd report -i /tmp/ufgc.dat 2>&1) || fail "trace-cmd report: $(echo "$rep" | tail -n 5)"
	echo "$rep" | grep ' vread' >&2
	rep=$(echo "$rep" | sed -n 's/^ *\(.*\)-[0-9]* *\[[0-9]*\] *[0-9.]*: *\(vread\|vread_ret\): *\(.*\)$/\1 \2 \3/p')
	check_report trace-cmd "$rep"
	# trace-cmd disabled what it enabled when it stopped.
	[ "$(cat $T/events/ufgc/vread/enable)$(cat $T/events/ufgc/vread_ret/enable)" = 00 ] ||
		fail "trace-cmd left the events enabled"
	# and put back what it set for the recording.
	[ "$(tracing_state)" = "$before" ] || fail "trace-cmd left tracing changed: $before -> $(tracing_state)"
	# trace.dat carries each event's format, which the report parsed: tracefs's, word for word.
	# ("trace-cmd report --events" prints nothing in 3.1.6; "dump --events" prints them.)
	dump=$(trace-cmd dump --events -i /tmp/ufgc.dat 2>&1)
	for e in vread vread_ret; do
		stored=$(echo "$dump" | awk -v n="name: $e" '$0 == n { on = 1 } on { print } on && /^print fmt:/ { exit }')
		[ -n "$stored" ] && [ "$stored" = "$(cat $T/events/ufgc/$e/format)" ] ||
			fail "trace-cmd's format of $e differs from tracefs's: $(echo "$stored" | head -20)"
	done
	rm -f /tmp/ufgc.dat /tmp/ufgc.log
else
	echo "SKIP: no trace-cmd in this initramfs; perf only" >&2
fi

# perf trace's lines, "0.000 dd/262 ufgc:vread(__probe_ip: -2127869692, name: "version", ...)",
# as "COMM EVENT (HEAD) k=v ..." like the reports above. perf trace prints the unsigned long
# head fields as signed 32-bit numbers: their low half, made a kernel text address again here
# with the high half of vfs_read's (ffffffff on x86_64, ffff8000 or so on arm64).
TEXT_HIGH=${VFS_READ%????????}
perf_trace_lines() {
	sed -n 's/^ *[0-9.]* \(.*\)\/[0-9]* ufgc:\(vread\|vread_ret\)(\(.*\))$/\1 \2 \3/p' |
		while read -r comm ev args; do
			head= rest=
			# "k: v, k: v, ..." (no value here holds a comma)
			IFS=,
			set -- $args
			unset IFS
			for a; do
				a=${a# }
				k=${a%%: *}
				v=${a#*: }
				case $k in
				__probe_*) head="$head${head:+ <- }$TEXT_HIGH$(printf '%08x' $((v & 0xffffffff)))" ;;
				*) rest="$rest $k=$v" ;;
				esac
			done
			echo "$comm $ev ($head)$rest"
		done
}

if [ -n "$have_perf" ]; then
	dd_cmd="dd if=/proc/version of=/dev/null bs=5 count=1"
	# perf stat counts each event's hits in the command: one each. (perf enables its events at
	# the command's exec: its own child's reads before that do not count.)
	# A counter that never ran prints "<not counted>" with a running time of 0, for both
	# events at once: perf did not schedule the workload's counters (seen twice in session 24,
	# with the host busy beside the VM), which says nothing of what ufgraph delivered (a
	# missed hit is a count of 0 with a running time). Then perf stat runs again, up to three
	# times; the count itself is checked on the run that counted.
	tries=0
	while :; do
		perf stat -x, -o /tmp/ufgc.stat -e ufgc:vread -e ufgc:vread_ret -- $dd_cmd 2>/dev/null ||
			fail "perf stat: $(cat /tmp/ufgc.stat)"
		grep -q '^<not counted>,' /tmp/ufgc.stat && [ $tries -lt 2 ] || break
		tries=$((tries + 1))
		echo "perf stat: not counted, again: $(grep '^<not counted>' /tmp/ufgc.stat | tr '\n' ' ')" >&2
	done
	for e in vread vread_ret; do
		grep -q "^1,,ufgc:$e," /tmp/ufgc.stat || fail "perf stat ufgc:$e: $(cat /tmp/ufgc.stat)"
	done
	# perf trace prints each record's fields as it reads them.
	perf trace --no-syscalls -o /tmp/ufgc.trace -e ufgc:vread -e ufgc:vread_ret -- $dd_cmd 2>/dev/null ||
		fail "perf trace: $(cat /tmp/ufgc.trace)"
	grep 'ufgc:' /tmp/ufgc.trace >&2
	check_report "perf trace" "$(perf_trace_lines < /tmp/ufgc.trace)"
	# perf record, then perf script and perf report (perf 6.1's record waits with epoll and
	# wakes its threads through an eventfd: configs/base.config turns both on). -N: no
	# build-id cache.
	if perf record -N -o /tmp/ufgc.perf -e ufgc:vread -e ufgc:vread_ret -- $dd_cmd > /tmp/ufgc.log 2>&1; then
		rep=$(perf script -i /tmp/ufgc.perf -F comm,pid,event,trace 2>&1) || fail "perf script: $(echo "$rep" | tail -n 5)"
		echo "$rep" | grep 'ufgc:' >&2
		# "  dd  97 ufgc:vread: (ffff...) name=..." -> "dd vread (ffff...) name=..."
		check_report "perf script" "$(echo "$rep" | sed -n 's/^ *\([^ ]*\) *[0-9]* *ufgc:\(vread\|vread_ret\): *\(.*\)$/\1 \2 \3/p')"
		# perf report counts the samples per event: one each.
		out=$(perf report -i /tmp/ufgc.perf --stdio --sort comm 2>&1)
		for e in vread vread_ret; do
			echo "$out" | grep -q "^# Samples: 1 .*of event 'ufgc:$e'$" ||
				fail "perf report, ufgc:$e: $(echo "$out" | grep '^# Samples')"
		done
	else
		fail "perf record: $(grep -v '^ *-\|^ *or:\|Usage:\|^ *$' /tmp/ufgc.log | head -n 8)"
	fi
	rm -f /tmp/ufgc.perf /tmp/ufgc.log /tmp/ufgc.stat /tmp/ufgc.trace
else
	echo "SKIP: no perf in this initramfs; trace-cmd only" >&2
fi

# Neither client holds the events or ufgraph: both go.
echo > $DE || fail "remove the events after the clients: $(cat $T/events/ufgc/*/enable 2>&1)"
[ ! -d $T/events/ufgc ] || fail "events/ufgc still there"
unload
exit 0
