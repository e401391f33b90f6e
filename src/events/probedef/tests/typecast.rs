// SPDX-License-Identifier: GPL-2.0

//! Typecasts `(STRUCT[,FIELD])EXPR->MEMBER` and `$current` against the sample BTF, with a
//! hand-made `task_struct` beside it: each form against the plain BTF argument it must equal,
//! the field option's offsets, and upstream's refusals with their carets and errnos.

use super::*;
use crate::sys::btf::reader::tests::{leak, Builder};
use crate::sys::btf::reader::{Btf, Func};
use std::boxed::Box;
use std::vec;

fn index(data: &'static [u8]) -> &'static Btf<'static> {
    let s = Btf::measure(data, None).unwrap();
    let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
    let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
    Box::leak(Box::new(Btf::new(data, None, offsets, names).unwrap()))
}

/// `struct task_struct { int pid @8; struct task_struct *group_leader @16; char comm[16] @24; }`
/// (40 bytes), in a blob of its own.
fn task_blob() -> &'static Btf<'static> {
    let mut bb = Builder::new();
    let int = bb.int("int", 4, true); // 1
    let chr = bb.int("char", 1, false); // 2
    let uint = bb.int("unsigned int", 4, false); // 3
    let arr = bb.t("", 3, 0, false, 0, &[chr, uint, 16]); // 4
    let (pid, leader, comm) = (bb.s("pid"), bb.s("group_leader"), bb.s("comm"));
    // Id 5; it names id 6 before that exists, so the builder cannot count it (returns 0).
    bb.t(
        "task_struct",
        4,
        3,
        false,
        40,
        &[pid, int, 64, leader, 6, 128, comm, arr, 192],
    ); // 5
    let ptr = bb.t("", 2, 0, false, 5, &[]); // 6
    assert_eq!(ptr, 6);
    bitfield_structs(&mut bb, int, uint);
    index(leak(bb.build()))
}

/// Bitfields in the three shapes BTF gives them, for the field option's refusals:
/// `struct inner { int x; unsigned int bf:8 @32; }` (kind_flag: the size in the member),
/// `union { unsigned int u_w; unsigned int u_bf:4 @8; }` (anonymous, kind_flag), and
/// `struct oldbits { int a; ob:5 @32; struct inner in @64; union {...} @128; }` without
/// kind_flag, whose `ob` is marked in its INT type (5 bits), as older BTF does. Ids 7 to 10.
fn bitfield_structs(bb: &mut Builder, int: u32, uint: u32) {
    // INT, 4 bytes, 5 bits from bit 0 of the type.
    let int5 = bb.t("unsigned int", 1, 0, false, 4, &[5]); // 7
    let (x, bf) = (bb.s("x"), bb.s("bf"));
    let inner = bb.t("inner", 4, 2, true, 8, &[x, int, 0, bf, uint, 8 << 24 | 32]); // 8
    let (u_w, u_bf) = (bb.s("u_w"), bb.s("u_bf"));
    let un = bb.t("", 5, 2, true, 4, &[u_w, uint, 0, u_bf, uint, 4 << 24 | 8]); // 9
    let (a, ob, inn) = (bb.s("a"), bb.s("ob"), bb.s("in"));
    bb.t(
        "oldbits",
        4,
        4,
        false,
        20,
        &[a, int, 0, ob, int5, 32, inn, inner, 64, 0, un, 128],
    ); // 10
    assert_eq!((int5, inner, un), (7, 8, 9));
}

/// The sample's functions and structs, and a `task_struct` (unless `task` is false).
struct Source {
    sample: &'static Btf<'static>,
    task: Option<&'static Btf<'static>>,
}

impl BtfSource for Source {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)> {
        find_function(*self.sample, name, tracepoint)
    }

    fn structure(&self, name: &str, _func: &str, _tracepoint: bool) -> Option<(Btf<'_>, u32)> {
        find_struct(*self.sample, name).or_else(|| find_struct(*self.task?, name))
    }
}

fn tparse(cmd: &str, task: bool) -> Result<Command<'static>, Error> {
    const SAMPLE: &[u8] = include_bytes!("../../../sys/btf/reader/testdata/sample.btf");
    let cmd: &'static str = Box::leak(cmd.to_string().into_boxed_str());
    let scratch = Box::leak(vec![0u8; cmd.len() + EXPAND_ROOM].into_boxed_slice());
    let src: &'static dyn BtfSource = Box::leak(Box::new(Source {
        sample: index(SAMPLE),
        task: task.then(task_blob),
    }));
    parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(src)), scratch)
}

