// SPDX-License-Identifier: GPL-2.0

//! Tests of whole definitions: upstream's selftest cases, every fetch form and type, defaults,
//! limits, and the `dynamic_events` listing round trip.

use super::args::RESERVED_NAMES;
use super::*;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

const CFG: Config = Config {
    max_stack_index: 2048,
    dentry_name_offset: 0x28,
    file_dentry_offset: 0x48,
};

fn def(cmd: &str) -> ProbeDef<'_> {
    match parse(cmd, &CFG) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

fn args(cmd: &str) -> Vec<FetchArg<'_>> {
    let d = def(cmd);
    let args: Vec<_> = d.args().collect();
    assert_eq!(args.len(), d.nargs(), "{cmd:?}");
    args
}

fn arg(cmd: &str) -> FetchArg<'_> {
    let mut a = args(cmd);
    assert_eq!(a.len(), 1, "{cmd:?}");
    a.remove(0)
}

fn fetch(cmd: &str) -> Fetch<'_> {
    arg(cmd).fetch
}

fn err(cmd: &str) -> ProbeError {
    match parse(cmd, &CFG) {
        Err(Error::Probe(e)) => e,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

/// Upstream's `check_error`: `marked` is a command with '^' where the caret must go. Checks the
/// error code, the position, and the `error_log` entry as `ftrace_errlog_check` does (its last
/// line is 13 + pos bytes: "  Command: ", the spaces, "^\n").
#[track_caller]
fn check_error(marked: &str, code: ErrCode) -> ProbeError {
    let pos = marked.find('^').expect("no caret");
    let cmd = marked.replacen('^', "", 1);
    let e = err(&cmd);
    assert_eq!((e.code, e.pos), (code, pos), "{marked:?}: {e:?}");
    let log = e.log(&cmd, &CFG, 0).to_string();
    assert!(
        log.contains(&format!("trace_fprobe: error: {}\n", code.message())),
        "{log}"
    );
    assert_eq!(log.lines().last().unwrap().len() + 1, 13 + pos, "{log}");
    e
}

fn load(l: Load<'_>) -> String {
    format!("{l:?}")
}

fn mem(offset: i32, size: u8) -> Store {
    Store {
        kind: StoreKind::Mem,
        size,
        offset,
    }
}

fn raw(size: u8) -> Store {
    Store {
        kind: StoreKind::Raw,
        size,
        offset: 0,
    }
}

fn deref(offset: i32) -> Deref {
    Deref {
        offset,
        user: false,
    }
}

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
    for &(marked, code) in cases {
        check_error(marked, code);
    }
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
        let cmd = marked.replace('^', "");
        let e = def(&cmd)
            .registration_error(Errno::NoEnt.to_kernel())
            .unwrap();
        assert_eq!((e.code, e.pos), (ErrCode::BadProbeAddr, 2));
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

#[test]
fn head_and_defaults() {
    let d = def("f vfs_read");
    assert_eq!(
        (d.kind(), d.group(), d.event(), d.symbol()),
        (ProbeKind::Fprobe, "fprobes", "vfs_read__entry", "vfs_read")
    );
    assert!(!d.is_return() && !d.event_given() && d.nargs() == 0 && d.maxactive() == 0);

    let d = def("f vfs_read%return");
    assert_eq!(
        (d.event(), d.symbol(), d.is_return()),
        ("vfs_read__exit", "vfs_read", true)
    );

    let d = def("f:mygrp/myev vfs_read");
    assert_eq!((d.group(), d.event()), ("mygrp", "myev"));
    assert!(d.event_given());
    let d = def("f:myev vfs_read");
    assert_eq!((d.group(), d.event()), ("fprobes", "myev"));
    let d = def("f:my-grp.myev vfs_read");
    assert_eq!((d.group(), d.event()), ("my-grp", "myev"));
    let d = def("f:mygrp/ vfs_read%return");
    assert_eq!((d.group(), d.event()), ("mygrp", "vfs_read__exit"));
    let d = def("f:mygrp. vfs_read");
    assert_eq!((d.group(), d.event()), ("mygrp", "vfs_read__entry"));

    let d = def("f10:ev vfs_read%return");
    assert_eq!((d.maxactive(), d.event()), (10, "ev"));
    assert_eq!(def("f0x10 vfs_read%return").maxactive(), 16);
    assert_eq!(def("f4096 vfs_read%return").maxactive(), 4096);
    check_error("f^4097 vfs_read%return", ErrCode::MaxactTooBig);
    check_error("f^2147483647 vfs_read%return", ErrCode::MaxactTooBig);
    check_error("f^4294967296 vfs_read%return", ErrCode::BadMaxact);
    // An int that wraps negative passes, as upstream's does.
    assert_eq!(def("f2147483648 vfs_read%return").maxactive(), i32::MIN);
    assert_eq!(def("f0xffffffff vfs_read%return").maxactive(), -1);
    check_error("f^0 vfs_read%return", ErrCode::BadMaxact);
    check_error("f^1x:ev vfs_read%return", ErrCode::BadMaxact);
    // $retval makes an exit probe, so maxactive is fine.
    assert_eq!(def("f5 vfs_read $retval").maxactive(), 5);

    // Only the first letter counts.
    assert_eq!(def("fx vfs_read").kind(), ProbeKind::Fprobe);
    assert_eq!(def("fentry:ev vfs_read").event(), "ev");

    // Default names are sanitized after their first byte, and cut at 63 bytes.
    assert_eq!(def("f vfs_read.cold").event(), "vfs_read_cold__entry");
    assert_eq!(def("f mod:sym*").event(), "mod_sym___entry");
    assert_eq!(def("f .x").event(), ".x__entry");
    let long = "a".repeat(70);
    let cmd = format!("f {long}");
    assert_eq!(def(&cmd).event(), &long[..63]);
    let cmd = format!("f {}é", "a".repeat(62));
    assert_eq!(def(&cmd).event(), &cmd[2..64]);
}

/// Globs in the symbol, as upstream 6.12 takes them (checked against its own fprobe events):
/// the glob is the symbol, whole; default event names keep what sanitize_event_name() keeps.
#[test]
fn globs() {
    let d = def("f vfs_read*");
    assert_eq!(
        (d.symbol(), d.event(), d.is_return()),
        ("vfs_read*", "vfs_read___entry", false)
    );
    let d = def("f vfs_read*%return r=$retval");
    assert_eq!(
        (d.symbol(), d.event(), d.is_return()),
        ("vfs_read*", "vfs_read___exit", true)
    );
    // '?', '[', ']' and '!' stay in the name; a leading '*' too (the first byte is not looked at).
    assert_eq!(def("f vfs_rea?").event(), "vfs_rea?__entry");
    assert_eq!(def("f vfs_rea[d]").event(), "vfs_rea[d]__entry");
    assert_eq!(def("f vfs_*rea[!l]").event(), "vfs__rea[!l]__entry");
    assert_eq!(def("f *_read").event(), "*_read__entry");
    assert_eq!(def("f \\x*").event(), "\\x___entry");
    let d = def("f:grp/ vfs_read*");
    assert_eq!(
        (d.group(), d.event(), d.event_given()),
        ("grp", "vfs_read___entry", false)
    );
    let d = def("f:g/e ufgt_glob_t[wh]?*%return r=$retval:s32 n=$arg1:s32");
    assert_eq!((d.event(), d.symbol()), ("e", "ufgt_glob_t[wh]?*"));
    // $retval makes an exit probe of a glob too, and $argN at exit is saved at entry.
    let d = def("f vfs_write* $arg3 $retval $arg1");
    assert!(d.is_return());
    assert_eq!(
        (d.event(), d.entry_args()),
        ("vfs_write___exit", &[2u16, 0][..])
    );
    // Neither a module prefix nor a '!' is special to the parser: the symbol is the whole word.
    assert_eq!(def("f ext4:ext4_*").symbol(), "ext4:ext4_*");
    assert_eq!(def("f ext4:ext4_*").event(), "ext4_ext4____entry");
    assert_eq!(def("f !vfs_read").symbol(), "!vfs_read");
    // A suffix other than %return is refused at the '%' whatever the glob.
    check_error("f vfs_read*^%ret", ErrCode::BadAddrSuffix);
    // Tracepoint names are identifiers: no globs there.
    check_error("t sched_^*", ErrCode::BadTpName);

    // A glob that matches nothing: upstream's entry at the symbol.
    for marked in ["f ^ufgt_nomatch_*", "f:g/e ^vfs_[xyz]*%return $retval"] {
        let cmd = marked.replace('^', "");
        let e = def(&cmd)
            .registration_error(Errno::NoEnt.to_kernel())
            .unwrap();
        assert_eq!(
            (e.code, e.pos, e.index, e.offset),
            (ErrCode::BadProbeAddr, marked.find('^').unwrap(), 1, 0)
        );
        let log = e.log(&cmd, &CFG, 0).to_string();
        assert!(
            log.contains("trace_fprobe: error: Invalid probed address or symbol\n"),
            "{log}"
        );
        assert!(log.contains(&format!("  Command: {cmd}\n")), "{log}");
    }

    // Two globs on one event: not the same probe unless the globs are equal.
    let a = def("f:g/e vfs_read* n=$arg3");
    let b = def("f:g/e vfs_write* n=$arg3");
    let comms: Vec<String> = a.args().map(|x| x.comm.to_string()).collect();
    assert_eq!(b.diff_arg_types(a.args().map(|x| x.sig())), None);
    assert_eq!(
        b.same_probe(a.symbol(), comms.iter().map(String::as_str)),
        None
    );
    assert!(a
        .same_probe(a.symbol(), comms.iter().map(String::as_str))
        .is_some());

    // Removal compares the glob as text.
    let none: [(&str, &str); 0] = [];
    assert!(remove("-:e vfs_read*").matches("g", "e", "vfs_read*", none));
    assert!(!remove("-:e vfs_read").matches("g", "e", "vfs_read*", none));
    assert!(!remove("-:e vfs_read*").matches("g", "e", "vfs_read", none));

    // Listing: the glob as given. A default name with '?' (or '[', '!'...) is no identifier, so
    // the listing does not parse back, as upstream's does not.
    let d = def("f vfs_read*%return $retval");
    assert_eq!(
        d.to_string(),
        "f:fprobes/vfs_read___exit vfs_read*%return arg1=$retval"
    );
    assert!(same(&d, &def(&d.to_string())));
    let d = def("f vfs_rea?");
    assert_eq!(d.to_string(), "f:fprobes/vfs_rea?__entry vfs_rea?");
    assert_eq!(err(&d.to_string()).code, ErrCode::BadEventName);
}

#[test]
fn tracepoints() {
    let d = def("t sched_switch $arg1 $arg2:u32");
    assert_eq!(
        (d.kind(), d.group(), d.event()),
        (ProbeKind::Tracepoint, "tracepoints", "sched_switch")
    );
    let a: Vec<_> = d.args().collect();
    // The stub's first parameter is skipped.
    assert_eq!(a[0].fetch.load, Load::Arg(1));
    assert_eq!(a[1].fetch.load, Load::Arg(2));
    assert_eq!(def("t 9p_client_req").event(), "_9p_client_req");
    assert_eq!(def("t:g/e foo").group(), "g");
    check_error("t foo^%return", ErrCode::BadAddrSuffix);
    check_error("t foo^-bar", ErrCode::BadTpName);
    // The kernel's ctype is Latin-1: a UTF-8 lead byte is a letter, its continuation is not.
    assert_eq!(err("t f\u{e9}").pos, "t f".len() + 1);
    check_error("t kfree x=+0(^$retval)", ErrCode::RetvalOnProbe);
    check_error("t kfree ^$retvalx", ErrCode::RetvalOnProbe);
    check_error("t^5 kfree", ErrCode::BadMaxactType);
}

#[test]
fn unknown_tracepoints() {
    let known = |n: &str| n == "kfree";
    let parse_tp = |cmd: &'static str| {
        let mut asked = Vec::new();
        let r = parse_with(cmd, &CFG, &mut |n| {
            asked.push(n.to_string());
            known(n)
        });
        (r, asked)
    };
    // Known: parsed as with `parse`, the tracepoint asked about once.
    let (r, asked) = parse_tp("t:g/e kfree p=$arg1");
    assert!(matches!(r, Ok(Command::Add(_))), "{r:?}");
    assert_eq!(asked, ["kfree"]);
    // Unknown: NO_TRACEPOINT, -EINVAL, caret under the name (upstream's index 1, offset 0).
    let (r, _) = parse_tp("t:g/e kmalloc_nope p=$arg1");
    let Err(Error::Probe(e)) = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        (e.code, e.errno, e.index, e.offset, e.pos),
        (ErrCode::NoTracepoint, Errno::Inval, 1, 0, "t:g/e ".len())
    );
    let log = e.log("t:g/e kmalloc_nope p=$arg1", &CFG, 0).to_string();
    assert!(
        log.contains("trace_fprobe: error: Tracepoint is not found\n"),
        "{log}"
    );
    assert_eq!(
        log.lines().last().unwrap().len() + 1,
        13 + "t:g/e ".len(),
        "{log}"
    );
    // Looked up before the arguments, as upstream: a bad argument of an unknown tracepoint
    // logs NO_TRACEPOINT.
    let (r, _) = parse_tp("t nope $arg10000");
    assert_eq!(r.unwrap_err().probe().unwrap().code, ErrCode::NoTracepoint);
    // After the name checks: a bad name or suffix is reported first, without a lookup.
    let (r, asked) = parse_tp("t no-pe");
    assert_eq!(r.unwrap_err().probe().unwrap().code, ErrCode::BadTpName);
    assert!(asked.is_empty());
    let (r, asked) = parse_tp("t:^bad kfree");
    assert!(r.is_err());
    assert!(asked.is_empty());
    // Not asked for fprobes, nor for removals.
    let (r, asked) = parse_tp("f vfs_read");
    assert!(r.is_ok());
    assert!(asked.is_empty());
    let (r, asked) = parse_tp("-:tracepoints/nope");
    assert!(r.is_ok());
    assert!(asked.is_empty());
}

