// SPDX-License-Identifier: GPL-2.0

//! x86_64: the hot path's primitives, inline. Every hooked entry and return needs the current
//! task, the CPU number, the preempt count and ftrace's recursion bits; as calls into the C glue
//! they cost a call, a return (through the return thunk when there is one) and a frame each.
//! Here they are what the kernel's own inline helpers compile to: `%gs`-relative loads from the
//! per-CPU `pcpu_hot` (`current`, `raw_smp_processor_id()`, `preempt_count()`) and
//! `context_tracking` (`rcu_is_watching()`), and a load from `__cpu_online_mask`.
//!
//! Per-CPU symbols are offsets from the CPU's `%gs` base (the per-CPU section is linked at 0),
//! so they are addressed absolutely, never RIP-relative: AT&T syntax says so plainly.

use crate::bindings as b;
use core::arch::asm;

extern "C" {
    // Per-CPU variables: their addresses are offsets from %gs.
    static pcpu_hot: u8;
    static context_tracking: u8;
}

/// The current task (`current`).
#[inline(always)]
pub fn current() -> usize {
    let v: usize;
    // The task running this code stays current on this CPU until it is switched out, and a
    // switch changes the value for the task that comes in, not for us.
    // SAFETY: a %gs-relative load of this CPU's `pcpu_hot.current_task`, as `current` reads it;
    // `pcpu_hot` is an exported per-CPU variable, so the offset is valid on every CPU.
    unsafe {
        asm!("movq %gs:{hot}+{off}, {v}", hot = sym pcpu_hot, off = const b::UFG_PCPU_CURRENT, v = out(reg) v,
            options(att_syntax, nostack, readonly, preserves_flags))
    };
    v
}

/// The CPU this code runs on (`raw_smp_processor_id()`): stable only with preemption disabled.
#[inline(always)]
pub fn cpu() -> usize {
    let v: usize;
    // A 32-bit load zeroes the register's upper half, so `v` is the number as it is (the
    // compiler, told of a `u32`, would zero-extend it once more).
    // SAFETY: reads this CPU's `pcpu_hot.cpu_number`, an exported per-CPU variable, only.
    unsafe {
        asm!("movl %gs:{hot}+{off}, {v:e}", hot = sym pcpu_hot, off = const b::UFG_PCPU_CPU, v = out(reg) v,
            options(att_syntax, nostack, readonly, preserves_flags))
    };
    v
}

/// `preempt_count()`: the preemption, softirq, hardirq and NMI counts (without x86's folded
/// need-resched bit).
#[inline(always)]
pub fn preempt_count() -> u32 {
    // The count is 32 bits; the word's upper half is clear.
    preempt_count_word() as u32
}

/// [`preempt_count`] as a machine word, for masks and tests: the 32-bit load already clears the
/// register's upper half, which the compiler does not know of a `u32` from `asm!` (it would
/// zero-extend it again, one instruction per hooked call).
#[inline(always)]
pub fn preempt_count_word() -> usize {
    let v: usize;
    // A 32-bit load into the low half of a 64-bit register zeroes its upper half, so `v` is the
    // count zero-extended.
    // SAFETY: reads this CPU's `pcpu_hot.preempt_count`, an exported per-CPU variable, only.
    unsafe {
        asm!("movl %gs:{hot}+{off}, {v:e}", hot = sym pcpu_hot, off = const b::UFG_PCPU_PREEMPT, v = out(reg) v,
            options(att_syntax, nostack, readonly, preserves_flags))
    };
    v & !b::UFG_PREEMPT_NEED_RESCHED
}

/// Whether this is task context, as `interrupt_context_level() == 0` says: no NMI, hardirq or
/// softirq being served in the preempt count. Tested in memory, straight to a branch.
#[inline(always)]
pub fn in_task_context() -> bool {
    const IRQ: usize = b::UFG_NMI_MASK | b::UFG_HARDIRQ_MASK | b::UFG_SOFTIRQ_OFFSET;
    const _: () = assert!(IRQ <= i32::MAX as usize);
    // SAFETY: a test of this CPU's `pcpu_hot.preempt_count`, as `preempt_count()` reads it.
    unsafe {
        asm!("testl ${irq}, %gs:{hot}+{off}", "jne {irqs}", hot = sym pcpu_hot, off = const b::UFG_PCPU_PREEMPT,
            irq = const IRQ, irqs = label { return false; },
            options(att_syntax, nostack, readonly))
    };
    true
}

