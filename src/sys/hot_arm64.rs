// SPDX-License-Identifier: GPL-2.0

//! arm64: the hot path's primitives, inline. Every hooked entry and return needs the current
//! task, the CPU number, the preempt count and ftrace's recursion bits; as calls into the C glue
//! they cost a call, a return and a frame each. Here they are what the kernel's inline helpers
//! compile to: `current` is `sp_el0`, the CPU number and the preempt count are fields of its
//! `thread_info` (the first member of `task_struct`), and `context_tracking` is found through
//! `__per_cpu_offset[cpu]` (the kernel reads `tpidr_el1`, or `tpidr_el2` under VHE, which an
//! alternative patches in: a module's Rust cannot carry that alternative, the offset table is the
//! same answer).

use crate::bindings as b;
use core::arch::asm;

extern "C" {
    static context_tracking: u8;
    // At its full size (NR_CPUS): reading any entry stays inside the object Rust is told of.
    static __per_cpu_offset: [usize; b::UFG_NR_CPUS];
}

/// The current task (`current`: `sp_el0` while in the kernel).
#[inline(always)]
pub fn current() -> usize {
    let v: usize;
    // SAFETY: reads sp_el0, which holds `current` in the kernel, as get_current() does.
    unsafe { asm!("mrs {v}, sp_el0", v = out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

#[inline(always)]
fn field<T>(off: usize) -> *mut T {
    current().wrapping_add(off) as *mut T
}

/// The CPU this code runs on (`raw_smp_processor_id()`): stable only with preemption disabled.
#[inline(always)]
pub fn cpu() -> usize {
    // SAFETY: the current task's `thread_info.cpu`.
    unsafe { field::<u32>(b::UFG_TASK_TI_CPU).read_volatile() as usize }
}

/// `preempt_count()`: the low 32 bits of `thread_info.preempt_count` (the high ones are the
/// inverted need-resched flag).
#[inline(always)]
pub fn preempt_count() -> u32 {
    // SAFETY: the current task's preempt count.
    unsafe { field::<u32>(b::UFG_TASK_TI_PREEMPT).read_volatile() }
}

/// [`preempt_count`] as a machine word, for masks and tests.
#[inline(always)]
pub fn preempt_count_word() -> usize {
    preempt_count() as usize
}

/// Whether this is task context, as `interrupt_context_level() == 0` says.
#[inline(always)]
pub fn in_task_context() -> bool {
    preempt_count_word() & (b::UFG_NMI_MASK | b::UFG_HARDIRQ_MASK | b::UFG_SOFTIRQ_OFFSET) == 0
}

/// `preempt_disable_notrace()`.
#[inline(always)]
pub fn preempt_disable() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: the current task's count, which only it changes (interrupts restore theirs).
    unsafe {
        let p = field::<u32>(b::UFG_TASK_TI_PREEMPT);
        p.write_volatile(p.read_volatile().wrapping_add(1));
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// `preempt_enable_notrace()`: balances [`preempt_disable`]; on preemptible kernels reschedules
/// if the count dropped to zero with a reschedule pending (arm64's `__preempt_count_dec_and_test`).
///
/// # Safety
///
/// Balances a [`preempt_disable`] of this task whose witnesses (a `NoPreempt`, references the
/// RCU-sched read side lent out) are all gone: preemption may be on after it.
#[inline(always)]
pub unsafe fn preempt_enable() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: as above.
    unsafe {
        let whole = field::<u64>(b::UFG_TASK_TI_PREEMPT);
        let pc = whole.read_volatile().wrapping_sub(1);
        field::<u32>(b::UFG_TASK_TI_PREEMPT).write_volatile(pc as u32);
        #[cfg(CONFIG_PREEMPTION)]
        if pc == 0 || whole.read_volatile() == 0 {
            b::ufg_preempt_schedule_notrace();
        }
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// `rcu_is_watching()` on this CPU (with preemption disabled by the caller).
#[inline(always)]
pub fn rcu_watching() -> bool {
    // SAFETY: `__per_cpu_offset` has nr_cpu_ids entries and `cpu()` is below it; the per-CPU
    // copy of `context_tracking` lies at the symbol plus this CPU's offset.
    unsafe {
        let off = core::ptr::addr_of!(__per_cpu_offset)
            .cast::<usize>()
            .add(cpu())
            .read();
        let ct = (core::ptr::addr_of!(context_tracking) as usize).wrapping_add(off);
        ((ct + b::UFG_CT_STATE) as *const u32).read_volatile() & b::UFG_CT_RCU_WATCHING as u32 != 0
    }
}

pub use crate::sys::task::cpu_online_bit as cpu_online;

/// Where `struct ftrace_regs` keeps what callbacks read (byte offsets): x0..x8, fp, lr, sp, pc.
pub mod fregs {
    use crate::bindings as b;

    /// The instruction pointer.
    pub const IP: usize = b::UFG_FREGS_PC;
    /// The stack pointer.
    pub const SP: usize = b::UFG_FREGS_SP;
    /// The return value register (x0), at a return.
    pub const RETVAL: usize = b::UFG_FREGS_X0;
    /// The argument registers, in order (AAPCS64: x0..x7).
    pub const ARGS: [usize; 8] = {
        let mut a = [0; 8];
        let mut i = 0;
        while i < 8 {
            a[i] = b::UFG_FREGS_X0 + 8 * i;
            i += 1;
        }
        a
    };

    /// Where the return address of the function being entered lives: the `lr` field, which
    /// ftrace_caller loads into x30 before the function's body runs.
    ///
    /// # Safety
    ///
    /// `f` must be valid entry registers.
    #[inline(always)]
    pub unsafe fn retp(f: *mut crate::sys::ftrace::RawFregs) -> *mut usize {
        // SAFETY: the address of a field of valid registers (caller).
        unsafe { f.cast::<u8>().add(b::UFG_FREGS_LR).cast::<usize>() }
    }
}
