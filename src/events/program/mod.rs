// SPDX-License-Identifier: GPL-2.0

//! fprobe event records: filling them at a probe hit and showing them.
//!
//! [`probedef`](super::probedef) parses an event definition; this module turns each of its fetch
//! arguments into a self-contained [`Program`] ([`compile`]), runs the programs when the probe
//! hits ([`dynamic_size`], then [`store`]), and renders the record as upstream's `trace` file
//! shows it ([`render_args`]) and describes it in the `format` file ([`write_print_fmt`],
//! [`Program::write_field_type`]). It follows upstream 6.12's kernel/trace/trace_probe.c,
//! trace_probe_tmpl.h, trace_probe_kernel.h and trace_fprobe.c, for a 64-bit little-endian
//! kernel.
//!
//! # The record
//!
//! One probe hit writes one ring-buffer record. Its layout is upstream's, so that tools reading
//! the `format` file decode it:
//!
//! ```text
//!  rec[0]            +----------------------------------------+
//!                    | struct trace_entry (type, flags,       |  TRACE_ENTRY_SIZE bytes,
//!                    |   preempt_count, pid)                  |  written by the ring buffer
//!                    +----------------------------------------+
//!                    | entry probe: __probe_ip         (at 8) |  the head: ENTRY_HEAD or
//!                    | exit probe:  __probe_func       (at 8) |  EXIT_HEAD bytes, written
//!                    |              __probe_ret_ip    (at 16) |  by the caller
//!  rec[head]         +----------------------------------------+
//!                    | arg1   at head + offset of arg1        |  the fixed fields: args_size
//!                    | arg2   (u8..u64, or a u32 __data_loc   |  bytes, in definition order,
//!                    |        per string, or an array of      |  packed (no alignment, as
//!                    |        either)                         |  upstream), zeroed first
//!  rec[head +        +----------------------------------------+
//!      args_size]    | "str1\0"  <-- data_loc of str1 = (5 << 16) | offset of 's'
//!                    | "s2\0"    <-- data_loc of s2   = (3 << 16) | offset of 's'
//!                    | ...                                    |  the dynamic data: as many
//!  rec[rec.len()]    +----------------------------------------+  bytes as dynamic_size said
//! ```
//!
//! A `__data_loc` is a `u32`: the string's length in bytes, its NUL included, in the high 16
//! bits; its offset from the start of the *record* (`rec[0]`, not the fixed fields) in the low
//! 16 bits. Length 0 means the string could not be read, shown as `(fault)`.
//!
//! # Two passes
//!
//! Upstream sizes the record before reserving it: [`dynamic_size`] runs the string programs once
//! to measure their strings (upstream's `__get_data_size()`); the caller reserves
//! `head + args_size + dynamic_size` bytes; [`store`] runs every program again and writes the
//! record (`store_trace_args()`). Memory may change in between: a string that grew is cut to
//! the room left, one that can no longer be read is a fault, and nothing is ever written past
//! the end of the record.
//!
//! # Where this differs from upstream
//!
//! Only where upstream leaves stale or inconsistent bytes in the record:
//!
//! - the fixed fields are zeroed before they are filled, so a field whose read faults is 0
//!   (upstream leaves whatever the ring buffer held there, or a partial copy);
//! - a string whose address cannot be computed (a dereference faults) gets length 0 at the
//!   current end of the dynamic data (upstream leaves the length of *all* the room left, which
//!   shows the next string's text, or garbage);
//! - an array of strings whose pointers fault part-way keeps the elements read so far, which
//!   the first pass counts, and the elements after the fault are faults (upstream counts none
//!   of them, forgets the room the first ones took, and leaves the later elements'
//!   `__data_loc`s unwritten);
//! - a `symstr` is stored with its NUL and its own length, taking the room measured for it
//!   (upstream stores the length of all the room left and moves on without the NUL, so that a
//!   following string overwrites it);
//! - one string takes at most [`MAX_STRING_SIZE`] bytes, the most the first pass measures
//!   (upstream lets a string that grew since take all the room left, faulting the strings
//!   after it).
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

#![forbid(unsafe_code)]

mod compile;
mod render;
mod run;

#[cfg(any(test, feature = "fake"))]
pub mod fake;
#[cfg(test)]
mod tests;

pub use compile::{compile, CompileError, Origin, Program, MAX_IMMSTR_LEN};
pub use render::{render_args, write_print_fmt, Out, FAULT_STRING};
pub use run::{dynamic_size, store, Env, KSYM_SYMBOL_LEN, MAX_STRING_SIZE};

/// Bytes of `struct trace_entry` on a 64-bit kernel: the head of every trace record.
pub const TRACE_ENTRY_SIZE: usize = 8;

/// Bytes of the head of an entry probe's record (`struct fentry_trace_entry_head`): the trace
/// entry, then `unsigned long ip` (field `__probe_ip`, at [`TRACE_ENTRY_SIZE`]).
pub const ENTRY_HEAD: usize = 16;

/// Bytes of the head of an exit probe's record (`struct fexit_trace_entry_head`): the trace
/// entry, then `unsigned long func` (field `__probe_func`, at 8) and `unsigned long ret_ip`
/// (field `__probe_ret_ip`, at 16).
pub const EXIT_HEAD: usize = 24;

/// `make_data_loc()`: a `__data_loc` for `len` bytes at `offset` from the start of the record.
/// Both are cut to their 16 bits, as upstream's macro cuts them.
pub const fn make_data_loc(len: usize, offset: usize) -> u32 {
    (((len & 0xffff) as u32) << 16) | ((offset & 0xffff) as u32)
}

/// The length (its NUL included) and the offset from the start of the record of a
/// `__data_loc`: `get_loc_len()` and `get_loc_offs()`.
pub const fn split_data_loc(loc: u32) -> (usize, usize) {
    ((loc >> 16) as usize, (loc & 0xffff) as usize)
}