#[test]
fn retval_makes_exit_probes() {
    assert!(def("f vfs_read $retval").is_return());
    assert!(def("f vfs_read x=+8($retval):u32").is_return());
    // In an immediate string too: upstream just looks for the text.
    let d = def("f vfs_read \\\"$retval\"");
    assert!(d.is_return());
    assert_eq!(
        fetch("f vfs_read \\\"$retval\"").load,
        Load::ImmStr("$retval")
    );
    // Not when an identifier character follows; then parsing the variable fails.
    check_error("f vfs_read ^$retvalx", ErrCode::RetvalOnProbe);
    check_error("f vfs_read ^$retval_x", ErrCode::RetvalOnProbe);
    // Only the first "$retval" of a word is looked at.
    check_error("f vfs_read ^$retvalx+$retval", ErrCode::RetvalOnProbe);
    // On an exit probe, anything starting with "$retval" is the return value.
    assert_eq!(fetch("f vfs_read%return $retvalue").load, Load::Retval);
}

#[test]
fn variables() {
    let a = args("f vfs_read $arg1 $arg2048 $stack $stack0 $stack2048 $comm $COMM");
    let loads: Vec<_> = a.iter().map(|a| load(a.fetch.load)).collect();
    assert_eq!(
        loads,
        [
            "Arg(0)",
            "Arg(2047)",
            "StackPointer",
            "Stack(0)",
            "Stack(2048)",
            "Comm",
            "Comm"
        ]
    );
    assert_eq!(a[0].fetch.store, raw(8));
    assert_eq!(a[0].ty, FetchType::X64);
    // $comm is a string kept by its own store instruction.
    assert_eq!(a[5].ty, FetchType::String);
    assert_eq!(
        a[5].fetch.store,
        Store {
            kind: StoreKind::String,
            size: 4,
            offset: 0
        }
    );
    assert!(a[5].is_dynamic());
    assert_eq!(fetch("f vfs_read $comm:string").load, Load::Comm);

    check_error("f vfs_read ^$arg0", ErrCode::BadArgNum);
    check_error("f vfs_read ^$arg2049", ErrCode::BadArgNum);
    check_error("f vfs_read ^$stack2049", ErrCode::BadStackNum);
    check_error("f vfs_read ^$stack99999999999999999999999", ErrCode::BadVar);
    check_error("f vfs_read ^$stack0x10", ErrCode::BadVar);
    check_error("f vfs_read ^$stack+1", ErrCode::BadVar);
    check_error("f vfs_read ^$stackx", ErrCode::BadVar);
    check_error("f vfs_read x=^$argx", ErrCode::BadVar);
    check_error("f vfs_read ^$", ErrCode::BadVar);
    check_error("f vfs_read ^$Comm", ErrCode::BadVar);
    check_error("f vfs_read $comm:^u32", ErrCode::NeedStringType);
    check_error("f vfs_read $comm:^string[2]", ErrCode::NeedStringType);
    // The $arg word pass looks at unnamed words before anything else is parsed...
    check_error("f vfs_read $stack9999 ^$argx", ErrCode::BadVar);
    check_error("f vfs_read ^$arg", ErrCode::BadVar);
    check_error("f vfs_read ^$arg+1", ErrCode::BadVar);
    // ...but a named one is parsed normally: kstrtoul() takes a '+'.
    assert_eq!(fetch("f vfs_read x=$arg+1").load, Load::Arg(0));
    // $arg* points at the last "$arg" word, where upstream's log index stays.
    check_error("f vfs_read $arg* ^$arg1", ErrCode::NosupBtfarg);
}

