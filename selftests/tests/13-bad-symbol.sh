# A function that does not exist is refused with a clear error and leaves nothing behind.
. /selftests/lib.sh
dmesg -c > /dev/null
if insmod $KO/ufgraph.ko func=ufgraph_no_such_function 2>/tmp/err; then
	fail "insmod with a bad symbol succeeded"
fi
grep -q "Invalid argument" /tmp/err || fail "insmod error was: $(cat /tmp/err)"
dmesg | grep -q "func=ufgraph_no_such_function: cannot hook it" || fail "no clear message in dmesg: $(dmesg | tail -5)"
loaded ufgraph && fail "module loaded despite the error"
[ ! -e $DBG/ufgraph ] || fail "debugfs directory left behind"
# And the module still loads fine afterwards.
load func=vfs_read
unload
exit 0
