// SPDX-License-Identifier: GPL-2.0

//! What the C API's handlers see: entry and exit with data, entry-only probes, both kinds on one
//! ops, filters, several probes on one function, disabling and skipping the exit.

use super::*;

pub(super) fn entry_exit_with_data(t: &mut Test) -> CaseResult {
    reset();
    let mut fp = probe(true, true, 8);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..50 {
        kcheck_eq!(t, add(i, 7), i + 7);
    }
    t.check_ok(core(t)?.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, ENTRIES.load(Relaxed), 50);
    kcheck_eq!(t, EXITS.load(Relaxed), 50);
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    kcheck!(
        t,
        near(
            LAST_IP.load(Relaxed),
            bindings::ufg_test_add as *const () as usize
        ),
        "entry ip {:#x}",
        LAST_IP.load(Relaxed)
    );
    // After unregister returns, nothing is called.
    add(1, 1);
    kcheck_eq!(t, ENTRIES.load(Relaxed), 50);
    Ok(())
}

fn retaddr() -> usize {
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_retaddr() as usize }
}

/// An entry-only probe leaves the call alone: the function sees its real return address, not
/// the trampoline. The control: with an exit probe added on the same function, it sees the
/// trampoline.
pub(super) fn entry_only_skips_the_shadow_stack(t: &mut Test) -> CaseResult {
    reset();
    let tramp = crate::fgraph::graph::trampoline();
    let mut fp = probe(true, false, 0);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_retaddr")]))?;
    for _ in 0..20 {
        kcheck!(
            t,
            retaddr() != tramp,
            "an entry-only probe hooked the return"
        );
    }
    let mut x = probe(false, true, 0);
    reg(t, &mut x, Target::Syms(&[c_str!("ufg_test_retaddr")]))?;
    kcheck_eq!(t, retaddr(), tramp);
    let cr = core(t)?;
    t.check_ok(cr.unregister(&mut *x), "unregister exit probe")?;
    kcheck!(
        t,
        retaddr() != tramp,
        "the return is still hooked after the exit probe went"
    );
    t.check_ok(cr.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, ENTRIES.load(Relaxed), 22);
    kcheck_eq!(t, EXITS.load(Relaxed), 1);
    Ok(())
}

/// Entry-only and exit probes share one ftrace_ops, and a call takes one of three paths
/// (fprobe/mod.rs): the only probe entry-only, the only exit probe, or a lookup while both
/// kinds are registered. Every transition between them, with exact handler counts: a stale
/// shortcut would run a probe on a function it does not hook, or skip one.
pub(super) fn both_kinds_share_one_ops(t: &mut Test) -> CaseResult {
    reset();
    let cr = core(t)?;
    let mul = |a, b| {
        // SAFETY: a plain C fixture.
        unsafe { bindings::ufg_test_mul(a, b) }
    };
    let counts = || (ENTRIES.load(Relaxed), EXITS.load(Relaxed));
    let path = crate::fprobe::test_route;
    // No probe: straight to the (empty) shadow-stack path; idle only while a first probe
    // registers or a last one unregisters.
    kcheck!(t, path() == "direct");
    // Entry-only A on add: the single entry-only shortcut.
    let mut a = probe(true, false, 0);
    reg(t, &mut a, Target::Syms(&[c_str!("ufg_test_add")]))?;
    kcheck!(t, path() == "pre");
    add(1, 2);
    mul(3, 4);
    kcheck_eq!(t, counts(), (1, 0));
    // Exit probe B on add and mul: both kinds, the lookup path; mul has only B.
    let mut b = probe(true, true, 0);
    reg(
        t,
        &mut b,
        Target::Syms(&[c_str!("ufg_test_add"), c_str!("ufg_test_mul")]),
    )?;
    kcheck_eq!(t, add(2, 2), 4);
    kcheck_eq!(t, mul(3, 4), 12);
    kcheck_eq!(t, counts(), (1 + 2 + 1, 1 + 1));
    // Idle (as while a first probe registers): no handler runs, nothing counts as missed.
    let mut way = "";
    let ran = crate::fprobe::test_idle_while(|| {
        way = path();
        add(1, 1);
        mul(1, 1);
    });
    kcheck_eq!(t, (ran, way), (true, "idle"));
    kcheck_eq!(t, counts(), (4, 2));
    kcheck_eq!(t, (a.nmissed, b.nmissed), (0, 0));
    // A goes: B is the single exit probe.
    t.check_ok(cr.unregister(&mut *a), "unregister a")?;
    add(1, 1);
    mul(1, 1);
    kcheck_eq!(t, counts(), (4 + 2, 2 + 2));
    // Entry-only C on mul: both kinds again; add has only B, mul both.
    let mut c = probe(true, false, 0);
    reg(t, &mut c, Target::Syms(&[c_str!("ufg_test_mul")]))?;
    add(1, 1);
    mul(1, 1);
    kcheck_eq!(t, counts(), (6 + 1 + 2, 4 + 1 + 1));
    // B goes: C is the only probe, entry-only; add is hooked no more.
    t.check_ok(cr.unregister(&mut *b), "unregister b")?;
    kcheck_eq!(t, add(5, 5), 10);
    kcheck_eq!(t, mul(5, 5), 25);
    kcheck_eq!(t, counts(), (9 + 1, 6));
    t.check_ok(cr.unregister(&mut *c), "unregister c")?;
    kcheck!(t, path() == "direct");
    add(1, 1);
    mul(1, 1);
    kcheck_eq!(t, counts(), (10, 6));
    // An exit probe alone, from nothing and back.
    reg(t, &mut b, Target::Syms(&[c_str!("ufg_test_mul")]))?;
    kcheck!(t, path() == "direct");
    kcheck_eq!(t, mul(2, 3), 6);
    kcheck_eq!(t, counts(), (11, 7));
    t.check_ok(cr.unregister(&mut *b), "unregister b again")?;
    kcheck!(t, path() == "direct");
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    kcheck_eq!(t, (a.nmissed, b.nmissed, c.nmissed), (0, 0, 0));
    Ok(())
}

