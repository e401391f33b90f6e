# perf on ufgraph's events: a perf counter opened on an event's id counts exactly the hits of
# this process, its sample records carry the event record (the argument's value), and closing
# it lets go of the event and of ufgraph.
. /selftests/lib.sh
command -v perfcount > /dev/null || skip "no perfcount helper (x86_64 only)"
load
echo 'f:ufgp/rd vfs_read count=$arg3:u32' > $DE || fail "define"
id=$(cat $T/events/ufgp/rd/id)
out=$(perfcount $id /proc/version 41 25)
echo "$out" >&2
echo "$out" | grep -qx 'count 25' || fail "perf counted: $out"
echo "$out" | grep -qx 'samples 25 raw_ok 25' || fail "perf samples: $out"
# perf let go of the event and of ufgraph when it closed: both go.
echo > $DE || fail "clear after perf"
unload
exit 0