fn tdef(cmd: &str) -> ProbeDef<'static> {
    match tparse(cmd, true) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

fn targ(cmd: &str) -> FetchArg<'static> {
    let d = tdef(cmd);
    let mut a: Vec<_> = d.args().collect();
    assert_eq!(a.len(), 1, "{cmd:?}");
    a.remove(0)
}

/// The error of `marked` ('^' where upstream's caret goes), its message in the log.
#[track_caller]
fn tcheck_with(marked: &str, code: ErrCode, task: bool) -> ProbeError {
    let pos = marked.find('^').expect("no caret");
    let cmd = marked.replacen('^', "", 1);
    let e = match tparse(&cmd, task) {
        Err(Error::Probe(e)) => e,
        other => panic!("{cmd:?}: {other:?}"),
    };
    check_logged(&e, marked, &cmd, code, pos);
    e
}

#[track_caller]
fn tcheck(marked: &str, code: ErrCode) -> ProbeError {
    tcheck_with(marked, code, true)
}

/// Type and program of `cmd`'s argument equal those of `same`'s.
#[track_caller]
fn same(cmd: &str, same: &str) -> FetchArg<'static> {
    let (a, b) = (targ(cmd), targ(same));
    assert_eq!((a.ty, a.fetch), (b.ty, b.fetch), "{cmd:?} vs {same:?}");
    a
}

fn derefs(a: &FetchArg<'_>) -> Vec<i32> {
    a.fetch.derefs().iter().map(|d| d.offset).collect()
}

fn mem(offset: i32, size: u8) -> Store {
    Store {
        kind: StoreKind::Mem,
        size,
        offset,
    }
}

#[test]
fn a_cast_to_the_own_type_reads_what_the_member_access_reads() {
    same("f vfs_read (file)file->f_count", "f vfs_read file->f_count");
    same(
        "f vfs_read (file)file->f_name.name:string",
        "f vfs_read file->f_name.name:string",
    );
    same(
        "f vfs_read (file)file->f_dentry",
        "f vfs_read file->f_dentry",
    );
    // The parenthesized form, and $argN, are the same expression.
    same(
        "f vfs_read (file)(file)->f_count",
        "f vfs_read file->f_count",
    );
    same(
        "f vfs_read (file)$arg1->f_count",
        "f vfs_read file->f_count",
    );
    same(
        "f vfs_read (file)($arg1)->f_count",
        "f vfs_read file->f_count",
    );
    // Exit probes read the parameter from the entry data.
    same(
        "f vfs_read%return (file)file->f_name.len",
        "f vfs_read%return file->f_name.len",
    );
    let a = targ("f vfs_read (file)file->f_count");
    assert_eq!((a.ty, a.fetch.load), (FetchType::S32, Load::Arg(0)));
    assert_eq!(a.fetch.store, mem(56, 4));
    // Listed as written, named argN (no C name).
    assert_eq!(a.name, "arg1");
    assert_eq!(
        tdef("f vfs_read n=(file,f_name)file->f_count").to_string(),
        "f:fprobes/vfs_read__entry vfs_read n=(file,f_name)file->f_count"
    );
}

#[test]
fn a_cast_types_what_has_another_type_or_none() {
    // buf is a char *, count an unsigned long: the cast decides.
    let a = targ("f vfs_read (file)buf->f_count");
    assert_eq!((a.ty, a.fetch.load), (FetchType::S32, Load::Arg(1)));
    assert_eq!(a.fetch.store, mem(56, 4));
    let a = targ("f vfs_read (file)count->f_name.len");
    assert_eq!((a.ty, a.fetch.load), (FetchType::U32, Load::Arg(2)));
    assert_eq!(a.fetch.store, mem(12, 4));
    // $retval (a long), on an exit probe.
    let a = targ("f vfs_read%return (file)$retval->f_count");
    assert_eq!((a.ty, a.fetch.load), (FetchType::S32, Load::Retval));
    // A dereference, a symbol, a stack slot.
    let a = targ("f vfs_read (file)+8($arg2)->f_count");
    assert_eq!((a.fetch.load, derefs(&a)), (Load::Arg(1), vec![8]));
    assert_eq!(a.fetch.store, mem(56, 4));
    let a = targ("f vfs_read (file)@jiffies->f_count");
    assert_eq!(
        (a.fetch.load, derefs(&a)),
        (Load::Symbol("jiffies"), vec![0])
    );
    let a = targ("f vfs_read (file)(@jiffies+8)->f_count");
    assert_eq!(a.fetch.load, Load::Symbol("jiffies+8"));
    let a = targ("f vfs_read (file)$stack2->f_dentry");
    assert_eq!((a.ty, a.fetch.load), (FetchType::X64, Load::Stack(2)));
    assert_eq!(a.fetch.store, mem(24, 8));
}

