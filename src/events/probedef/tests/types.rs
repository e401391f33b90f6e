// SPDX-License-Identifier: GPL-2.0

//! Argument types: every type's store, bitfields, arrays, and the `%pd`/`%pD` shorthands.

use super::*;

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
    check_errors(&[
        ("f vfs_read +u8($arg1):sym^str", ErrCode::BadSymstring),
        ("f vfs_read \\1:^symstr", ErrCode::BadSymstring),
        ("f vfs_read $stack:^symstr", ErrCode::BadSymstring),
        ("f vfs_read $arg1:^ustring", ErrCode::BadString),
    ]);
    check_stores(&[
        // User memory read as a string is a user string.
        (
            "f vfs_read +u0($arg1):string",
            string(StoreKind::UserString),
        ),
        // An immediate may be read as a string (the address of one).
        ("f vfs_read \\0x1000:string", string(StoreKind::String)),
    ]);
    check_errors(&[
        ("f vfs_read $arg1:^", ErrCode::BadType),
        ("f vfs_read $arg1:^U8", ErrCode::BadType),
        ("f vfs_read $arg1:^u8:u8", ErrCode::BadType),
    ]);
}

#[test]
fn bitfields() {
    let a = arg("f vfs_read +4($arg1):b3@5/32");
    assert_eq!(a.ty, FetchType::U32);
    assert_eq!(a.fetch.store, mem(4, 4));
    assert_eq!(a.fetch.bitfield, bitfield(4, 24, 29));
    assert_eq!(
        fetch("f vfs_read $arg1:b0x8@0/8").bitfield,
        bitfield(1, 0, 0)
    );
    assert_eq!(
        fetch("f vfs_read $arg1:b1@63/64").bitfield,
        bitfield(8, 0, 63)
    );
    check_errors(&[
        ("f vfs_read $arg1:^b8@1/8", ErrCode::BadBitfield),
        ("f vfs_read $arg1:^b0@1/8", ErrCode::BadBitfield),
        ("f vfs_read $arg1:^b@1/8", ErrCode::BadBitfield),
        ("f vfs_read $arg1:^b1/8", ErrCode::BadBitfield),
        ("f vfs_read $arg1:^b1@/8", ErrCode::BadBitfield),
        ("f vfs_read $arg1:^b1@0x/8", ErrCode::BadBitfield),
        ("f vfs_read $arg1:^b1@1/9", ErrCode::BadType),
    ]);
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
    assert_eq!(f.bitfield, bitfield(8, 64, 65));
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
        (&[deref(8)][..], string(StoreKind::String))
    );
    check_stores(&[
        // ... which reads kernel strings even from user pointers, as upstream does.
        ("f vfs_read +u8($arg1):string[2]", string(StoreKind::String)),
        (
            "f vfs_read +u8($arg1):ustring[2]",
            string(StoreKind::UserString),
        ),
    ]);
    check_errors(&[
        ("f vfs_read $arg1:^u8[2]", ErrCode::BadString),
        ("f vfs_read +u0($arg1):u8[^2]", ErrCode::BadString),
        ("f vfs_read +0($arg1):sym^str[2]", ErrCode::BadString),
        ("f vfs_read +0($arg1):u8[^0]", ErrCode::BadArrayNum),
        ("f vfs_read +0($arg1):u8[^]", ErrCode::BadArrayNum),
        ("f vfs_read +0($arg1):u8[^65]", ErrCode::ArrayTooBig),
        ("f vfs_read +0($arg1):u8[1]^]", ErrCode::BadArraySuffix),
        ("f vfs_read +0($arg1):^x[1]", ErrCode::BadType),
    ]);
}

#[test]
fn dentry_shorthands() {
    let a = arg("f vfs_read f=$arg1:%pD");
    assert_eq!((a.name, a.ty), ("f", FetchType::String));
    assert_eq!(a.comm.as_written(), "$arg1:%pD");
    assert_eq!(a.comm.to_string(), "+0x0(+0x28(+0x48($arg1))):string");
    assert_eq!(a.fetch.load, Load::Arg(0));
    assert_eq!(a.fetch.derefs(), &[deref(0x48), deref(0x28)]);
    assert_eq!(a.fetch.store, string(StoreKind::String));
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
