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
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

pub use crate::sys::hookers::stacks::Hooker;

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
/// `slot` holding `value`, `tramp` being our trampoline, by following the return addresses the
/// way the run time will: each `tramp` pops the next of our frames and goes on with its saved
/// address; each other hooker's trampoline goes on with the next copy that hooker keeps for this
/// slot, whatever that copy holds. `classify` says what a return address is; `next` gives, for a
/// hooker, the location and value of the next copy the run time will read for this slot, among
/// those not in `visited` (the copies already followed). Only copies that hold `tramp` are
/// written.
///
/// An ordinary address ends the chain: read from the slot or from one of our frames, the frames
/// left over were abandoned; read from another hooker's copy with frames left over, the copies
/// are not what the plan understands, and it waits.
pub fn plan<const N: usize>(
    chain: &[usize],
    slot: usize,
    value: usize,
    tramp: usize,
    classify: impl Fn(usize) -> Hooker,
    mut next: impl FnMut(Hooker, &[usize]) -> Option<(usize, usize)>,
) -> Plan<N> {
    let mut writes = [(0usize, 0usize); N];
    let mut n = 0;
    let mut visited = [0usize; N];
    let mut nv = 0;
    let (mut loc, mut v, mut i, mut via_hooker) = (slot, value, 0, false);
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
            via_hooker = false;
            continue;
        }
        if i == chain.len() {
            return Plan::Hand {
                writes,
                n,
                frames: i,
            };
        }
        match classify(v) {
            // Frames left over, an ordinary address reached: abandoned frames below live ones on
            // the same slot, unless the address came out of another hooker's copy.
            Hooker::Plain if !via_hooker => {
                return Plan::Hand {
                    writes,
                    n,
                    frames: i,
                }
            }
            Hooker::Plain => return Plan::Pending,
            k @ (Hooker::Fgraph | Hooker::Rethook) => match next(k, &visited[..nv]) {
                Some((at, val)) if nv < N => {
                    visited[nv] = at;
                    nv += 1;
                    loc = at;
                    v = val;
                    via_hooker = true;
                }
                _ => return Plan::Pending,
            },
            Hooker::Unknown => return Plan::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::hookers::stacks::rethook_next;

    const T: usize = 0x7777;
    const K: usize = 0x6000; // rethook's trampoline
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

    /// The kernel's hookers as the run time reads them: function_graph frames of the slot
    /// topmost first (location, value), rethook nodes newest first (location, value, frame).
    struct Hookers {
        fgraph: Vec<(usize, usize)>,
        rethook: Vec<(usize, usize, usize)>,
    }

    impl Hookers {
        fn next(&self, k: Hooker, visited: &[usize]) -> Option<(usize, usize)> {
            match k {
                Hooker::Fgraph => self
                    .fgraph
                    .iter()
                    .copied()
                    .find(|(at, _)| !visited.contains(at)),
                Hooker::Rethook => {
                    rethook_next(self.rethook.iter().copied(), SLOT, |v| v == K, visited)
                }
                _ => None,
            }
        }
    }

    fn none() -> Hookers {
        Hookers {
            fgraph: vec![],
            rethook: vec![],
        }
    }

    fn plan8(chain: &[usize], value: usize, h: &Hookers) -> Plan<8> {
        plan::<8>(chain, SLOT, value, T, classify, |k, v| h.next(k, v))
    }

    fn writes(p: Plan<8>) -> (Vec<(usize, usize)>, usize) {
        match p {
            Plan::Hand { writes, n, frames } => (writes[..n].to_vec(), frames),
            Plan::Pending => panic!("pending"),
        }
    }

    /// Replays a return through the slot after the writes: what the run time does (function_graph
    /// pops its next frame of the slot, rethook its nodes up to the first that is not its own
    /// trampoline, ufgraph its next frame) until an ordinary address. Returns it, and how many of
    /// our frames were popped through the trampoline.
    fn replay(chain: &[usize], value: usize, h: &Hookers, w: &[(usize, usize)]) -> (usize, usize) {
        let get = |at: usize, orig: usize| {
            w.iter()
                .rev()
                .find(|&&(a, _)| a == at)
                .map_or(orig, |&(_, v)| v)
        };
        let mut v = get(SLOT, value);
        let (mut ours, mut fg, mut rh) = (0, 0, 0);
        let mut popped = 0;
        for _ in 0..64 {
            match v {
                T => {
                    assert!(ours < chain.len(), "a trampoline with no frame left");
                    v = chain[ours];
                    ours += 1;
                    popped += 1;
                }
                G => {
                    let (at, orig) = h.fgraph[fg];
                    fg += 1;
                    v = get(at, orig);
                }
                K => loop {
                    let (at, orig, _) = h.rethook[rh];
                    rh += 1;
                    let val = get(at, orig);
                    if val != K {
                        v = val;
                        break;
                    }
                },
                _ => return (v, popped),
            }
        }
        panic!("no end")
    }

    #[test]
    fn one_frame_our_trampoline_in_the_slot() {
        let (w, frames) = writes(plan8(&[0xcafe], T, &none()));
        assert_eq!((w, frames), (vec![(SLOT, 0xcafe)], 1));
    }

    #[test]
    fn a_hooker_that_ran_before_us_is_handed_its_own_trampoline() {
        let h = Hookers {
            fgraph: vec![],
            rethook: vec![(0x900, 0xcafe, SLOT)],
        };
        let (w, _) = writes(plan8(&[K], T, &h));
        assert_eq!(replay(&[K], T, &h, &w), (0xcafe, 0));
    }

    #[test]
    fn stacked_over_by_a_kernel_hooker() {
        let h = Hookers {
            fgraph: vec![],
            rethook: vec![(0x900, T, SLOT)],
        };
        let (w, frames) = writes(plan8(&[0xcafe], K, &h));
        assert_eq!((w.clone(), frames), (vec![(0x900, 0xcafe)], 1));
        assert_eq!(replay(&[0xcafe], K, &h, &w), (0xcafe, 0));
    }

    #[test]
    fn sandwich_hands_back_both() {
        // slot = T -> F2 (ret K) -> K's copy T -> F1 (ret caller).
        let h = Hookers {
            fgraph: vec![],
            rethook: vec![(0x900, T, SLOT)],
        };
        let (w, frames) = writes(plan8(&[K, 0xcafe], T, &h));
        assert_eq!((w.clone(), frames), (vec![(SLOT, K), (0x900, 0xcafe)], 2));
        assert_eq!(replay(&[K, 0xcafe], T, &h, &w), (0xcafe, 0));
    }

    #[test]
    fn unknown_hookers_and_missing_copies_write_nothing() {
        // Handing F2 back while F1 still returns through T would pop F2 in F1's place.
        assert_eq!(plan8(&[U, 0xcafe], T, &none()), Plan::Pending);
        assert_eq!(plan8(&[G, 0xcafe], T, &none()), Plan::Pending);
        assert_eq!(plan8(&[0xcafe], U, &none()), Plan::Pending);
    }

    #[test]
    fn tail_call_frames_consume_our_trampoline_in_turn() {
        let (w, frames) = writes(plan8(&[T, 0xcafe], T, &none()));
        assert_eq!((w, frames), (vec![(SLOT, T), (SLOT, 0xcafe)], 2));
    }

    #[test]
    fn abandoned_frames_below_are_left() {
        assert_eq!(writes(plan8(&[0xcafe], 0x1234, &none())), (vec![], 0));
        assert_eq!(writes(plan8(&[0xcafe, 0xbeef], T, &none())).1, 1);
    }

    #[test]
    fn a_plain_address_out_of_a_hookers_copy_with_frames_left_waits() {
        // K's copy holds the caller, but a frame of ours is left: not understood.
        let h = Hookers {
            fgraph: vec![],
            rethook: vec![(0x900, 0xcafe, SLOT)],
        };
        assert_eq!(plan8(&[0xbeef], K, &h), Plan::Pending);
    }

    #[test]
    fn rethook_skips_its_own_nested_nodes_and_other_slots() {
        // Newest first: a deeper call's node, a nested node of this slot holding K, then ours.
        let h = Hookers {
            fgraph: vec![],
            rethook: vec![(0x800, 0x1, 0x50), (0x900, K, SLOT), (0x980, T, SLOT)],
        };
        let (w, _) = writes(plan8(&[0xcafe], K, &h));
        assert_eq!(w, vec![(0x980, 0xcafe)]);
    }

    #[test]
    fn function_graph_frame_holding_rethook_is_followed_not_skipped() {
        // Session 4's second review: tcu_a (ufgraph u1, fgraph g0 = T, kretprobe r0 = G),
        // tail-calls tcu_b (ufgraph u2 = K, kretprobe r1 = T), which tail-calls tcx_c (fgraph
        // g1 = K). The slot holds G. At run time: g1 -> K -> r1 (T) -> u2 -> K -> r0 -> G -> g0
        // (T) -> u1 -> caller. Skipping g1 because it does not hold T handed chain[0] to g0.
        let chain = [K, 0xcafe]; // u2, u1
        let h = Hookers {
            fgraph: vec![(0x610, K), (0x600, T)], // g1, g0 (topmost first)
            rethook: vec![(0x710, T, SLOT), (0x700, G, SLOT)], // r1, r0 (newest first)
        };
        let (w, frames) = writes(plan8(&chain, G, &h));
        assert_eq!(frames, 2);
        assert_eq!(w, vec![(0x710, K), (0x600, 0xcafe)]);
        assert_eq!(replay(&chain, G, &h, &w), (0xcafe, 0));
    }

    #[test]
    fn every_small_chain_replays_to_the_caller_or_waits() {
        // All chains of up to 3 of our frames, each saving the caller (bottom), T (a tail call)
        // or a hooker; hookers' copies in every order: whatever the plan writes, the return then
        // reaches the caller without passing through our trampoline.
        let rets = [T, K, G];
        for len in 1..=3 {
            for code in 0..3usize.pow(len as u32 - 1) {
                let mut chain = vec![];
                let mut c = code;
                for _ in 0..len - 1 {
                    chain.push(rets[c % 3]);
                    c /= 3;
                }
                chain.push(0xcafe);
                for slot_v in [T, K, G] {
                    // Each hooker keeps copies of T for as many of our frames as its trampoline
                    // appears before them; build the copies from a faithful run of the chain.
                    let (h, ok) = build(&chain, slot_v);
                    if !ok {
                        continue;
                    }
                    match plan8(&chain, slot_v, &h) {
                        Plan::Hand { writes, n, frames } => {
                            assert_eq!(frames, chain.len(), "{chain:x?} slot {slot_v:x}");
                            assert_eq!(
                                replay(&chain, slot_v, &h, &writes[..n]),
                                (0xcafe, 0),
                                "{chain:x?} slot {slot_v:x}"
                            );
                        }
                        Plan::Pending => {}
                    }
                }
            }
        }
    }

    // The hookers' copies for a chain whose run starts at `slot_v`: each hooker trampoline in the
    // walk reads a fresh copy holding T (the next of our frames) or, once ours are done, the
    // caller. Returns false for chains no run can produce.
    fn build(chain: &[usize], slot_v: usize) -> (Hookers, bool) {
        let mut h = none();
        let mut v = slot_v;
        let mut i = 0;
        let mut at = 0x1000;
        for _ in 0..16 {
            match v {
                T => {
                    if i == chain.len() {
                        return (h, false);
                    }
                    v = chain[i];
                    i += 1;
                }
                G | K => {
                    let copy = if i < chain.len() { T } else { 0xcafe };
                    if v == G {
                        h.fgraph.push((at, copy))
                    } else {
                        h.rethook.push((at, copy, SLOT))
                    }
                    at += 8;
                    v = copy;
                }
                _ => return (h, i == chain.len()),
            }
        }
        (h, false)
    }

    #[test]
    fn too_long_a_chain_waits() {
        assert_eq!(
            plan::<1>(&[T, 0xcafe], SLOT, T, T, classify, |_, _| None),
            Plan::Pending
        );
    }
}