#[test]
fn nested_casts_dereference_in_turn() {
    // (file)file->f_dentry is a pointer, read (24), then cast in its turn.
    let a = targ("f vfs_read (file)((file)file->f_dentry)->f_count");
    assert_eq!((a.fetch.load, derefs(&a)), (Load::Arg(0), vec![24]));
    assert_eq!((a.ty, a.fetch.store), (FetchType::S32, mem(56, 4)));
    same(
        "f vfs_read (file)((file)file->f_dentry)->f_count",
        "f vfs_read (file)+24(file)->f_count",
    );
    // A dereference around a cast forgets its type.
    let a = targ("f vfs_read +0((file)file->f_count)");
    assert_eq!(a.ty, FetchType::X64);
    assert_eq!(derefs(&a), [56]);
}

#[test]
fn the_field_option_counts_from_the_field() {
    // The value points at f_name (byte 8) in a struct file: f_count (56) is 48 bytes on.
    let a = targ("f vfs_read (file,f_name)buf->f_count");
    assert_eq!((a.ty, a.fetch.store), (FetchType::S32, mem(48, 4)));
    // A member of a member: f_name.name is at 16.
    let a = targ("f vfs_read (file,f_name.name)buf->f_dentry");
    assert_eq!((a.ty, a.fetch.store), (FetchType::X64, mem(8, 8)));
    // Backwards: f_pair.hi (34) is past f_long (32).
    let a = targ("f vfs_read (file,f_pair.hi)buf->f_long");
    assert_eq!((a.ty, a.fetch.store), (FetchType::S64, mem(-2, 8)));
    // Only the first member: the rest are members of what it points to. comm is at 24,
    // group_leader at 16, pid at 8.
    let a = targ("f vfs_read (task_struct,comm)buf->group_leader->pid");
    assert_eq!((derefs(&a), a.fetch.store), (vec![-8], mem(8, 4)));
}

#[test]
fn current_is_the_task_and_its_members() {
    let a = targ("f vfs_read $current");
    assert_eq!((a.ty, a.fetch.load), (FetchType::X64, Load::Current));
    assert_eq!(a.fetch.derefs(), &[]);
    let a = targ("f vfs_read cur=$current:x64");
    assert_eq!((a.name, a.fetch.load), ("cur", Load::Current));
    let a = targ("f vfs_read $current->pid");
    assert_eq!((a.ty, a.fetch.load), (FetchType::S32, Load::Current));
    assert_eq!(a.fetch.store, mem(8, 4));
    // comm is a char array: read where it is.
    let a = targ("f vfs_read $current->comm:string");
    assert_eq!((a.ty, a.fetch.load), (FetchType::String, Load::Current));
    assert_eq!(
        (derefs(&a), a.fetch.store.kind, a.fetch.store.offset),
        (vec![], StoreKind::String, 24)
    );
    let a = targ("f vfs_read $current->group_leader->pid");
    assert_eq!((derefs(&a), a.fetch.store), (vec![16], mem(8, 4)));
    // On exit probes and through casts, the same.
    same(
        "f vfs_read%return $current->pid",
        "f vfs_read $current->pid",
    );
    same(
        "f vfs_read (task_struct)$current->pid",
        "f vfs_read $current->pid",
    );
    let a = targ("f vfs_read (task_struct,group_leader)$current->pid");
    assert_eq!(a.fetch.store, mem(-8, 4));
    // Dereferenced as any address.
    let a = targ("f vfs_read +8($current):s32");
    assert_eq!((a.fetch.load, a.fetch.store), (Load::Current, mem(8, 4)));
}

#[test]
fn current_refusals() {
    use ErrCode::*;
    tcheck("f vfs_read ^$currentx", BadVar);
    tcheck("f vfs_read ^$current.pid", BadVar);
    tcheck("f vfs_read $current^-pid", BadHyphen);
    tcheck("f vfs_read $current->^nosuch", NoBtfField);
    tcheck("f vfs_read $current->pid->^x", NoPtrStrct);
    tcheck("f vfs_read $current:^string", BadString);
    // No BTF for task_struct.
    let e = tcheck_with("f vfs_read ^$current->pid", NoBtfEntry, false);
    assert_eq!(e.errno, Errno::NoEnt);
    // Without BTF: $current alone only.
    assert_eq!(fetch("f vfs_read $current").load, Load::Current);
    check_error("f vfs_read ^$current->pid", BadVar);
}

