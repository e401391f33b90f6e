// SPDX-License-Identifier: GPL-2.0

//! Fetch expressions: variables, entry arguments at exit, memory, immediates, dereferences
//! and their nesting limit.

use super::*;

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
    assert_eq!(a[5].fetch.store, string(StoreKind::String));
    assert!(a[5].is_dynamic());
    assert_eq!(fetch("f vfs_read $comm:string").load, Load::Comm);

    check_errors(&[
        ("f vfs_read ^$arg0", ErrCode::BadArgNum),
        ("f vfs_read ^$arg2049", ErrCode::BadArgNum),
        ("f vfs_read ^$stack2049", ErrCode::BadStackNum),
        ("f vfs_read ^$stack99999999999999999999999", ErrCode::BadVar),
        ("f vfs_read ^$stack0x10", ErrCode::BadVar),
        ("f vfs_read ^$stack+1", ErrCode::BadVar),
        ("f vfs_read ^$stackx", ErrCode::BadVar),
        ("f vfs_read x=^$argx", ErrCode::BadVar),
        ("f vfs_read ^$", ErrCode::BadVar),
        ("f vfs_read ^$Comm", ErrCode::BadVar),
        ("f vfs_read $comm:^u32", ErrCode::NeedStringType),
        ("f vfs_read $comm:^string[2]", ErrCode::NeedStringType),
    ]);
    // The $arg word pass looks at unnamed words before anything else is parsed...
    check_errors(&[
        ("f vfs_read $stack9999 ^$argx", ErrCode::BadVar),
        ("f vfs_read ^$arg", ErrCode::BadVar),
        ("f vfs_read ^$arg+1", ErrCode::BadVar),
    ]);
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
    check_loads(&[
        ("f vfs_read \\-1", Load::Imm(u64::MAX)),
        ("f vfs_read \\+-2", Load::Imm(-2i64 as u64)),
        ("f vfs_read \\++2", Load::Imm(2)),
    ]);
    check_errors(&[
        ("f vfs_read \\^99999999999999999999", ErrCode::BadImm),
        ("f vfs_read \\^", ErrCode::BadImm),
        ("f vfs_read \\^--1", ErrCode::BadImm),
    ]);

    let a = arg("f vfs_read s=\\\"a=b\"");
    assert_eq!(
        (a.name, a.ty, a.fetch.load),
        ("s", FetchType::String, Load::ImmStr("a=b"))
    );
    assert_eq!(a.fetch.store, string(StoreKind::String));
    check_loads(&[
        ("f vfs_read s=\\\"\"", Load::ImmStr("")),
        ("f vfs_read s=\\\"a\"b\":string", Load::ImmStr("a\"b")),
    ]);
    check_errors(&[
        ("f vfs_read s=\\\"^", ErrCode::ImmstrNoClose),
        ("f vfs_read s=\\\"ab\":^x", ErrCode::NeedStringType),
        ("f vfs_read s=\\\"ab\":^u8", ErrCode::NeedStringType),
    ]);
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
            user: true,
            cpu: false
        }]
    );
    assert_eq!(f.store, user_mem(8, 1));
    check_stores(&[
        ("f vfs_read -u8($arg1)", user_mem(-8, 8)),
        ("f vfs_read ++8($arg1)", mem(8, 8)),
        ("f vfs_read +-8($arg1)", mem(-8, 8)),
        ("f vfs_read -0x8($arg1)", mem(-8, 8)),
        // Upstream keeps the offset in an int.
        ("f vfs_read +0x100000008($arg1)", mem(8, 8)),
        // Upstream ignores what follows the last ')'.
        ("f vfs_read +0($arg1)xyz", mem(0, 8)),
    ]);
    // The last ')' ends the operand, even the ')' of an outer one.
    check_error("f vfs_read +0(+0($arg1^)", ErrCode::DerefOpenBrace);
    assert_eq!(fetch("f vfs_read +0($arg1)[1]:u8[1]").count, 1);

    check_errors(&[
        ("f vfs_read ^+(@0)", ErrCode::BadDerefOffs),
        ("f vfs_read ^-(@0)", ErrCode::BadDerefOffs),
        ("f vfs_read ^+u(@0)", ErrCode::BadDerefOffs),
        (
            "f vfs_read ^+99999999999999999999($arg1)",
            ErrCode::BadDerefOffs,
        ),
    ]);
    assert_eq!(
        err("f vfs_read +99999999999999999999($arg1)").errno,
        Errno::Range
    );
    check_errors(&[
        ("f vfs_read +0(^)", ErrCode::BadFetchArg),
        ("f vfs_read +0(^\\\"x\")", ErrCode::CommCantDeref),
        ("f vfs_read +0(+8(^$comm))", ErrCode::CommCantDeref),
    ]);
    // Upstream's cursor lands one byte short after a 'u', or a '-' that follows a '+'.
    check_errors(&[
        ("f vfs_read +u8^($none)", ErrCode::BadVar),
        ("f vfs_read -u8^($none)", ErrCode::BadVar),
        ("f vfs_read +-8^($none)", ErrCode::BadVar),
        ("f vfs_read -8(^$none)", ErrCode::BadVar),
        ("f vfs_read +8(^$none)", ErrCode::BadVar),
        ("f vfs_read x=+8(+4(^$none))", ErrCode::BadVar),
    ]);
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
