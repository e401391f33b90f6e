// SPDX-License-Identifier: GPL-2.0

//! The kernel's own unwinders, walking the current task's stack: `stack_trace_save()`, and on
//! x86_64 the unwinder itself (ORC), through the glue (`struct unwind_state` and its functions
//! are the kernel's inline API), for a walk that steps over the return trampoline.

use crate::bindings;
#[cfg(CONFIG_X86_64)]
use crate::sys::task::TaskRef;
#[cfg(CONFIG_X86_64)]
use core::ffi::c_void;

/// Saves up to `store.len()` return addresses of the current task's stack, after skipping
/// `skip` (`stack_trace_save()`); returns how many it saved.
// Inlined, so that the walk starts at the caller's frame (the skip counts from there, and on
// arm64 both walks of `arch::stack_trace` number the frames alike).
#[allow(dead_code)]
#[inline(always)]
pub fn save_current(store: &mut [usize], skip: usize) -> usize {
    let (buf, len) = (store.as_mut_ptr(), store.len() as u32);
    // SAFETY: `buf` has room for `len` entries; the walk only reads the current task's stacks.
    let n = unsafe { bindings::stack_trace_save(buf, len, skip as u32) };
    n as usize
}

/// One step of a walk: the frame the unwinder is at.
///
/// # Invariants
///
/// `st` points to an `unwind_state` started on the current task, for the duration of the walk
/// that lent this frame.
#[cfg(CONFIG_X86_64)]
pub struct Frame {
    st: *mut c_void,
}

#[cfg(CONFIG_X86_64)]
impl Frame {
    /// The frame's return address (0 once the walk is lost).
    pub fn ip(&self) -> usize {
        // SAFETY: a started state (the type invariant).
        unsafe { bindings::ufg_unwind_ip(self.st) }
    }

    /// The stack pointer of the frame: where its return address was taken from is 8 below.
    pub fn sp(&self) -> usize {
        // SAFETY: a started state (the type invariant).
        unsafe { bindings::ufg_unwind_sp(self.st) }
    }

    /// Makes the unwinder continue as if the return address were `ip` (for the unwind data it
    /// looks up next). Through `&self`: frames are only ever lent shared, so that no frame can
    /// be swapped into another walk's closure and outlive its own walk's state.
    pub fn set_ip(&self, ip: usize) {
        // SAFETY: a started state (the type invariant).
        unsafe { bindings::ufg_unwind_set_ip(self.st, ip) };
    }
}

/// Walks the current task's stack with the kernel's unwinder, calling `f` at each frame until
/// it returns false or the walk ends. Does nothing if the unwinder's state does not fit here.
/// Inlined, so that the walk starts at the caller's frame, as the C API's skip counts.
#[cfg(CONFIG_X86_64)]
#[inline(always)]
pub fn walk_current(mut f: impl FnMut(&Frame) -> bool) {
    // struct unwind_state is about 100 bytes; keep it on the stack, aligned.
    let mut state = [0u64; 32];
    // SAFETY: no preconditions.
    if unsafe { bindings::ufg_unwind_state_size() } as usize > core::mem::size_of_val(&state) {
        return;
    }
    let st = state.as_mut_ptr().cast::<c_void>();
    // SAFETY: `st` is a buffer big enough for the unwinder's state (checked above) that
    // outlives the walk; the unwinder only reads the current task's stack.
    unsafe { bindings::ufg_unwind_start(st, TaskRef::current().as_ptr()) };
    // INVARIANT: started just above, and `state` outlives the loop.
    let frame = Frame { st };
    // SAFETY: the state was started above (each call below likewise).
    while !unsafe { bindings::ufg_unwind_done(st) } {
        if !f(&frame) {
            break;
        }
        // SAFETY: as above.
        if !unsafe { bindings::ufg_unwind_next(st) } {
            break;
        }
    }
}
