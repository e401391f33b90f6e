# perf samples of a return event carry the return's registers, as the kernel's kretprobe
# events give them: ip = the return address (in the caller), the return value in ax, the
# stack pointer. Before session 4 they carried the entry-side view of the exit registers:
# a user-space ip and stale values.
. /selftests/lib.sh
command -v perfcount > /dev/null || skip "no perfcount helper (x86_64 only)"
load
echo 'f:ufgp/rdret vfs_read%return ret=$retval' > $DE || fail "define"
id=$(cat $T/events/ufgp/rdret/id)
out=$(perfcount $id /proc/version 41 25 regs)
echo "$out" >&2
echo "$out" | grep -qx 'count 25' || fail "perf counted: $out"
echo "$out" | grep -qx 'kernel_ip 25 ax_ok 25' || fail "return registers: $out"
echo "$out" | grep -qx 'ipsym ksys_read' || fail "ip is not the return address into ksys_read: $out"
echo > $DE || fail "clear"
unload
exit 0
