// SPDX-License-Identifier: GPL-2.0

//! Registration: refusals leave nothing, stale and going modules, attaching to every function.

use super::*;

pub(super) fn bad_registrations_leave_nothing(t: &mut Test) -> CaseResult {
    let c = core(t)?;
    let before = c.counts();
    let mut fp = probe(true, true, 8);
    // SAFETY: (all registrations below) each probe outlives the test and is unregistered.
    unsafe {
        expect_err(
            t,
            c.register(
                &mut *fp,
                &Target::Syms(&[c_str!("ufg_test_add"), c_str!("ufg_no_such_symbol")]),
            ),
            ENOENT,
            "unknown symbol",
        )?;
        expect_err(
            t,
            c.register(&mut *fp, &Target::Filter(c_str!("ufg_no_such_*"), None)),
            ENOENT,
            "empty glob",
        )?;
        let data = &BAD as *const AtomicUsize as usize;
        expect_err(
            t,
            c.register(&mut *fp, &Target::Ips(&[data])),
            EINVAL,
            "data address",
        )?;
        let mut none = probe(false, false, 0);
        expect_err(
            t,
            c.register(&mut *none, &Target::Syms(&[c_str!("ufg_test_add")])),
            EINVAL,
            "no handler",
        )?;
        let mut big = probe(true, true, 15 * 8 + 1);
        expect_err(
            t,
            c.register(&mut *big, &Target::Syms(&[c_str!("ufg_test_add")])),
            E2BIG,
            "entry data too big",
        )?;
    }
    kcheck!(t, !c.is_registered(&mut *fp));
    kcheck_eq!(t, c.counts(), before);
    expect_err(
        t,
        c.unregister(&mut *fp),
        EINVAL,
        "unregister of an unregistered probe",
    )?;
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
    expect_err(
        t,
        // SAFETY: as above.
        unsafe { c.register(&mut *fp, &Target::Syms(&[c_str!("ufg_test_mul")])) },
        EBUSY,
        "double registration",
    )?;
    kcheck!(t, c.is_registered(&mut *fp));
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, c.counts(), before);
    Ok(())
}

/// Marks the test module as going (as far as the graph core's list and the fprobe core's
/// generation know, in the module notifier's order) while it lives.
struct Going<'a>(&'a Fprobes, &'a crate::fgraph::graph::Graph);

impl<'a> Going<'a> {
    fn new(c: &'a Fprobes, g: &'a crate::fgraph::graph::Graph) -> Self {
        g.module_going(b"ufgraph_kunit");
        c.module_going(|_| false);
        Going(c, g)
    }
}

impl Drop for Going<'_> {
    fn drop(&mut self) {
        self.1.module_coming(b"ufgraph_kunit");
        self.0.module_coming();
    }
}

/// Resolves `target`, lets a module come (the generation moves), and checks that registering
/// `fp` on what was resolved is refused with `EAGAIN`, leaving it unregistered.
fn refused_after_a_module_came(
    t: &Test,
    c: &Fprobes,
    fp: &mut TestProbe,
    target: &Target<'_>,
    what: &str,
) -> CaseResult {
    let r = t.check_ok(Fprobes::resolve_gen(target), "resolve")?;
    c.module_coming();
    expect_err(
        t,
        // SAFETY: `fp` is a `TestProbe`, which its caller unregisters before it goes.
        unsafe { c.register_checked(&mut **fp, r) },
        EAGAIN,
        what,
    )?;
    kcheck!(t, !c.is_registered(&mut **fp));
    Ok(())
}

