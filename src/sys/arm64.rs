// SPDX-License-Identifier: GPL-2.0

//! arm64's stack facts that teardown and the return path read: the layout of ftrace's
//! registers and of an exception's `pt_regs` on the stack, unchecked reads of stack words, the
//! shadow call stack and pointer authentication (the glue: these are the kernel's inline API).

use crate::bindings;
use crate::sys::task::TaskRef;

/// How far below the stack pointer a traced function was entered with ftrace_caller keeps its
/// entry `ftrace_regs`: the registers and two frame records (arch/arm64/kernel/entry-ftrace.S).
pub const FTRACE_FRAME: usize = bindings::UFG_ARM64_FTRACE_FRAME;
/// Offset of the `lr` field in `ftrace_regs`.
pub const FREGS_LR: usize = bindings::UFG_FREGS_LR;
/// Offset of the `sp` field in `ftrace_regs`.
pub const FREGS_SP: usize = bindings::UFG_FREGS_SP;
/// Offset of the `pc` field in `ftrace_regs`.
pub const FREGS_PC: usize = bindings::UFG_FREGS_PC;
/// Offset of the frame record (`stackframe`) in `pt_regs`.
pub const PT_REGS_STACKFRAME: usize = bindings::UFG_PT_REGS_STACKFRAME;
/// Offset of the `pc` field in `pt_regs`.
pub const PT_REGS_PC: usize = bindings::UFG_PT_REGS_PC;
/// Offset of the `sp` field in `pt_regs`.
pub const PT_REGS_SP: usize = bindings::UFG_PT_REGS_SP;

/// A word of a kernel stack read without KASAN checks (`READ_ONCE_NOCHECK`), as the kernel's
/// unwinder reads (words around live frames may be poisoned).
///
/// # Safety
///
/// `addr` must be an 8-byte aligned word of memory that stays allocated for the call.
#[inline(always)]
pub unsafe fn peek(addr: usize) -> usize {
    // SAFETY: a readable word (caller); the glue only reads it.
    unsafe { bindings::ufg_arm64_peek(addr) }
}

/// Whether the kernel uses its shadow call stack (CONFIG_SHADOW_CALL_STACK, and with
/// CONFIG_DYNAMIC_SCS only on a CPU without PAC).
pub fn scs_enabled() -> bool {
    // SAFETY: no preconditions: a static key and the CPU's capabilities.
    unsafe { bindings::ufg_arm64_scs_enabled() }
}

/// Whether the kernel signs return addresses (in-kernel pointer authentication in use).
pub fn kernel_pac() -> bool {
    // SAFETY: no preconditions: the CPU's capabilities.
    unsafe { bindings::ufg_arm64_kernel_pac() }
}

/// `v` with any pointer authentication code stripped (`ptrauth_strip_kernel_insn_pac`).
pub fn strip_pac(v: usize) -> usize {
    // SAFETY: no memory access; stripping a PAC is arithmetic.
    unsafe { bindings::ufg_arm64_strip(v as _) as usize }
}

/// The frame pointer `task` saved when it was switched out.
///
/// # Safety
///
/// `task` must be alive and switched out, and stay so for the call.
pub unsafe fn saved_fp(task: TaskRef) -> usize {
    // SAFETY: the task is alive and switched out (caller).
    unsafe { bindings::ufg_arm64_saved_fp(task.as_ptr()) }
}

/// The part of `task`'s shadow call stack in use, `(base, sp)`, if it has one.
///
/// # Safety
///
/// As for [`saved_fp`].
pub unsafe fn scs(task: TaskRef) -> Option<(usize, usize)> {
    let (mut base, mut top) = (0, 0);
    // SAFETY: the task is alive and switched out (caller); the glue reads its thread_info.
    let ok = unsafe { bindings::ufg_arm64_scs(task.as_ptr(), &mut base, &mut top) };
    ok.then_some((base, top))
}