#[test]
fn entry_arguments_at_exit() {
    let d = def("f vfs_read%return $arg2 a=$arg1 b=+8($arg2):u32 $retval");
    assert_eq!(d.entry_args(), &[1, 0]);
    assert_eq!(d.entry_data_size(), 16);
    let loads: Vec<_> = d.args().map(|a| a.fetch.load).collect();
    assert_eq!(
        loads,
        [
            Load::EntryArg { arg: 1, slot: 0 },
            Load::EntryArg { arg: 0, slot: 1 },
            Load::EntryArg { arg: 1, slot: 0 },
            Load::Retval
        ]
    );
    assert_eq!(def("f vfs_read $arg1").entry_args(), &[] as &[u16]);
    assert_eq!(def("f vfs_read%return $retval").entry_data_size(), 0);
    // symstr takes registers, stack and memory but not entry data.
    check_error("f vfs_read%return $arg1:^symstr", ErrCode::BadSymstring);
}

#[test]
fn memory_and_immediates() {
    let f = fetch("f vfs_read @0xffffffff81000000");
    assert_eq!(f.load, Load::Imm(0xffff_ffff_8100_0000));
    assert_eq!(f.derefs(), &[]);
    assert_eq!(f.store, mem(0, 8));

    let f = fetch("f vfs_read @jiffies+8:u32");
    assert_eq!(f.load, Load::Symbol("jiffies+8"));
    assert_eq!(split_symbol_offset("jiffies+8"), Ok(("jiffies", 8)));
    assert_eq!(f.store, mem(0, 4));
    // An empty symbol is upstream's registration problem, not a syntax error.
    assert_eq!(fetch("f vfs_read @").load, Load::Symbol(""));

    let f = fetch("f vfs_read x=\\0x10:u16");
    assert_eq!((f.load, f.store), (Load::Imm(16), raw(2)));
    assert_eq!(fetch("f vfs_read \\-1").load, Load::Imm(u64::MAX));
    assert_eq!(fetch("f vfs_read \\+-2").load, Load::Imm(-2i64 as u64));
    assert_eq!(fetch("f vfs_read \\++2").load, Load::Imm(2));
    check_error("f vfs_read \\^99999999999999999999", ErrCode::BadImm);
    check_error("f vfs_read \\^", ErrCode::BadImm);
    check_error("f vfs_read \\^--1", ErrCode::BadImm);

    let a = arg("f vfs_read s=\\\"a=b\"");
    assert_eq!(
        (a.name, a.ty, a.fetch.load),
        ("s", FetchType::String, Load::ImmStr("a=b"))
    );
    assert_eq!(
        a.fetch.store,
        Store {
            kind: StoreKind::String,
            size: 4,
            offset: 0
        }
    );
    assert_eq!(fetch("f vfs_read s=\\\"\"").load, Load::ImmStr(""));
    assert_eq!(
        fetch("f vfs_read s=\\\"a\"b\":string").load,
        Load::ImmStr("a\"b")
    );
    check_error("f vfs_read s=\\\"^", ErrCode::ImmstrNoClose);
    check_error("f vfs_read s=\\\"ab\":^x", ErrCode::NeedStringType);
    check_error("f vfs_read s=\\\"ab\":^u8", ErrCode::NeedStringType);
    // Unnamed, the '=' in the string makes a name of what comes before it.
    check_error("f vfs_read ^\\\"a=b\"", ErrCode::BadArgName);
}

