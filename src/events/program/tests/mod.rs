// SPDX-License-Identifier: GPL-2.0

//! Tests: real definitions parsed by `probedef`, compiled, run against a fake memory, and
//! rendered; expected texts derived from upstream's trace_probe.c. The fake probe hit is
//! `super::fake` (shared with the fuzzer), the helpers are here, the tests in the files below, by
//! topic.

mod append;
mod records;
mod strings;
mod values;

use super::fake::Fake;
use super::*;
use crate::events::probedef::{parse, Command, Config, Deref, Errno, FetchType, StoreKind};
use std::fmt::{self, Write as _};
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

const CFG: Config = Config {
    max_stack_index: 2048,
    dentry_name_offset: 0x28,
    file_dentry_offset: 0x48,
};

const JIFFIES: u64 = 0xffff_ffff_8200_0000;

const COMM: u64 = 0xffff_8880_0000_1000;

const K: u64 = 0xffff_8880_1000_0000;

const U: u64 = 0x7fff_0000_0000;

impl Fake {
    /// A hit whose task is "bash", with jiffies readable; an empty user string reads as
    /// upstream's `strncpy_from_user_nofault()` returns it.
    fn new() -> Self {
        let mut f = Fake {
            sp: 0xffff_c900_0000_3f00,
            comm: COMM,
            empty_user_str_is_zero: true,
            ..Fake::default()
        };
        f.kstr(COMM, "bash");
        f.kword(JIFFIES, 0x1_0000_2345);
        f
    }
}

/// A `trace_seq` stand-in: `%pS` as "<addr>".
#[derive(Default)]
struct Seq(String);

impl fmt::Write for Seq {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

impl Out for Seq {
    fn symbol(&mut self, addr: u64) -> fmt::Result {
        write!(self.0, "<{addr:#x}>")
    }
}

fn resolve(sym: &str) -> Option<u64> {
    match sym {
        "jiffies" => Some(JIFFIES),
        "zero" => Some(0),
        "low" => Some(8),
        _ => None,
    }
}

/// A parsed and compiled definition.
struct Event {
    progs: Vec<Program>,
    args_size: usize,
    head: usize,
    is_return: bool,
}

impl Event {
    /// Both passes into a record of exactly the size reserved, its head marked.
    fn hit(&self, env: &Fake) -> Vec<u8> {
        let dsize = dynamic_size(&self.progs, env);
        self.hit_into(env, self.head + self.args_size + dsize)
    }

    /// Both passes into a record of `len` bytes (filled with garbage first).
    fn hit_into(&self, env: &Fake, len: usize) -> Vec<u8> {
        let mut rec = vec![0xa5u8; len];
        store(&self.progs, env, &mut rec, self.head, self.args_size);
        // The head is the caller's.
        assert!(rec.iter().take(self.head.min(len)).all(|&b| b == 0xa5));
        rec
    }

    fn render(&self, rec: &[u8]) -> String {
        let mut s = Seq::default();
        render_args(&self.progs, rec, self.head, &mut s).unwrap();
        s.0
    }

    fn show(&self, env: &Fake) -> String {
        self.render(&self.hit(env))
    }

    fn print_fmt(&self) -> String {
        let mut s = String::new();
        write_print_fmt(&self.progs, self.is_return, &mut s).unwrap();
        s
    }

    fn field_type(&self, i: usize) -> String {
        let mut s = String::new();
        self.progs[i].write_field_type(&mut s).unwrap();
        s
    }

    fn field<const N: usize>(&self, rec: &[u8], i: usize) -> [u8; N] {
        let at = self.progs[i].field_offset(self.head);
        rec[at..at + N].try_into().unwrap()
    }

    fn loc(&self, rec: &[u8], i: usize) -> (usize, usize) {
        split_data_loc(u32::from_le_bytes(self.field(rec, i)))
    }
}

fn event(cmd: &str) -> Event {
    let d = match parse(cmd, &CFG) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    };
    let progs: Vec<Program> = d
        .args()
        .map(|a| compile(&a, resolve).unwrap_or_else(|e| panic!("{cmd}: {e}")))
        .collect();
    for (p, a) in progs.iter().zip(d.args()) {
        assert_eq!(p.name(), a.name);
        assert_eq!(
            (p.ty(), p.count(), p.offset()),
            (a.ty, a.count(), usize::from(a.offset))
        );
        assert_eq!(p.field_size(), a.size());
        assert_eq!(p.derefs(), a.fetch.derefs());
    }
    let head = if d.is_return() { EXIT_HEAD } else { ENTRY_HEAD };
    Event {
        progs,
        args_size: d.args_size(),
        head,
        is_return: d.is_return(),
    }
}
