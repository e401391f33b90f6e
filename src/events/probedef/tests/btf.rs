// SPDX-License-Identifier: GPL-2.0

//! BTF arguments against the sample BTF (src/sys/btf/reader/testdata/sample.c): parameters by name,
//! members through pointers, typed `$retval`, `$arg*`/`$argN` rewritten to names, and
//! upstream's refusals with their positions (fprobe_syntax_errors.tc's BTF cases).

use super::*;
use crate::sys::btf::reader::Btf;
use std::boxed::Box;
use std::vec;

/// The sample blob, indexed, for the life of the test binary.
fn sample() -> &'static Btf<'static> {
    const SAMPLE: &[u8] = include_bytes!("../../../sys/btf/reader/testdata/sample.btf");
    let s = Btf::measure(SAMPLE, None).unwrap();
    let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
    let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
    Box::leak(Box::new(Btf::new(SAMPLE, None, offsets, names).unwrap()))
}

fn bparse(cmd: &str) -> Result<Command<'static>, Error> {
    let cmd: &'static str = Box::leak(cmd.to_string().into_boxed_str());
    let scratch = Box::leak(vec![0u8; cmd.len() + EXPAND_ROOM].into_boxed_slice());
    let src: &'static dyn BtfSource = sample();
    parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(src)), scratch)
}

fn bdef(cmd: &str) -> ProbeDef<'static> {
    match bparse(cmd) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

fn bargs(cmd: &str) -> Vec<FetchArg<'static>> {
    let d = bdef(cmd);
    let a: Vec<_> = d.args().collect();
    assert_eq!(a.len(), d.nargs(), "{cmd:?}");
    a
}

fn barg(cmd: &str) -> FetchArg<'static> {
    let mut a = bargs(cmd);
    assert_eq!(a.len(), 1, "{cmd:?}");
    a.remove(0)
}

/// [`check_error`] with the sample BTF.
#[track_caller]
fn bcheck(marked: &str, code: ErrCode) -> ProbeError {
    let pos = marked.find('^').expect("no caret");
    let cmd = marked.replacen('^', "", 1);
    let e = match bparse(&cmd) {
        Err(Error::Probe(e)) => e,
        other => panic!("{cmd:?}: {other:?}"),
    };
    assert_eq!((e.code, e.pos), (code, pos), "{marked:?}: {e:?}");
    let log = e.log(&cmd, &CFG, 0).to_string();
    assert!(
        log.contains(&format!("trace_fprobe: error: {}\n", code.message())),
        "{log}"
    );
    e
}

/// Name, type, load, dereference offsets and store of one argument.
#[track_caller]
fn check(
    a: &FetchArg<'_>,
    name: &str,
    ty: FetchType,
    load: Load<&str>,
    derefs: &[i32],
    store: Store,
) {
    assert_eq!(a.name, name, "{a:?}");
    assert_eq!(a.ty, ty, "{a:?}");
    assert_eq!(a.fetch.load, load, "{a:?}");
    let d: Vec<i32> = a.fetch.derefs().iter().map(|d| d.offset).collect();
    assert_eq!(d, derefs, "{a:?}");
    assert_eq!(a.fetch.store, store, "{a:?}");
}

fn raw(size: u8) -> Store {
    Store {
        kind: StoreKind::Raw,
        size,
        offset: 0,
    }
}

#[test]
fn parameters_by_name_are_named_and_typed() {
    let a = bargs("f vfs_read count pos file buf");
    check(&a[0], "count", FetchType::U64, Load::Arg(2), &[], raw(8));
    check(&a[1], "pos", FetchType::X64, Load::Arg(3), &[], raw(8));
    check(&a[2], "file", FetchType::X64, Load::Arg(0), &[], raw(8));
    check(&a[3], "buf", FetchType::X64, Load::Arg(1), &[], raw(8));
    // Through typedefs and qualifiers (const volatile s32), an enum, a _Bool.
    let a = bargs("f local_fn x c b");
    check(&a[0], "x", FetchType::S32, Load::Arg(0), &[], raw(4));
    check(&a[1], "c", FetchType::S32, Load::Arg(1), &[], raw(4));
    check(&a[2], "b", FetchType::U8, Load::Arg(2), &[], raw(1));
    // A written type wins, and a written name.
    let a = barg("f vfs_read n=count:x16");
    check(&a, "n", FetchType::X16, Load::Arg(2), &[], raw(2));
    // Listed as upstream lists them.
    assert_eq!(
        bdef("f vfs_read count n=pos").to_string(),
        "f:fprobes/vfs_read__entry vfs_read count=count n=pos"
    );
}