#[test]
fn dereferences() {
    let f = fetch("f vfs_read +8(+0x10(-4($arg1))):s16");
    assert_eq!(f.load, Load::Arg(0));
    assert_eq!(f.derefs(), &[deref(-4), deref(16)]);
    assert_eq!(f.store, mem(8, 2));

    let f = fetch("f vfs_read +u8(+u0($stack)):u8");
    assert_eq!(
        f.derefs(),
        &[Deref {
            offset: 0,
            user: true
        }]
    );
    assert_eq!(
        f.store,
        Store {
            kind: StoreKind::UserMem,
            size: 1,
            offset: 8
        }
    );
    assert_eq!(
        fetch("f vfs_read -u8($arg1)").store,
        Store {
            kind: StoreKind::UserMem,
            size: 8,
            offset: -8
        }
    );
    assert_eq!(fetch("f vfs_read ++8($arg1)").store, mem(8, 8));
    assert_eq!(fetch("f vfs_read +-8($arg1)").store, mem(-8, 8));
    assert_eq!(fetch("f vfs_read -0x8($arg1)").store, mem(-8, 8));
    // Upstream keeps the offset in an int.
    assert_eq!(fetch("f vfs_read +0x100000008($arg1)").store, mem(8, 8));
    // Upstream ignores what follows the last ')'.
    assert_eq!(fetch("f vfs_read +0($arg1)xyz").store, mem(0, 8));
    // The last ')' ends the operand, even the ')' of an outer one.
    check_error("f vfs_read +0(+0($arg1^)", ErrCode::DerefOpenBrace);
    assert_eq!(fetch("f vfs_read +0($arg1)[1]:u8[1]").count, 1);

    check_error("f vfs_read ^+(@0)", ErrCode::BadDerefOffs);
    check_error("f vfs_read ^-(@0)", ErrCode::BadDerefOffs);
    check_error("f vfs_read ^+u(@0)", ErrCode::BadDerefOffs);
    check_error(
        "f vfs_read ^+99999999999999999999($arg1)",
        ErrCode::BadDerefOffs,
    );
    assert_eq!(
        err("f vfs_read +99999999999999999999($arg1)").errno,
        Errno::Range
    );
    check_error("f vfs_read +0(^)", ErrCode::BadFetchArg);
    check_error("f vfs_read +0(^\\\"x\")", ErrCode::CommCantDeref);
    check_error("f vfs_read +0(+8(^$comm))", ErrCode::CommCantDeref);
    // Upstream's cursor lands one byte short after a 'u', or a '-' that follows a '+'.
    check_error("f vfs_read +u8^($none)", ErrCode::BadVar);
    check_error("f vfs_read -u8^($none)", ErrCode::BadVar);
    check_error("f vfs_read +-8^($none)", ErrCode::BadVar);
    check_error("f vfs_read -8(^$none)", ErrCode::BadVar);
    check_error("f vfs_read +8(^$none)", ErrCode::BadVar);
    check_error("f vfs_read x=+8(+4(^$none))", ErrCode::BadVar);
}

