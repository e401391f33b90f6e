// SPDX-License-Identifier: GPL-2.0

//! The kernel's other return hookers as data: what an address in a return slot is
//! ([`Hooker`]), and where function_graph and rethook keep their saved copy of a slot's return
//! address ([`fgraph_find`], [`rethook_next`]). `sys::hookers` reads those stacks from kernel
//! memory through these walkers; teardown's hand-back plan (`fgraph::graph::handback`) follows
//! the copies they find.
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

/// What a return address found in the chain is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hooker {
    /// The kernel's function_graph trampoline (`return_to_handler`): its saved copy can be found.
    Fgraph,
    /// rethook's trampoline (kretprobes and fprobes on x86_64): its saved copy can be found.
    Rethook,
    /// The start of some other return trampoline: its saved copy cannot be found.
    Unknown,
    /// Not a trampoline: an ordinary return address.
    Plain,
}

/// Upstream 6.12's function_graph shadow stack, read through `read(index)`: `words` long, `top`
/// the index of its first free word. Each frame's top word holds, in its low 10 bits, the offset
/// back to the frame's first word, where a `struct ftrace_ret_stack` of `frame_words` words
/// starts (kernel/trace/fgraph.c). Returns the index of the `ret` word of the topmost frame
/// whose `retp` is `retp` and that `skip` does not exclude, whatever it holds: the copy
/// `return_to_handler` will read next for that slot. Stops at anything that does not decode.
#[allow(clippy::too_many_arguments)]
pub fn fgraph_find(
    read: impl Fn(usize) -> usize,
    top: usize,
    words: usize,
    frame_words: usize,
    ret_word: usize,
    retp_word: usize,
    retp: usize,
    skip: impl Fn(usize) -> bool,
) -> Option<usize> {
    const OFFSET_MASK: usize = (1 << 10) - 1;
    if frame_words == 0 || ret_word >= frame_words || retp_word >= frame_words {
        return None;
    }
    let mut offset = top.min(words);
    while offset > 0 {
        let last = offset - 1;
        let offs = read(last) & OFFSET_MASK;
        if offs == 0 || offs > last {
            return None;
        }
        let start = last - offs;
        if start + frame_words > words {
            return None;
        }
        let r = start + ret_word;
        if read(start + retp_word) == retp && !skip(r) {
            return Some(r);
        }
        offset = start;
    }
    None
}

/// What rethook reads next for a return slot, from its task's nodes newest first, each given as
/// (location of its saved address, that address, its frame): the first node of the slot not in
/// `visited` whose address is not rethook's own trampoline (`is_own`: rethook consumes those with
/// it, 6.12's `__rethook_find_ret_addr`). Nodes of other slots belong to deeper calls, which
/// return first.
pub fn rethook_next(
    nodes: impl Iterator<Item = (usize, usize, usize)>,
    slot: usize,
    is_own: impl Fn(usize) -> bool,
    visited: &[usize],
) -> Option<(usize, usize)> {
    nodes
        .filter(|&(at, v, frame)| frame == slot && !is_own(v) && !visited.contains(&at))
        .map(|(at, v, _)| (at, v))
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: usize = 0x7777;
    const K: usize = 0x6000; // rethook's trampoline
    const SLOT: usize = 0x100;

    // A function_graph stack laid out as upstream 6.12 does: frame words, then (no data) the
    // top word, whose low bits are the offset back to the frame.
    fn fgraph_stack(frames: &[(usize, usize)], frame_words: usize) -> (Vec<usize>, usize) {
        let mut w = vec![0usize; 64];
        let mut top = 0;
        for &(ret, retp) in frames {
            w[top] = ret;
            w[top + frame_words - 1] = retp;
            w[top + frame_words] = (1 << 10) | frame_words; // bitmap type, offset
            top += frame_words + 1;
        }
        (w, top)
    }

    #[test]
    fn finds_the_slots_fgraph_frames_topmost_first_whatever_they_hold() {
        let fw = 4;
        let (w, top) = fgraph_stack(&[(T, SLOT), (0x11, 0x200), (K, SLOT)], fw);
        let read = |i: usize| w[i];
        assert_eq!(
            fgraph_find(read, top, w.len(), fw, 0, fw - 1, SLOT, |_| false),
            Some(10)
        );
        assert_eq!(
            fgraph_find(read, top, w.len(), fw, 0, fw - 1, SLOT, |i| i == 10),
            Some(0)
        );
        assert_eq!(
            fgraph_find(read, top, w.len(), fw, 0, fw - 1, SLOT, |i| i == 10
                || i == 0),
            None
        );
        assert_eq!(
            fgraph_find(read, top, w.len(), fw, 0, fw - 1, 0x300, |_| false),
            None
        );
    }

    #[test]
    fn fgraph_walk_stops_at_garbage() {
        let fw = 4;
        let (mut w, top) = fgraph_stack(&[(T, SLOT)], fw);
        w[top - 1] = 0; // offset 0
        assert_eq!(
            fgraph_find(|i| w[i], top, w.len(), fw, 0, fw - 1, SLOT, |_| false),
            None
        );
        w[top - 1] = 1000; // beyond the stack
        assert_eq!(
            fgraph_find(|i| w[i], top, w.len(), fw, 0, fw - 1, SLOT, |_| false),
            None
        );
        assert_eq!(
            fgraph_find(
                |i| w.get(i).copied().unwrap_or(0),
                10_000,
                w.len(),
                fw,
                0,
                fw - 1,
                SLOT,
                |_| false
            ),
            None
        );
    }
}
