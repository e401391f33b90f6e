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

extern "C" {
    // The online CPUs: a bitmap of NR_CPUS bits (the same symbol on every architecture).
    static __cpu_online_mask: usize;
}

/// `cpu_online(cpu)`, inline (the hot path's guard asks it on every hooked call).
#[inline(always)]
pub fn cpu_online(cpu: usize) -> bool {
    let bits = usize::BITS as usize;
    // SAFETY: `__cpu_online_mask` is a bitmap of NR_CPUS bits, and `cpu` a CPU number (below
    // nr_cpu_ids <= NR_CPUS): the word is inside it. A plain racy read, as cpu_online() does.
    let w = unsafe {
        core::ptr::addr_of!(__cpu_online_mask)
            .add(cpu / bits)
            .read_volatile()
    };
    w & (1 << (cpu % bits)) != 0
}