#[test]
fn nesting_limits() {
    // The load takes one slot, each dereference one, the store folds into the last: 14 with a
    // register-like load, 13 after a memory load (which dereferences once more).
    let nest = |n: usize, inner: &str| format!("{}{inner}{}", "+0(".repeat(n), ")".repeat(n));
    let cmd = format!("f vfs_read {}", nest(14, "$arg1"));
    let f = fetch(&cmd);
    assert_eq!((f.derefs().len(), f.store), (13, mem(0, 8)));
    assert_eq!(
        fetch(&format!("f vfs_read {}", nest(14, "\\1")))
            .derefs()
            .len(),
        13
    );
    check_error(
        &format!("f vfs_read +0(^{}", &nest(15, "\\1")[3..]),
        ErrCode::TooManyOps,
    );
    assert_eq!(
        fetch(&format!("f vfs_read {}", nest(13, "@0")))
            .derefs()
            .len(),
        13
    );
    // A symbol takes two slots.
    assert_eq!(
        fetch(&format!("f vfs_read {}", nest(12, "@s")))
            .derefs()
            .len(),
        12
    );
    check_error(
        &format!("f vfs_read +0(^{}", &nest(13, "@s")[3..]),
        ErrCode::TooManyOps,
    );
    // A store of its own, an array or a bitfield needs one more slot.
    check_error(
        &format!("f vfs_read +0(^{}:u8[2]", &nest(13, "@0")[3..]),
        ErrCode::TooManyOps,
    );
    assert_eq!(
        err(&format!("f vfs_read {}:u8[2]", nest(13, "@0"))).errno,
        Errno::TooBig
    );
    check_error(
        &format!("f vfs_read {}:b1@^0/8", nest(13, "@0")),
        ErrCode::BadBitfield,
    );
    check_error(
        &format!("f vfs_read +0(^{}:symstr", &nest(13, "@0")[3..]),
        ErrCode::TooManyOps,
    );
    assert_eq!(
        fetch(&format!("f vfs_read {}:u8[2]", nest(12, "@0"))).count,
        2
    );
}

#[test]
fn every_type() {
    for t in FetchType::ALL {
        let cmd = format!("f vfs_read +0($arg1):{}", t.name());
        let a = arg(&cmd);
        assert_eq!(a.ty, t, "{cmd}");
        assert_eq!(usize::from(a.fetch.store.size), t.size(), "{cmd}");
        let kind = match t {
            FetchType::String => StoreKind::String,
            FetchType::UString => StoreKind::UserString,
            FetchType::SymStr => StoreKind::SymString,
            _ => StoreKind::Mem,
        };
        assert_eq!(a.fetch.store.kind, kind, "{cmd}");
    }
    // Scalars of registers and stack are stored raw.
    for (t, size) in [
        ("u8", 1),
        ("s16", 2),
        ("x32", 4),
        ("u64", 8),
        ("char", 1),
        ("symbol", 8),
    ] {
        let cmd = format!("f vfs_read $stack3:{t}");
        assert_eq!(fetch(&cmd).store, raw(size), "{cmd}");
    }
    // symstr of a value keeps the value as the address: its store gets its own instruction.
    let f = fetch("f vfs_read $arg1:symstr");
    assert_eq!((f.load, f.store.kind), (Load::Arg(0), StoreKind::SymString));
    let f = fetch("f vfs_read +8($arg1):symstr");
    assert_eq!((f.derefs(), f.store.offset), (&[deref(8)][..], 0));
    // After a dereference, the caret goes as far right of the type as upstream's cursor moved.
    check_error("f vfs_read +u8($arg1):sym^str", ErrCode::BadSymstring);
    check_error("f vfs_read \\1:^symstr", ErrCode::BadSymstring);
    check_error("f vfs_read $stack:^symstr", ErrCode::BadSymstring);
    check_error("f vfs_read $arg1:^ustring", ErrCode::BadString);
    // User memory read as a string is a user string.
    assert_eq!(
        fetch("f vfs_read +u0($arg1):string").store.kind,
        StoreKind::UserString
    );
    // An immediate may be read as a string (the address of one).
    assert_eq!(
        fetch("f vfs_read \\0x1000:string").store.kind,
        StoreKind::String
    );
    check_error("f vfs_read $arg1:^", ErrCode::BadType);
    check_error("f vfs_read $arg1:^U8", ErrCode::BadType);
    check_error("f vfs_read $arg1:^u8:u8", ErrCode::BadType);
}

