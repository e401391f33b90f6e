// SPDX-License-Identifier: GPL-2.0

//! x86_64: the return address lives on the stack, at the stack pointer of the hooked function's
//! entry (`retp`). When the function returns, `ret` pops it, so the trampoline starts with the
//! stack pointer at `retp + 8`, which is what it saves in `ftrace_regs`.

use crate::bindings;
use crate::fgraph::graph::{fix_ret, trampoline};
use crate::pure::shadow::Frame;
use crate::sys::ftrace::Regs;
use crate::sys::task::{StackView, TaskRef};

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

/// Teardown's verdict on one frame, under `stop_machine`: see [`hand_back`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandBack {
    /// The real return address is back where the task will take it from.
    Handed,
    /// Another hooker saved our trampoline for this frame: it will return through it later.
    Pending,
    /// The call cannot return through the trampoline: it was abandoned.
    Never,
}

/// Judges `f`, a frame of a task (`task`, whose kernel stack is `view`) that can still run, and
/// writes its real return address back into its stack slot if the slot still holds our
/// trampoline.
///
/// - The slot must be a word of the task's kernel stack, and (for a task that is switched out)
///   at or above the stack pointer it saved: otherwise the call is no longer on the stack (it
///   was abandoned, the stack unwound past it) and cannot return: [`HandBack::Never`]. Frames
///   pushed in interrupt context live on an interrupt stack, and none is live under
///   `stop_machine` (the stoppers are tasks: interrupts returned before they ran).
/// - The slot holds our trampoline: write the real address, [`HandBack::Handed`]. This also
///   covers a task preempted inside the trampoline after it reclaimed the slot (the word is then
///   only read by unwinders); teardown's grace period lets it finish.
/// - The slot holds the very start of another return trampoline (the kernel's
///   `return_to_handler`, `arch_rethook_trampoline`, a kretprobe's, another ufgraph's): that
///   hooker saved our address and will jump to it: [`HandBack::Pending`]. A return address is
///   never the first byte of a function, so this does not mistake a reused slot for one.
/// - Anything else: the slot was reused (the call was abandoned, or the task was preempted on
///   the trampoline's first instruction and the interrupt frame overwrote it: the grace period
///   covers that one): [`HandBack::Never`].
///
/// # Safety
///
/// Only under `stop_machine`: the owning task cannot run (unless `view.running`: a stopper) or
/// exit, so its stack is quiet and stays allocated.
pub unsafe fn hand_back(f: &Frame, tramp: usize, _task: Option<TaskRef>, view: Option<&StackView>) -> HandBack {
    let Some(view) = view else {
        // No kernel stack to check the slot against (an idle task that never looked itself up
        // cannot have frames): do not write, and do not assume it is gone.
        return HandBack::Pending;
    };
    if !view.holds_word(f.retp) || (!view.running && f.retp < view.saved_sp) {
        return HandBack::Never;
    }
    let slot = f.retp as *mut usize;
    // SAFETY: a word of the task's kernel stack (checked above), which stays allocated: the task
    // cannot exit now (caller).
    let v = unsafe { slot.read_volatile() };
    if v == tramp {
        // SAFETY: as above; the task takes its return address from this word, and is not
        // running (or is a stopper, spinning in stop_machine's loop far below this frame).
        unsafe { slot.write_volatile(f.ret) };
        return HandBack::Handed;
    }
    if crate::sys::ksym::is_return_trampoline(v) {
        HandBack::Pending
    } else {
        HandBack::Never
    }
}
