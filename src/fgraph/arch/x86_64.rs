// SPDX-License-Identifier: GPL-2.0

//! x86_64: the return address lives on the stack, at the stack pointer of the hooked function's
//! entry (`retp`). When the function returns, `ret` pops it, so the trampoline starts with the
//! stack pointer at `retp + 8`, which is what it saves in `ftrace_regs`.

use super::Slot;
use crate::fgraph::graph::{fix_ret, trampoline};
use crate::fgraph::shadow::Frame;
use crate::sys::ftrace::Regs;
use crate::sys::task::{StackView, TaskRef};
use crate::sys::unwind;

/// Whether `f` is the frame of the return the trampoline is handling.
#[inline(always)]
pub fn frame_matches(f: &Frame, regs: &Regs) -> bool {
    f.retp.wrapping_add(8) == regs.sp()
}

/// Saves the current task's stack trace with the kernel's unwinder, stepping over our trampoline:
/// where a frame's return address is the trampoline, the real one is substituted before the
/// unwinder looks up the caller's unwind data (ORC has none for "returning into the trampoline").
pub fn stack_trace(store: &mut [usize], skip: usize) -> usize {
    let tramp = trampoline();
    let mut pos = 0;
    let mut n = 0;
    let mut skipped = 0;
    unwind::walk_current(|frame| {
        if n >= store.len() {
            return false;
        }
        let mut ip = frame.ip();
        if ip == 0 {
            return false;
        }
        if ip == tramp {
            ip = fix_ret(&mut pos, ip, frame.sp() - 8);
            frame.set_ip(ip);
        }
        if skipped < skip {
            skipped += 1;
        } else {
            store[n] = ip;
            n += 1;
        }
        true
    });
    n
}

/// At a return through the trampoline, before `f` (the frame being returned from) is popped and
/// before any return callback runs: writes its real return address into its return slot, which
/// the function's `ret` consumed and the trampoline reclaimed as the return address of its own
/// pseudo-call (`UNWIND_HINT_FUNC` there). Only unwinders read the word now: the kernel's ORC
/// unwinder, started in a return callback, then walks from the trampoline to the real caller.
/// A tail-called function's frame returns to our trampoline again (the frame below knows the
/// real address): the slot keeps it, and an unwinder stops there cleanly
/// (`ufgraph_return_trampoline_guard`).
#[inline(always)]
pub fn settle_slot(f: &Frame, _regs: &Regs) {
    // `f` matched this return (`frame_matches`: retp + 8 is the stack pointer the function
    // returned with), so `retp` is the trampoline's own pseudo return slot.
    // SAFETY: an aligned word of the current task's stack, just below the stack pointer the
    // trampoline was entered with, which only this task (and unwinders, reading) uses.
    unsafe { (f.retp as *mut usize).write_volatile(f.ret) };
}

/// Where hooked functions take their return addresses from, as the stats file shows it: the
/// stack slot a call pushed, which teardown can always rewrite.
pub fn return_slots() -> &'static str {
    "stack"
}

/// What teardown remembers while it judges one task's frames: nothing on x86_64, where each
/// frame's slot is found from the frame alone.
#[derive(Default)]
pub struct TaskWalk;

impl TaskWalk {
    /// Before the first frame of a task.
    pub const fn new() -> Self {
        TaskWalk
    }

    /// Teardown rewrote the slot at `addr` (returned by [`find_slot`]).
    #[inline(always)]
    pub fn handed(&mut self, _addr: usize) {}
}

/// Where `f`'s task will take the frame's return address from: its return slot, the stack word
/// at `retp`. `task` (with kernel stack `view`) can still run.
///
/// The slot must be a word of the task's kernel stack and, for a task that is switched out, at
/// or above the stack pointer it saved; otherwise the call is no longer on the stack (it was
/// abandoned: the stack unwound past it) and cannot return ([`Slot::Gone`]). Frames pushed in
/// interrupt context live on an interrupt stack, and none is live under `stop_machine` (the
/// stoppers are tasks: interrupts returned before they ran). A task preempted inside the
/// trampoline after it reclaimed the slot still has our trampoline there: rewriting it is
/// harmless (only unwinders read it), and teardown's grace period lets the task finish.
///
/// # Safety
///
/// Only under `stop_machine`: the owning task cannot run (unless `view.running`: a stopper) or
/// exit, so its stack is quiet and stays allocated.
pub unsafe fn find_slot(
    f: &Frame,
    _task: Option<TaskRef>,
    view: Option<&StackView>,
    _walk: &mut TaskWalk,
) -> Slot {
    let Some(view) = view else {
        // No kernel stack to check the slot against (an idle task that never looked itself up
        // cannot have frames): do not write, and do not assume it is gone.
        return Slot::Unknown;
    };
    if !view.holds_word(f.retp) || (!view.running && f.retp < view.saved_sp) {
        return Slot::Gone;
    }
    // SAFETY: a word of the task's kernel stack (checked above), which stays allocated: the task
    // cannot exit now (caller).
    let value = unsafe { (f.retp as *const usize).read_volatile() };
    Slot::At {
        addr: f.retp,
        value,
    }
}
