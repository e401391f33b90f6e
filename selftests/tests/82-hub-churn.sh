# The hub under churn: a C ops on the hub restarts and changes its filter over and over
# (functions joining and leaving the hub's table and ftrace filter; the hub's ftrace_ops
# unregistered as its filter empties and registered again) while other tasks call those
# functions and sleep in pipe_read, and an fprobe on its own ftrace_ops comes and goes on one
# of them. Every return the client sees finds its own data, and nothing is left on the hub.
# Ten rounds (three on the debug kernel).
. /selftests/lib.sh
P=/sys/module/ufgraph_client/parameters
client_cmd() {
	echo "$1" > $P/cmd || fail "cmd $1"
	wait_for '[ "$(cat $P/cmd_ret)" != 1 ]' 300 || fail "cmd $1 did not finish"
	cat $P/cmd_ret
}
load
insmod $KO/ufgraph_client.ko func='vfs_*' shared=1 || fail "insmod ufgraph_client"
hub0=$(stat_of hub_functions)
[ "$hub0" -gt 5 ] || fail "vfs_*: $hub0 functions on the hub"
busy_io > /tmp/churn-pids
for n in 1 2; do
	( i=0; while :; do
		i=$((i + 1))
		out=$( ( sleep 0.$((i % 3)); echo "pipe-$n-$i" ) | cat )
		[ "$out" = "pipe-$n-$i" ] || echo "BAD pipe-$n-$i: $out" >> /tmp/churn-bad
	done ) > /dev/null 2>&1 &
	echo $! >> /tmp/churn-pids
done
rm -f /tmp/churn-bad /tmp/churn-stop
# Stopped by a file, not killed: an insmod left running would load after the test looked.
( while [ ! -e /tmp/churn-stop ]; do insmod $KO/fprobe_client.ko 'filter=vfs_read' && rmmod fprobe_client; done ) > /dev/null 2>&1 &
fp=$!
stop() { touch /tmp/churn-stop; kill $(cat /tmp/churn-pids) 2>/dev/null; wait 2>/dev/null; }
pr=$(sym_addr pipe_read)
for i in $(seq 1 $(rounds 10 3)); do
	r=$(client_cmd +$pr); [ "$r" = 0 ] || { stop; fail "round $i: adding pipe_read: $r"; }
	[ "$(stat_of hub_functions)" = $((hub0 + 1)) ] || { stop; fail "round $i: hub_functions $(stat_of hub_functions)"; }
	r=$(client_cmd r); [ "$r" = 0 ] || { stop; fail "round $i: restarting: $r"; }
	[ "$(stat_of hub_functions)" = $((hub0 + 1)) ] || { stop; fail "round $i: hub_functions $(stat_of hub_functions) after the restart"; }
	r=$(client_cmd -$pr); [ "$r" = 0 ] || { stop; fail "round $i: removing pipe_read: $r"; }
	[ "$(stat_of hub_functions)" = "$hub0" ] || { stop; fail "round $i: hub_functions $(stat_of hub_functions)"; }
done
stop
loaded fprobe_client && fail "fprobe_client left loaded"
[ -e /tmp/churn-bad ] && fail "pipes: $(head -3 /tmp/churn-bad)"
dmesg -c > /dev/null
rmmod ufgraph_client || fail "rmmod ufgraph_client"
# Returns of calls entered before a restart are the old registration's, skipped: fewer
# returns than entries, but every one with its own data.
set -- $(dmesg | sed -n 's/.*ufgraph_client: entries=\([0-9]*\) returns=\([0-9]*\) data_ok=\([0-9]*\) data_bad=0 .*/\1 \2 \3/p')
[ -n "$1" ] && [ "$2" -le "$1" ] && [ "$2" = "$3" ] && [ "$2" -gt 100 ] || fail "client saw: $(dmesg | grep ufgraph_client)"
echo "client: $1 entries, $2 returns"
[ "$(stat_of hub_functions)" = 0 ] || fail "hub_functions $(stat_of hub_functions) after the client"

# A client unloaded while a task sleeps in a function it hooked on the hub, and loaded again
# before that task returns: the return skips the old registration (its module is gone), and
# the new one never sees a return it did not enter.
insmod $KO/ufgraph_client.ko func=pipe_read shared=1 || fail "insmod ufgraph_client (pipe_read)"
( (sleep 3; echo hello) | cat > /tmp/churn-out ) &
r=$!
wait_for 'grep -q "^[0-9]* cat .*pipe_read" $DBG/ufgraph/frames' 20 || fail "cat is not in pipe_read: $(cat $DBG/ufgraph/frames)"
rmmod ufgraph_client || fail "rmmod ufgraph_client with a task in pipe_read"
insmod $KO/ufgraph_client.ko func=pipe_read shared=1 || fail "insmod ufgraph_client (pipe_read, 2)"
wait $r
[ "$(cat /tmp/churn-out)" = hello ] || fail "the sleeper read: $(cat /tmp/churn-out)"
dmesg -c > /dev/null
rmmod ufgraph_client || fail "rmmod ufgraph_client (2)"
set -- $(dmesg | sed -n 's/.*ufgraph_client: entries=\([0-9]*\) returns=\([0-9]*\) data_ok=\([0-9]*\) data_bad=0 .*/\1 \2 \3/p')
[ -n "$1" ] && [ "$1" = "$2" ] && [ "$2" = "$3" ] || fail "the second client saw: $(dmesg | grep ufgraph_client)"
unload
exit 0
