// SPDX-License-Identifier: GPL-2.0

//! Running the programs at a probe hit: upstream's `process_fetch_insn()` (trace_fprobe.c) and
//! `process_fetch_insn_bottom()` (trace_probe_tmpl.h), with the memory accesses of
//! trace_probe_kernel.h behind [`Env`].

use super::super::probedef::{Bitfield, Deref, StoreKind};
use super::compile::{Origin, Program};
use super::make_data_loc;

/// The most bytes one string takes in a record, its NUL included (upstream's `MAX_STRING_SIZE`,
/// `PATH_MAX`).
pub const MAX_STRING_SIZE: usize = 4096;

/// The longest text `sprint_symbol()` writes, its NUL included (upstream's `KSYM_SYMBOL_LEN` on
/// a 64-bit kernel: `sizeof("%s+%#lx/%#lx [%s %s]")` + 511 + 2 * 19 + 55 + 40 + 1).
pub const KSYM_SYMBOL_LEN: usize = 666;

/// The highest offset a `__data_loc` can hold, plus one: no string data lies beyond it.
const DATA_LOC_END: usize = 0x1_0000;

/// What a probe hit can read: the kernel implements it over the hit's registers with nofault
/// copies; tests implement it over a fake memory.
///
/// Nothing here may fault or sleep: a read of a bad address reports failure.
pub trait Env {
    /// Function argument `n` (from 0) from the registers at entry, as
    /// `regs_get_kernel_argument()` gives it (0 when there is none).
    fn arg(&self, n: u16) -> u64;
    /// Exit probes: the `unsigned long` at index `slot` of the entry data the entry handler
    /// saved (see `ProbeDef::entry_args`).
    fn entry_slot(&self, slot: u8) -> u64;
    /// The return value (exit probes).
    fn retval(&self) -> u64;
    /// The `n`th `unsigned long` at the stack pointer, `None` when it lies outside the stack.
    /// Upstream's `regs_get_kernel_stack_nth()` then gives 0, and so do the programs.
    fn stack(&self, n: u16) -> Option<u64>;
    /// The stack pointer.
    fn stack_pointer(&self) -> u64;
    /// The address of `current->comm`, a kernel string.
    fn comm(&self) -> u64;
    /// The address of the current task's `task_struct` (`$current`).
    fn current(&self) -> u64;
    /// This CPU's copy of the per-CPU variable at per-CPU address `addr` (`this_cpu_ptr()`):
    /// an address computation, no read.
    fn this_cpu_ptr(&self, addr: u64) -> u64;
    /// Copies `buf.len()` bytes from `addr` in kernel (or, if `user`, user) memory:
    /// `copy_from_kernel_nofault()` / `copy_from_user_nofault()`. `false` if any byte faults.
    fn read(&self, addr: u64, user: bool, buf: &mut [u8]) -> bool;
    /// The length of the string at `addr`, its NUL included: `fetch_store_strlen()` /
    /// `strnlen_user_nofault(addr, MAX_STRING_SIZE)`. `None` (or `Some(0)`) on a fault. A string
    /// with no NUL in its first [`MAX_STRING_SIZE`] bytes counts as `MAX_STRING_SIZE`.
    fn strlen(&self, addr: u64, user: bool) -> Option<usize>;
    /// Copies the string at `addr` into `buf`, at most `buf.len()` bytes with the NUL, cutting
    /// it to `buf.len() - 1` bytes and a NUL if longer: `strncpy_from_kernel_nofault()` /
    /// `strncpy_from_user_nofault()`. Returns the bytes stored, NUL included; `None` on a
    /// fault. `Some(0)` is stored as a fault, which is what `strncpy_from_user_nofault()`
    /// returns for an empty user string (upstream shows it as `(fault)`).
    fn read_str(&self, addr: u64, user: bool, buf: &mut [u8]) -> Option<usize>;
    /// Writes the text `sprint_symbol()` makes of `addr` (`"sym+0x1/0x20"`, with `" [mod]"` for
    /// a module; no NUL) into `buf`, cut to `buf.len()` bytes, and returns its length; 0 if
    /// there is no text.
    fn symstr(&self, addr: u64, buf: &mut [u8]) -> usize;
}

/// Adds a C `int` offset to an `unsigned long`, as upstream's pointer arithmetic does.
fn offset(val: u64, offset: i32) -> u64 {
    val.wrapping_add(i64::from(offset) as u64)
}

fn read_ulong(env: &impl Env, addr: u64, user: bool) -> Option<u64> {
    let mut word = [0u8; 8];
    env.read(addr, user, &mut word)
        .then_some(u64::from_le_bytes(word))
}

/// One stage-2 dereference of `val`, or its per-CPU conversion. A null per-CPU address fails
/// as a fault would (no variable is there; upstream's later versions refuse it too).
fn deref(env: &impl Env, val: u64, d: &Deref) -> Option<u64> {
    if d.cpu {
        return (val != 0).then(|| env.this_cpu_ptr(val));
    }
    read_ulong(env, offset(val, d.offset), d.user)
}