pub(super) fn stale_and_going_modules_are_refused(t: &mut Test) -> CaseResult {
    reset();
    let c = core(t)?;
    let before = c.counts();
    let add_sym = [c_str!("ufg_test_add")];
    let mut fp = probe(true, false, 0);
    // A module's functions resolved before a module came (or went) are refused, and nothing
    // is left.
    refused_after_a_module_came(t, c, &mut fp, &Target::Syms(&add_sym), "stale resolution")?;
    kcheck_eq!(t, c.counts(), before);
    // The kernel image's functions never go: a moved generation refuses them only beside a
    // module's (under module churn, probes on the kernel's own functions still register).
    let image = [c_str!("vfs_read")];
    let r = t.check_ok(
        Fprobes::resolve_gen(&Target::Syms(&image)),
        "resolve vfs_read",
    )?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    kcheck!(
        t,
        r.ips
            .iter()
            .all(|&ip| crate::sys::ksym::is_image_function(ip))
            && !crate::sys::ksym::is_image_function(add_ip),
        "the image's functions: vfs_read one, this module's function not"
    );
    // An address of no symbol (the heap, or a module gone already) is not the image's.
    let heap = t.check_ok(
        KVec::<u8>::with_capacity(1, GFP_KERNEL).map_err(|_| ENOMEM),
        "allocate",
    )?;
    kcheck!(
        t,
        !crate::sys::ksym::is_image_function(heap.as_ptr() as usize),
        "a heap address taken for the image's function"
    );
    c.module_coming();
    t.check_ok(
        // SAFETY: (registrations below) `fp` is a `TestProbe`, unregistered before it goes.
        unsafe { c.register_checked(&mut *fp, r) },
        "image function, moved generation",
    )?;
    kcheck!(t, c.is_registered(&mut *fp));
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    let both = [c_str!("vfs_read"), c_str!("ufg_test_add")];
    refused_after_a_module_came(
        t,
        c,
        &mut fp,
        &Target::Syms(&both),
        "image and module functions, moved generation",
    )?;
    kcheck_eq!(t, c.counts(), before);
    // vfs_read may have run meanwhile: the counts below are of this module's function only.
    reset();
    {
        // This module's functions while it is going: not resolved, by name or by glob.
        let Some(g) = crate::fgraph::graph::graph() else {
            return Err(t.fail(format_args!("no graph core")));
        };
        let _going = Going::new(c, g);
        match Fprobes::resolve_gen(&Target::Syms(&add_sym)) {
            Ok(_) => return Err(t.fail(format_args!("resolved a going module's function"))),
            Err(e) => kcheck!(t, e == ENOENT, "resolve while going: {:?}", e),
        }
        // By address too: ftrace lists the function until after the notifiers.
        match Fprobes::resolve_gen(&Target::Ips(&[add_ip])) {
            Ok(_) => return Err(t.fail(format_args!("resolved a going module's address"))),
            Err(e) => kcheck!(t, e == EINVAL, "resolve by address while going: {:?}", e),
        }
        expect_err(
            t,
            // SAFETY: as above.
            unsafe { c.register(&mut *fp, &Target::Filter(c_str!("ufg_test_ad?"), None)) },
            ENOENT,
            "glob over a going module",
        )?;
        kcheck_eq!(t, c.counts(), before);
    }
    // A module of that name came again: resolved and registered as usual.
    reg(t, &mut fp, Target::Syms(&add_sym))?;
    kcheck_eq!(t, add(2, 3), 5);
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, ENTRIES.load(Relaxed), 1);
    kcheck_eq!(t, c.counts(), before);
    Ok(())
}

pub(super) fn mass_attach_everything(t: &mut Test) -> CaseResult {
    reset();
    let c = core(t)?;
    let before = c.counts();
    // Every traceable function, entry only: one filter update, one grace period.
    let mut fp = probe(true, false, 0);
    reg(t, &mut fp, Target::Filter(c_str!("*"), None))?;
    let (ips, _) = c.counts();
    kcheck!(t, ips >= 1000, "only {} functions", ips);
    let n = ENTRIES.load(Relaxed);
    add(2, 3);
    kcheck!(t, ENTRIES.load(Relaxed) > n, "add not seen");
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    kcheck_eq!(t, c.counts(), before);
    // And with an exit handler on every vfs function, under real use.
    reset();
    let mut fp = probe(true, true, 0);
    reg(t, &mut fp, Target::Filter(c_str!("vfs_*"), None))?;
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    kcheck!(t, EXITS.load(Relaxed) <= ENTRIES.load(Relaxed));
    t.info(format_args!("attached to {} functions", ips));
    Ok(())
}