#[test]
fn bitfields() {
    let a = arg("f vfs_read +4($arg1):b3@5/32");
    assert_eq!(a.ty, FetchType::U32);
    assert_eq!(a.fetch.store, mem(4, 4));
    assert_eq!(
        a.fetch.bitfield,
        Some(Bitfield {
            basesize: 4,
            lshift: 24,
            rshift: 29
        })
    );
    assert_eq!(
        fetch("f vfs_read $arg1:b0x8@0/8").bitfield,
        Some(Bitfield {
            basesize: 1,
            lshift: 0,
            rshift: 0
        })
    );
    assert_eq!(
        fetch("f vfs_read $arg1:b1@63/64").bitfield,
        Some(Bitfield {
            basesize: 8,
            lshift: 0,
            rshift: 63
        })
    );
    check_error("f vfs_read $arg1:^b8@1/8", ErrCode::BadBitfield);
    check_error("f vfs_read $arg1:^b0@1/8", ErrCode::BadBitfield);
    check_error("f vfs_read $arg1:^b@1/8", ErrCode::BadBitfield);
    check_error("f vfs_read $arg1:^b1/8", ErrCode::BadBitfield);
    check_error("f vfs_read $arg1:^b1@/8", ErrCode::BadBitfield);
    check_error("f vfs_read $arg1:^b1@0x/8", ErrCode::BadBitfield);
    check_error("f vfs_read $arg1:^b1@1/9", ErrCode::BadType);
    // After a dereference the caret moves right by as much as upstream's cursor did, here past
    // the end of the command.
    let cmd = format!("f vfs_read +{}(@0):b1@9/8", "0".repeat(30));
    let e = err(&cmd);
    assert_eq!(
        (e.code, e.offset, e.pos),
        (ErrCode::BadBitfield, 32 + 36, 11 + 32 + 36)
    );
    assert!(e.pos > cmd.len());
    let log = e.log(&cmd, &CFG, 0).to_string();
    assert_eq!(log.lines().last().unwrap().len(), 11 + e.pos + 1);
    // Upstream adds width and offset in unsigned long: a sum that wraps passes its check.
    let f = fetch("f vfs_read $arg1:b18446744073709551615@1/64");
    assert_eq!(
        f.bitfield,
        Some(Bitfield {
            basesize: 8,
            lshift: 64,
            rshift: 65
        })
    );
    // Arrays of bitfields.
    let f = fetch("f vfs_read +0($arg1):b4@4/8[3]");
    assert_eq!((f.count, f.bitfield.is_some()), (3, true));
}

#[test]
fn arrays() {
    let a = arg("f vfs_read +0($arg1):u16[4]");
    assert_eq!((a.fetch.count, a.count(), a.size()), (4, 4, 8));
    assert_eq!(fetch("f vfs_read +0($arg1):x8[0x40]").count, 64);
    // A string array is an array of pointers: the last dereference stays, the store is new.
    let f = fetch("f vfs_read +8($arg1):string[2]");
    assert_eq!(
        (f.derefs(), f.store),
        (
            &[deref(8)][..],
            Store {
                kind: StoreKind::String,
                size: 4,
                offset: 0
            }
        )
    );
    // ... which reads kernel strings even from user pointers, as upstream does.
    assert_eq!(
        fetch("f vfs_read +u8($arg1):string[2]").store.kind,
        StoreKind::String
    );
    assert_eq!(
        fetch("f vfs_read +u8($arg1):ustring[2]").store.kind,
        StoreKind::UserString
    );
    check_error("f vfs_read $arg1:^u8[2]", ErrCode::BadString);
    check_error("f vfs_read +u0($arg1):u8[^2]", ErrCode::BadString);
    check_error("f vfs_read +0($arg1):sym^str[2]", ErrCode::BadString);
    check_error("f vfs_read +0($arg1):u8[^0]", ErrCode::BadArrayNum);
    check_error("f vfs_read +0($arg1):u8[^]", ErrCode::BadArrayNum);
    check_error("f vfs_read +0($arg1):u8[^65]", ErrCode::ArrayTooBig);
    check_error("f vfs_read +0($arg1):u8[1]^]", ErrCode::BadArraySuffix);
    check_error("f vfs_read +0($arg1):^x[1]", ErrCode::BadType);
}

#[test]
fn dentry_shorthands() {
    let a = arg("f vfs_read f=$arg1:%pD");
    assert_eq!((a.name, a.ty), ("f", FetchType::String));
    assert_eq!(a.comm.as_written(), "$arg1:%pD");
    assert_eq!(a.comm.to_string(), "+0x0(+0x28(+0x48($arg1))):string");
    assert_eq!(a.fetch.load, Load::Arg(0));
    assert_eq!(a.fetch.derefs(), &[deref(0x48), deref(0x28)]);
    assert_eq!(
        a.fetch.store,
        Store {
            kind: StoreKind::String,
            size: 4,
            offset: 0
        }
    );
    let a = arg("f vfs_read +8(@dent+4):%pd");
    assert_eq!((a.name, a.fetch.load), ("arg1", Load::Symbol("dent+4")));
    assert_eq!(a.fetch.derefs(), &[deref(0), deref(8), deref(0x28)]);
    // The rewrite dereferences a string constant.
    check_error(
        "f vfs_read +0x0(+0x28(^\\\"xy\")):string",
        ErrCode::CommCantDeref,
    );
    assert_eq!(err("f vfs_read \\\"xy\":%pd").pos, 22);

    // Errors point into the rewritten command, which the log shows.
    let e = check_error("f vfs_read x=+0x0(+0x28(^$foo)):string", ErrCode::BadVar);
    let cmd = "f vfs_read x=$foo:%pd";
    assert_eq!(err(cmd).pos, e.pos);
    assert!(err(cmd)
        .log(cmd, &CFG, 0)
        .to_string()
        .contains("Command: f vfs_read x=+0x0(+0x28($foo)):string\n"));
    // Words before the failing one are shown rewritten too, and count so.
    let cmd = "f vfs_read $arg1:%pd $none";
    assert_eq!(err(cmd).pos, "f vfs_read +0x0(+0x28($arg1)):string ".len());
    // But not in errors found before the rewrite.
    let cmd = "f:a.b/c vfs_read $arg1:%pd";
    assert!(!err(cmd).expanded);
    assert!(err(cmd)
        .log(cmd, &CFG, 0)
        .to_string()
        .contains("Command: f:a.b/c vfs_read $arg1:%pd\n"));
    // A type before the shorthand lands in the type upstream reads.
    check_error("f vfs_read +0x0(+0x28($arg1:^u8)):string", ErrCode::BadType);
    assert_eq!(err("f vfs_read $arg1:u8:%pd").pos, 28);
    // The rewrite counts against MAX_ARGSTR_LEN.
    let cmd = format!(
        "f vfs_read {}:%pD",
        "+0(".repeat(10) + "$arg1" + &")".repeat(10)
    );
    assert_eq!(err(&cmd).code, ErrCode::ArgTooLong);

    // All rewrites share 256 bytes, NULs included: nine of 25 bytes fit, ten do not.
    let nine = format!("f vfs_read{}", " $arg1:%pd".repeat(9));
    assert_eq!(def(&nine).nargs(), 9);
    let ten = format!("f vfs_read{}", " $arg1:%pd".repeat(10));
    assert_eq!(parse(&ten, &CFG), Err(Error::DentryArgsTooLong));
}

