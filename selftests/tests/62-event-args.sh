# Fetch arguments of fprobe events, each checked against a value known in advance: an
# openat() of a known path from a known directory fd, read through every kind of argument
# (register, stack, dereference, user string, char, array, bitfield, symbol, symstr,
# immediates, @SYM), and a bad pointer that must show as a fault, not an oops.
. /selftests/lib.sh
load_tracing_off
# do_sys_openat2(int dfd, const char __user *filename, struct open_how *how)
echo 'f:ufga/o do_sys_openat2 dfd=$arg1:s32 path=+0($arg2):ustring c=+0($arg2):char n=+0($arg2):u8 arr=+0($arg2):u8[4] bits=+0($arg2):b4@4/8 x=+1($arg2):x8' > $DE || fail "define o"
echo 'f:ufga/s do_sys_openat2 caller=$stack0:symbol callerstr=$stack0:symstr k=\1234 ks=\"hello" b=@linux_banner:x32 bad=+0($arg1):ustring' >> $DE || fail "define s: $(cat $DBG/ufgraph/error_log)"
echo 'f:ufga/r do_sys_openat2%return ret=$retval:s64 dfd=$arg1:s32 path=+0($arg2):ustring comm=$comm' >> $DE || fail "define r"
echo 1 > $T/events/ufga/enable
echo 1 > $T/tracing_on
echo data > /tmp/ufga-file
cat /tmp/ufga-file > /dev/null
cat /tmp/no-such-ufga-file 2>/dev/null
echo 0 > $T/tracing_on
echo 0 > $T/events/ufga/enable
tr=$(grep -F 'ufga-file' $T/trace | head -1)
# '/' is 0x2f = 47: high nibble 2; 't' is 0x74.
grep -q ' o: (do_sys_openat2+0x[0-9a-f]*/0x[0-9a-f]*) dfd=-100 path="/tmp/ufga-file" c='"'"'/'"'"' n=47 arr={47,116,109,112} bits=2 x=0x74$' $T/trace \
	|| fail "o: $(grep ' o: ' $T/trace | head -2)"
line=$(grep ' s: ' $T/trace | head -1)
# $stack0 at entry is the return address: the caller's, or the return trampoline's once the
# exit probe on the same function has hooked this call (as with upstream's kretprobes).
C='\([a-z_0-9]*open[a-z_0-9]*+0x[0-9a-f]*/0x[0-9a-f]*\|ufgraph_return_trampoline+0x0/0x[0-9a-f]* \[ufgraph\]\)'
# On arm64 the return address is in the link register, not on the stack: $stack0 is just the
# word at sp there.
if [ "$(uname -m)" = x86_64 ]; then
	echo "$line" | grep -q "caller=$C callerstr=\"$C\" " || fail "s caller: $line"
fi
echo "$line" | grep -q ' k=0x4d2 ks="hello" b=0x756e694c' || fail "s immediates/@SYM: $line"
echo "$line" | grep -q ' bad=(fault)$' || fail "s fault: $line"
grep -q ' r: ([a-z_0-9]*open[a-z_0-9]*+0x[0-9a-f]*/0x[0-9a-f]* <- do_sys_openat2) ret=[0-9]* dfd=-100 path="/tmp/ufga-file" comm="\(sh\|cat\)"$' $T/trace \
	|| fail "r: $(grep ' r: ' $T/trace | head -3)"
grep -q ' r: .* ret=-2 dfd=-100 path="/tmp/no-such-ufga-file" comm="\(sh\|cat\)"$' $T/trace \
	|| fail "r ENOENT: $(grep ' r: ' $T/trace | grep no-such | head -3)"
echo > $DE || fail "clear"
unload
exit 0
