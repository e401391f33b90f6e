// SPDX-License-Identifier: GPL-2.0

//! The first two words: probe type, `MAXACTIVE`, group and event names, symbols, globs and
//! tracepoints, and what makes an exit probe; lines that define nothing.

use super::*;

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
    check_errors(&[
        ("f^4097 vfs_read%return", ErrCode::MaxactTooBig),
        ("f^2147483647 vfs_read%return", ErrCode::MaxactTooBig),
        ("f^4294967296 vfs_read%return", ErrCode::BadMaxact),
    ]);
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
        check_no_match(marked);
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
    check_errors(&[
        ("t kfree x=+0(^$retval)", ErrCode::RetvalOnProbe),
        ("t kfree ^$retvalx", ErrCode::RetvalOnProbe),
        ("t^5 kfree", ErrCode::BadMaxactType),
    ]);
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
