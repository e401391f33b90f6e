# A probe unregistered while one of its calls is in flight, then registered again (the same
# structure, at the same address): the call's return belongs to the first registration and
# must not reach the new one's exit handler with the old entry data. Before session 4 the
# return side identified probes by address and did exactly that.
. /selftests/lib.sh
load
# Another exit probe keeps fprobe's shared graph ops (and its index) registered across the
# re-registration: the in-flight call's frame still names that ops when it returns.
echo 'f:ufgrr/keep vfs_write%return' >> $DBG/ufgraph/dynamic_events || fail "keep-alive event"
# (An event hooks its functions only while enabled.)
echo 1 > /sys/kernel/tracing/events/ufgrr/keep/enable || fail "enable keep-alive event"
dmesg -c > /dev/null
insmod $KO/fprobe_client.ko filter=pipe_read || fail "insmod"
rm -f /tmp/go-rr
( while [ ! -e /tmp/go-rr ]; do sleep 0.1; done; echo rr ) | head > /tmp/out-rr &
reader=$!
wait_for "grep -q ' head depth 1: pipe_read' $DBG/ufgraph/frames" 50 || fail "head not inside pipe_read: $(cat $DBG/ufgraph/frames)"
echo 1 > $DBG/fprobe_client/reregister || fail "reregister"
dmesg | grep -q "registered again (generation 1): 0" || fail "reregister: $(dmesg | grep fprobe_client)"
touch /tmp/go-rr
wait $reader || fail "reader failed"
grep -qx rr /tmp/out-rr || fail "reader read $(cat /tmp/out-rr)"
rmmod fprobe_client
dmesg | grep -q "fprobe_client: filter .* bad=0 .* stale=0" || fail "an exit handler ran with another registration's data: $(dmesg | grep fprobe_client)"
echo 0 > /sys/kernel/tracing/events/ufgrr/keep/enable
echo > $DBG/ufgraph/dynamic_events
unload
exit 0
