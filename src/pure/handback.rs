// SPDX-License-Identifier: GPL-2.0

//! Teardown's plan for the frames of one return slot: can their return addresses be handed back,
//! must teardown wait for them, or will they never return?
//!
//! Several of our frames can share one return slot (a *chain*, adjacent on the shadow stack, top
//! first): a tail-called hooked function reuses its caller's slot, and several graph ops push
//! separate frames for one call when another hooker runs between them. At run time the slot and
//! the hookers' saved copies form a chain of return addresses, each of ours (`T`, the
//! trampoline) consumed by the topmost of our frames still on the stack:
//!
//! ```text
//!   slot = T --> pops F2, returns to F2.ret = K       (K: the kernel's kretprobe, which
//!   K's saved copy = T --> pops F1, returns to F1.ret = caller          saved our T)
//! ```
//!
//! To hand a chain back, every `T` in it must be replaced by what its frame would have returned
//! to: the slot's, and the copies other hookers saved. If any `T` cannot be reached (an
//! unknown hooker saved it), nothing may be written: a frame handed back while one below it on
//! the same slot still returns through `T` would be popped in its place (the return handler
//! takes the topmost frame of a slot). Then every frame of the chain is left pending, and
//! teardown waits for the chain to run out.

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

/// What to do with one chain. `N` bounds the writes (chains are short).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan<const N: usize> {
    /// Write `writes[..n]`; the top `frames` frames are handed back, any below them were
    /// abandoned (stale frames on the same slot) and never return.
    Hand {
        /// (address, value) pairs.
        writes: [(usize, usize); N],
        /// How many of `writes` are used.
        n: usize,
        /// How many frames, from the top, are handed back.
        frames: usize,
    },
    /// Write nothing; every frame of the chain will come back through the trampoline.
    Pending,
}

/// Plans the hand-back of `chain` (our frames' saved return addresses, top first) on a slot at
/// `slot` holding `value`, `tramp` being our trampoline. `classify` says what a return address
/// is; `find` locates, for a hooker, the next copy of `tramp` it saved for this slot that is not
/// among the locations already planned (it checks the copy holds `tramp`).
pub fn plan<const N: usize>(
    chain: &[usize],
    slot: usize,
    value: usize,
    tramp: usize,
    classify: impl Fn(usize) -> Hooker,
    mut find: impl FnMut(Hooker, &[(usize, usize)]) -> Option<usize>,
) -> Plan<N> {
    let mut writes = [(0usize, 0usize); N];
    let mut n = 0;
    let (mut loc, mut v, mut i) = (slot, value, 0);
    loop {
        if v == tramp {
            // The next return through our trampoline pops chain[i].
            if i == chain.len() || n == N {
                return Plan::Pending;
            }
            writes[n] = (loc, chain[i]);
            n += 1;
            v = chain[i];
            i += 1;
            continue;
        }
        if i == chain.len() {
            return Plan::Hand { writes, n, frames: i };
        }
        match classify(v) {
            // The chain ends in an ordinary address with frames left over: those calls were
            // abandoned (nothing returns to them through us any more).
            Hooker::Plain => return Plan::Hand { writes, n, frames: i },
            k @ (Hooker::Fgraph | Hooker::Rethook) => match find(k, &writes[..n]) {
                Some(at) => {
                    loc = at;
                    v = tramp;
                }
                None => return Plan::Pending,
            },
            Hooker::Unknown => return Plan::Pending,
        }
    }
}

