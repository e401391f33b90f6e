# An upstream-style fprobe module (only its include changed) on ufgraph: by filter, by
# symbol and by address; every call entered and exited with its entry data; errors
# refused cleanly.
. /selftests/lib.sh
load
for m in filter syms; do
	dmesg -c > /dev/null
	insmod $KO/fprobe_client.ko mode=$m filter=version_proc_show || fail "$m: insmod failed: $(dmesg | tail -2)"
	for i in $(seq 1 15); do cat /proc/version > /dev/null; done
	rmmod fprobe_client
	dmesg | grep -q "fprobe_client: $m entries=15 exits=15 bad=0 missed=0 unregister=0" \
		|| fail "$m: $(dmesg | grep fprobe_client)"
done
# By address: the ftrace location from ftrace's own list.
a=$(awk '$2 == "version_proc_show" { print $1; exit }' /sys/kernel/tracing/available_filter_functions_addrs)
[ -n "$a" ] || fail "no address for version_proc_show"
dmesg -c > /dev/null
insmod $KO/fprobe_client.ko mode=ips addr=0x$a || fail "ips: insmod failed: $(dmesg | tail -2)"
cat /proc/version > /dev/null
rmmod fprobe_client
dmesg | grep -q "fprobe_client: ips entries=1 exits=1 bad=0" || fail "ips: $(dmesg | grep fprobe_client)"
# Filter and notfilter: vfs_* but not vfs_read.
insmod $KO/fprobe_client.ko 'filter=vfs_*' notfilter=vfs_read || fail "glob: insmod failed"
cat /proc/version > /dev/null
rmmod fprobe_client
# Errors: no match, unknown symbol, bad address; each leaves nothing behind.
for args in "filter=ufg_nothing_*" "mode=syms filter=ufg_no_such_symbol" "mode=ips addr=0x1234"; do
	insmod $KO/fprobe_client.ko $args 2>/dev/null && fail "accepted: $args"
	loaded fprobe_client && fail "left loaded: $args"
done
[ "$(stat_of fprobes)" = 0 ] || fail "probes left: $(cat $DBG/ufgraph/stats)"
[ "$(stat_of fprobe_functions)" = 0 ] || fail "functions left: $(cat $DBG/ufgraph/stats)"
unload
exit 0
