# A probe on a module's init function, hooked while the module's init runs. Once init returns,
# the loader frees the init text (and ftrace its records of it) right after the LIVE notifiers:
# ufgraph's notifier takes the function out of the probe then, while ftrace can still take it
# out of the filter. The probe keeps the module's other functions, and its removal is clean.
# (Before, the filter kept the freed address for good: ftrace refused every removal that named
# it, and whatever was loaded there later would have been hooked.)
. /selftests/lib.sh
P=/sys/module/globfns/parameters
load_tracing_off
dmesg -c > /dev/null
insmod $KO/globfns.ko hold=1 &
ins=$!
# Its parameters appear before its init runs; init then waits for "release".
i=0
while [ ! -e $P/release ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e $P/release ] || { kill -9 $ins; fail "globfns did not start its init"; }
release() { echo 1 > $P/release; wait $ins; }
echo 'f:ufgi/all ufgt_glob_* n=$arg1:s32' >> $DE || { release; fail "define: $(tail -3 $EL)"; }
echo 1 > $T/events/ufgi/enable || { release; fail "enable: $(tail -3 $EL)"; }
# ufgt_glob_one, _two, _three and the init function.
during=$(stat_of fprobe_functions)
hooked_init=$(grep -c '^ufgt_glob_init ' $T/enabled_functions)
echo 1 > $T/tracing_on
release || fail "insmod globfns hold=1 failed: $(dmesg | tail -n 3)"
after=$(stat_of fprobe_functions)
echo 7 > $P/run
echo 0 > $T/tracing_on
tr=$(grep -v '^#' $T/trace)
echo 0 > $T/events/ufgi/enable || fail "disable"
echo '-:ufgi/all' >> $DE || fail "remove: $(tail -3 $EL)"
rmmod globfns || fail "rmmod globfns"
unload
log=$(dmesg)
[ "$during" = 4 ] && [ "$hooked_init" = 1 ] ||
	fail "while init ran: $during functions probed, init function hooked $hooked_init times"
# The init call was seen while it was hooked.
echo "$tr" | grep -q 'ufgt_glob_init.* n=2$' || fail "no record of the init call in: $tr"
[ "$after" = 3 ] || fail "after init: $after functions probed, not 3"
echo "$log" | grep -q 'fprobe: dropped 1 probed functions in the init text of a module gone live' ||
	fail "no drop at live in: $log"
# The other three still hooked after it.
[ "$(echo "$tr" | grep -c 'ufgt_glob_[a-z]*.* n=7$')" = 3 ] || fail "not 3 records of the run in: $tr"
if echo "$log" | grep -q 'filter update'; then
	fail "a filter update failed: $(echo "$log" | grep 'filter update')"
fi
exit 0