/// Upstream 6.12's function_graph shadow stack, read through `read(index)`: `words` long, `top`
/// the index of its first free word. Each frame's top word holds, in its low 10 bits, the offset
/// back to the frame's first word, where a `struct ftrace_ret_stack` of `frame_words` words
/// starts (kernel/trace/fgraph.c). Returns the index of the `ret` word of the topmost frame
/// whose `ret` is `tramp` and whose `retp` is `retp`, not in `skip`. Stops at anything that
/// does not decode.
#[allow(clippy::too_many_arguments)]
pub fn fgraph_find(
    read: impl Fn(usize) -> usize,
    top: usize,
    words: usize,
    frame_words: usize,
    ret_word: usize,
    retp_word: usize,
    tramp: usize,
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
        if read(r) == tramp && read(start + retp_word) == retp && !skip(r) {
            return Some(r);
        }
        offset = start;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: usize = 0x7777;
    const K: usize = 0x6000; // a rethook trampoline
    const G: usize = 0x5000; // function_graph's
    const U: usize = 0x4000; // an unknown trampoline
    const SLOT: usize = 0x100;

    fn classify(v: usize) -> Hooker {
        match v {
            K => Hooker::Rethook,
            G => Hooker::Fgraph,
            U => Hooker::Unknown,
            _ => Hooker::Plain,
        }
    }

    #[test]
    fn one_frame_our_trampoline_in_the_slot() {
        let p = plan::<8>(&[0xcafe], SLOT, T, T, classify, |_, _| None);
        match p {
            Plan::Hand { writes, n, frames } => {
                assert_eq!((n, frames), (1, 1));
                assert_eq!(writes[0], (SLOT, 0xcafe));
            }
            _ => panic!("{p:?}"),
        }
    }

    #[test]
    fn a_hooker_that_ran_before_us_is_handed_its_own_trampoline() {
        // We saved K (it hooked first); writing K back leaves K's chain intact.
        let p = plan::<8>(&[K], SLOT, T, T, classify, |_, _| None);
        assert!(matches!(p, Plan::Hand { n: 1, frames: 1, .. }));
    }

    #[test]
    fn stacked_over_by_a_findable_hooker() {
        // The slot holds K, which saved T for our only frame: rewrite K's copy.
        let p = plan::<8>(&[0xcafe], SLOT, K, T, classify, |k, _| (k == Hooker::Rethook).then_some(0x900));
        match p {
            Plan::Hand { writes, n, frames } => {
                assert_eq!((n, frames), (1, 1));
                assert_eq!(writes[0], (0x900, 0xcafe));
            }
            _ => panic!("{p:?}"),
        }
    }

    #[test]
    fn sandwich_with_a_findable_hooker_hands_back_both() {
        // slot = T -> F2 (ret K) -> K's copy T -> F1 (ret caller).
        let p = plan::<8>(&[K, 0xcafe], SLOT, T, T, classify, |k, _| (k == Hooker::Rethook).then_some(0x900));
        match p {
            Plan::Hand { writes, n, frames } => {
                assert_eq!((n, frames), (2, 2));
                assert_eq!(&writes[..2], &[(SLOT, K), (0x900, 0xcafe)]);
            }
            _ => panic!("{p:?}"),
        }
    }

    #[test]
    fn sandwich_with_an_unknown_hooker_writes_nothing() {
        // Handing F2 back while F1 still returns through T would pop F2 in F1's place.
        assert_eq!(plan::<8>(&[U, 0xcafe], SLOT, T, T, classify, |_, _| None), Plan::Pending);
        // A findable hooker whose copy is not found: the same.
        assert_eq!(plan::<8>(&[G, 0xcafe], SLOT, T, T, classify, |_, _| None), Plan::Pending);
    }

    #[test]
    fn stacked_over_by_an_unknown_hooker_waits() {
        assert_eq!(plan::<8>(&[0xcafe], SLOT, U, T, classify, |_, _| None), Plan::Pending);
    }

    #[test]
    fn tail_call_frames_consume_our_trampoline_in_turn() {
        // Inner frame saved T (the slot already held it), outer frame the caller.
        let p = plan::<8>(&[T, 0xcafe], SLOT, T, T, classify, |_, _| None);
        match p {
            Plan::Hand { writes, n, frames } => {
                assert_eq!((n, frames), (2, 2));
                assert_eq!(&writes[..2], &[(SLOT, T), (SLOT, 0xcafe)]);
            }
            _ => panic!("{p:?}"),
        }
    }

    #[test]
    fn abandoned_frames_below_are_left() {
        // The slot was reused: nothing of ours returns there.
        let p = plan::<8>(&[0xcafe], SLOT, 0x1234, T, classify, |_, _| None);
        assert!(matches!(p, Plan::Hand { n: 0, frames: 0, .. }));
        // A live frame over a stale one on the same slot: hand the live one back only.
        let p = plan::<8>(&[0xcafe, 0xbeef], SLOT, T, T, classify, |_, _| None);
        assert!(matches!(p, Plan::Hand { n: 1, frames: 1, .. }));
    }

    #[test]
    fn each_copy_is_used_once() {
        // Two frames, each stacked over by a rethook node of its own: the finder is told which
        // locations are taken.
        let p = plan::<8>(&[K, 0xcafe], SLOT, K, T, classify, |_, taken| {
            [0x900usize, 0x980].into_iter().find(|l| !taken.iter().any(|&(t, _)| t == *l))
        });
        match p {
            Plan::Hand { writes, n, .. } => assert_eq!(&writes[..n], &[(0x900, K), (0x980, 0xcafe)]),
            _ => panic!("{p:?}"),
        }
    }

    #[test]
    fn too_long_a_chain_waits() {
        assert_eq!(plan::<1>(&[T, 0xcafe], SLOT, T, T, classify, |_, _| None), Plan::Pending);
    }

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
    fn finds_the_topmost_matching_fgraph_frame() {
        let fw = 4;
        let (w, top) = fgraph_stack(&[(T, SLOT), (0x11, 0x200), (T, SLOT)], fw);
        let read = |i: usize| w[i];
        let first = fgraph_find(read, top, w.len(), fw, 0, fw - 1, T, SLOT, |_| false);
        assert_eq!(first, Some(10));
        let second = fgraph_find(read, top, w.len(), fw, 0, fw - 1, T, SLOT, |i| i == 10);
        assert_eq!(second, Some(0));
        assert_eq!(fgraph_find(read, top, w.len(), fw, 0, fw - 1, T, SLOT, |i| i == 10 || i == 0), None);
        assert_eq!(fgraph_find(read, top, w.len(), fw, 0, fw - 1, T, 0x300, |_| false), None);
    }

    #[test]
    fn fgraph_walk_stops_at_garbage() {
        let fw = 4;
        let (mut w, top) = fgraph_stack(&[(T, SLOT)], fw);
        w[top - 1] = 0; // offset 0
        assert_eq!(fgraph_find(|i| w[i], top, w.len(), fw, 0, fw - 1, T, SLOT, |_| false), None);
        w[top - 1] = 1000; // beyond the stack
        assert_eq!(fgraph_find(|i| w[i], top, w.len(), fw, 0, fw - 1, T, SLOT, |_| false), None);
        // A top beyond the array is clamped.
        assert_eq!(fgraph_find(|i| w.get(i).copied().unwrap_or(0), 10_000, w.len(), fw, 0, fw - 1, T, SLOT, |_| false), None);
    }
}
