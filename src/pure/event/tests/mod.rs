// SPDX-License-Identifier: GPL-2.0

//! Tests: real definitions parsed by `probedef`, compiled, run against a fake memory, and
//! rendered; expected texts derived from upstream's trace_probe.c. The fake probe hit and the
//! helpers are here, the tests in the files below, by topic.

mod append;
mod records;
mod strings;
mod values;

use super::*;
use crate::pure::probedef::{parse, Command, Config, Deref, Errno, FetchType, StoreKind};
use std::collections::BTreeMap;
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

/// A probe hit: registers, and separate kernel and user memories (byte maps).
#[derive(Default)]
struct Fake {
    args: Vec<u64>,
    slots: Vec<u64>,
    retval: u64,
    stack: Vec<u64>,
    sp: u64,
    kmem: BTreeMap<u64, u8>,
    umem: BTreeMap<u64, u8>,
    syms: Vec<(u64, &'static str)>,
}

impl Fake {
    fn new() -> Self {
        let mut f = Fake {
            sp: 0xffff_c900_0000_3f00,
            ..Fake::default()
        };
        f.kstr(COMM, "bash");
        f.kword(JIFFIES, 0x1_0000_2345);
        f
    }

    fn mem(&self, user: bool) -> &BTreeMap<u64, u8> {
        if user {
            &self.umem
        } else {
            &self.kmem
        }
    }

    fn kbytes(&mut self, at: u64, b: &[u8]) {
        for (i, &c) in b.iter().enumerate() {
            self.kmem.insert(at + i as u64, c);
        }
    }

    fn ubytes(&mut self, at: u64, b: &[u8]) {
        for (i, &c) in b.iter().enumerate() {
            self.umem.insert(at + i as u64, c);
        }
    }

    fn kword(&mut self, at: u64, v: u64) {
        self.kbytes(at, &v.to_le_bytes());
    }

    fn uword(&mut self, at: u64, v: u64) {
        self.ubytes(at, &v.to_le_bytes());
    }

    fn kstr(&mut self, at: u64, s: &str) {
        self.kbytes(at, s.as_bytes());
        self.kbytes(at + s.len() as u64, &[0]);
    }

    fn ustr(&mut self, at: u64, s: &str) {
        self.ubytes(at, s.as_bytes());
        self.ubytes(at + s.len() as u64, &[0]);
    }

    fn byte(&self, addr: u64, user: bool) -> Option<u8> {
        self.mem(user).get(&addr).copied()
    }
}

impl Env for Fake {
    fn arg(&self, n: u16) -> u64 {
        self.args.get(usize::from(n)).copied().unwrap_or(0)
    }
    fn entry_slot(&self, slot: u8) -> u64 {
        self.slots[usize::from(slot)]
    }
    fn retval(&self) -> u64 {
        self.retval
    }
    fn stack(&self, n: u16) -> Option<u64> {
        self.stack.get(usize::from(n)).copied()
    }
    fn stack_pointer(&self) -> u64 {
        self.sp
    }
    fn comm(&self) -> u64 {
        COMM
    }
    fn read(&self, addr: u64, user: bool, buf: &mut [u8]) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match self.byte(addr.wrapping_add(i as u64), user) {
                Some(c) => *b = c,
                None => return false,
            }
        }
        true
    }
    // fetch_store_strlen() / strnlen_user_nofault(), capped as the trait says.
    fn strlen(&self, addr: u64, user: bool) -> Option<usize> {
        for len in 1..=MAX_STRING_SIZE {
            if self.byte(addr.wrapping_add(len as u64 - 1), user)? == 0 {
                return Some(len);
            }
        }
        Some(MAX_STRING_SIZE)
    }
    // strncpy_from_{kernel,user}_nofault(), the user one's empty string included.
    fn read_str(&self, addr: u64, user: bool, buf: &mut [u8]) -> Option<usize> {
        let n = buf.len();
        for i in 0..n {
            let Some(c) = self.byte(addr.wrapping_add(i as u64), user) else {
                buf[0] = 0;
                return None;
            };
            buf[i] = c;
            if c == 0 {
                return Some(if user && i == 0 { 0 } else { i + 1 });
            }
        }
        buf[n - 1] = 0;
        Some(n)
    }
    fn symstr(&self, addr: u64, buf: &mut [u8]) -> usize {
        let text = match self.syms.iter().find(|(a, _)| *a == addr) {
            Some((_, s)) => String::from(*s),
            None => format!("0x{addr:x}"),
        };
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        n
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
