// SPDX-License-Identifier: GPL-2.0

//! Tests of whole definitions: upstream's selftest cases, every fetch form and type, defaults,
//! limits, and the `dynamic_events` listing round trip. The helpers here parse a command and
//! check what it gives; the files below hold the tests, by topic.

mod btf;
mod btf_split;
mod fetchargs;
mod fields;
mod heads;
mod listing;
mod typecast;
mod types;
mod upstream;

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
    check_logged(&e, marked, &cmd, code, pos);
    e
}

/// `e` is the error `code` at `pos` of `cmd` (`marked` for messages), and its `error_log` entry
/// is upstream's, as `ftrace_errlog_check` reads it (its last line is 13 + pos bytes:
/// "  Command: ", the spaces, "^\n").
#[track_caller]
fn check_logged(e: &ProbeError, marked: &str, cmd: &str, code: ErrCode, pos: usize) {
    assert_eq!((e.code, e.pos), (code, pos), "{marked:?}: {e:?}");
    let log = e.log(cmd, &CFG, 0).to_string();
    assert!(
        log.contains(&format!("trace_fprobe: error: {}\n", code.message())),
        "{log}"
    );
    assert_eq!(log.lines().last().unwrap().len() + 1, 13 + pos, "{log}");
}

/// The error logged when the symbol of the definition `marked` (with '^' at the symbol) matches
/// no traceable function: registration fails with `-ENOENT`, logged as upstream logs it.
#[track_caller]
fn check_no_match(marked: &str) -> ProbeError {
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
    e
}

/// [`check_error`] for each marked command of `cases` and the error it must give.
#[track_caller]
fn check_errors(cases: &[(&str, ErrCode)]) {
    for &(marked, code) in cases {
        check_error(marked, code);
    }
}

/// The load of each one-argument command of `cases` is the one given.
#[track_caller]
fn check_loads(cases: &[(&str, Load<&str>)]) {
    for &(cmd, load) in cases {
        assert_eq!(fetch(cmd).load, load, "{cmd:?}");
    }
}

/// The store of each one-argument command of `cases` is the one given.
#[track_caller]
fn check_stores(cases: &[(&str, Store)]) {
    for &(cmd, store) in cases {
        assert_eq!(fetch(cmd).store, store, "{cmd:?}");
    }
}

fn load(l: Load<&str>) -> String {
    format!("{l:?}")
}

fn mem(offset: i32, size: u8) -> Store {
    Store {
        kind: StoreKind::Mem,
        size,
        offset,
    }
}

fn user_mem(offset: i32, size: u8) -> Store {
    Store {
        kind: StoreKind::UserMem,
        size,
        offset,
    }
}

/// The store of a string read at the value: a `__data_loc` (4 bytes) of `kind`.
fn string(kind: StoreKind) -> Store {
    Store {
        kind,
        size: 4,
        offset: 0,
    }
}

fn bitfield(basesize: u8, lshift: u8, rshift: u8) -> Option<Bitfield> {
    Some(Bitfield {
        basesize,
        lshift,
        rshift,
    })
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
        cpu: false,
    }
}

fn remove(cmd: &str) -> RemoveDef<'_> {
    match parse(cmd, &CFG) {
        Ok(Command::Remove(r)) => r,
        other => panic!("{cmd:?}: {other:?}"),
    }
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