#[test]
fn exit_probes_read_parameters_from_entry_data() {
    let a = bargs("f vfs_read%return count $retval file");
    check(
        &a[0],
        "count",
        FetchType::U64,
        Load::EntryArg { arg: 2, slot: 0 },
        &[],
        raw(8),
    );
    // $retval takes the return type: long.
    check(&a[1], "arg2", FetchType::S64, Load::Retval, &[], raw(8));
    check(
        &a[2],
        "file",
        FetchType::X64,
        Load::EntryArg { arg: 0, slot: 1 },
        &[],
        raw(8),
    );
    assert_eq!(
        bdef("f vfs_read%return count $retval file").entry_args(),
        &[2, 0]
    );
    let a = barg("f local_fn%return $retval");
    check(&a, "arg1", FetchType::S16, Load::Retval, &[], raw(2));
    // Without BTF for the function, $retval is untyped, as without BTF at all.
    let a = barg("f nosuch%return $retval");
    check(&a, "arg1", FetchType::X64, Load::Retval, &[], raw(8));
}

#[test]
fn members_through_pointers() {
    let a = bargs(
        "f vfs_read file->f_count file->f_name.len file->f_name.name file->f_long \
         p=file->f_pair.hi file->f_color file->f_big file->f_ok file->f_char file->f_float",
    );
    let f = Load::Arg(0);
    check(&a[0], "arg1", FetchType::S32, f, &[], mem(56, 4));
    // In anonymous structs and unions, and through a member struct.
    check(&a[1], "arg2", FetchType::U32, f, &[], mem(12, 4));
    check(&a[2], "arg3", FetchType::X64, f, &[], mem(16, 8));
    check(&a[3], "arg4", FetchType::S64, f, &[], mem(32, 8));
    check(&a[4], "p", FetchType::U16, f, &[], mem(34, 2));
    // Enums are s32 (enum64 s64), whatever their signedness; a double has no type (x64).
    check(&a[5], "arg6", FetchType::S32, f, &[], mem(40, 4));
    check(&a[6], "arg7", FetchType::S64, f, &[], mem(48, 8));
    check(&a[7], "arg8", FetchType::U8, f, &[], mem(76, 1));
    check(&a[8], "arg9", FetchType::S8, f, &[], mem(2, 1));
    check(&a[9], "arg10", FetchType::X64, f, &[], mem(80, 8));
    // `->` twice: a dereference each; on an exit probe from the entry data.
    let a = barg("f vfs_read%return file->f_name.len");
    check(
        &a,
        "arg1",
        FetchType::U32,
        Load::EntryArg { arg: 0, slot: 0 },
        &[],
        mem(12, 4),
    );
    // A member of what is no struct or union (unsigned char): upstream's lookup fails.
    assert_eq!(
        bcheck(
            "f vfs_read%return file->f_name.name->^x:u8",
            ErrCode::BadBtfTid
        )
        .errno,
        Errno::Inval
    );
    // A string through a member char pointer: one more dereference, folded into the store.
    let a = barg("f vfs_read file->f_name.name:string");
    assert_eq!(a.ty, FetchType::String);
    let d: Vec<i32> = a.fetch.derefs().iter().map(|d| d.offset).collect();
    assert_eq!(d, [16]);
    assert_eq!(a.fetch.store.kind, StoreKind::String);
    assert_eq!(a.fetch.store.offset, 0);
    let a = barg("f vfs_read file->f_name.name:ustring");
    assert_eq!(a.fetch.store.kind, StoreKind::UserString);
    // Inside a dereference the BTF type is forgotten: the default type.
    let a = barg("f vfs_read +0(file->f_count)");
    assert_eq!(a.ty, FetchType::X64);
}

