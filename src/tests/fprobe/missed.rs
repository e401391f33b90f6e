// SPDX-License-Identifier: GPL-2.0

//! Misses: recursion, `nmissed` and the total, overruns of the shadow stack.

use super::*;

pub(super) fn recursion_and_nmissed(t: &mut Test) -> CaseResult {
    reset();
    let mut fp = probe(true, true, 8);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_recurse")]))?;
    // SAFETY: a plain C fixture.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(20) }, 20);
    kcheck_eq!(t, calls(), (21, 21, 0));
    reset();
    // Deeper than a shadow stack holds: the frames that do not fit are counted as missed.
    // SAFETY: as above.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(150) }, 150);
    let missed = fp.nmissed;
    kcheck!(t, missed > 0, "nothing missed at depth 150");
    kcheck_eq!(t, ENTRIES.load(Relaxed) + missed, 151);
    kcheck_eq!(t, EXITS.load(Relaxed), ENTRIES.load(Relaxed));
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    t.check_ok(core(t)?.unregister(&mut *fp), "unregister")?;
    Ok(())
}

/// A probe unregistered and registered again starts its `nmissed` at 0, as upstream's
/// `register_fprobe()` does, and the core's total (debugfs `fprobe_missed`) counts each miss
/// once: an `f:` event's probes are registered each time it is enabled, and before they were
/// counted again at every unregistration (the total grew by all the earlier misses each time).
pub(super) fn missed_total_counts_each_miss_once(t: &mut Test) -> CaseResult {
    reset();
    let c = core(t)?;
    let base = c.missed();
    let mut fp = probe(true, true, 8);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_recurse")]))?;
    // Deeper than a shadow stack holds: some calls are missed.
    // SAFETY: a plain C fixture; 150 levels are well within the kernel stack.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(150) }, 150);
    let m1 = fp.nmissed;
    kcheck!(t, m1 > 0, "nothing missed at depth 150");
    kcheck_eq!(t, c.missed() - base, m1);
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, c.missed() - base, m1);
    // Registered again: its count starts at 0, the total stays.
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_recurse")]))?;
    kcheck_eq!(t, { fp.nmissed }, 0);
    kcheck_eq!(t, c.missed() - base, m1);
    // SAFETY: as above.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(150) }, 150);
    let m2 = fp.nmissed;
    kcheck!(t, m2 > 0, "nothing missed at depth 150, registered again");
    kcheck_eq!(t, c.missed() - base, m1 + m2);
    t.check_ok(c.unregister(&mut *fp), "unregister again")?;
    kcheck_eq!(t, c.missed() - base, m1 + m2);
    Ok(())
}

// An entry handler that calls a hooked function (ufg_test_mul).
/// A callback C calls.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered test probe.
unsafe extern "C" fn on_entry_calls_mul(
    _fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    _data: *mut c_void,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_mul(2, 3) };
    0
}

/// A hooked call made from inside a handler is refused by the recursion guard before any probe
/// on it runs: entry-only and exit probes alike count it missed, once per call. As ftrace's own
/// guard does, ours lets one nested level through (it cannot tell it from a context transition
/// that has not updated the preempt count yet): the handler on add calls mul, whose probes run;
/// the entry-only probe's handler on mul calls mul again, and that call is refused.
pub(super) fn recursion_misses_both_kinds(t: &mut Test) -> CaseResult {
    reset();
    let mut outer = probe(true, false, 0);
    outer.entry_handler = Some(on_entry_calls_mul);
    reg(t, &mut outer, Target::Syms(&[c_str!("ufg_test_add")]))?;
    let mut y = probe(true, false, 0);
    y.entry_handler = Some(on_entry_calls_mul);
    reg(t, &mut y, Target::Syms(&[c_str!("ufg_test_mul")]))?;
    let mut z = probe(true, true, 0);
    reg(t, &mut z, Target::Syms(&[c_str!("ufg_test_mul")]))?;
    for i in 0..3 {
        kcheck_eq!(t, add(i, 1), i + 1);
    }
    // Per add: outer, then (nested once) y and z on mul, z's exit; y's own mul call refused.
    kcheck_eq!(t, (ENTRIES.load(Relaxed), EXITS.load(Relaxed)), (9, 3));
    // Unless ftrace's list function refused y's call first (`LIST_FUNC_GUARDS`): not counted.
    let missed = (outer.nmissed, y.nmissed, z.nmissed);
    kcheck!(
        t,
        missed == (0, 3, 3) || (crate::tests::LIST_FUNC_GUARDS && missed == (0, 0, 0)),
        "nmissed {:?}, want (0, 3, 3)",
        missed
    );
    let cr = core(t)?;
    for p in [&mut outer, &mut y, &mut z] {
        t.check_ok(cr.unregister(&mut **p), "unregister")?;
    }
    Ok(())
}

/// A full shadow stack with several probes on the function (the lookup path): only the probes
/// with an exit handler miss, each once per call that found no room, and the graph ops counts
/// those calls as overruns (fgraph.md). An entry-only probe on the same function ran its handler
/// on every call and missed nothing; a disabled exit probe was not called and missed nothing.
pub(super) fn overrun_misses_only_exit_probes(t: &mut Test) -> CaseResult {
    reset();
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph")))?;
    let overruns = || {
        let mut n = 0u64;
        let _ = g.for_each_slot(|_, s| -> core::result::Result<(), ()> {
            n += s.missed_overrun.load(Relaxed);
            Ok(())
        });
        n
    };
    let mut a = probe(true, true, 8);
    let mut b = probe(true, true, 8);
    let mut c = probe(true, false, 0);
    let mut d = probe(true, true, 8);
    for fp in [&mut a, &mut b, &mut c, &mut d] {
        reg(t, fp, Target::Syms(&[c_str!("ufg_test_recurse")]))?;
    }
    d.flags |= bindings::UFGRAPH_FPROBE_FL_DISABLED;
    let before = overruns();
    // SAFETY: a plain C fixture; 150 levels are well within the kernel stack.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(150) }, 150);
    let missed = a.nmissed;
    kcheck!(t, missed > 0, "nothing missed at depth 150");
    kcheck_eq!(t, { b.nmissed }, missed);
    kcheck_eq!(t, { c.nmissed }, 0);
    kcheck_eq!(t, { d.nmissed }, 0);
    // a and b on the calls that fit, c on all 151.
    kcheck_eq!(t, ENTRIES.load(Relaxed), 2 * (151 - missed) + 151);
    kcheck_eq!(t, EXITS.load(Relaxed), 2 * (151 - missed));
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    kcheck_eq!(t, (overruns() - before) as usize, missed);
    Ok(())
}
