// SPDX-License-Identifier: GPL-2.0

//! A fake probe hit, the [`Env`] of the host's tests (`tests/`) and of the fuzzer
//! (`host/fuzz/src/event.rs`): registers, and kernel and user memories as byte maps where every
//! byte not in the map faults. Never built into the module: only for `cargo test` of this crate
//! (`cfg(test)`) and for crates that turn on `ufgraph-pure`'s `fake` feature (host/Cargo.toml).
//!
//! Memory comes in two forms, read in this order: whole regions (cheap to build and read: the
//! fuzzer draws a fresh memory for every hit), and byte maps (any byte anywhere, and any byte
//! taken away again: the tests).
//!
//! Each `Env` method behaves as the kernel function it stands for (see the trait), faults
//! included, so what the tests and the fuzzer see is what a probe hit would store.

use super::{Env, MAX_STRING_SIZE};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::string::String;
use std::vec::Vec;

/// A probe hit: registers, and separate kernel and user memories (byte maps).
#[derive(Clone, Debug, Default)]
pub struct Fake {
    /// Function arguments (`$argN` is `args[N - 1]`); past the end, 0.
    pub args: Vec<u64>,
    /// The entry data words an exit probe reads; past the end, 0.
    pub slots: Vec<u64>,
    /// The return value.
    pub retval: u64,
    /// The words at the stack pointer; past the end, outside the stack.
    pub stack: Vec<u64>,
    /// The stack pointer.
    pub sp: u64,
    /// The address of `current->comm` (its text is in `kmem`, like any kernel string).
    pub comm: u64,
    /// The address of the current `task_struct`.
    pub current: u64,
    /// This CPU's per-CPU offset (`this_cpu_ptr()` adds it).
    pub cpu_offset: u64,
    /// Memory in whole regions, read before the maps.
    pub regions: Vec<Region>,
    /// Kernel memory, byte by byte.
    pub kmem: BTreeMap<u64, u8>,
    /// User memory, byte by byte.
    pub umem: BTreeMap<u64, u8>,
    /// Symbol texts of known addresses.
    pub syms: Vec<(u64, &'static str)>,
    /// The text of an address `syms` does not know: with `None`, `0x<addr>`; with a salt, a
    /// text made from the address and the salt, in `sprint_symbol()`'s forms (`" [mod]"`
    /// included), or none at all for some addresses (changing the salt changes them all).
    pub sym_salt: Option<u64>,
    /// Whether an empty user string reads as `strncpy_from_user_nofault()` returns it, 0 bytes
    /// (which is stored as a fault, though its NUL was measured), or as a string of one byte,
    /// its NUL, as a kernel string is.
    pub empty_user_str_is_zero: bool,
}

/// Bytes from `start`, in kernel or (`user`) user memory.
#[derive(Clone, Debug, Default)]
pub struct Region {
    /// User memory, not kernel memory.
    pub user: bool,
    /// The address of `bytes[0]`.
    pub start: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

impl Fake {
    fn mem(&self, user: bool) -> &BTreeMap<u64, u8> {
        if user {
            &self.umem
        } else {
            &self.kmem
        }
    }

    /// Kernel bytes `b` at `at`.
    pub fn kbytes(&mut self, at: u64, b: &[u8]) {
        for (i, &c) in b.iter().enumerate() {
            self.kmem.insert(at + i as u64, c);
        }
    }

    /// User bytes `b` at `at`.
    pub fn ubytes(&mut self, at: u64, b: &[u8]) {
        for (i, &c) in b.iter().enumerate() {
            self.umem.insert(at + i as u64, c);
        }
    }

    /// A kernel word (little-endian) at `at`.
    pub fn kword(&mut self, at: u64, v: u64) {
        self.kbytes(at, &v.to_le_bytes());
    }

    /// A user word (little-endian) at `at`.
    pub fn uword(&mut self, at: u64, v: u64) {
        self.ubytes(at, &v.to_le_bytes());
    }

    /// A kernel string and its NUL at `at`.
    pub fn kstr(&mut self, at: u64, s: &str) {
        self.kbytes(at, s.as_bytes());
        self.kbytes(at + s.len() as u64, &[0]);
    }

    /// A user string and its NUL at `at`.
    pub fn ustr(&mut self, at: u64, s: &str) {
        self.ubytes(at, s.as_bytes());
        self.ubytes(at + s.len() as u64, &[0]);
    }

    /// The byte at `addr`, `None` if it faults.
    pub fn byte(&self, addr: u64, user: bool) -> Option<u8> {
        for r in self.regions.iter().filter(|r| r.user == user) {
            if let Some(&b) = usize::try_from(addr.wrapping_sub(r.start))
                .ok()
                .and_then(|off| r.bytes.get(off))
            {
                return Some(b);
            }
        }
        self.mem(user).get(&addr).copied()
    }

    /// The symbol text of `addr`, `None` if there is none.
    fn sym_text(&self, addr: u64) -> Option<String> {
        if let Some((_, s)) = self.syms.iter().find(|(a, _)| *a == addr) {
            return Some(String::from(*s));
        }
        let mut text = String::new();
        let Some(salt) = self.sym_salt else {
            let _ = write!(text, "0x{addr:x}");
            return Some(text);
        };
        let h = (addr ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        if h.is_multiple_of(7) {
            return None;
        }
        let _ = write!(
            text,
            "sym{:x}+0x{:x}/0x{:x}",
            h >> 40,
            h % 256,
            256 + h % 1024
        );
        if h.is_multiple_of(3) {
            text.push_str(" [mod]");
        }
        Some(text)
    }
}

impl Env for Fake {
    fn arg(&self, n: u16) -> u64 {
        self.args.get(usize::from(n)).copied().unwrap_or(0)
    }
    fn entry_slot(&self, slot: u8) -> u64 {
        self.slots.get(usize::from(slot)).copied().unwrap_or(0)
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
        self.comm
    }
    fn current(&self) -> u64 {
        self.current
    }
    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        addr.wrapping_add(self.cpu_offset)
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
    // strncpy_from_{kernel,user}_nofault(), the user one's empty string as
    // `empty_user_str_is_zero` says: a fault leaves an empty string in `buf`.
    fn read_str(&self, addr: u64, user: bool, buf: &mut [u8]) -> Option<usize> {
        let n = buf.len();
        for i in 0..n {
            let Some(c) = self.byte(addr.wrapping_add(i as u64), user) else {
                buf[0] = 0;
                return None;
            };
            buf[i] = c;
            if c == 0 {
                let empty_user = user && i == 0 && self.empty_user_str_is_zero;
                return Some(if empty_user { 0 } else { i + 1 });
            }
        }
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
        Some(n)
    }
    fn symstr(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Some(text) = self.sym_text(addr) else {
            return 0;
        };
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        n
    }
}