#[test]
fn bitfield_members_get_a_bitfield_stage() {
    let a = bargs("f vfs_read file->f_mode file->f_flags file->f_mode:u32");
    assert_eq!(a[0].ty, FetchType::U32);
    assert_eq!(a[0].fetch.store, mem(0, 4));
    assert_eq!(
        a[0].fetch.bitfield,
        Some(Bitfield {
            basesize: 4,
            lshift: 32 - 16,
            rshift: 32 - 13
        })
    );
    assert_eq!(
        a[1].fetch.bitfield,
        Some(Bitfield {
            basesize: 4,
            lshift: 29,
            rshift: 29
        })
    );
    // A written type takes the whole word.
    assert_eq!(a[2].fetch.bitfield, None);
}

#[test]
fn meta_args_expand_to_parameter_names() {
    let a = bargs("f vfs_read $arg*");
    let names: Vec<&str> = a.iter().map(|a| a.name).collect();
    assert_eq!(names, ["file", "buf", "count", "pos"]);
    check(&a[2], "count", FetchType::U64, Load::Arg(2), &[], raw(8));
    let d = bdef("f vfs_read $arg*");
    assert_eq!(
        d.to_string(),
        "f:fprobes/vfs_read__entry vfs_read file=file buf=buf count=count pos=pos"
    );
    let mut kept = String::new();
    d.write_rewritten(&mut kept).unwrap();
    assert_eq!(kept, "f vfs_read file buf count pos");
    let again = bdef(&kept);
    assert_eq!(again.to_string(), d.to_string());
    assert!(again.args().eq(d.args()));
    // Upstream takes `$arg*` followed by anything for `$arg*`, after a `$retval` in it made
    // the probe an exit probe: what is kept says so (a fuzzer's find).
    let d = bdef("f vfs_read $arg*x=$retval");
    assert!(d.is_return());
    let mut kept = String::new();
    d.write_rewritten(&mut kept).unwrap();
    assert_eq!(kept, "f vfs_read%return file buf count pos");
    assert!(bdef(&kept).args().eq(d.args()));
    assert_eq!(bdef(&kept).to_string(), d.to_string());
    // $argN is parameter N by name, its type kept; `NAME=$argN` is not rewritten.
    let a = bargs("f vfs_read%return $arg3:u32 x=$arg1 $retval");
    check(
        &a[0],
        "count",
        FetchType::U32,
        Load::EntryArg { arg: 2, slot: 0 },
        &[],
        raw(4),
    );
    check(
        &a[1],
        "x",
        FetchType::X64,
        Load::EntryArg { arg: 0, slot: 1 },
        &[],
        raw(8),
    );
    assert_eq!(a[0].comm.to_string(), "count:u32");
    // Without BTF for the function, $argN stays.
    let a = barg("f nosuch $arg2");
    check(&a, "arg1", FetchType::X64, Load::Arg(1), &[], raw(8));
    let mut kept = String::new();
    bdef("f  nosuch  $arg2").write_rewritten(&mut kept).unwrap();
    assert_eq!(kept, "f  nosuch  $arg2");
}

#[test]
fn upstream_btf_errors() {
    use ErrCode::*;
    for (marked, code) in [
        ("f vfs_read args=^$arg*", BadVar),
        ("f vfs_read +0(^$arg*)", BadVar),
        ("f vfs_read $arg* ^$arg*", DoubleArgs),
        ("f vfs_read ^hoge", NoBtfarg),
        ("f vfs_read ^$arg10", NoBtfarg),
        ("f no_args%return ^$retval", NoRetval),
        ("f vfs_read%return $retval->^foo", NoPtrStrct),
        ("f vfs_read file->^foo", NoBtfField),
        ("f vfs_read file^-.foo", BadHyphen),
        ("f vfs_read ^file:string", BadType4str),
    ] {
        bcheck(marked, code);
    }
}

