// SPDX-License-Identifier: GPL-2.0

//! Upstream's selftest cases (fprobe_syntax_errors.tc) and the errors only the caller can
//! detect: registration failures and clashes with an existing event.

use super::*;

/// Every check_error of fprobe_syntax_errors.tc that a 6.12 kernel without BTF arguments runs,
/// with the error it expects. (BAD_PROBE_ADDR and the multiprobe errors come from registration:
/// see `registration_errors` and `multiprobe_errors`.)
#[test]
fn upstream_syntax_errors() {
    use ErrCode::*;
    let cases: &[(&str, ErrCode)] = &[
        // The selftest's comment says MAXACT_NO_KPROBE, a kprobe error; for fprobes 6.12 refuses
        // a maxactive on an entry probe.
        ("f^100 vfs_read", BadMaxactType),
        ("f^1a111 vfs_read", BadMaxact),
        ("f^100000 vfs_read", MaxactTooBig),
        ("f:^/bar vfs_read", NoGroupName),
        (
            "f:^12345678901234567890123456789012345678901234567890123456789012345/bar vfs_read",
            GroupTooLong,
        ),
        ("f:^foo.1/bar vfs_read", BadGroupName),
        ("f:^ vfs_read", NoEventName),
        (
            "f:foo/^12345678901234567890123456789012345678901234567890123456789012345 vfs_read",
            EventTooLong,
        ),
        ("f:foo/^bar.1 vfs_read", BadEventName),
        ("f vfs_read ^$stack10000", BadStackNum),
        ("f vfs_read ^$arg10000", BadArgNum),
        ("f vfs_read ^$none_var", BadVar),
        ("f vfs_read ^%ax", BadVar),
        ("f vfs_read ^%x0", BadVar),
        ("f vfs_read ^@12345678abcde", BadMemAddr),
        ("f vfs_read ^@+10", FileOnKprobe),
        ("f vfs_read arg1=\\^x", BadImm),
        ("f vfs_read arg1=\\\"abcd^", ImmstrNoClose),
        ("f vfs_read ^+0@0)", DerefNeedBrace),
        ("f vfs_read ^+0ab1(@0)", BadDerefOffs),
        ("f vfs_read +0(+0(@0^)", DerefOpenBrace),
        ("f vfs_read +0(^$comm)", CommCantDeref),
        ("f vfs_read ^&1", BadFetchArg),
        (
            "f vfs_read +0(^+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))",
            TooManyOps,
        ),
        ("f vfs_read +0(@11):u8[10^", ArrayNoClose),
        ("f vfs_read +0(@11):u8[10]^a", BadArraySuffix),
        ("f vfs_read +0(@11):u8[^10a]", BadArrayNum),
        ("f vfs_read +0(@11):u8[^256]", ArrayTooBig),
        ("f vfs_read @11:^unknown_type", BadType),
        ("f vfs_read $stack0:^string", BadString),
        ("f vfs_read @11:^b10@a/16", BadBitfield),
        (
            "f vfs_read ^arg123456789012345678901234567890=@11",
            ArgNameTooLong,
        ),
        ("f vfs_read ^=@11", NoArgName),
        ("f vfs_read ^var.1=@11", BadArgName),
        ("f vfs_read var1=@11 ^var1=@12", UsedArgName),
        (
            "f vfs_read ^+1234567(+1234567(+1234567(+1234567(+1234567(+1234567(@1234))))))",
            ArgTooLong,
        ),
        ("f vfs_read arg1=^", NoArgBody),
        ("f vfs_read^%hoge", BadAddrSuffix),
        // The "no BTF" branch.
        ("f vfs_read ^$arg*", NosupBtfarg),
        ("t kfree ^$arg*", NosupBtfarg),
    ];
    check_errors(cases);
}

