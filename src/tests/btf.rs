// SPDX-License-Identifier: GPL-2.0

//! The BTF reader on the running kernel's own BTF (`sys::btf`): what it says of vmlinux's
//! functions and structs, checked against what the compiler says (offsets the glue computes
//! with `offsetof`), and a module's split BTF (this module's own, `ufgraph_kunit`: the test
//! functions of testfns.c). Kernels built without BTF (the debug and arm64 test kernels) have
//! no `/sys/kernel/btf`: the cases are skipped there.

use crate::bindings;
use crate::events::probedef::{self, BtfRef, BtfSource, Command, Config, FetchType, Load};
use crate::sys::btf::reader::{Btf, Kind, ScalarKind};
use crate::sys::btf::{KernelBtf, Source};
use crate::sys::ktest::{CaseResult, Failed, Test};
use crate::{kcheck, kcheck_eq, kunit_suite};
use kernel::c_str;
use kernel::prelude::*;

/// vmlinux's BTF, or `None` after marking the case skipped when the kernel has none.
fn vmlinux(t: &Test) -> Result<Option<KernelBtf>, Failed> {
    match KernelBtf::load(c_str!("/sys/kernel/btf/vmlinux"), None) {
        Err(e) if e == ENOENT => {
            t.skip(c_str!(
                "no /sys/kernel/btf/vmlinux: a kernel without CONFIG_DEBUG_INFO_BTF"
            ));
            Ok(None)
        }
        r => t.check_ok(r, "loading /sys/kernel/btf/vmlinux").map(Some),
    }
}

/// The byte offset of `path` (members, one in each struct) from the start of struct `outer`.
fn offset_of(t: &Test, btf: &Btf<'_>, outer: &[u8], path: &[&[u8]]) -> Result<u32, Failed> {
    let mut id = t.check_ok(
        btf.find(outer, Kind::Struct).map_err(|_| ENOENT),
        "struct lookup",
    )?;
    let mut off = 0;
    for name in path {
        let m = t.check_ok(btf.member(id, name).map_err(|_| ENOENT), "member lookup")?;
        let Some(b) = m.byte_offset() else {
            return Err(t.fail(format_args!(
                "member {:?} is a bitfield",
                core::str::from_utf8(name)
            )));
        };
        off += b;
        id = m.ty;
    }
    Ok(off)
}

fn vmlinux_functions_and_structs(t: &mut Test) -> CaseResult {
    let Some(vm) = vmlinux(t)? else { return Ok(()) };
    let btf = t.check_ok(vm.btf(None), "view")?;
    let (blob, index) = vm.bytes();
    t.info(format_args!(
        "vmlinux BTF: {} bytes, {} types, index {} bytes",
        blob,
        btf.end_id() - 1,
        index
    ));
    kcheck!(t, btf.end_id() > 10_000, "{} types", btf.end_id());

    // ssize_t vfs_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
    let f = t.check_ok(btf.func(b"vfs_read").map_err(|_| ENOENT), "vfs_read")?;
    kcheck_eq!(t, f.proto.params, 4);
    for (i, want) in [&b"file"[..], b"buf", b"count", b"pos"].iter().enumerate() {
        let p = t.check_ok(btf.param(f.proto.id, i).map_err(|_| EINVAL), "param")?;
        kcheck!(t, p.name == *want, "parameter {} of vfs_read", i);
    }
    let count = t.check_ok(btf.param(f.proto.id, 2).map_err(|_| EINVAL), "count")?;
    let s = t.check_ok(btf.scalar(count.ty).map_err(|_| EINVAL), "size_t")?;
    kcheck_eq!(t, (s.kind, s.size, s.signed), (ScalarKind::Int, 8, false));
    let ret = t.check_ok(btf.scalar(f.proto.ret).map_err(|_| EINVAL), "ssize_t")?;
    kcheck_eq!(t, (ret.size, ret.signed), (8, true));
    // buf is char __user *: a pointer under a type tag.
    let buf = t.check_ok(btf.param(f.proto.id, 1).map_err(|_| EINVAL), "buf")?;
    kcheck_eq!(t, btf.scalar(buf.ty).map(|s| s.kind), Ok(ScalarKind::Ptr));

    // The offsets the fetches of %pd and %pD use, as the compiler lays them out (the glue's
    // offsetof): struct qstr's name is inside an anonymous union and struct.
    // SAFETY: plain functions returning constants.
    let (name_off, dentry_off) = unsafe {
        (
            bindings::ufg_dentry_name_offset(),
            bindings::ufg_file_dentry_offset(),
        )
    };
    kcheck_eq!(
        t,
        offset_of(t, &btf, b"dentry", &[b"d_name", b"name"])?,
        name_off
    );
    kcheck_eq!(
        t,
        offset_of(t, &btf, b"file", &[b"f_path", b"dentry"])?,
        dentry_off
    );
    kcheck_eq!(t, offset_of(t, &btf, b"qstr", &[b"len"])?, 4);

    let task = t.check_ok(
        btf.find(b"task_struct", Kind::Struct).map_err(|_| ENOENT),
        "task_struct",
    )?;
    let pid = t.check_ok(btf.member(task, b"pid").map_err(|_| ENOENT), "pid")?;
    kcheck_eq!(
        t,
        btf.scalar(pid.ty).map(|s| (s.size, s.signed)),
        Ok((4, true))
    );
    kcheck!(t, btf.func(b"ufg_no_such_function_anywhere").is_err());
    Ok(())
}