/// Stage 1.
fn load(p: &Program, env: &impl Env) -> u64 {
    match p.origin() {
        Origin::Arg(n) => env.arg(n),
        Origin::EntryArg { slot, .. } => env.entry_slot(slot),
        Origin::Retval => env.retval(),
        Origin::Stack(n) => env.stack(n).unwrap_or(0),
        Origin::StackPointer => env.stack_pointer(),
        Origin::Comm => env.comm(),
        Origin::Current => env.current(),
        Origin::Imm(v) => v,
        // Not an address: the string store reads the program's text.
        Origin::ImmStr(()) => 0,
        // No `Symbol` arm: an origin cannot hold one (`NoSymbol` has no value).
    }
}

/// Stages 1 and 2: the value, and `lval`, the value the last dereference read from (upstream's
/// `lval`, where an array of strings finds its next pointer). `None` if a dereference faults,
/// which ends upstream's fetch.
fn walk(p: &Program, env: &impl Env) -> Option<(u64, u64)> {
    let mut val = load(p, env);
    let mut lval = val;
    for d in p.derefs() {
        lval = val;
        val = deref(env, val, d)?;
    }
    Some((val, lval))
}

/// Where a string store reads its string.
#[derive(Clone, Copy)]
enum Source<'p> {
    /// A string in memory.
    Mem { addr: u64, user: bool },
    /// The program's immediate string, from the store's offset on.
    Imm(&'p [u8]),
    /// The symbol text of an address.
    Sym(u64),
}

/// Stage 3 of a string program: where the string of value `val` is.
fn source(p: &Program, val: u64) -> Option<Source<'_>> {
    let store = p.store();
    let addr = offset(val, store.offset);
    Some(match store.kind {
        StoreKind::SymString => Source::Sym(addr),
        _ if p.origin() == Origin::ImmStr(()) && p.derefs().is_empty() => {
            let text = p.imm_str().as_bytes();
            Source::Imm(text.get(usize::try_from(store.offset).ok()?..)?)
        }
        StoreKind::UserString => Source::Mem { addr, user: true },
        _ => Source::Mem { addr, user: false },
    })
}

/// Runs a string program, stages 1, 2, 3's address and 5: calls `each(i, source)` for each
/// element `i`, the source `None` where the element faults.
///
/// Element `i > 0` of an array of strings is the string whose pointer lies 8 bytes after the
/// previous element's: upstream goes back to `lval`, adds `sizeof(char *)`, and redoes the last
/// dereference. Without a dereference upstream fails the whole argument (`-EILSEQ`), and so
/// does this. Once an element faults, the later ones do too (upstream stops there).
fn for_each_string<'p>(
    p: &'p Program,
    env: &impl Env,
    mut each: impl FnMut(usize, Option<Source<'p>>),
) {
    let last = p.derefs().last().copied();
    let mut walked = walk(p, env);
    if p.count() > 0 && last.is_none() {
        walked = None;
    }
    for i in 0..usize::from(p.count().max(1)) {
        if i > 0 {
            walked = match (walked, last) {
                (Some((_, lval)), Some(d)) => {
                    let at = lval.wrapping_add(8);
                    deref(env, at, &d).map(|val| (val, at))
                }
                _ => None,
            };
        }
        each(i, walked.and_then(|(val, _)| source(p, val)));
    }
}

/// Bytes of a string, NUL included, as the first pass measures it.
fn measure(src: Source<'_>, env: &impl Env) -> usize {
    let len = match src {
        Source::Mem { addr, user } => env.strlen(addr, user).unwrap_or(0),
        // strlen() of a copy: up to a NUL, if the text holds one.
        Source::Imm(text) => text.iter().position(|&c| c == 0).unwrap_or(text.len()) + 1,
        // fetch_store_symstrlen(): the text and its NUL.
        Source::Sym(addr) => {
            let mut buf = [0u8; KSYM_SYMBOL_LEN - 1];
            match env.symstr(addr, &mut buf) {
                0 => 0,
                n => n.min(buf.len()) + 1,
            }
        }
    };
    len.min(MAX_STRING_SIZE)
}

/// Copies a string into `buf` (not empty), NUL included, cut to fit; returns the bytes stored,
/// 0 on a fault.
fn copy(src: Source<'_>, env: &impl Env, buf: &mut [u8]) -> usize {
    let stored = match src {
        Source::Mem { addr, user } => env.read_str(addr, user, buf).unwrap_or(0),
        Source::Imm(text) => {
            // strncpy_from_kernel_nofault() from the copy upstream keeps.
            let text = text.split(|&c| c == 0).next().unwrap_or(&[]);
            let len = text.len().min(buf.len().saturating_sub(1));
            if let (Some(dst), Some(src)) = (buf.get_mut(..len), text.get(..len)) {
                crate::sys::slice::copy(dst, src);
            }
            match buf.get_mut(len) {
                Some(nul) => {
                    *nul = 0;
                    len + 1
                }
                None => 0,
            }
        }
        Source::Sym(addr) => {
            let room = buf.len().saturating_sub(1).min(KSYM_SYMBOL_LEN - 1);
            let len = match buf.get_mut(..room) {
                Some(text) => env.symstr(addr, text).min(room),
                None => 0,
            };
            match buf.get_mut(len) {
                Some(nul) if len > 0 => {
                    *nul = 0;
                    len + 1
                }
                _ => 0,
            }
        }
    };
    stored.min(buf.len())
}