/// The selftest's BTF branch, on a kernel without BTF arguments: the same caret, mostly, with the
/// error such a kernel gives.
#[test]
fn upstream_btf_cases_without_btf() {
    use ErrCode::*;
    // BAD_VAR_ARGS with BTF.
    check_error("f vfs_read args=^$arg*", BadVar);
    check_error("f vfs_read +0(^$arg*)", BadVar);
    check_error("f vfs_read $arg* ^$arg*", DoubleArgs);
    // NOFENTRY_ARGS before 6.12; 6.12 skips it (exit probes read arguments).
    check_error("f vfs_read%return ^$arg*", NosupBtfarg);
    // NO_BTFARG with BTF.
    check_error("f vfs_read ^hoge", NosupBtfarg);
    // BAD_TYPE4STR with BTF.
    check_error("f vfs_read ^file:string", NosupBtfarg);
    // NO_BTF_FIELD and BAD_HYPHEN with BTF, further in the word.
    check_error("f vfs_read ^file->foo", NosupBtfarg);
    check_error("f vfs_read ^file-.foo", NosupBtfarg);
    // Only BTF knows kfree() has one parameter and returns void.
    assert_eq!(load(fetch("f kfree $arg10").load), "Arg(9)");
    assert!(def("f kfree%return $retval").is_return());
    // Without BTF, "$retval" is a prefix.
    assert_eq!(fetch("f vfs_read%return $retval->foo").load, Load::Retval);
    // Skipped by the selftest on 6.12, which reads arguments at exit.
    let d = def("f vfs_read $retval $arg1");
    assert!(d.is_return());
    assert_eq!(d.entry_args(), &[0]);
}

#[test]
fn registration_errors() {
    for marked in ["f ^non_exist_func", "f ^vfs_read+10"] {
        check_no_match(marked);
    }
    let d = def("f vfs_read");
    assert_eq!(
        d.registration_error(-84).unwrap().code,
        ErrCode::BadInsnBndry
    );
    assert_eq!(
        d.registration_error(-16).unwrap().code,
        ErrCode::FailRegProbe
    );
    assert_eq!(d.registration_error(-16).unwrap().errno.to_kernel(), -16);
    assert_eq!(d.registration_error(-12), None);
    assert_eq!(d.registration_error(-17), None);
    let e = d.error_at(ErrCode::EventExist, Errno::Exist, 0, 0);
    assert_eq!(e.pos, 0);
}

/// The selftest's multiprobe cases: a second definition for an existing event.
#[test]
fn multiprobe_errors() {
    let fork = "kernel_clone";
    let existing = def("f:fprobes/testevent kernel_clone");
    let new = def("f:fprobes/testevent do_exit%return");
    let e = new
        .diff_probe_type(existing.is_return(), existing.kind())
        .unwrap();
    assert_eq!((e.code, e.pos), (ErrCode::DiffProbeType, 0));
    assert_eq!(
        def("f:fprobes/testevent vfs_read").diff_probe_type(false, ProbeKind::Fprobe),
        None
    );

    let existing_cmd = format!("f:fprobes/testevent {fork} abcd=\\1");
    let existing = def(&existing_cmd);
    for marked in [
        format!("f:fprobes/testevent {fork} ^bcd=\\1"),
        format!("f:fprobes/testevent {fork} ^abcd=\\1:u8"),
        format!("f:fprobes/testevent {fork} ^abcd=\\\"foo\""),
    ] {
        let pos = marked.find('^').unwrap();
        let cmd = marked.replace('^', "");
        let e = def(&cmd)
            .diff_arg_types(existing.args().map(|a| a.sig()))
            .unwrap();
        assert_eq!((e.code, e.pos), (ErrCode::DiffArgType, pos), "{marked}");
    }
    let cmd = format!("f:fprobes/testevent {fork} abcd=\\1");
    let new = def(&cmd);
    assert_eq!(new.diff_arg_types(existing.args().map(|a| a.sig())), None);
    let comms: Vec<String> = existing.args().map(|a| a.comm.to_string()).collect();
    let e = new
        .same_probe(existing.symbol(), comms.iter().map(String::as_str))
        .unwrap();
    assert_eq!((e.code, e.pos), (ErrCode::SameProbe, 0));
    assert_eq!(
        new.same_probe("vfs_read", comms.iter().map(String::as_str)),
        None
    );
    assert_eq!(new.same_probe(fork, ["\\2"]), None);
    assert_eq!(new.same_probe(fork, []), None);

    // More or fewer arguments: the first one past the shorter list.
    let more = def("f:fprobes/testevent kernel_clone abcd=\\1 x=\\2");
    let e = more
        .diff_arg_types(existing.args().map(|a| a.sig()))
        .unwrap();
    assert_eq!(e.index, 3);
    let none = def("f:fprobes/testevent kernel_clone");
    assert_eq!(
        none.diff_arg_types(existing.args().map(|a| a.sig()))
            .unwrap()
            .index,
        2
    );
}

#[test]
fn registers_log_two_errors() {
    let e = check_error("f vfs_read ^%ax", ErrCode::BadVar);
    assert_eq!(e.also, Some(ErrCode::BadFetchArg));
    let log = e.log("f vfs_read %ax", &CFG, 0).to_string();
    assert_eq!(log.matches("  Command: f vfs_read %ax\n").count(), 2);
    assert!(log.contains("error: Invalid fetch argument\n"));
}
