// SPDX-License-Identifier: GPL-2.0

//! What a probe hit can read, for the fetch programs of `events::program`: registers from
//! `ftrace_regs`, the entry data of a return probe, and memory through nofault copies.
//!
//! Every memory read goes through `copy_from_kernel_nofault()` or `copy_from_user_nofault()`:
//! a bad address makes the read fail (and the field record a fault), never an oops. Strings
//! are read a chunk at a time without crossing a page boundary, so that a string ending just
//! before an unmapped page reads fine.

use crate::events::program::{Env, MAX_STRING_SIZE};
use crate::sys::ftrace::Regs;
use crate::sys::ksym::{symbol_with_offset, SymbolBuf};
use crate::sys::nofault::{read_kernel, read_user, user_space_end};
use crate::sys::task::{current_comm_addr, TaskRef};

/// Bytes read per step when looking for a string's end.
const CHUNK: usize = 64;
const PAGE: u64 = 4096;

/// The state of one hit.
pub(super) struct HitEnv<'a> {
    /// The registers at entry (entry probes) or at return (exit probes).
    pub(super) regs: &'a Regs,
    /// A return probe's entry data: the arguments saved at entry, one word per slot.
    pub(super) data: &'a [u64],
    /// The largest `$stackN` index plus one (`THREAD_SIZE / sizeof(long)`).
    pub(super) thread_size: u64,
}

/// Reads memory as upstream's `probe_mem_read()`: where user and kernel addresses do not
/// overlap (x86_64, arm64), a "kernel" address below the end of user space is a user address
/// (a `char __user *` argument dereferenced without `+u`), read as such.
fn read(addr: u64, user: bool, buf: &mut [u8]) -> bool {
    if user || addr < user_space_end() {
        read_user(addr, buf)
    } else {
        read_kernel(addr, buf)
    }
}

/// Reads the NUL-terminated string at `addr` a page-bounded chunk at a time, giving each chunk
/// to `sink` (which returns false to stop). Returns the string's length including its NUL
/// (capped at `max`), or `None` if the first byte cannot be read or a later chunk faults.
fn walk_str(
    addr: u64,
    user: bool,
    max: usize,
    mut sink: impl FnMut(&[u8]) -> bool,
) -> Option<usize> {
    let mut chunk = [0u8; CHUNK];
    let mut done = 0usize;
    while done < max {
        let at = addr.wrapping_add(done as u64);
        let to_page = (PAGE - (at % PAGE)) as usize;
        let n = CHUNK.min(to_page).min(max - done);
        let c = chunk.get_mut(..n)?;
        if !read(at, user, c) {
            return None;
        }
        if let Some(nul) = c.iter().position(|&b| b == 0) {
            sink(c.get(..=nul)?);
            return Some(done + nul + 1);
        }
        if !sink(c) {
            return Some(done + n);
        }
        done += n;
    }
    Some(max)
}

impl Env for HitEnv<'_> {
    fn arg(&self, n: u16) -> u64 {
        self.regs.arg(n.into()) as u64
    }

    fn entry_slot(&self, slot: u8) -> u64 {
        self.data.get(usize::from(slot)).copied().unwrap_or(0)
    }

    fn retval(&self) -> u64 {
        self.regs.retval() as u64
    }

    fn stack(&self, n: u16) -> Option<u64> {
        // As regs_get_kernel_stack_nth(): only words of the stack the probe runs on.
        let sp = self.stack_pointer();
        let addr = sp.checked_add(u64::from(n) * 8)?;
        let size = self.thread_size * 8;
        if size == 0 || addr / size != sp / size {
            return None;
        }
        let mut w = [0u8; 8];
        read_kernel(addr, &mut w).then(|| u64::from_le_bytes(w))
    }

    fn stack_pointer(&self) -> u64 {
        self.regs.sp() as u64
    }

    fn comm(&self) -> u64 {
        current_comm_addr() as u64
    }

    fn current(&self) -> u64 {
        TaskRef::current().0 as u64
    }

    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        crate::sys::percpu::this_cpu_ptr(addr as usize) as u64
    }

    fn read(&self, addr: u64, user: bool, buf: &mut [u8]) -> bool {
        read(addr, user, buf)
    }

    fn strlen(&self, addr: u64, user: bool) -> Option<usize> {
        walk_str(addr, user, MAX_STRING_SIZE, |_| true)
    }

    fn read_str(&self, addr: u64, user: bool, buf: &mut [u8]) -> Option<usize> {
        let cap = buf.len();
        if cap == 0 {
            return Some(0);
        }
        let mut at = 0usize;
        let n = walk_str(addr, user, cap, |c| {
            let take = c.len().min(cap - at);
            if let (Some(d), Some(s)) = (buf.get_mut(at..at + take), c.get(..take)) {
                crate::sys::slice::copy(d, s);
            }
            at += take;
            at < cap
        })?;
        // Always NUL-terminated, as strncpy_from_kernel_nofault() leaves it.
        if let Some(last) = buf.get_mut(n.min(cap) - 1) {
            if n == cap {
                *last = 0;
            }
        }
        Some(n.min(cap))
    }

    fn symstr(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut tmp: SymbolBuf = [0; _];
        let n = symbol_with_offset(addr as usize, &mut tmp)
            .min(buf.len())
            .min(tmp.len());
        if let (Some(d), Some(s)) = (buf.get_mut(..n), tmp.get(..n)) {
            crate::sys::slice::copy(d, s);
        }
        n
    }
}