#[test]
fn btf_refusals_and_their_errnos() {
    use ErrCode::*;
    for (marked, code, errno) in [
        ("f vfs_read file.^f_count", NosupDatArg, Errno::OpNotSupp),
        ("f nosuch ^x", NoBtfEntry, Errno::NoEnt),
        ("f no_args ^x", NoBtfEntry, Errno::NoEnt),
        ("f nosuch%return $retval->^x", NoBtfEntry, Errno::NoEnt),
        ("f vfs_read%return ^$retvalue", NoBtfarg, Errno::NoEnt),
        (
            "f vfs_read file->f_dentry->^d_name",
            BadBtfTid,
            Errno::Inval,
        ),
        ("f vfs_read file->f_count->^x", NoPtrStrct, Errno::Inval),
        ("f vfs_read file->f_name->^len", NoPtrStrct, Errno::Inval),
        ("f vfs_read ^count:string", BadType4str, Errno::Inval),
        ("f nosuch ^$arg*", NosupBtfarg, Errno::OpNotSupp),
        ("f no_args ^$arg*", NosupBtfarg, Errno::OpNotSupp),
        ("f vfs_read ^$arg0", BadArgNum, Errno::Inval),
        // N in an int: from 2^31 on negative, no parameter.
        ("f vfs_read ^$arg2147483648", NoBtfarg, Errno::NoEnt),
        ("f vfs_read ^$arg1x", BadVar, Errno::NoEnt),
        ("f vfs_read count ^count", UsedArgName, Errno::Inval),
    ] {
        assert_eq!(bcheck(marked, code).errno, errno, "{marked}");
    }
    // After `$arg*`, an error's index counts the rewritten arguments, and upstream's log puts
    // it in the command as written: here past its end.
    let cmd = "f vfs_read $arg* hoge";
    bcheck(&format!("{cmd} ^"), NoBtfarg);
    // The names must fit upstream's 128-byte buffer: "file" and a NUL, 25 times.
    let mut cmd = String::from("f vfs_read");
    for _ in 0..25 {
        cmd.push_str(" $arg1");
    }
    bcheck(&format!("{cmd} ^$arg1"), Args2long);
}

#[test]
fn without_btf_nothing_changes() {
    // The same commands without a BTF source: a kernel without BTF arguments.
    check_error("f vfs_read ^count", ErrCode::NosupBtfarg);
    check_error("f vfs_read ^$arg*", ErrCode::NosupBtfarg);
    assert_eq!(arg("f vfs_read%return $retval").ty, FetchType::X64);
    assert_eq!(arg("f vfs_read $arg1").name, "arg1");
}

/// An old-style bitfield (a struct without kind_flag: the member's INT type carries the width
/// and a bit offset of its own) is read with the INT's offset counted once, as upstream's
/// `parse_btf_field()` + `fetch_type_from_btf_type()` count it. It was counted twice: once by
/// the member lookup, once more by the field's type.
#[test]
fn old_style_bitfield_counts_the_int_offset_once() {
    use crate::sys::btf::reader::tests::{leak, Builder};
    let mut bb = Builder::new();
    let uint = bb.int("unsigned int", 4, false);
    // unsigned, 5 bits at bit 3 of a 4-byte INT.
    let u5 = bb.t("u5", 1, 0, false, 4, &[3 << 16 | 5]);
    let bf = bb.s("bf");
    let st = bb.t("s", 4, 1, false, 8, &[bf, u5, 32]);
    let ptr = bb.t("", 2, 0, false, st, &[]);
    let p = bb.s("p");
    let proto = bb.t("", 13, 1, false, uint, &[p, ptr]);
    bb.t("f", 12, 1, false, proto, &[]);
    let data = leak(bb.build());
    let s = Btf::measure(data, None).unwrap();
    let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
    let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
    let btf: &'static Btf<'static> =
        Box::leak(Box::new(Btf::new(data, None, offsets, names).unwrap()));
    let cmd = "f f p->bf";
    let scratch = Box::leak(vec![0u8; cmd.len() + EXPAND_ROOM].into_boxed_slice());
    let src: &'static dyn BtfSource = btf;
    let d = match parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(src)), scratch) {
        Ok(Command::Add(d)) => d,
        other => panic!("{other:?}"),
    };
    let a: Vec<_> = d.args().collect();
    assert_eq!(a[0].ty, FetchType::U64);
    // The last dereference is folded into the store: the word at byte 4 of `*p`.
    assert_eq!(a[0].fetch.store, mem(4, 8), "{:?}", a[0]);
    // Bits 3..8 of the word at byte 4: upstream's lshift 64 - (5 + 3), rshift 64 - 5.
    assert_eq!(
        a[0].fetch.bitfield,
        Some(Bitfield {
            basesize: 8,
            lshift: 56,
            rshift: 59
        })
    );
}
