# The hub (ufgraph's shared ftrace_ops, for ops filtered with ufgraph_set_filter*()) when what
# it hooks changes under it.
# - A module whose functions are on the hub goes away: they leave the hub (its table and its
#   ftrace filter), so the module loaded again is not hooked through stale entries, and the
#   ops' other functions leave the filter cleanly when it unregisters (ftrace refuses a whole
#   removal that names a function no longer there).
# - A user restarting (unregister, register) with the filter it kept: the functions that went
#   are out of it; an ops all of whose functions went is refused (-EINVAL) rather than
#   registered with an empty filter, which would hook every function.
. /selftests/lib.sh
P=/sys/module/ufgraph_client/parameters
hub() { stat_of hub_functions; }
hooked() { grep -c "^$1 " $T/enabled_functions; }
run_glob() { echo 1 > /sys/module/globfns/parameters/run; }
# Runs a command of ufgraph_client (see its source) and prints its result.
client_cmd() {
	echo "$1" > $P/cmd || fail "cmd $1"
	wait_for '[ "$(cat $P/cmd_ret)" != 1 ]' 100 || fail "cmd $1 did not finish"
	cat $P/cmd_ret
}

load
ops0=$(stat_of registered_ops)
insmod $KO/globfns.ko || fail "insmod globfns"
insmod $KO/ufgraph_client.ko func=ufgt_glob_one func2=version_proc_show shared=1 || fail "insmod ufgraph_client"
[ "$(hub)" = 2 ] || fail "hub_functions $(hub), want 2"
run_glob
cat /proc/version > /dev/null
addr=$(sym_addr ufgt_glob_one)
dmesg -c > /dev/null
rmmod globfns || fail "rmmod globfns"
[ "$(hub)" = 1 ] || fail "after rmmod globfns: hub_functions $(hub), want 1"
insmod $KO/globfns.ko || fail "insmod globfns again"
[ "$(sym_addr ufgt_glob_one)" = "$addr" ] && echo "globfns is back at the same address"
[ "$(hooked ufgt_glob_one)" = 0 ] || fail "the reloaded module is hooked: $(grep ufgt_glob $T/enabled_functions)"
run_glob
cat /proc/version > /dev/null
r=$(client_cmd r)
[ "$r" = 0 ] || fail "restarting with the kept filter: $r $(dmesg | tail -2)"
[ "$(hub)" = 1 ] || fail "after the restart: hub_functions $(hub), want 1"
run_glob
cat /proc/version > /dev/null
dmesg -c > /dev/null
rmmod ufgraph_client || fail "rmmod ufgraph_client"
dmesg | grep -q "ufgraph_client: entries=4 returns=4 data_ok=4 data_bad=0 " || fail "client saw: $(dmesg | grep ufgraph_client)"
dmesg | grep "ufgraph" | grep -q "failed" && fail "$(dmesg | grep failed)"
[ "$(hub)" = 0 ] || fail "hub_functions $(hub) after the last hub user"
# Nothing stayed in the hub's ftrace filter: a new user of another function hooks that only.
insmod $KO/ufgraph_client.ko func=ufgt_glob_two shared=1 || fail "insmod ufgraph_client (glob_two)"
[ "$(hooked version_proc_show)" = 0 ] || fail "version_proc_show still hooked: $(grep version_proc_show $T/enabled_functions)"
[ "$(hooked ufgt_glob_two)" = 1 ] || fail "ufgt_glob_two: $(grep ufgt_glob_two $T/enabled_functions)"
rmmod ufgraph_client || fail "rmmod ufgraph_client (glob_two)"

# Every function of the ops goes.
insmod $KO/ufgraph_client.ko func=ufgt_glob_one shared=1 || fail "insmod ufgraph_client (glob_one)"
rmmod globfns || fail "rmmod globfns (2)"
[ "$(hub)" = 0 ] || fail "hub_functions $(hub) with the only function gone"
[ "$(grep -c . $T/enabled_functions)" = 0 ] || fail "hooked: $(head -3 $T/enabled_functions)"
r=$(client_cmd r)
[ "$r" = -22 ] || fail "restarting with an emptied filter: $r"
[ "$(stat_of registered_ops)" = "$ops0" ] || fail "registered_ops $(stat_of registered_ops), want $ops0"
[ "$(grep -c . $T/enabled_functions)" = 0 ] || fail "hooked: $(head -3 $T/enabled_functions)"
rmmod ufgraph_client || fail "rmmod ufgraph_client (glob_one)"
unload
exit 0
