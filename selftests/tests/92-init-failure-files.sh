# Module init failing with the control files in reach: `insmod ufgraph.ko func=vfs_read
# graph=NOSUCH` starts the func= counter, then fails on graph= and undoes everything, while a
# writer waits for dynamic_events to appear and writes many definitions to it. Before the fix
# the files were created before the counters, and the events after the files (so dropped
# before them): the writer got in during the window, the events were freed under it and its
# next line read freed memory (KASAN), leaving events behind. With the events dropped after
# the files, removal waited for the write, but the writer's file, still open, was released
# after the module was gone (KASAN in full_proxy_release). Now nothing that can fail but the
# files themselves comes after them, and the events go after the files.
. /selftests/lib.sh
loaded ufgraph && fail "ufgraph is loaded already"
lines=""
i=0
while [ $i -lt 40 ]; do
	lines="${lines}f:ufgi/e$i vfs_read count=\$arg3:u32
"
	i=$((i + 1))
done
hits=0
r=0
rounds=$(rounds 8 3)
while [ $r -lt $rounds ]; do
	(
		until [ -e $DE ]; do sleep 0.01; done
		printf '%s' "$lines" > $DE 2>/dev/null && echo hit > /tmp/ufgi-hit
	) &
	writer=$!
	insmod $KO/ufgraph.ko func=vfs_read graph=ufg_no_such_function 2>/dev/null &&
		fail "insmod with graph=ufg_no_such_function loaded"
	# The writer either wrote during the window or is still polling for the file.
	kill $writer 2>/dev/null
	wait $writer 2>/dev/null
	loaded ufgraph && fail "init failed but ufgraph is loaded"
	[ -e $DBG/ufgraph ] && fail "debugfs left behind"
	[ -e $T/events/ufgi ] && fail "events left behind: $(ls $T/events/ufgi | head -3)"
	[ -e /tmp/ufgi-hit ] && hits=$((hits + 1))
	rm -f /tmp/ufgi-hit
	r=$((r + 1))
done
echo "$hits of $rounds writes landed in an init that failed (0 since the fix: no window)"
# Still loads and works afterwards.
load
echo 'f:ufgi/ok vfs_read' > $DE || fail "define after the failed inits"
echo > $DE || fail "clear"
unload
exit 0