#[test]
fn argument_names() {
    let a = args("f vfs_read $arg1 x=$arg2 $arg3 _y9=$stack");
    let names: Vec<_> = a.iter().map(|a| a.name).collect();
    assert_eq!(names, ["arg1", "x", "arg3", "_y9"]);
    let name32 = "n".repeat(32);
    assert_eq!(arg(&format!("f vfs_read {name32}=$arg1")).name, name32);
    check_error("f vfs_read ^1x=$arg1", ErrCode::BadArgName);
    check_error("f vfs_read ^x-y=$arg1", ErrCode::BadArgName);
    // Defaults clash with given names either way.
    check_error("f vfs_read arg2=$arg1 ^$arg2", ErrCode::UsedArgName);
    check_error("f vfs_read $arg1 ^arg1=$arg2", ErrCode::UsedArgName);
    for reserved in RESERVED_NAMES {
        check_error(
            &format!("f vfs_read ^{reserved}=$arg1"),
            ErrCode::UsedArgName,
        );
    }
    // Names are checked before the expression.
    check_error("f vfs_read ^1=", ErrCode::BadArgName);
    // The first '=' ends the name.
    check_error("f vfs_read x=^=1", ErrCode::BadFetchArg);
}

#[test]
fn field_offsets_and_event_size() {
    let a = args("f vfs_read a=$arg1:u8 b=$arg2:u32 c=+0($arg3):u16[3] d=$comm");
    let offsets: Vec<_> = a.iter().map(|a| a.offset).collect();
    assert_eq!(offsets, [0, 1, 5, 11]);
    assert_eq!(
        def("f vfs_read a=$arg1:u8 b=$arg2:u32 c=+0($arg3):u16[3] d=$comm").args_size(),
        15
    );
    // Six 512-byte arrays fill the 3072 bytes; a seventh does not fit.
    let six = format!(
        "f vfs_read{}",
        (1..=6)
            .map(|i| format!(" a{i}=+0($arg1):u64[64]"))
            .collect::<String>()
    );
    assert_eq!(def(&six).args_size(), 3072);
    let seven = format!("{six} +0(^$arg1):u64[64]");
    let e = check_error(&seven, ErrCode::EventTooBig);
    assert_eq!(e.errno, Errno::TooBig);
}

#[test]
fn limits() {
    let many = |n: usize| format!("f vfs_read{}", " \\1".repeat(n));
    let cmd = many(MAX_TRACE_ARGS);
    let d = def(&cmd);
    assert_eq!(d.nargs(), 128);
    assert_eq!(d.args().last().unwrap().name, "arg128");
    assert_eq!(d.args().nth(99).unwrap().name, "arg100");
    assert_eq!(
        parse(&many(MAX_TRACE_ARGS + 1), &CFG),
        Err(Error::TooManyArgs)
    );
    assert_eq!(Error::TooManyArgs.errno(), Errno::TooBig);

    let body63 = format!("\\{}", "1".repeat(62));
    let cmd = format!("f vfs_read x={body63}");
    assert_eq!(err(&cmd).code, ErrCode::BadImm);
    let cmd = format!("f vfs_read x={body63}1");
    let e = err(&cmd);
    assert_eq!(
        (e.code, e.offset, e.errno),
        (ErrCode::ArgTooLong, 2, Errno::TooBig)
    );

    let ev63 = "e".repeat(63);
    assert_eq!(def(&format!("f:{ev63} vfs_read")).event(), ev63);
    check_error(&format!("f:^{ev63}e vfs_read"), ErrCode::EventTooLong);
    let grp63 = "g".repeat(63);
    assert_eq!(def(&format!("f:{grp63}/e vfs_read")).group(), grp63);
    check_error(&format!("f:^{grp63}g/e vfs_read"), ErrCode::GroupTooLong);
    check_error(
        &format!("f^{}1 vfs_read%return", "0".repeat(63)),
        ErrCode::BadMaxact,
    );
    assert_eq!(
        def(&format!("f{}1 vfs_read%return", "0".repeat(62))).maxactive(),
        1
    );

    // A smaller stack, a smaller PARAM_MAX_STACK.
    let small = Config {
        max_stack_index: 1024,
        ..CFG
    };
    assert!(
        matches!(parse("f vfs_read $stack1025", &small), Err(Error::Probe(e)) if e.code == ErrCode::BadStackNum)
    );

    let long = format!("f vfs_read {}", "x".repeat(MAX_COMMAND_LEN));
    assert_eq!(parse(&long, &CFG), Err(Error::CommandTooLong));
}

