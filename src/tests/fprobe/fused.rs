// SPDX-License-Identifier: GPL-2.0

//! The single exit probe's own ways (`GraphSide::entry_first`, `SingleExit::ret_first`): which
//! calls take them, that what their handlers see is what the general way would give, and that
//! the return's match follows the shared ops' index.

use super::*;
use crate::fprobe::FIRST_WAYS;

/// The entries and returns the single exit probe's own ways took so far.
pub(super) fn first_ways() -> (usize, usize) {
    (FIRST_WAYS[0].load(Relaxed), FIRST_WAYS[1].load(Relaxed))
}

/// `first_ways()` since `since`.
pub(super) fn first_ways_since(since: (usize, usize)) -> (usize, usize) {
    let now = first_ways();
    (now.0 - since.0, now.1 - since.1)
}

fn tail(n: i32) -> i32 {
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_tail(n) }
}

/// The only exit probe's calls go its own ways at the entry and the return, with the results
/// of the general way: the entry data and the return value at the exit, no exit for a call its
/// entry declined (and nothing left on the stack), nothing for a disabled probe. A second exit
/// probe anywhere sends every call the general way, and its going brings the own ways back.
pub(super) fn single_exit_probe_takes_its_own_ways(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    reset();
    let mut fp = probe(true, true, 16);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
    let w = first_ways();
    // The first call after registration too: the task's stack is new, not in this CPU's cache
    // yet (the own ways look it up in the table then).
    for i in 0..10 {
        kcheck_eq!(t, add(i, 3), i + 3);
    }
    kcheck_eq!(t, (calls(), first_ways_since(w)), ((10, 10, 0), (10, 10)));

    // Declined at the entry: pushed, then dropped again; no return.
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let top = g.test_current_top();
    SKIP_EXIT.store(1, Relaxed);
    let w = first_ways();
    for i in 0..5 {
        kcheck_eq!(t, add(i, 1), i + 1);
    }
    SKIP_EXIT.store(0, Relaxed);
    kcheck_eq!(t, (calls(), first_ways_since(w)), ((15, 10, 0), (5, 0)));
    kcheck_eq!(t, g.test_current_top(), top);

    // Disabled: nothing runs, nothing is pushed.
    fp.flags |= bindings::UFGRAPH_FPROBE_FL_DISABLED;
    let w = first_ways();
    kcheck_eq!(t, add(2, 2), 4);
    fp.flags &= !bindings::UFGRAPH_FPROBE_FL_DISABLED;
    kcheck_eq!(t, (calls(), first_ways_since(w)), ((15, 10, 0), (0, 0)));

    // A second exit probe, elsewhere: no single probe, the general way, the same results.
    let mut other = probe(true, true, 8);
    reg(t, &mut other, Target::Syms(&[c_str!("ufg_test_mul")]))?;
    let w = first_ways();
    for i in 0..3 {
        kcheck_eq!(t, add(i, 4), i + 4);
    }
    kcheck_eq!(t, (calls(), first_ways_since(w)), ((18, 13, 0), (0, 0)));
    t.check_ok(cr.unregister(&mut *other), "unregister other")?;
    let w = first_ways();
    kcheck_eq!(t, add(1, 4), 5);
    kcheck_eq!(t, (calls(), first_ways_since(w)), ((19, 14, 0), (1, 1)));
    t.check_ok(cr.unregister(&mut *fp), "unregister")?;
    Ok(())
}

/// Frames the single exit probe's return hands the general way, each with that way's results:
/// a tail call's (the function calls itself at the same return slot: the inner calls' frames
/// saved our trampoline as their return address, and only the outermost, entered the own way,
/// returns the own way), and a call a second exit probe registered during it also hooks is
/// not this test's (see `exit_probe_changes_during_a_call`, whose frames' headers name another
/// registration). Every call gets its exit.
pub(super) fn own_return_leaves_tail_calls_alone(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    reset();
    let mut fp = probe(false, true, 0);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_tail")]))?;
    for n in [0, 1, 3] {
        let w = first_ways();
        let before = EXITS.load(Relaxed);
        kcheck_eq!(t, tail(n), 7);
        // One entry and one exit per level; the outermost alone both ways its own.
        kcheck_eq!(
            t,
            (n, EXITS.load(Relaxed) - before, first_ways_since(w)),
            (n, n as usize + 1, (1, 1))
        );
    }
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    t.check_ok(cr.unregister(&mut *fp), "unregister")?;
    Ok(())
}

/// The words by which the single exit probe's return tells its frames name the shared ops
/// registered now, whatever happened to it: published with the probe, none while no shared ops
/// is registered (the probe's only function went with its "module"), and the new shared ops'
/// (another index: the allocator hands out the index just freed last) once an entry-only probe
/// brings one back, while the exit probe stays published throughout.
pub(super) fn own_return_follows_the_shared_ops(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    reset();
    let mut fp = probe(true, true, 8);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
    kcheck_eq!(t, cr.test_one_step_words(), Some(true));
    let w = first_ways();
    kcheck_eq!(t, add(1, 2), 3);
    kcheck_eq!(t, first_ways_since(w), (1, 1));
    let idx = cr.test_shared_ops_index();
    kcheck!(t, idx.is_some(), "no shared ops");

    // Its only function goes (as a going module's would): so does the shared ops.
    let add_ip = bindings::ufg_test_add as *const () as usize;
    cr.module_going(|ip| near(ip, add_ip));
    kcheck_eq!(t, cr.test_shared_ops_index(), None);
    kcheck!(
        t,
        cr.test_one_step_words() != Some(false),
        "the single exit probe is published with a gone ops' words"
    );
    kcheck_eq!(t, add(1, 2), 3);

    // An entry-only probe brings a shared ops back, on another index.
    let mut q = probe(true, false, 0);
    let mul = |a, b| {
        // SAFETY: a plain C fixture.
        unsafe { bindings::ufg_test_mul(a, b) }
    };
    reg(t, &mut q, Target::Syms(&[c_str!("ufg_test_mul")]))?;
    let idx2 = cr.test_shared_ops_index();
    kcheck!(
        t,
        idx2.is_some() && idx2 != idx,
        "shared ops index {:?} then {:?}",
        idx,
        idx2
    );
    kcheck_eq!(t, cr.test_one_step_words(), Some(true));
    kcheck_eq!(t, mul(3, 4), 12);
    kcheck_eq!(t, calls(), (2, 1, 0));
    t.check_ok(cr.unregister(&mut *q), "unregister entry-only")?;
    t.check_ok(cr.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, cr.test_one_step_words(), None);
    Ok(())
}