/// A module's init text is freed after its LIVE notifiers, and ftrace's records of it with it:
/// the module notifier takes its init functions out of the probes then (`Fprobes::module_live`),
/// while ftrace can still take them out of the shared ops' filter (after, it would refuse, and
/// the filter would keep a freed address). Replayed on this module's own init function
/// (tests/testfns.c), which KUnit's run from the LIVE notifier still finds.
pub(super) fn init_functions_leave_probes_at_live(t: &mut Test) -> CaseResult {
    let m: *const bindings::module = crate::THIS_MODULE.as_ptr().cast();
    // SAFETY: this module, live while its tests run.
    let within_init = |a: usize| unsafe { bindings::ufg_within_module_init(a as _, m) };
    // SAFETY: a plain C function returning an address.
    let init_ip = unsafe { bindings::ufg_test_init_text_addr() } as usize;
    if !within_init(init_ip) {
        // A later run of the suite (KUnit's debugfs `run`): the init text is gone
        // (`location_list_follows_modules` checks the first run finds it).
        return Ok(());
    }
    reset();
    let c = core(t)?;
    let before = c.counts();
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let mut fp = probe(true, true, 0);
    reg(t, &mut fp, Target::Ips(&[init_ip, add_ip]))?;
    let filter_before = c.test_filter_functions();
    let live = c.module_live(within_init);
    let filter_after = c.test_filter_functions();
    let counts = c.counts();
    let sum = add(2, 3);
    let calls = calls();
    t.check_ok(c.unregister(&mut *fp), "unregister")?;
    // ftrace took it out of the filter (it still knows the function).
    t.check_ok(live, "module live")?;
    kcheck_eq!(t, filter_after, filter_before - 1);
    // The probe keeps its other function, whose calls it still sees.
    kcheck_eq!(t, counts, (before.0 + 1, before.1 + 1));
    kcheck_eq!(t, sum, 5);
    kcheck_eq!(t, calls, (1, 1, 0));
    kcheck_eq!(t, c.counts(), before);
    Ok(())
}

/// After a failed removal from the shared ops' filter (ftrace refuses a whole removal for one
/// function it no longer knows, or out of memory), the filter may hold functions no probe has:
/// no single-probe shortcut, which would run the only probe on all of them, is published until
/// the shared ops goes with its last function; the probes keep working by lookup.
pub(super) fn stale_filter_publishes_no_shortcut(t: &mut Test) -> CaseResult {
    let c = core(t)?;
    let before = c.counts();
    if before != (0, 0) {
        return Err(t.fail(format_args!("probes left by another case: {:?}", before)));
    }
    let add_sym = [c_str!("ufg_test_add")];
    // Entry-only, then one exit probe: each alone publishes its shortcut, a stale filter none.
    for exit in [false, true] {
        reset();
        let mut fp = probe(true, exit, 0);
        reg(t, &mut fp, Target::Syms(&add_sym))?;
        let fresh = c.test_shortcuts();
        c.test_mark_filter_stale();
        let stale = c.test_shortcuts();
        let sum = add(4, 5);
        let calls = calls();
        // Its last function gone, the shared ops went with its filter: the next probe's is new.
        t.check_ok(c.unregister(&mut *fp), "unregister")?;
        reg(t, &mut fp, Target::Syms(&add_sym))?;
        let again = c.test_shortcuts();
        t.check_ok(c.unregister(&mut *fp), "unregister again")?;
        let want = (!exit, exit);
        kcheck_eq!(t, (exit, fresh), (exit, want));
        kcheck_eq!(t, (exit, stale), (exit, (false, false)));
        kcheck_eq!(t, sum, 9);
        kcheck_eq!(t, (exit, calls), (exit, (1, usize::from(exit), 0)));
        kcheck_eq!(t, (exit, again), (exit, want));
    }
    kcheck_eq!(t, c.counts(), before);
    Ok(())
}