fn module_split_btf(t: &mut Test) -> CaseResult {
    let Some(vm) = vmlinux(t)? else { return Ok(()) };
    let base = t.check_ok(vm.btf(None), "view")?;
    let m = match KernelBtf::load(c_str!("/sys/kernel/btf/ufgraph_kunit"), Some(&base)) {
        Err(e) if e == ENOENT => {
            t.skip(c_str!(
                "no /sys/kernel/btf/ufgraph_kunit: modules built without BTF"
            ));
            return Ok(());
        }
        r => t.check_ok(r, "loading /sys/kernel/btf/ufgraph_kunit")?,
    };
    let btf = t.check_ok(m.btf(Some(&base)), "view")?;
    kcheck_eq!(t, btf.first_id(), base.end_id());
    t.info(format_args!(
        "ufgraph_kunit BTF: {} types",
        btf.end_id() - btf.first_id()
    ));

    // int ufg_test_add(int a, int b)
    let f = t.check_ok(
        btf.func(b"ufg_test_add").map_err(|_| ENOENT),
        "ufg_test_add",
    )?;
    kcheck!(t, f.id >= btf.first_id(), "the module's own function");
    kcheck_eq!(t, f.proto.params, 2);
    let a = t.check_ok(btf.param(f.proto.id, 0).map_err(|_| EINVAL), "a")?;
    kcheck!(t, a.name == b"a");
    kcheck_eq!(
        t,
        btf.scalar(a.ty).map(|s| (s.size, s.signed)),
        Ok((4, true))
    );
    kcheck_eq!(t, btf.param_index(f.proto.id, b"b"), Ok(1));
    // long ufg_test_call(long (*fn)(long), long x): a function pointer's prototype.
    let f = t.check_ok(
        btf.func(b"ufg_test_call").map_err(|_| ENOENT),
        "ufg_test_call",
    )?;
    kcheck_eq!(
        t,
        btf.scalar(f.proto.ret).map(|s| (s.size, s.signed)),
        Ok((8, true))
    );
    let p = t.check_ok(btf.param(f.proto.id, 0).map_err(|_| EINVAL), "fn")?;
    kcheck!(t, p.name == b"fn");
    let ptr = t.check_ok(
        btf.resolve(p.ty)
            .and_then(|id| btf.ty(id))
            .map_err(|_| EINVAL),
        "fn's type",
    )?;
    kcheck_eq!(t, ptr.kind, Kind::Ptr);
    let proto = t.check_ok(
        btf.proto(ptr.size_or_type).map_err(|_| EINVAL),
        "fn's prototype",
    )?;
    kcheck_eq!(t, (proto.params, proto.variadic), (1, false));
    // The kernel's functions through the module's BTF, from the base.
    let vfs = t.check_ok(
        btf.func(b"vfs_read").map_err(|_| ENOENT),
        "vfs_read through the module",
    )?;
    kcheck!(t, vfs.id < btf.first_id());
    Ok(())
}

/// The events' parser on vmlinux's BTF: a parameter by name typed from BTF, a member chain
/// whose dereferences land where the compiler puts the members, `$arg*` by name, a tracepoint
/// stub's parameters without its dummy. (Each check in its own frame: a definition and its
/// argument parser take a kilobyte or so.)
fn events_btf_arguments(t: &mut Test) -> CaseResult {
    let Some(vm) = vmlinux(t)? else { return Ok(()) };
    let src: &dyn BtfSource = &vm;
    let cmd = "f vfs_read count d=file->f_path.dentry->d_name.name:string $arg2";
    check_arg(
        t,
        src,
        cmd,
        0,
        ("count", FetchType::U64),
        Some(Load::Arg(2)),
    )?;
    check_arg(t, src, cmd, 2, ("buf", FetchType::X64), Some(Load::Arg(1)))?;
    check_arg(t, src, cmd, 1, ("d", FetchType::String), Some(Load::Arg(0)))?;
    check_member_offsets(t, src, cmd, 1)?;
    // sched_wakeup's stub is (void *__data, struct task_struct *p).
    check_arg(
        t,
        src,
        "t sched_wakeup $arg*",
        0,
        ("p", FetchType::X64),
        Some(Load::Arg(1)),
    )?;
    check_arg(
        t,
        src,
        "f vfs_read%return $retval",
        0,
        ("arg1", FetchType::S64),
        Some(Load::Retval),
    )
}

