// SPDX-License-Identifier: GPL-2.0

//! Argument names, field offsets, and the limits on arguments, names and commands.

use super::*;

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