#[test]
fn other_commands() {
    assert_eq!(parse("", &CFG), Ok(Command::Empty));
    assert_eq!(parse(" \t ", &CFG), Ok(Command::Empty));
    assert_eq!(parse("\0f vfs_read", &CFG), Ok(Command::Empty));
    assert_eq!(parse("p:kp vfs_read", &CFG), Err(Error::NotFprobe));
    assert_eq!(parse("f", &CFG), Err(Error::NotFprobe));
    assert_eq!(parse("f:grp/ev", &CFG), Err(Error::NotFprobe));
    // A leading blank hides a removal from upstream's check.
    assert_eq!(parse(" -:foo", &CFG), Err(Error::NotFprobe));
    // The command ends at a NUL.
    assert_eq!(def("f vfs_read\0 $bad").nargs(), 0);
    assert_eq!(def("f\tvfs_read \r\x0b $arg1  ").nargs(), 1);
}

fn remove(cmd: &str) -> RemoveDef<'_> {
    match parse(cmd, &CFG) {
        Ok(Command::Remove(r)) => r,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

#[test]
fn removals() {
    let r = remove("-:fprobes/myprobe");
    assert_eq!(
        (r.group(), r.event(), r.words().count()),
        (Some("fprobes"), "myprobe", 0)
    );
    let r = remove("-:myprobe");
    assert_eq!((r.group(), r.event()), (None, "myprobe"));
    let r = remove("-:grp/");
    assert_eq!((r.group(), r.event()), (Some("grp"), ""));
    let r = remove("!f:grp/ev");
    assert_eq!((r.group(), r.event()), (Some("grp"), "ev"));
    // '.' separates nothing here.
    assert_eq!(remove("-:a.b").event(), "a.b");
    for bad in ["-", "-:", "- :foo", "-x:foo", "!", "!foo"] {
        assert_eq!(parse(bad, &CFG), Err(Error::BadRemove), "{bad:?}");
    }

    let none: [(&str, &str); 0] = [];
    assert!(remove("-:myprobe").matches("fprobes", "myprobe", "vfs_read", none));
    assert!(!remove("-:myprobe").matches("fprobes", "other", "vfs_read", none));
    assert!(remove("-:fprobes/").matches("fprobes", "other", "vfs_read", none));
    assert!(!remove("-:kprobes/").matches("fprobes", "other", "vfs_read", none));
    assert!(remove("-:myprobe vfs_read").matches("g", "myprobe", "vfs_read", none));
    assert!(!remove("-:myprobe vfs_write").matches("g", "myprobe", "vfs_read", none));
    let d = def("f:myprobe vfs_read a=$arg1 f=$arg2:%pD");
    let args = || d.args().map(|a| (a.name, a.comm));
    assert!(remove("-:myprobe vfs_read a=$arg1").matches("fprobes", "myprobe", "vfs_read", args()));
    assert!(
        remove("-:myprobe vfs_read a=$arg1 f=+0x0(+0x28(+0x48($arg2))):string").matches(
            "fprobes",
            "myprobe",
            "vfs_read",
            args()
        )
    );
    assert!(!remove("-:myprobe vfs_read a=$arg2").matches(
        "fprobes",
        "myprobe",
        "vfs_read",
        args()
    ));
    assert!(!remove("-:myprobe vfs_read a=$arg1 f=$arg2:%pD").matches(
        "fprobes",
        "myprobe",
        "vfs_read",
        args()
    ));
    assert!(!remove("-:myprobe vfs_read a=$arg1 f=x g=y").matches(
        "fprobes",
        "myprobe",
        "vfs_read",
        args()
    ));
    // Symbols compare cut to 63 bytes.
    let long = "s".repeat(70);
    let cmd = format!("-:ev {}", &long[..63]);
    assert!(remove(&cmd).matches("g", "ev", &long, none));
}

#[test]
fn command_lines() {
    let lines: Vec<_> = commands("f a # comment\n\n-:x\nf b").collect();
    assert_eq!(lines, ["f a ", "", "-:x", "f b"]);
    assert_eq!(commands("f a\n").count(), 1);
    assert_eq!(commands("").count(), 0);
}

/// Whether two definitions define the same probe (what listing then re-parsing must keep).
fn same(a: &ProbeDef<'_>, b: &ProbeDef<'_>) -> bool {
    let head = |d: &ProbeDef<'_>| {
        let ret = (
            d.is_return(),
            d.maxactive(),
            d.nargs(),
            d.args_size(),
            d.entry_args().to_vec(),
        );
        (
            d.kind(),
            d.group().to_string(),
            d.event().to_string(),
            d.symbol().to_string(),
            ret,
        )
    };
    let arg = |a: FetchArg<'_>| {
        let f = a.fetch;
        let fetch = (
            format!("{:?}", f.load),
            f.derefs().to_vec(),
            f.store,
            f.bitfield,
            f.count,
        );
        (
            a.name.to_string(),
            a.ty,
            a.offset,
            a.comm.to_string(),
            fetch,
        )
    };
    head(a) == head(b) && a.args().map(arg).eq(b.args().map(arg))
}

#[test]
fn listing_round_trips() {
    let cases = [
        ("f vfs_read", "f:fprobes/vfs_read__entry vfs_read"),
        (
            "f10 vfs_read $retval",
            "f10:fprobes/vfs_read__exit vfs_read%return arg1=$retval",
        ),
        (
            "f:g.e vfs_read%return $arg2 x=+8($arg1):u32[2]",
            "f:g/e vfs_read%return arg1=$arg2 x=+8($arg1):u32[2]",
        ),
        (
            "t sched_switch $arg1:u32",
            "t:tracepoints/sched_switch sched_switch arg1=$arg1:u32",
        ),
        (
            "f vfs_read f=$arg1:%pD",
            "f:fprobes/vfs_read__entry vfs_read f=+0x0(+0x28(+0x48($arg1))):string",
        ),
    ];
    for (cmd, listed) in cases {
        let Ok(Command::Add(d)) = parse(cmd, &CFG) else {
            continue;
        };
        let shown = d.to_string();
        assert_eq!(shown, listed, "{cmd:?}");
        let again = def(&shown);
        assert!(same(&d, &again), "{cmd:?} -> {shown:?}");
        assert_eq!(again.to_string(), shown);
    }
}