#[test]
fn typecast_refusals() {
    use ErrCode::*;
    let e = tcheck("f vfs_read (^nosuch)file->f_count", NoPtrStrct);
    assert_eq!(e.errno, Errno::Inval);
    tcheck("f vfs_read (qstr)file->^f_count", NoBtfField);
    tcheck("f vfs_read (file)^nosuch->f_count", NoBtfarg);
    tcheck("f vfs_read (file^", DerefOpenBrace);
    tcheck("f vfs_read (file)^(file", DerefOpenBrace);
    tcheck("f vfs_read (file)+8(file^", DerefOpenBrace);
    tcheck("f vfs_read (file)^+8file->f_count", DerefNeedBrace);
    tcheck("f vfs_read (file)file^", TypecastReqField);
    tcheck("f vfs_read (file)file.f_count^", TypecastReqField);
    tcheck("f vfs_read (file)(file)^", TypecastReqField);
    tcheck("f vfs_read (file)(file)^.f_count", TypecastReqField);
    tcheck("f vfs_read (file)+8(file)^", TypecastReqField);
    tcheck("f vfs_read (file)^@jiffies+8->f_count", TypecastSymOffset);
    tcheck(
        "f vfs_read (file,f_name^->name)file->f_count",
        TypecastBadArrow,
    );
    tcheck("f vfs_read (file,^f_mode)file->f_count", TypecastNotAligned);
    // A bitfield that starts on a byte is taken at that byte, as upstream takes it (it refuses
    // only one that does not): f_flags (bit 0 in the sample), one in a member, one in an
    // anonymous union, one marked in its INT type (BTF without kind_flag), beside their
    // neighbours that are no bitfields.
    assert_eq!(
        targ("f vfs_read (file,f_flags)file->f_count").fetch.store,
        targ("f vfs_read (file)file->f_count").fetch.store
    );
    for (arg, off) in [
        ("(oldbits,in.bf)buf->a", -12),
        ("(oldbits,u_bf)buf->a", -17),
        ("(oldbits,ob)buf->a", -4),
        ("(oldbits,in.x)buf->a", -8),
        ("(oldbits,u_w)buf->a", -16),
    ] {
        let a = targ(&format!("f vfs_read {}", arg));
        assert_eq!(
            (a.ty, a.fetch.store),
            (FetchType::S32, mem(off, 4)),
            "{}",
            arg
        );
    }
    tcheck("f vfs_read (file,f_name.^nosuch)file->f_count", NoBtfField);
    tcheck("f vfs_read (file)file->f_count->^x", NoPtrStrct);
    tcheck("f vfs_read (file)file->^nosuch", NoBtfField);
    tcheck("f vfs_read (file)file->f_count.^x", BadBtfTid);
    tcheck("f no_args%return (file)^$retval->f_count", NoRetval);
    // $retval anywhere in an argument makes an exit probe, as upstream's strstr() finds it.
    assert!(tdef("f vfs_read (file)$retval->f_count")
        .to_string()
        .starts_with("f:fprobes/vfs_read__exit vfs_read%return "));
    tcheck("f vfs_read (file)file->^f_count:string", BadType4str);
    tcheck("f vfs_read file->^f_count:string", BadType4str);
    // Seven dereferences around a cast are taken, eight are upstream's limit.
    let seven = "+0(".repeat(7);
    let a = targ(&format!(
        "f vfs_read {seven}(file)file->f_count{}",
        ")".repeat(7)
    ));
    assert_eq!(derefs(&a).len(), 7);
    let eight = "+0(".repeat(8);
    let e = tcheck(
        &format!("f vfs_read {eight}^(file)file->f_count{}", ")".repeat(8)),
        TooManyNested,
    );
    assert_eq!(e.errno, Errno::TooBig);
    // Without BTF, as upstream without CONFIG_PROBE_EVENTS_BTF_ARGS.
    let e = check_error("f vfs_read ^(file)file->f_count", NosupBtfarg);
    assert_eq!(e.errno, Errno::OpNotSupp);
    check_error("f vfs_read ^(file)$arg1->f_count", NosupBtfarg);
}