/// `preempt_disable_notrace()`: a compiler barrier, and with a preempt count, one
/// (not locked) increment of it.
#[inline(always)]
pub fn preempt_disable() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: this CPU's preempt count, as preempt_disable() increments it: per CPU, and only
    // ever balanced by the same CPU (preemption is off in between).
    unsafe {
        asm!("incl %gs:{hot}+{off}", hot = sym pcpu_hot, off = const b::UFG_PCPU_PREEMPT, options(att_syntax, nostack))
    };
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// `preempt_enable_notrace()`: balances [`preempt_disable`], and on preemptible kernels
/// reschedules if the count dropped to zero with a reschedule pending (the folded bit).
///
/// # Safety
///
/// Balances a [`preempt_disable`] of this task whose witnesses (a `NoPreempt`, references the
/// RCU-sched read side lent out) are all gone: preemption may be on after it.
#[inline(always)]
pub unsafe fn preempt_enable() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(all(CONFIG_PREEMPT_COUNT, not(CONFIG_PREEMPTION)))]
    // SAFETY: balances the increment of `preempt_disable` on this CPU.
    unsafe {
        asm!("decl %gs:{hot}+{off}", hot = sym pcpu_hot, off = const b::UFG_PCPU_PREEMPT, options(att_syntax, nostack))
    };
    // With preemption: the decrement's zero flag goes straight to the branch, as the kernel's
    // `__preempt_count_dec_and_test()` (`GEN_UNARY_RMWcc`, an asm goto) does: zero means the
    // count dropped to zero with the folded need-resched bit clear, so a reschedule is pending.
    #[cfg(CONFIG_PREEMPTION)]
    // SAFETY: balances `preempt_disable`'s increment on this CPU (the caller's contract).
    unsafe {
        asm!("decl %gs:{hot}+{off}", "je {resched}", hot = sym pcpu_hot, off = const b::UFG_PCPU_PREEMPT,
            resched = label {
                // SAFETY: the count is zero and a reschedule is pending: what
                // `__preempt_schedule_notrace()` is called for.
                unsafe { b::ufg_preempt_schedule_notrace() };
            },
            options(att_syntax, nostack))
    };
}

/// `rcu_is_watching()` on this CPU (with preemption disabled by the caller).
#[inline(always)]
pub fn rcu_watching() -> bool {
    // The flag tested in memory, the result straight to a branch: two instructions.
    const _: () = assert!(b::UFG_CT_RCU_WATCHING as u64 <= i32::MAX as u64);
    // SAFETY: a test of this CPU's `context_tracking.state`, as rcu_is_watching() reads it.
    unsafe {
        asm!("testl ${bit}, %gs:{ct}+{off}", "je {no}", ct = sym context_tracking, off = const b::UFG_CT_STATE,
            bit = const b::UFG_CT_RCU_WATCHING, no = label { return false; },
            options(att_syntax, nostack, readonly))
    };
    true
}

/// `cpu_online(cpu)`, inline: one `bt` on `__cpu_online_mask` as the kernel's
/// `variable_test_bit()` does (a bit offset in a register addresses the whole bitmap), rather
/// than a word index, a load and a test. `cpu` must be below `nr_cpu_ids`.
#[inline(always)]
pub fn cpu_online(cpu: usize) -> bool {
    // SAFETY: reads one bit of `__cpu_online_mask`, a bitmap of NR_CPUS bits; `cpu` is below
    // nr_cpu_ids <= NR_CPUS, so the bit is inside it. A plain racy read, as cpu_online() does.
    unsafe {
        asm!("btq {cpu}, {mask}(%rip)", "jnc {off}", cpu = in(reg) cpu,
            mask = sym crate::sys::task::__cpu_online_mask,
            off = label { return false; },
            options(att_syntax, nostack, readonly))
    };
    true
}

/// Where `struct ftrace_regs` keeps what callbacks read (byte offsets): x86_64's is a
/// `pt_regs`, partly filled (the argument registers, ax, bp, sp, ip).
pub mod fregs {
    use crate::bindings as b;

    /// The instruction pointer.
    pub const IP: usize = b::UFG_FREGS_IP;
    /// The stack pointer.
    pub const SP: usize = b::UFG_FREGS_SP;
    /// The return value register, at a return.
    pub const RETVAL: usize = b::UFG_FREGS_AX;
    /// The frame pointer.
    pub const BP: usize = b::UFG_FREGS_BP;
    /// The second return value register (and third argument).
    pub const DX: usize = b::UFG_FREGS_DX;
    /// The argument registers, in order (SysV: rdi, rsi, rdx, rcx, r8, r9).
    pub const ARGS: [usize; 6] = [
        b::UFG_FREGS_DI,
        b::UFG_FREGS_SI,
        b::UFG_FREGS_DX,
        b::UFG_FREGS_CX,
        b::UFG_FREGS_R8,
        b::UFG_FREGS_R9,
    ];

    /// Where the return address of the function being entered lives: the word at the stack
    /// pointer (the call pushed it).
    ///
    /// # Safety
    ///
    /// `f` must be valid entry registers.
    #[inline(always)]
    pub unsafe fn retp(f: *mut crate::sys::ftrace::RawFregs) -> *mut usize {
        // SAFETY: a field of valid registers (caller).
        unsafe { (f.cast::<u8>().add(SP) as *const usize).read() as *mut usize }
    }
}