/// Argument `i` of `cmd` parsed with `src`: its name, type and load.
#[inline(never)]
fn check_arg(
    t: &Test,
    src: &dyn BtfSource,
    cmd: &str,
    i: usize,
    want: (&str, FetchType),
    load: Option<Load<&str>>,
) -> CaseResult {
    let mut scratch = [0u8; 160];
    let r = probedef::parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(src)), &mut scratch);
    let Ok(Command::Add(d)) = r else {
        return Err(t.fail(format_args!("{cmd}: {:?}", r.err())));
    };
    let a = d.args().nth(i);
    kcheck_eq!(t, a.map(|a| (a.name, a.ty)), Some(want));
    kcheck_eq!(t, a.map(|a| a.fetch.load), load);
    Ok(())
}

/// The dereferences of argument `i` of `cmd`, `file->f_path.dentry->d_name.name`: where the
/// compiler puts the members (the glue's `offsetof`), the last folded into the string store.
#[inline(never)]
fn check_member_offsets(t: &Test, src: &dyn BtfSource, cmd: &str, i: usize) -> CaseResult {
    let mut scratch = [0u8; 160];
    let r = probedef::parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(src)), &mut scratch);
    let Ok(Command::Add(d)) = r else {
        return Err(t.fail(format_args!("{cmd}: {:?}", r.err())));
    };
    let Some(a) = d.args().nth(i) else {
        return Err(t.fail(format_args!("{cmd}: no argument {i}")));
    };
    // SAFETY: plain functions returning constants.
    let (name_off, dentry_off) = unsafe {
        (
            bindings::ufg_dentry_name_offset(),
            bindings::ufg_file_dentry_offset(),
        )
    };
    let offs = a.fetch.derefs();
    kcheck!(t, offs.len() == 2, "{} dereferences", offs.len());
    kcheck_eq!(t, offs.first().map(|d| d.offset), Some(dentry_off as i32));
    kcheck_eq!(t, offs.get(1).map(|d| d.offset), Some(name_off as i32));
    kcheck_eq!(t, a.fetch.store.offset, 0);
    Ok(())
}

/// The events' source (`sys::btf::Source`) on a module's function, `ufg_test_add(int a, int
/// b)` of this module: not in vmlinux's BTF, so the module's split BTF is read (found through
/// ftrace's list of traceable functions), kept for the definition, and used again to parse
/// the stored text; a stored definition parsed without it has no BTF for the function.
fn events_module_function_source(t: &mut Test) -> CaseResult {
    let Some(vm) = vmlinux(t)? else { return Ok(()) };
    let base = t.check_ok(vm.btf(None), "view")?;
    if let Err(e) = KernelBtf::load(c_str!("/sys/kernel/btf/ufgraph_kunit"), Some(&base)) {
        kcheck_eq!(t, e, ENOENT);
        t.skip(c_str!(
            "no /sys/kernel/btf/ufgraph_kunit: modules built without BTF"
        ));
        return Ok(());
    }
    let Some(src) = Source::new(&vm) else {
        return Err(t.fail(format_args!("no source over vmlinux's BTF")));
    };
    kcheck!(t, src.module().is_none(), "nothing read before a lookup");
    // A vmlinux function reads no module's BTF.
    check_arg(
        t,
        &src,
        "f vfs_read count",
        0,
        ("count", FetchType::U64),
        Some(Load::Arg(2)),
    )?;
    kcheck!(
        t,
        src.module().is_none(),
        "vmlinux's function read a module's BTF"
    );
    let cmd = "f ufg_test_add b a";
    check_arg(t, &src, cmd, 0, ("b", FetchType::S32), Some(Load::Arg(1)))?;
    let Some(m) = src.module() else {
        return Err(t.fail(format_args!("the module's BTF was not kept")));
    };
    // Stored: the same copy, nothing read again; without it, no BTF for the function.
    let Some(again) = Source::stored(&vm, Some(&m)) else {
        return Err(t.fail(format_args!("no stored source")));
    };
    check_arg(t, &again, cmd, 1, ("a", FetchType::S32), Some(Load::Arg(0)))?;
    let Some(none) = Source::stored(&vm, None) else {
        return Err(t.fail(format_args!("no stored source")));
    };
    let mut scratch = [0u8; 64];
    let r = probedef::parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(&none)), &mut scratch);
    kcheck!(
        t,
        matches!(r, Err(probedef::Error::Probe(e)) if e.code == probedef::ErrCode::NoBtfEntry),
        "without the module's BTF: {:?}",
        r.err()
    );
    Ok(())
}

/// A parser configuration (the `%pd` offsets do not matter here).
const CFG: Config = Config {
    max_stack_index: 2048,
    dentry_name_offset: 0,
    file_dentry_offset: 0,
};

kunit_suite!(
    BTF_SUITE,
    "ufgraph_btf",
    [
        vmlinux_functions_and_structs,
        module_split_btf,
        events_btf_arguments,
        events_module_function_source,
    ]
);