/// The list of traceable functions the module notifier keeps (`sys::ksym::LocList`) follows
/// modules without reading ftrace's file again: replaying this module's going and coming on it
/// takes out exactly this module's functions, then puts back what ftrace has for them (its call
/// sites, as ftrace adjusts them into locations: the file agrees, on each arch), and its going
/// live takes out exactly its init text's functions. A list read after a going module found
/// none to edit is provisional: the next module event drops it.
pub(super) fn location_list_follows_modules(t: &mut Test) -> CaseResult {
    let list = crate::sys::ksym::test_list();
    kcheck!(t, list.is_some(), "no list: the module notifier keeps one");
    let Some(list) = list else { return Ok(()) };
    let m: *const bindings::module = crate::THIS_MODULE.as_ptr().cast();
    // SAFETY: this module, live while its tests run.
    let within = |a: usize| unsafe { bindings::ufg_within_module(a as _, m) };
    // SAFETY: as above.
    let within_init = |a: usize| unsafe { bindings::ufg_within_module_init(a as _, m) };
    let add_ip = bindings::ufg_test_add as *const () as usize;
    // A traced function in this module's init text (tests/testfns.c), still there while KUnit
    // runs the suites from the LIVE notifier at load; the loader frees it after. A later run
    // (KUnit's debugfs `run`) finds it gone and skips its checks; the first must find it.
    // SAFETY: a plain C function returning an address.
    let init_ip = unsafe { bindings::ufg_test_init_text_addr() } as usize;
    let init_there = within_init(init_ip);
    static RAN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    let first_run = !RAN.swap(true, Relaxed);
    kcheck!(
        t,
        init_there || !first_run,
        "the init text is gone at the suite's first run"
    );
    // A reading of its own, not provisional (this module's own coming and going live are
    // module events ufgraph_kunit's notifier saw).
    list.test_reset();
    let kept = t.check_ok(list.test_kept(), "read the list")?;
    let add_loc = t.check_ok(crate::sys::ksym::locations(&[add_ip]), "locations")?[0];
    let init_loc = if init_there {
        Some(t.check_ok(crate::sys::ksym::locations(&[init_ip]), "init locations")?[0])
    } else {
        None
    };
    let kept_init = kept.iter().filter(|&&l| within_init(l)).count();
    kcheck!(
        t,
        kept.binary_search(&add_loc).is_ok(),
        "ufg_test_add not listed"
    );
    kcheck!(t, kept.windows(2).all(|w| w[0] < w[1]), "not sorted");
    let mine = kept.iter().filter(|&&l| within(l)).count();
    kcheck_eq!(
        t,
        t.check_ok(list.test_compare_with_file(), "compare")?,
        None
    );
    // The notifier's edits, replayed for this module. It is valid for each call; the edits
    // only look at its memory ranges and its call-site list, in its memory while it is loaded.
    // SAFETY: as said.
    let going = || unsafe { list.module_going(m) };
    // SAFETY: as said.
    let coming = || unsafe { list.module_coming(m) };
    // SAFETY: as said.
    let live = || unsafe { list.module_live(m) };
    // Going: every function of this module leaves, nothing else.
    going();
    let after_going = list.test_kept();
    let refused = crate::sys::ksym::try_locations(&[add_ip]);
    // Coming again (before any check can return): its call sites, adjusted.
    coming();
    let after_coming = list.test_compare_with_file();
    // Live: a module's init text leaves then (ftrace drops its records after the notifiers,
    // so the file still lists them): exactly the init text's functions leave the list.
    live();
    let after_live = list.test_kept();
    let init_refused = crate::sys::ksym::try_locations(&[init_ip]);
    // Until the loader frees it, ftrace still lists the init function, and a resolution by
    // name (which reads ftrace's file) finds it: a registration leaves it out, or is refused
    // if nothing else is left.
    let mut by_name = None;
    if init_there {
        let c = core(t)?;
        reset();
        let init_sym = [c_str!("ufg_test_init_text")];
        let resolved = Fprobes::resolve_gen(&Target::Syms(&init_sym)).map(|r| r.ips.len());
        let mut fp = probe(true, false, 0);
        // SAFETY: a `TestProbe`, unregistered before it goes (its drop, at the latest).
        let alone = unsafe { c.register(&mut *fp, &Target::Syms(&init_sym)) };
        let before = c.counts();
        let both = [c_str!("ufg_test_init_text"), c_str!("ufg_test_add")];
        // SAFETY: as above.
        let with_add = unsafe { c.register(&mut *fp, &Target::Syms(&both)) };
        let counts = c.counts();
        let sum = add(1, 1);
        let _ = c.unregister(&mut *fp);
        by_name = Some((
            resolved,
            alone,
            with_add,
            counts.0 - before.0,
            sum,
            ENTRIES.load(Relaxed),
        ));
    }
    // Provisional: with no list, a going module's event leaves ftrace unsettled; a list read
    // then is dropped, not edited, at the next event.
    list.test_reset();
    going();
    let none_after_going = !list.test_has_list();
    let provisional = list.test_kept();
    coming();
    let dropped = !list.test_has_list();
    let reread = list.test_kept().map(|l| l.len());
    let after_going = t.check_ok(after_going, "the list after going")?;
    kcheck_eq!(t, after_going.len(), kept.len() - mine);
    kcheck!(t, mine > 0 && !after_going.iter().any(|&l| within(l)));
    kcheck!(
        t,
        matches!(refused.as_deref(), Ok([None])),
        "a function of a module gone from the list still resolved: {:?}",
        refused
    );
    kcheck_eq!(t, t.check_ok(after_coming, "compare after coming")?, None);
    if let Some((resolved, alone, with_add, functions, sum, entries)) = by_name {
        kcheck_eq!(
            t,
            t.check_ok(resolved, "resolve the init function by name")?,
            1
        );
        kcheck!(
            t,
            matches!(alone, Err(e) if e == ENOENT),
            "a probe on the init function alone, after live: {:?}",
            alone
        );
        t.check_ok(with_add, "a probe on the init function and another")?;
        kcheck_eq!(t, (functions, sum, entries), (1, 2, 1));
    }
    let after_live = t.check_ok(after_live, "the list after live")?;
    kcheck!(
        t,
        after_live
            .iter()
            .copied()
            .eq(kept.iter().copied().filter(|&l| !within_init(l))),
        "after live: not the list less its init text ({} of {} left, {} init)",
        after_live.len(),
        kept.len(),
        kept_init
    );
    if let Some(init_loc) = init_loc {
        kcheck!(
            t,
            kept.binary_search(&init_loc).is_ok(),
            "init function not listed"
        );
        kcheck!(
            t,
            kept_init > 0 && !after_live.iter().any(|&l| within_init(l))
        );
        kcheck!(
            t,
            matches!(init_refused.as_deref(), Ok([None])),
            "a freed init function still resolved: {:?}",
            init_refused
        );
    }
    kcheck!(t, none_after_going, "a going event made a list");
    kcheck_eq!(
        t,
        t.check_ok(provisional, "provisional reading")?.len(),
        kept.len()
    );
    kcheck!(t, dropped, "a provisional list was edited, not dropped");
    kcheck_eq!(t, t.check_ok(reread, "reading after the drop")?, kept.len());
    kcheck_eq!(
        t,
        t.check_ok(list.test_compare_with_file(), "compare at the end")?,
        None
    );
    kcheck!(
        t,
        t.check_ok(crate::sys::ksym::locations(&[add_ip]), "resolve again")? == [add_loc]
    );
    Ok(())
}
