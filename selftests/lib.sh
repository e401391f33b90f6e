# Helpers for the in-VM shell tests. A test is a script under tests/ that exits
# 0 on success, 4 to skip, anything else on failure; it says why on stderr.
# shellcheck shell=sh

KO=/lib/ufgraph
DBG=/sys/kernel/debug

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 4; }

# Count of FUNC in ufgraph's debugfs counts (0 if absent).
count_of() {
	awk -v f="$1" '$1 == f { print $2; found=1 } END { if (!found) print 0 }' "$DBG/ufgraph/counts"
}

# Load ufgraph.ko with arguments; fail the test if insmod fails.
load() { insmod "$KO/ufgraph.ko" "$@" || fail "insmod ufgraph.ko $* failed"; }
unload() { rmmod ufgraph || fail "rmmod ufgraph failed"; }
loaded() { grep -q "^$1 " /proc/modules; }

# Start a background workload that keeps calling vfs_read/vfs_write; print its pid.
busy_io() {
	( while :; do cat /proc/version /proc/meminfo >/dev/null; echo x > /tmp/busy; done ) >/dev/null 2>&1 &
	echo $!
}