/// The first pass (upstream's `__get_data_size()`): bytes of dynamic data the strings of this
/// hit take, to reserve after the fixed fields.
pub fn dynamic_size(progs: &[Program], env: &impl Env) -> usize {
    let mut total = 0usize;
    for p in progs.iter().filter(|p| p.stores_string()) {
        for_each_string(p, env, |_, src| {
            total = total.saturating_add(src.map_or(0, |s| measure(s, env)));
        });
    }
    total
}

/// The second pass (upstream's `store_trace_args()`): fills the argument fields of `rec`, the
/// whole record from its `trace_entry` on, whose head takes `head` bytes and whose argument
/// fields take `args_size` (`ProbeDef::args_size`).
///
/// Fixed fields go at `rec[head + offset]`, string data from `rec[head + args_size]` on, each
/// string's field a `__data_loc` (see the module's diagram). `rec.len()` bounds everything:
/// what does not fit is not written, and a string that does not fit is cut, or a fault when no
/// byte is left. A numeric field whose read faults is 0; a string that faults has length 0.
pub fn store(progs: &[Program], env: &impl Env, rec: &mut [u8], head: usize, args_size: usize) {
    let fixed_end = head.saturating_add(args_size);
    if let Some(fixed) = rec.get_mut(head..fixed_end.min(rec.len())) {
        fixed.fill(0);
    }
    let end = rec.len().min(DATA_LOC_END);
    // Where the next string goes.
    let mut cursor = fixed_end;
    for p in progs {
        let base = head.saturating_add(p.offset());
        if !p.stores_string() {
            store_fixed(p, env, rec, base);
            continue;
        }
        for_each_string(p, env, |i, src| {
            let room = end.saturating_sub(cursor).min(MAX_STRING_SIZE);
            // No room left: upstream's fetch_store_string() fails with -ENOMEM.
            let used = match (src, rec.get_mut(cursor..cursor.saturating_add(room))) {
                (Some(src), Some(buf)) if room > 0 => copy(src, env, buf),
                _ => 0,
            };
            let at = base.saturating_add(4 * i);
            put(rec, at, &make_data_loc(used, cursor).to_le_bytes());
            cursor += used;
        });
    }
}

/// Writes `bytes` at `rec[at..]` if they fit.
fn put(rec: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = rec.get_mut(at..at.saturating_add(bytes.len())) {
        crate::sys::slice::copy(dst, bytes);
    }
}

/// Stages 1 to 5 of a numeric program, into the field at `rec[base..]` (zeroed).
fn store_fixed(p: &Program, env: &impl Env, rec: &mut [u8], base: usize) {
    // A faulting dereference leaves the field as it is.
    let Some((val, _)) = walk(p, env) else { return };
    let store = p.store();
    let size = usize::from(store.size);
    for i in 0..usize::from(p.count().max(1)) {
        let at = base.saturating_add(i * size);
        let Some(dest) = rec.get_mut(at..at.saturating_add(size)) else {
            return;
        };
        // Array elements follow each other in memory, and in the record.
        let val = val.wrapping_add((i * size) as u64);
        match store.kind {
            StoreKind::Raw => {
                if let Some(bytes) = val.to_le_bytes().get(..size) {
                    crate::sys::slice::copy(dest, bytes);
                }
            }
            StoreKind::Mem | StoreKind::UserMem => {
                let user = store.kind == StoreKind::UserMem;
                if !env.read(offset(val, store.offset), user, dest) {
                    dest.fill(0);
                }
            }
            StoreKind::String | StoreKind::UserString | StoreKind::SymString => return,
        }
        if let Some(bf) = p.bitfield() {
            apply_bitfield(bf, dest);
        }
    }
}

/// Stage 4 (`fetch_apply_bitfield()`): `x = (x << lshift) >> rshift` in the container's width.
/// Shifts of the whole width or more give 0 (upstream's C would be undefined there; the parser
/// only makes them from absurd widths).
fn apply_bitfield(bf: Bitfield, dest: &mut [u8]) {
    let n = usize::from(bf.basesize);
    let mut raw = [0u8; 8];
    let (Some(field), Some(word)) = (dest.get_mut(..n), raw.get_mut(..n)) else {
        return;
    };
    crate::sys::slice::copy(word, field);
    let bits = 8 * n as u32;
    let mask = u64::MAX >> (64 - bits.clamp(1, 64));
    let mut x = u64::from_le_bytes(raw);
    x = if u32::from(bf.lshift) < bits {
        (x << bf.lshift) & mask
    } else {
        0
    };
    x = if u32::from(bf.rshift) < bits {
        x >> bf.rshift
    } else {
        0
    };
    if let Some(bytes) = x.to_le_bytes().get(..n) {
        crate::sys::slice::copy(field, bytes);
    }
}