/// Each stage-2 step: (offset, per-CPU conversion).
fn steps(a: &FetchArg<'_>) -> Vec<(i32, bool)> {
    a.fetch.derefs().iter().map(|d| (d.offset, d.cpu)).collect()
}

fn raw(size: u8) -> Store {
    Store {
        kind: StoreKind::Raw,
        size,
        offset: 0,
    }
}

#[test]
fn this_cpu_ptr_and_read() {
    // @SYM's address is the per-CPU address: the conversion takes the place of its read.
    let a = targ("f vfs_read this_cpu_ptr(@pcpu_hot)");
    assert_eq!(
        (a.ty, a.fetch.load),
        (FetchType::X64, Load::Symbol("pcpu_hot"))
    );
    assert_eq!((steps(&a), a.fetch.store), (vec![(0, true)], raw(8)));
    let a = targ("f vfs_read this_cpu_read(@pcpu_hot)");
    assert_eq!((steps(&a), a.fetch.store), (vec![(0, true)], mem(0, 8)));
    // Any other value is the per-CPU address itself.
    let a = targ("f vfs_read this_cpu_read($arg1):u32");
    assert_eq!((a.fetch.load, steps(&a)), (Load::Arg(0), vec![(0, true)]));
    assert_eq!((a.ty, a.fetch.store), (FetchType::U32, mem(0, 4)));
    let a = targ("f vfs_read this_cpu_read(+8($arg1))");
    assert_eq!(steps(&a), [(8, false), (0, true)]);
    // A cast's member is the per-CPU pointer; a cast of this CPU's copy.
    let a = targ("f vfs_read this_cpu_read((file,f_name)buf->f_dentry)");
    assert_eq!(
        (a.ty, steps(&a)),
        (FetchType::X64, vec![(16, false), (0, true)])
    );
    let a = targ("f vfs_read (file)this_cpu_ptr(@var)->f_count");
    assert_eq!((a.ty, steps(&a)), (FetchType::S32, vec![(0, true)]));
    assert_eq!(a.fetch.store, mem(56, 4));
    let a = targ("f vfs_read (file)this_cpu_read($arg1)->f_count");
    assert_eq!(steps(&a), [(0, true), (0, false)]);
    // Without BTF too.
    let a = arg("f vfs_read this_cpu_read(@pcpu_hot):x64");
    assert_eq!(a.fetch.store, mem(0, 8));
}

#[test]
fn this_cpu_refusals() {
    use ErrCode::*;
    // A type error is placed as upstream places it after a dereference: the type's offset
    // counted from the cursor, which stands after "this_cpu_ptr(" (11 + 13), so past the end.
    for (cmd, code) in [
        ("f vfs_read this_cpu_ptr(@x):string", BadString),
        ("f vfs_read this_cpu_ptr(@x):symstr", BadSymstring),
        ("f vfs_read this_cpu_ptr(@x):u8[2]", BadString),
    ] {
        let e = match tparse(cmd, true) {
            Err(Error::Probe(e)) => e,
            other => panic!("{cmd:?}: {other:?}"),
        };
        assert_eq!((e.code, e.pos), (code, 11 + 13 + 17), "{cmd:?}");
    }
    tcheck("f vfs_read this_cpu_read(^$comm)", CommCantDeref);
    tcheck("f vfs_read this_cpu_read(^\\\"s\")", CommCantDeref);
    tcheck("f vfs_read this_cpu_read(@x^", DerefOpenBrace);
    tcheck("f vfs_read (file)this_cpu_ptr(@x^", DerefOpenBrace);
    tcheck("f vfs_read (file)this_cpu_ptr(@x)^", TypecastReqField);
    // The conversion and the read are an instruction each: upstream's budget of 16 (@x takes
    // 3, each +0( 1, the end 1; the read is folded into the store).
    let nest = |k: usize| {
        format!(
            "f vfs_read this_cpu_read({}@x{})",
            "+0(".repeat(k),
            ")".repeat(k)
        )
    };
    assert_eq!(steps(&targ(&nest(10))).len(), 12);
    let cmd = nest(11);
    let e = match tparse(&cmd, true) {
        Err(Error::Probe(e)) => e,
        other => panic!("{cmd:?}: {other:?}"),
    };
    assert_eq!((e.code, e.pos), (TooManyOps, 11 + 14), "{e:?}");
    assert_eq!(e.errno, Errno::Inval);
}
