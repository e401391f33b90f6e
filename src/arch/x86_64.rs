// SPDX-License-Identifier: GPL-2.0

//! x86_64: the return address lives on the stack, at the stack pointer of the hooked function's
//! entry (`retp`). When the function returns, `ret` pops it, so the trampoline starts with the
//! stack pointer at `retp + 8`, which is what it saves in `ftrace_regs`.

use crate::bindings;
use crate::fgraph::graph::{fix_ret, trampoline};
use crate::pure::shadow::Frame;
use crate::sys::ftrace::Regs;
use crate::sys::task::TaskRef;

/// Whether `f` is the frame of the return the trampoline is handling.
#[inline(always)]
pub fn frame_matches(f: &Frame, regs: &Regs) -> bool {
    f.retp + 8 == regs.sp()
}

/// Saves the current task's stack trace with the kernel's unwinder, stepping over our trampoline:
/// where a frame's return address is the trampoline, the real one is substituted before the
/// unwinder looks up the caller's unwind data (ORC has none for "returning into the trampoline").
pub fn stack_trace(store: &mut [usize], skip: usize) -> usize {
    // struct unwind_state is about 100 bytes; keep it on the stack, aligned.
    let mut state = [0u64; 32];
    // SAFETY: no preconditions.
    if unsafe { bindings::ufg_unwind_state_size() } as usize > core::mem::size_of_val(&state) {
        return 0;
    }
    let st = state.as_mut_ptr().cast::<core::ffi::c_void>();
    let tramp = trampoline();
    let mut pos = 0;
    let mut n = 0;
    let mut skipped = 0;
    // SAFETY: `st` is a buffer big enough for the unwinder's state (checked above) that outlives
    // the walk; the unwinder only reads the current task's stack.
    unsafe {
        bindings::ufg_unwind_start(st, TaskRef::current().as_ptr());
        while !bindings::ufg_unwind_done(st) && n < store.len() {
            let mut ip = bindings::ufg_unwind_ip(st);
            if ip == 0 {
                break;
            }
            if ip == tramp {
                ip = fix_ret(&mut pos, ip, bindings::ufg_unwind_sp(st) - 8);
                bindings::ufg_unwind_set_ip(st, ip);
            }
            if skipped < skip {
                skipped += 1;
            } else {
                store[n] = ip;
                n += 1;
            }
            if !bindings::ufg_unwind_next(st) {
                break;
            }
        }
    }
    n
}

/// Writes `f`'s real return address back into its task's stack slot, if the slot still holds our
/// trampoline. False if it holds something else (another hooker saved our address and put its own).
///
/// # Safety
///
/// The task owning the frame must not be running (`stop_machine`), so that its stack is quiet.
pub unsafe fn hand_back(f: &Frame, tramp: usize) -> bool {
    let slot = f.retp as *mut usize;
    // SAFETY: `retp` is the frame's return-address slot on its task's kernel stack, which
    // outlives the task's shadow stack; the task is not running (caller).
    unsafe {
        if slot.read_volatile() != tramp {
            return false;
        }
        slot.write_volatile(f.ret);
    }
    true
}
