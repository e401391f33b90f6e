# Attack: what the single exit probe's own ways do must be what the general way does, for the
# handlers' API: an exit handler that changes the return value (regs_set_return_value,
# ftrace_regs_set_return_value: x86_64 documents both), an entry handler that declines some
# calls (no exit for them), an fprobe without entry handler (zeroed entry data). Each is run
# with the probe alone (own ways) and beside a second exit probe (the general way).
. /selftests/lib.sh
ST=$DBG/atk_target/stats
PS=$DBG/atk_probe/stats
val() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
call() { echo "call $1" > $DBG/atk_target/ctl; awk '$1 == "last" { print $3 }' $ST; }
x86=0; [ "$(uname -m)" = x86_64 ] && x86=1
load
insmod $KO/atk_target.ko threads=2 hr_us=${ATK_HR_US:-$(rounds 300 3000)} nmi=1 || fail "insmod atk_target"
for way in own general; do
	for m in fprobe kretprobe; do
		name="$way $m"
		insmod $KO/atk_probe.ko mode=$m override=1 decline=1 words=3 || fail "$name: insmod"
		[ $way = general ] && { insmod $KO/fprobe_client.ko filter=atk_fn || fail "$name: fprobe_client"; }
		# 0x4000000000000005: 3x + 1 = c000000000000010, overridden 5x + 7 = 4000000000000020
		# (declined: odd); 0x4000000000000004: 5x + 7 = 400000000000001b.
		r_odd=$(call 4000000000000005)
		r_even=$(call 4000000000000004)
		echo go > $DBG/atk_target/ctl
		sleep 3
		echo stop > $DBG/atk_target/ctl
		r_even2=$(call 4000000000000004)
		[ $way = general ] && rmmod fprobe_client
		read -r s < $PS
		rmmod atk_probe
		echo "$name: odd -> $r_odd, even -> $r_even / $r_even2; $s" >&2
		[ "$r_odd" = c000000000000010 ] || fail "$name: a declined call's value changed: $r_odd"
		if [ $x86 = 1 ]; then
			[ "$r_even" = 400000000000001b ] && [ "$r_even2" = 400000000000001b ] ||
				fail "$name: the exit handler's return value did not stick: $r_even / $r_even2"
		fi
		for k in bad_ip bad_ret bad_data bad_decline; do
			[ "$(val "$s" $k)" = 0 ] || fail "$name: $k: $s"
		done
		[ "$(awk '$1 == "wrong" { print $2 }' $ST)" = 0 ] || fail "$name: callers got wrong values: $(tr '\n' ' ' < $ST)"
	done
	name="$way fprobe without entry handler"
	insmod $KO/atk_probe.ko mode=fprobe noentry=1 words=15 || fail "$name: insmod"
	[ $way = general ] && { insmod $KO/fprobe_client.ko filter=atk_fn || fail "$name: fprobe_client"; }
	echo go > $DBG/atk_target/ctl
	sleep 3
	echo stop > $DBG/atk_target/ctl
	[ $way = general ] && rmmod fprobe_client
	read -r s < $PS
	rmmod atk_probe
	echo "$name: $s" >&2
	[ "$(val "$s" bad_zero)" = 0 ] && [ "$(val "$s" exits)" -gt 0 ] || fail "$name: $s"
done
rmmod atk_target
unload
exit 0