pub(super) fn filter_and_notfilter(t: &mut Test) -> CaseResult {
    reset();
    let mut fp = probe(true, true, 0);
    reg(
        t,
        &mut fp,
        Target::Filter(c_str!("ufg_test_*"), Some(c_str!("ufg_test_mul"))),
    )?;
    // SAFETY: plain C fixtures.
    unsafe { bindings::ufg_test_mul(3, 4) };
    kcheck_eq!(t, ENTRIES.load(Relaxed), 0);
    add(1, 2);
    kcheck_eq!(t, ENTRIES.load(Relaxed), 1);
    kcheck_eq!(t, EXITS.load(Relaxed), 1);
    t.check_ok(core(t)?.unregister(&mut *fp), "unregister")?;
    Ok(())
}

pub(super) fn several_probes_on_one_function(t: &mut Test) -> CaseResult {
    reset();
    let mut a = probe(true, true, 8);
    let mut b = probe(true, true, 15 * 8);
    let mut c = probe(true, false, 0);
    reg(t, &mut a, Target::Syms(&[c_str!("ufg_test_add")]))?;
    reg(t, &mut b, Target::Syms(&[c_str!("ufg_test_add")]))?;
    reg(t, &mut c, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..10 {
        kcheck_eq!(t, add(i, 100), i + 100);
    }
    let cr = core(t)?;
    t.check_ok(cr.unregister(&mut *b), "unregister b")?;
    add(1, 1);
    t.check_ok(cr.unregister(&mut *a), "unregister a")?;
    t.check_ok(cr.unregister(&mut *c), "unregister c")?;
    // 10 calls x 3 probes entered, 10 x 2 exited; then 1 x 2 and 1 x 1.
    kcheck_eq!(t, ENTRIES.load(Relaxed), 32);
    kcheck_eq!(t, EXITS.load(Relaxed), 21);
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    Ok(())
}

pub(super) fn disable_and_skip(t: &mut Test) -> CaseResult {
    reset();
    let mut fp = probe(true, true, 8);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
    fp.flags |= bindings::UFGRAPH_FPROBE_FL_DISABLED;
    add(1, 1);
    kcheck_eq!(t, ENTRIES.load(Relaxed), 0);
    fp.flags &= !bindings::UFGRAPH_FPROBE_FL_DISABLED;
    add(1, 1);
    kcheck_eq!(t, (ENTRIES.load(Relaxed), EXITS.load(Relaxed)), (1, 1));
    // A non-zero entry return skips the exit.
    SKIP_EXIT.store(1, Relaxed);
    add(1, 1);
    kcheck_eq!(t, (ENTRIES.load(Relaxed), EXITS.load(Relaxed)), (2, 1));
    t.check_ok(core(t)?.unregister(&mut *fp), "unregister")?;
    Ok(())
}
