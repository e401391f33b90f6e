// SPDX-License-Identifier: GPL-2.0

//! What differs between architectures on the Rust side: how a return matches its frame, how to
//! unwind through our trampoline, where teardown finds a return slot, and the hot path's per-CPU
//! and per-task primitives (`hot`, which lives in `sys`: inline assembly over kernel layouts).
//! The trampolines themselves are assembly, beside them here (`tramp_*.S`).
//! What both architectures share is here.

pub use crate::sys::hot;

#[cfg(CONFIG_X86_64)]
mod x86_64;
#[cfg(CONFIG_X86_64)]
pub use x86_64::*;

#[cfg(CONFIG_ARM64)]
mod arm64;
#[cfg(CONFIG_ARM64)]
pub use arm64::*;

/// Where a frame's task will take its return address from, as teardown sees it under
/// `stop_machine` (see `find_slot` in each architecture).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The word at `addr`, holding `value` now: teardown may rewrite it with a plain address.
    At {
        /// The word's address.
        addr: usize,
        /// What it holds.
        value: usize,
    },
    /// It cannot be known or written (arm64: signed, on a shadow call stack, the task is inside
    /// the trampoline or running, its frame records do not tell): teardown waits for the frame.
    Unknown,
    /// The call is no longer on its task's stack: it was abandoned and cannot return.
    Gone,
}
