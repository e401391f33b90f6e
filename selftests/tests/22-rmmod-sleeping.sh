# rmmod while a task sleeps inside a hooked function: the module hands the return
# address back (the task will return straight to its caller) and unloads; when the
# task wakes up later it returns normally, with its data, and nothing crashes.
. /selftests/lib.sh
load graph=pipe_read
# The writer waits for the test's go, given after the unload: a fixed sleep (2 s) once ran out
# on the debug kernel before the unload began, and the reader then returned through ufgraph's
# trampoline with nothing left to hand back.
rm -f /tmp/go-sleeper
(while [ ! -e /tmp/go-sleeper ]; do sleep 0.1; done; echo ufgraph-was-here) | cat > /tmp/sleeper.out &
sleeper=$!
wait_for 'grep -q " cat depth 1: pipe_read" $DBG/ufgraph/frames' 20 || fail "cat not seen inside pipe_read: $(cat $DBG/ufgraph/frames)"
[ "$(stat_of live_frames)" -ge 1 ] || fail "no live frame: $(cat $DBG/ufgraph/stats)"
dmesg -c > /dev/null
unload
# On arm64 too: the test kernel has a shadow call stack, which the function returns through
# (its frame record's copy, signed with PAC, is only authenticated): that entry is rewritten
# (Documentation/arm64.md, "Unloading"). Only a kernel with PAC and no shadow call stack waits.
dmesg | grep -q "handed [1-9][0-9]* pending return addresses back" || { touch /tmp/go-sleeper; fail "no hand-back in dmesg: $(dmesg | tail -3)"; }
loaded ufgraph && fail "still loaded"
touch /tmp/go-sleeper
wait $sleeper || fail "the sleeping reader failed"
grep -qx ufgraph-was-here /tmp/sleeper.out || fail "reader got: $(cat /tmp/sleeper.out)"
# The module loads again and works.
load graph=pipe_read
echo again | cat > /tmp/sleeper.out
# (the shell reading this command substitution is itself inside pipe_read)
set -- $(graph_of pipe_read)
[ "$1" -ge 1 ] && [ $(($1 - $2)) -le 1 ] || fail "pipe_read entries/returns $1/$2 after reload"
unload
exit 0
