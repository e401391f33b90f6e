// SPDX-License-Identifier: GPL-2.0

//! The kernel's own return hookers, as teardown needs them: where the function_graph tracer and
//! rethook (kretprobes and fprobes on x86_64) keep the return addresses they saved, so that a
//! copy of ufgraph's trampoline saved there can be replaced by the real address.
//!
//! Both are read from the task: `task_struct::ret_stack` (function_graph's shadow stack, whose
//! word encoding ufgraph's own follows: `pure::handback::fgraph_find` walks it) and
//! `task_struct::rethooks` (a list of `struct rethook_node`, include/linux/rethook.h). Only under
//! `stop_machine`, for a task that is not running: nothing pushes or pops meanwhile, and nothing
//! frees (RCU callbacks wait).

use crate::bindings;
use crate::pure::handback;
use crate::sys::task::TaskRef;

const WORD: usize = core::mem::size_of::<usize>();

/// The address of the next copy of `tramp` that function_graph saved for the return slot
/// `retp` of `task`, topmost first, not in `taken` (planned writes: address, value).
///
/// # Safety
///
/// Under `stop_machine`, `task` alive and not running.
pub unsafe fn fgraph_saved(task: TaskRef, retp: usize, tramp: usize, taken: &[(usize, usize)]) -> Option<usize> {
    let mut top: core::ffi::c_int = 0;
    // SAFETY: the task is alive (caller); the glue reads two fields.
    let base = unsafe { bindings::ufg_task_fgraph_stack(task.as_ptr(), &mut top) };
    if base.is_null() || top <= 0 {
        return None;
    }
    let words = bindings::UFG_FGRAPH_STACK_WORDS as usize;
    // SAFETY: `base` is the task's function_graph stack, `words` long, which stays allocated
    // while the task lives; `fgraph_find` reads only indexes below `words`.
    let read = |i: usize| unsafe { base.add(i).read_volatile() } as usize;
    let at = |i: usize| base as usize + i * WORD;
    handback::fgraph_find(
        read,
        top as usize,
        words,
        bindings::UFG_FGRAPH_FRAME_WORDS as usize,
        bindings::UFG_FGRAPH_RET_WORD as usize,
        bindings::UFG_FGRAPH_RETP_WORD as usize,
        tramp,
        retp,
        |i| taken.iter().any(|&(a, _)| a == at(i)),
    )
    .map(at)
}

/// The address of the next copy of `tramp` that rethook saved for the return slot `retp` of
/// `task` (a node whose `frame` is `retp`), newest first, not in `taken`.
///
/// # Safety
///
/// As for [`fgraph_saved`].
pub unsafe fn rethook_saved(task: TaskRef, retp: usize, tramp: usize, taken: &[(usize, usize)]) -> Option<usize> {
    // SAFETY: the task is alive (caller); its list is quiet.
    let mut node = unsafe { bindings::ufg_task_rethook_first(task.as_ptr()) };
    // A task has at most a few hundred nodes (one per hooked call in flight): a bound, in case
    // the list is not what we think.
    for _ in 0..4096 {
        if node.is_null() {
            return None;
        }
        let mut frame = 0;
        // SAFETY: `node` is a node of the task's list.
        let p = unsafe { bindings::ufg_rethook_ret(node, &mut frame) };
        if !p.is_null() && frame as usize == retp {
            // SAFETY: the node's `ret_addr` word.
            let v = unsafe { p.read_volatile() } as usize;
            if v == tramp && !taken.iter().any(|&(a, _)| a == p as usize) {
                return Some(p as usize);
            }
        }
        // SAFETY: as above.
        node = unsafe { bindings::ufg_rethook_next(node) };
    }
    None
}
