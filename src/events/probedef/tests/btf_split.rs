// SPDX-License-Identifier: GPL-2.0

//! BTF arguments of a module's function: its parameters, and the members of the module's own
//! types and of the base's, from split BTF (testdata/split-mod.c over split-base.c), with a
//! source that looks in the base first and then in the module, as `sys::btf::Source` (and
//! upstream's `bpf_find_btf_id()`) does.

use super::*;
use crate::sys::btf::reader::{Btf, Func};
use std::boxed::Box;
use std::vec;

fn index(data: &'static [u8], base: Option<&'static Btf<'static>>) -> &'static Btf<'static> {
    let s = Btf::measure(data, base).unwrap();
    let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
    let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
    Box::leak(Box::new(Btf::new(data, base, offsets, names).unwrap()))
}

/// The base ("vmlinux") and, when loaded, the module's split BTF over it.
struct Split {
    base: &'static Btf<'static>,
    module: Option<&'static Btf<'static>>,
}

impl BtfSource for Split {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)> {
        find_function(*self.base, name, tracepoint)
            .or_else(|| find_function(*self.module?, name, tracepoint))
    }

    fn structure(&self, name: &str, _func: &str, _tracepoint: bool) -> Option<(Btf<'_>, u32)> {
        find_struct(*self.base, name).or_else(|| find_struct(*self.module?, name))
    }
}

fn split(with_module: bool) -> &'static Split {
    const BASE: &[u8] = include_bytes!("../../../sys/btf/reader/testdata/split-base.btf");
    const MODULE: &[u8] = include_bytes!("../../../sys/btf/reader/testdata/split-mod.btf");
    let base = index(BASE, None);
    Box::leak(Box::new(Split {
        base,
        module: with_module.then(|| index(MODULE, Some(base))),
    }))
}

fn sparse(cmd: &str, with_module: bool) -> Result<Command<'static>, Error> {
    let cmd: &'static str = Box::leak(cmd.to_string().into_boxed_str());
    let scratch = Box::leak(vec![0u8; cmd.len() + EXPAND_ROOM].into_boxed_slice());
    let src: &'static dyn BtfSource = split(with_module);
    parse_btf(cmd, &CFG, &mut |_| true, BtfRef(Some(src)), scratch)
}

fn sdef(cmd: &str) -> ProbeDef<'static> {
    match sparse(cmd, true) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

/// The error of `marked` (its `^` where upstream's caret goes), with or without the module.
#[track_caller]
fn serr(marked: &str, with_module: bool) -> ProbeError {
    let pos = marked.find('^').expect("no caret");
    let cmd = marked.replacen('^', "", 1);
    match sparse(&cmd, with_module) {
        Err(Error::Probe(e)) => {
            assert_eq!(e.pos, pos, "{marked:?}: {e:?}");
            e
        }
        other => panic!("{cmd:?}: {other:?}"),
    }
}

#[test]
fn module_function_parameters_and_members() {
    // int mydev_open(struct mydev *dev, struct inode *inode, ...): the module's struct mydev
    // { struct file *filp; u32 id; }, the base's struct file { struct inode *f_inode;
    // unsigned int f_flags; } and struct inode { u32 i_ino; long i_size; }.
    let d = sdef("f mydev_open dev dev->id dev->filp->f_flags inode->i_size i=inode->i_ino");
    let a: Vec<_> = d.args().collect();
    assert_eq!(a.len(), 5);
    assert_eq!((a[0].name, a[0].ty), ("dev", FetchType::X64));
    assert_eq!(a[0].fetch.load, Load::Arg(0));
    assert_eq!((a[1].name, a[1].ty), ("arg2", FetchType::U32));
    assert_eq!(a[1].fetch.store, mem(8, 4));
    assert_eq!(a[2].ty, FetchType::U32);
    let derefs: Vec<i32> = a[2].fetch.derefs().iter().map(|d| d.offset).collect();
    assert_eq!(derefs, [0], "dev->filp, then f_flags");
    assert_eq!(a[2].fetch.store, mem(8, 4));
    assert_eq!((a[3].ty, a[3].fetch.load), (FetchType::S64, Load::Arg(1)));
    assert_eq!(a[3].fetch.store, mem(8, 8));
    assert_eq!((a[4].name, a[4].ty), ("i", FetchType::U32));
    assert_eq!(a[4].fetch.store, mem(0, 4));
    // $arg* names the parameters, not the `...`; a typed $retval (int).
    assert_eq!(
        sdef("f mydev_open $arg*").to_string(),
        "f:fprobes/mydev_open__entry mydev_open dev=dev inode=inode"
    );
    let r = sdef("f mydev_open%return $retval");
    assert_eq!(r.args().next().unwrap().ty, FetchType::S32);
    // The base's functions through the same source.
    assert_eq!(
        sdef("f vfs_read count").args().next().unwrap().ty,
        FetchType::U64
    );
}

#[test]
fn module_function_refusals() {
    use ErrCode::*;
    assert_eq!(serr("f mydev_open dev->^nosuch", true).code, NoBtfField);
    assert_eq!(serr("f mydev_open ^$arg3", true).code, NoBtfarg);
    // Without the module's BTF (a module built without it): the function has none.
    let e = serr("f mydev_open ^dev", false);
    assert_eq!((e.code, e.errno), (NoBtfEntry, Errno::NoEnt));
    let e = serr("f mydev_open ^$arg*", false);
    assert_eq!((e.code, e.errno), (NosupBtfarg, Errno::OpNotSupp));
}

#[test]
fn module_structs_in_typecasts() {
    // The module's struct mydev, found in the module's BTF after the base's: a cast of the
    // inode pointer to it reads as dev->... would (filp at 0, id at 8), and a container cast
    // from its id member back to filp.
    let a: Vec<_> = sdef("f mydev_open (mydev)inode->id (mydev,id)dev->filp->f_flags")
        .args()
        .collect();
    assert_eq!((a[0].ty, a[0].fetch.load), (FetchType::U32, Load::Arg(1)));
    assert_eq!(a[0].fetch.store, mem(8, 4));
    let derefs: Vec<i32> = a[1].fetch.derefs().iter().map(|d| d.offset).collect();
    assert_eq!(derefs, [-8], "filp is 8 bytes before id");
    assert_eq!((a[1].ty, a[1].fetch.store), (FetchType::U32, mem(8, 4)));
    // The base's struct file from a module function.
    let f = sdef("f mydev_open (file)dev->f_flags");
    assert_eq!(f.args().next().unwrap().fetch.store, mem(8, 4));
    // Without the module's BTF there is no struct mydev (nor BTF for the function).
    assert_eq!(
        serr("f mydev_open (^mydev)$arg1->id", false).code,
        ErrCode::NoPtrStrct
    );
}
