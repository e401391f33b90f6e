// SPDX-License-Identifier: GPL-2.0

//! The kernel's own return hookers, as teardown needs them: where the function_graph tracer and
//! rethook (kretprobes and fprobes on x86_64) keep the return addresses they saved, so that a
//! copy of ufgraph's trampoline saved there can be replaced by the real address.
//!
//! Both are read from the task: `task_struct::ret_stack` (function_graph's shadow stack, whose
//! word encoding ufgraph's own follows: `sys::hookers::stacks::fgraph_find` walks it) and
//! `task_struct::rethooks` (a list of `struct rethook_node`, include/linux/rethook.h). Only under
//! `stop_machine`, for a task that is not running: nothing pushes or pops meanwhile, and nothing
//! frees (RCU callbacks wait).

pub mod stacks;

use crate::bindings;
use crate::sys::task::TaskRef;

const WORD: usize = core::mem::size_of::<usize>();

/// The next copy function_graph will read for the return slot `retp` of `task`: its topmost
/// frame of that slot not in `visited`, whatever it holds (location of the saved address, value).
/// x86_64 only: there function_graph's `retp` is the stack slot, as ours; arm64's keeps the
/// frame pointer there, which ufgraph's frames do not record.
///
/// # Safety
///
/// Under `stop_machine`, `task` alive and not running.
pub unsafe fn fgraph_next(task: TaskRef, retp: usize, visited: &[usize]) -> Option<(usize, usize)> {
    if !cfg!(CONFIG_X86_64) {
        return None;
    }
    let mut top: core::ffi::c_int = 0;
    // SAFETY: the task is alive (caller); the glue reads two fields.
    let base = unsafe { bindings::ufg_task_fgraph_stack(task.as_ptr(), &mut top) };
    if base.is_null() || top <= 0 {
        return None;
    }
    let words = bindings::UFG_FGRAPH_STACK_WORDS;
    // SAFETY: `base` is the task's function_graph stack, `words` long, which stays allocated
    // while the task lives; `fgraph_find` reads only indexes below `words`.
    let read = |i: usize| unsafe { base.add(i).read_volatile() } as usize;
    let at = |i: usize| base as usize + i * WORD;
    let i = stacks::fgraph_find(
        read,
        top as usize,
        words,
        bindings::UFG_FGRAPH_FRAME_WORDS,
        bindings::UFG_FGRAPH_RET_WORD,
        bindings::UFG_FGRAPH_RETP_WORD,
        retp,
        |i| visited.contains(&at(i)),
    )?;
    Some((at(i), read(i)))
}

/// The next copy rethook will read for the return slot `retp` of `task` (see
/// `sys::hookers::stacks::rethook_next`).
///
/// # Safety
///
/// As for [`fgraph_next`].
pub unsafe fn rethook_next(
    task: TaskRef,
    retp: usize,
    visited: &[usize],
) -> Option<(usize, usize)> {
    struct Nodes {
        node: *mut core::ffi::c_void,
        left: usize,
    }
    impl Iterator for Nodes {
        type Item = (usize, usize, usize);
        fn next(&mut self) -> Option<Self::Item> {
            // A task has at most a few hundred nodes (one per hooked call in flight): a bound,
            // in case the list is not what we think.
            if self.node.is_null() || self.left == 0 {
                return None;
            }
            self.left -= 1;
            let mut frame = 0;
            // SAFETY: a node of the quiet task's list (`rethook_next`'s contract).
            let p = unsafe { bindings::ufg_rethook_ret(self.node, &mut frame) };
            // SAFETY: as above.
            self.node = unsafe { bindings::ufg_rethook_next(self.node) };
            if p.is_null() {
                return None;
            }
            // SAFETY: the node's `ret_addr` word.
            Some((p as usize, unsafe { p.read_volatile() }, frame))
        }
    }
    // SAFETY: the task is alive (caller); its list is quiet.
    let first = unsafe { bindings::ufg_task_rethook_first(task.as_ptr()) };
    stacks::rethook_next(
        Nodes {
            node: first,
            left: 4096,
        },
        retp,
        |v| crate::sys::ksym::hooker(v) == stacks::Hooker::Rethook,
        visited,
    )
}
