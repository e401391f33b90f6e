// SPDX-License-Identifier: GPL-2.0

//! fprobe on the fgraph core, through the same entry points the C API uses.

use crate::bindings::{self, ufgraph_fprobe};
use crate::fgraph::graph::graph;
use crate::fprobe::{fprobes, Fprobes, Target};
use crate::sys::ftrace::Regs;
use crate::sys::ktest::{CaseResult, Failed, Test};
use crate::{kcheck, kcheck_eq, kunit_suite};
use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use kernel::c_str;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

// What the handlers saw. One test runs at a time, and each starts by resetting this.
static ENTRIES: AtomicUsize = AtomicUsize::new(0);
static EXITS: AtomicUsize = AtomicUsize::new(0);
static BAD: AtomicUsize = AtomicUsize::new(0);
static LAST_IP: AtomicUsize = AtomicUsize::new(0);
static SKIP_EXIT: AtomicUsize = AtomicUsize::new(0);

fn reset() {
    for a in [&ENTRIES, &EXITS, &BAD, &LAST_IP, &SKIP_EXIT] {
        a.store(0, Relaxed);
    }
}

fn regs_arg(fregs: *mut bindings::ftrace_regs, n: u32) -> usize {
    // SAFETY: handlers get valid registers for their duration.
    unsafe { crate::sys::ftrace::Regs::from_raw(fregs) }.arg(n)
}

fn regs_ret(fregs: *mut bindings::ftrace_regs) -> usize {
    // SAFETY: as above.
    unsafe { crate::sys::ftrace::Regs::from_raw(fregs) }.retval()
}

// Entry: records the ip; with entry data, stores the expected return value of ufg_test_add
// (arg0 + arg1) or, for ufg_test_recurse, arg0 (it returns its argument).
/// A callback C calls.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered test probe.
unsafe extern "C" fn on_entry(
    fp: *mut ufgraph_fprobe,
    ip: c_ulong,
    _ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    LAST_IP.store(ip, Relaxed);
    // SAFETY: `fp` is the registered probe the handler belongs to.
    let size = unsafe { (*fp).entry_data_size };
    if size >= 8 {
        let expect = if near(ip, bindings::ufg_test_recurse as *const () as usize) {
            regs_arg(fregs, 0) as u32 as usize
        } else {
            regs_arg(fregs, 0).wrapping_add(regs_arg(fregs, 1)) as u32 as usize
        };
        // SAFETY: `data` holds `entry_data_size` bytes for this call.
        unsafe { data.cast::<usize>().write(expect) };
        // Fill the rest with a pattern the exit checks.
        for i in 1..size / 8 {
            // SAFETY: as above.
            unsafe { data.cast::<usize>().add(i).write(0xfeed_0000 + i) };
        }
    } else if !data.is_null() {
        BAD.fetch_add(1, Relaxed);
    }
    SKIP_EXIT.load(Relaxed) as c_int
}

/// A callback C calls.
///
/// # Safety
///
/// As for [`on_entry`], at the return.
unsafe extern "C" fn on_exit(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    EXITS.fetch_add(1, Relaxed);
    // SAFETY: as above.
    let size = unsafe { (*fp).entry_data_size };
    if size >= 8 {
        // SAFETY: the same `entry_data_size` bytes the entry handler filled.
        let got = unsafe { data.cast::<usize>().read() };
        if got != regs_ret(fregs) as u32 as usize {
            BAD.fetch_add(1, Relaxed);
        }
        for i in 1..size / 8 {
            // SAFETY: as above.
            if unsafe { data.cast::<usize>().add(i).read() } != 0xfeed_0000 + i {
                BAD.fetch_add(1, Relaxed);
            }
        }
    }
}

/// A test's probe, on its stack: unregistered when it goes out of scope, also when a check fails
/// half way through a test (a probe left registered in a dead stack frame would be a use after
/// free for the next test).
struct TestProbe(ufgraph_fprobe);

impl core::ops::Deref for TestProbe {
    type Target = ufgraph_fprobe;
    fn deref(&self) -> &ufgraph_fprobe {
        &self.0
    }
}

impl core::ops::DerefMut for TestProbe {
    fn deref_mut(&mut self) -> &mut ufgraph_fprobe {
        &mut self.0
    }
}

impl Drop for TestProbe {
    fn drop(&mut self) {
        if let Some(c) = fprobes() {
            if c.is_registered(&mut self.0) {
                let _ = c.unregister(&mut self.0);
            }
        }
    }
}

fn probe(entry: bool, exit: bool, data: usize) -> TestProbe {
    let mut fp = ufgraph_fprobe::default();
    if entry {
        fp.entry_handler = Some(on_entry);
    }
    if exit {
        fp.exit_handler = Some(on_exit);
    }
    fp.entry_data_size = data;
    TestProbe(fp)
}

fn near(ip: usize, sym: usize) -> bool {
    ip >= sym && ip < sym + 16
}

fn core(t: &Test) -> Result<&'static Fprobes, Failed> {
    fprobes().ok_or_else(|| t.fail(format_args!("no fprobe core")))
}

fn reg(t: &Test, fp: &mut ufgraph_fprobe, target: Target<'_>) -> CaseResult {
    // SAFETY: every test's probe is a `TestProbe`, unregistered before it goes out of scope.
    t.check_ok(unsafe { core(t)?.register(fp, &target) }, "register")
}

fn add(a: i32, b: i32) -> i32 {
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_add(a, b) }
}

fn entry_exit_with_data(t: &mut Test) -> CaseResult {
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
fn entry_only_skips_the_shadow_stack(t: &mut Test) -> CaseResult {
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
fn both_kinds_share_one_ops(t: &mut Test) -> CaseResult {
    reset();
    let cr = core(t)?;
    let mul = |a, b| {
        // SAFETY: a plain C fixture.
        unsafe { bindings::ufg_test_mul(a, b) }
    };
    let counts = || (ENTRIES.load(Relaxed), EXITS.load(Relaxed));
    // Entry-only A on add: the single entry-only shortcut.
    let mut a = probe(true, false, 0);
    reg(t, &mut a, Target::Syms(&[c_str!("ufg_test_add")]))?;
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
    add(1, 1);
    mul(1, 1);
    kcheck_eq!(t, counts(), (10, 6));
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    kcheck_eq!(t, (a.nmissed, b.nmissed, c.nmissed), (0, 0, 0));
    Ok(())
}

fn filter_and_notfilter(t: &mut Test) -> CaseResult {
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

fn expect_err(t: &Test, r: Result, want: Error, what: &str) -> CaseResult {
    match r {
        Ok(()) => Err(t.fail(format_args!("{}: accepted", what))),
        Err(e) => {
            kcheck!(t, e == want, "{}: got {:?}, want {:?}", what, e, want);
            Ok(())
        }
    }
}

fn bad_registrations_leave_nothing(t: &mut Test) -> CaseResult {
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

/// Marks the test module as going (as far as its fprobe core knows) while it lives.
struct Going<'a>(&'a Fprobes);

impl Drop for Going<'_> {
    fn drop(&mut self) {
        self.0.module_coming(b"ufgraph_kunit");
    }
}

fn stale_and_going_modules_are_refused(t: &mut Test) -> CaseResult {
    reset();
    let c = core(t)?;
    let before = c.counts();
    let add_sym = [c_str!("ufg_test_add")];
    let mut fp = probe(true, false, 0);
    // Functions resolved before a module came (or went) are refused, and nothing is left.
    let r = match Fprobes::resolve_gen(&Target::Syms(&add_sym)) {
        Ok(r) => r,
        Err(e) => return Err(t.fail(format_args!("resolve: {:?}", e))),
    };
    c.module_coming(b"ufg_no_such_module");
    expect_err(
        t,
        // SAFETY: (registrations below) `fp` is a `TestProbe`, unregistered before it goes.
        unsafe { c.register_checked(&mut *fp, r) },
        EAGAIN,
        "stale resolution",
    )?;
    kcheck!(t, !c.is_registered(&mut *fp));
    kcheck_eq!(t, c.counts(), before);
    {
        // This module's functions while it is going: not resolved, by name or by glob.
        c.module_going(b"ufgraph_kunit", |_| false);
        let _g = Going(c);
        match Fprobes::resolve_gen(&Target::Syms(&add_sym)) {
            Ok(_) => return Err(t.fail(format_args!("resolved a going module's function"))),
            Err(e) => kcheck!(t, e == ENOENT, "resolve while going: {:?}", e),
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

fn several_probes_on_one_function(t: &mut Test) -> CaseResult {
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

fn disable_and_skip(t: &mut Test) -> CaseResult {
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

fn recursion_and_nmissed(t: &mut Test) -> CaseResult {
    reset();
    let mut fp = probe(true, true, 8);
    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_recurse")]))?;
    // SAFETY: a plain C fixture.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(20) }, 20);
    kcheck_eq!(
        t,
        (
            ENTRIES.load(Relaxed),
            EXITS.load(Relaxed),
            BAD.load(Relaxed)
        ),
        (21, 21, 0)
    );
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
fn missed_total_counts_each_miss_once(t: &mut Test) -> CaseResult {
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
fn recursion_misses_both_kinds(t: &mut Test) -> CaseResult {
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
        missed == (0, 3, 3) || (super::LIST_FUNC_GUARDS && missed == (0, 0, 0)),
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
fn overrun_misses_only_exit_probes(t: &mut Test) -> CaseResult {
    reset();
    // SAFETY: the module is loaded.
    let g = unsafe { graph() }.ok_or_else(|| t.fail(format_args!("no graph")))?;
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

fn mass_attach_everything(t: &mut Test) -> CaseResult {
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

/// What [`rust_api`]'s handler saw.
#[derive(Default)]
struct Seen {
    entries: AtomicUsize,
    exits: AtomicUsize,
    bad: AtomicUsize,
    missed: AtomicUsize,
}

fn mul(a: i64, b: i64) -> i64 {
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_mul(a as _, b as _) as i64 }
}

impl crate::fprobe::api::FprobeHandler for Seen {
    const EXIT: bool = true;

    fn entry_data_size(&self) -> usize {
        8
    }

    fn entry(&self, _ip: usize, _ret_ip: usize, regs: &Regs, data: &mut [u8]) -> bool {
        self.entries.fetch_add(1, Relaxed);
        let (a, b) = (regs.arg(0), regs.arg(1));
        if a == 5 {
            // Re-entered from its own handler: the recursion guard lets one level through (its
            // transition bit, as ftrace's), whose handler calls again: that call is refused,
            // and the probe missed it.
            mul(5, 0);
        }
        if data.len() != 8 {
            self.bad.fetch_add(1, Relaxed);
            return false;
        }
        data.copy_from_slice(&a.wrapping_mul(b).to_ne_bytes());
        // 7: no exit handler for this call.
        a != 7
    }

    fn exit(&self, _ip: usize, _ret_ip: usize, regs: &Regs, data: &mut [u8]) {
        self.exits.fetch_add(1, Relaxed);
        let want = data
            .try_into()
            .map(usize::from_ne_bytes)
            .unwrap_or(usize::MAX);
        if regs.retval() != want {
            self.bad.fetch_add(1, Relaxed);
        }
    }

    fn missed(&self) {
        self.missed.fetch_add(1, Relaxed);
    }
}

/// The Rust fprobe API (fprobe::api, which the kretprobe shim is built on): a handler type's
/// methods run at entry and exit with the call's entry data, an entry that says no skips the
/// exit, a miss reaches the handler as well as `nmissed`, and an unregistered probe sees
/// nothing. Dropping a registered probe unregisters it.
fn rust_api(t: &mut Test) -> CaseResult {
    use crate::fprobe::api::Fprobe;
    let c = core(t)?;
    let before = c.counts();
    let mut p = t.check_ok(Fprobe::new(Seen::default()), "Fprobe::new")?;
    t.check_ok(
        p.as_mut()
            .register(&Target::Syms(&[c_str!("ufg_test_mul")])),
        "register",
    )?;
    expect_err(
        t,
        p.as_mut()
            .register(&Target::Syms(&[c_str!("ufg_test_mul")])),
        EBUSY,
        "double registration",
    )?;
    for i in 0..6 {
        kcheck_eq!(t, mul(i, 3), i * 3);
    }
    kcheck_eq!(t, mul(7, 2), 14);
    let h = p.handler();
    let seen = |h: &Seen| {
        (
            h.entries.load(Relaxed),
            h.exits.load(Relaxed),
            h.bad.load(Relaxed),
            h.missed.load(Relaxed),
        )
    };
    // 0..6, the nested mul(5, 0) and 7 entered, all but 7 with an exit; the call nested in
    // mul(5, 0) missed (unless ftrace's list function turned it away first, LIST_FUNC_GUARDS).
    let missed = if super::LIST_FUNC_GUARDS && h.missed.load(Relaxed) == 0 {
        0
    } else {
        1
    };
    kcheck_eq!(t, seen(h), (8, 7, 0, missed));
    kcheck_eq!(t, p.nmissed(), missed);
    t.check_ok(p.as_mut().unregister(), "unregister")?;
    kcheck_eq!(t, mul(2, 2), 4);
    kcheck_eq!(t, seen(p.handler()), (8, 7, 0, missed));
    expect_err(t, p.as_mut().unregister(), EINVAL, "unregister twice")?;
    // A failed registration leaves it unregistered, and it can register again.
    expect_err(
        t,
        p.as_mut()
            .register(&Target::Syms(&[c_str!("ufg_no_such_function")])),
        ENOENT,
        "unknown symbol",
    )?;
    expect_err(
        t,
        p.as_mut().unregister(),
        EINVAL,
        "unregister after a failed register",
    )?;
    // Registered again, then dropped: gone from the core (checked before any call could reach
    // freed memory).
    t.check_ok(
        p.as_mut()
            .register(&Target::Syms(&[c_str!("ufg_test_add")])),
        "register again",
    )?;
    kcheck!(
        t,
        c.counts() != before,
        "registered, yet the core's tables are as before"
    );
    drop(p);
    kcheck_eq!(t, c.counts(), before);
    kcheck_eq!(t, add(1, 2), 3);
    // What `Fprobe::new` refuses.
    struct Big(usize);
    impl crate::fprobe::api::FprobeHandler for Big {
        const EXIT: bool = true;
        fn entry_data_size(&self) -> usize {
            self.0
        }
        fn entry(&self, _: usize, _: usize, _: &Regs, _: &mut [u8]) -> bool {
            true
        }
    }
    struct EntryOnly(usize);
    impl crate::fprobe::api::FprobeHandler for EntryOnly {
        const EXIT: bool = false;
        fn entry_data_size(&self) -> usize {
            self.0
        }
        fn entry(&self, _: usize, _: usize, _: &Regs, _: &mut [u8]) -> bool {
            false
        }
    }
    kcheck!(
        t,
        matches!(Fprobe::new(Big(15 * 8 + 1)), Err(e) if e == E2BIG)
    );
    kcheck!(t, Fprobe::new(Big(15 * 8)).is_ok());
    kcheck!(
        t,
        matches!(Fprobe::new(EntryOnly(8)), Err(e) if e == EINVAL)
    );
    kcheck!(t, Fprobe::new(EntryOnly(0)).is_ok());
    Ok(())
}

/// A handler whose `missed` calls the probed function.
#[derive(Default)]
struct MissCalls {
    entries: AtomicUsize,
    missed: AtomicUsize,
}

impl crate::fprobe::api::FprobeHandler for MissCalls {
    const EXIT: bool = true;

    fn entry(&self, _ip: usize, _ret_ip: usize, regs: &Regs, _data: &mut [u8]) -> bool {
        self.entries.fetch_add(1, Relaxed);
        if regs.arg(0) == 5 {
            // As in `rust_api`: the second nested call is turned away, a miss.
            mul(5, 0);
        }
        true
    }

    fn missed(&self) {
        self.missed.fetch_add(1, Relaxed);
        // Where the guard turned the call away: this call is turned away too, and its miss
        // must not be passed on again (it would recurse until the stack overflows).
        mul(6, 0);
    }
}

/// A Rust probe's `missed` that calls the probed function: the miss of that call is counted
/// (`nmissed`) but not passed on, so there is no recursion. Before the review of session 10 it
/// recursed until the kernel stack overflowed.
fn rust_api_missed_reentry(t: &mut Test) -> CaseResult {
    use crate::fprobe::api::Fprobe;
    let mut p = t.check_ok(Fprobe::new(MissCalls::default()), "Fprobe::new")?;
    t.check_ok(
        p.as_mut()
            .register(&Target::Syms(&[c_str!("ufg_test_mul")])),
        "register",
    )?;
    kcheck_eq!(t, mul(5, 2), 10);
    let h = p.handler();
    let got = (h.entries.load(Relaxed), h.missed.load(Relaxed), p.nmissed());
    // Outer and nested entries; the nested one's call turned away (passed on once), and the
    // call `missed` made turned away (counted only). With ftrace's list function in front
    // (LIST_FUNC_GUARDS), it may turn both away before the probe sees them.
    kcheck!(
        t,
        got == (2, 1, 2) || (super::LIST_FUNC_GUARDS && got == (2, 0, 0)),
        "entries, misses passed on, nmissed: {:?}, want (2, 1, 2)",
        got
    );
    t.check_ok(p.as_mut().unregister(), "unregister")?;
    Ok(())
}

/// What [`rust_api_exit_only`]'s handler saw.
#[derive(Default)]
struct ExitOnly {
    entries: AtomicUsize,
    exits: AtomicUsize,
    bad: AtomicUsize,
}

impl crate::fprobe::api::FprobeHandler for ExitOnly {
    const EXIT: bool = true;

    fn has_entry(&self) -> bool {
        false
    }

    fn entry(&self, _ip: usize, _ret_ip: usize, _regs: &Regs, _data: &mut [u8]) -> bool {
        self.entries.fetch_add(1, Relaxed);
        true
    }

    fn exit(&self, _ip: usize, _ret_ip: usize, regs: &Regs, data: &mut [u8]) {
        self.exits.fetch_add(1, Relaxed);
        if !data.is_empty() || regs.retval() != 12 {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

/// An exit-only Rust probe (`has_entry` false, as an event's `%return` probe without entry
/// arguments): every call reaches `exit`, with its return value and no entry data, and `entry`
/// is never called. `Fprobe::new` refuses entry data for such a probe (nothing would fill it),
/// and a probe with neither handler.
fn rust_api_exit_only(t: &mut Test) -> CaseResult {
    use crate::fprobe::api::{Fprobe, FprobeHandler};
    let mut p = t.check_ok(Fprobe::new(ExitOnly::default()), "Fprobe::new")?;
    t.check_ok(
        p.as_mut()
            .register(&Target::Syms(&[c_str!("ufg_test_mul")])),
        "register",
    )?;
    for _ in 0..5 {
        kcheck_eq!(t, mul(3, 4), 12);
    }
    t.check_ok(p.as_mut().unregister(), "unregister")?;
    let h = p.handler();
    let seen = (
        h.entries.load(Relaxed),
        h.exits.load(Relaxed),
        h.bad.load(Relaxed),
    );
    kcheck_eq!(t, seen, (0, 5, 0));
    struct WithData;
    impl FprobeHandler for WithData {
        const EXIT: bool = true;
        fn has_entry(&self) -> bool {
            false
        }
        fn entry_data_size(&self) -> usize {
            8
        }
        fn entry(&self, _: usize, _: usize, _: &Regs, _: &mut [u8]) -> bool {
            true
        }
    }
    struct Neither;
    impl FprobeHandler for Neither {
        const EXIT: bool = false;
        fn has_entry(&self) -> bool {
            false
        }
        fn entry(&self, _: usize, _: usize, _: &Regs, _: &mut [u8]) -> bool {
            false
        }
    }
    kcheck!(t, matches!(Fprobe::new(WithData), Err(e) if e == EINVAL));
    kcheck!(t, matches!(Fprobe::new(Neither), Err(e) if e == EINVAL));
    Ok(())
}

/// Exits of the [`pq_entry`]/[`pq_exit`] probes, by their entry data size in words.
static PQ_EXITS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// Fills the probe's entry data with a pattern of its own (its address).
///
/// # Safety
///
/// Called by the fprobe core only, for a registered test probe.
unsafe extern "C" fn pq_entry(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    // SAFETY: `fp` is the registered probe the handler belongs to.
    let words = unsafe { (*fp).entry_data_size } / 8;
    for i in 0..words {
        // SAFETY: `data` holds `entry_data_size` bytes for this call.
        unsafe { data.cast::<usize>().add(i).write(fp as usize ^ i) };
    }
    0
}

/// Counts the exit by data size and checks the pattern.
///
/// # Safety
///
/// As for [`pq_entry`], at the return.
unsafe extern "C" fn pq_exit(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    // SAFETY: as above.
    let words = unsafe { (*fp).entry_data_size } / 8;
    if let Some(c) = PQ_EXITS.get(words) {
        c.fetch_add(1, Relaxed);
    }
    for i in 0..words {
        // SAFETY: the entry data the entry handler filled.
        if unsafe { data.cast::<usize>().add(i).read() } != fp as usize ^ i {
            BAD.fetch_add(1, Relaxed);
        }
    }
}

/// The probe [`unregister_in_call`] unregisters.
static UNREG: core::sync::atomic::AtomicPtr<ufgraph_fprobe> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// Called by `ufg_test_call` inside its frame: unregisters the probe in [`UNREG`].
///
/// # Safety
///
/// Only from `ufg_test_call`, in a test.
unsafe extern "C" fn unregister_in_call(x: kernel::ffi::c_long) -> kernel::ffi::c_long {
    let fp = UNREG.swap(core::ptr::null_mut(), Relaxed);
    if let (false, Some(c)) = (fp.is_null(), fprobes()) {
        if c.unregister(fp).is_err() {
            BAD.fetch_add(1, Relaxed);
        }
    }
    x * 2
}

/// A call entered while two exit probes were registered (one reservation, both probes' data)
/// returns after one of them went: the one left is now the only exit probe, whose return path
/// compares the data's first word and length with its registration's; neither matches the
/// shared data as a whole, so it goes through the full walk: the one left gets its own data,
/// the one gone nothing. The next call is the single probe's alone.
fn single_exit_probe_after_a_shared_call(t: &mut Test) -> CaseResult {
    let call = |x: kernel::ffi::c_long| {
        // SAFETY: a plain C fixture; `unregister_in_call` needs nothing but process context.
        unsafe { bindings::ufg_test_call(Some(unregister_in_call), x) }
    };
    for gone_first in [false, true] {
        reset();
        for c in PQ_EXITS.iter() {
            c.store(0, Relaxed);
        }
        // P: 2 words of data, Q: 3; P registered first, so its record comes first.
        let mut p = probe(false, true, 16);
        p.entry_handler = Some(pq_entry);
        p.exit_handler = Some(pq_exit);
        let mut q = probe(false, true, 24);
        q.entry_handler = Some(pq_entry);
        q.exit_handler = Some(pq_exit);
        reg(t, &mut p, Target::Syms(&[c_str!("ufg_test_call")]))?;
        reg(t, &mut q, Target::Syms(&[c_str!("ufg_test_call")]))?;
        let (gone, stays, gw, sw): (&mut TestProbe, &mut TestProbe, usize, usize) = if gone_first {
            (&mut p, &mut q, 2, 3)
        } else {
            (&mut q, &mut p, 3, 2)
        };
        UNREG.store(&mut gone.0, Relaxed);
        // `ufg_test_call` returns fn(x) + 1.
        kcheck_eq!(t, call(5), 11);
        kcheck!(
            t,
            UNREG.load(Relaxed).is_null(),
            "unregistered inside the call"
        );
        kcheck_eq!(
            t,
            (
                PQ_EXITS[sw].load(Relaxed),
                PQ_EXITS[gw].load(Relaxed),
                BAD.load(Relaxed)
            ),
            (1, 0, 0)
        );
        // Alone now: the single-probe paths, entry and return.
        kcheck_eq!(t, call(3), 7);
        kcheck_eq!(
            t,
            (
                PQ_EXITS[sw].load(Relaxed),
                PQ_EXITS[gw].load(Relaxed),
                BAD.load(Relaxed)
            ),
            (2, 0, 0)
        );
        kcheck_eq!(t, ENTRIES.load(Relaxed), 3);
        t.check_ok(core(t)?.unregister(&mut stays.0), "unregister")?;
    }
    Ok(())
}

/// A callback C calls: the exit handler of a probe with entry data and no entry handler,
/// which must find its data zeroed; counts the words that are not in `BAD`.
///
/// # Safety
///
/// As for [`on_exit`].
unsafe extern "C" fn on_exit_zeroed(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    EXITS.fetch_add(1, Relaxed);
    // SAFETY: as above.
    let words = unsafe { (*fp).entry_data_size } / 8;
    for i in 0..words {
        // SAFETY: the probe's `entry_data_size` bytes for this call.
        if unsafe { data.cast::<usize>().add(i).read() } != 0 {
            BAD.fetch_add(1, Relaxed);
        }
    }
}

/// A probe with entry data but no entry handler gets zeroed data at its exit, not what an
/// earlier call left in those shadow-stack words: alone (the single-probe path), and beside a
/// probe whose entry handler fills its own data in the same call (the shared path).
fn entry_data_without_entry_handler_is_zeroed(t: &mut Test) -> CaseResult {
    reset();
    let cr = core(t)?;
    // Leave a pattern in the words the next probe's data will occupy.
    let mut filler = probe(true, true, 16);
    reg(t, &mut filler, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..5 {
        kcheck_eq!(t, add(i, 1), i + 1);
    }
    t.check_ok(cr.unregister(&mut *filler), "unregister filler")?;
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    let mut bare = probe(false, true, 16);
    bare.exit_handler = Some(on_exit_zeroed);
    reg(t, &mut bare, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..5 {
        kcheck_eq!(t, add(i, 2), i + 2);
    }
    kcheck_eq!(t, (EXITS.load(Relaxed), BAD.load(Relaxed)), (10, 0));
    // Both at once: one reservation for the two, the filler's words written by its entry.
    reg(t, &mut filler, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..5 {
        kcheck_eq!(t, add(i, 3), i + 3);
    }
    kcheck_eq!(t, (EXITS.load(Relaxed), BAD.load(Relaxed)), (20, 0));
    t.check_ok(cr.unregister(&mut *filler), "unregister filler (2)")?;
    t.check_ok(cr.unregister(&mut *bare), "unregister")?;
    Ok(())
}

/// The only exit probe, for every entry data size (0..=15 words): the return path's one-step
/// compare (`Return::data_exact`) must hand the exit handler exactly the words its entry wrote,
/// at every size, and a null pointer without data (`on_entry`/`on_exit` check both). The same
/// with a second exit probe registered elsewhere (no single probe: the general search), and
/// for an exit-only probe with data, which gets zeros.
fn single_exit_probe_every_data_size(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    for words in 0..=15usize {
        for second in [false, true] {
            reset();
            let mut fp = probe(true, true, words * 8);
            reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
            let mut other = probe(true, true, 8);
            if second {
                reg(t, &mut other, Target::Syms(&[c_str!("ufg_test_mul")]))?;
            }
            for i in 0..4 {
                kcheck_eq!(t, add(i, words as i32), i + words as i32);
            }
            kcheck_eq!(
                t,
                (
                    words,
                    second,
                    ENTRIES.load(Relaxed),
                    EXITS.load(Relaxed),
                    BAD.load(Relaxed)
                ),
                (words, second, 4, 4, 0)
            );
            t.check_ok(cr.unregister(&mut *fp), "unregister")?;
            if second {
                t.check_ok(cr.unregister(&mut *other), "unregister other")?;
            }
        }
        // Exit-only with data: zeros at every size (after the runs above left patterns).
        reset();
        let mut bare = probe(false, true, words * 8);
        bare.exit_handler = Some(on_exit_zeroed);
        reg(t, &mut bare, Target::Syms(&[c_str!("ufg_test_add")]))?;
        for i in 0..3 {
            kcheck_eq!(t, add(i, 2), i + 2);
        }
        kcheck_eq!(
            t,
            (words, EXITS.load(Relaxed), BAD.load(Relaxed)),
            (words, 3, 0)
        );
        t.check_ok(cr.unregister(&mut *bare), "unregister exit-only")?;
    }
    Ok(())
}

// Probes A and B of `exit_probe_changes_during_a_call`: each exit counts itself, and checks that
// the data is the one its own entry wrote (a tag naming the probe), never the other's.
static AB: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
static AB_EXITS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
// What `change_in_call` does inside the call, in order: 0 nothing, 1 register B, 2 unregister
// B, 3 unregister A.
static CHANGES: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];
const AB_TAG: usize = 0x7a90_0000;

fn ab_index(fp: *mut ufgraph_fprobe) -> Option<usize> {
    AB.iter().position(|a| a.load(Relaxed) == fp as usize)
}

/// A callback C calls: probe A's or B's entry; writes its tag into its 3 words of data.
///
/// # Safety
///
/// As for [`on_entry`].
unsafe extern "C" fn ab_entry(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    let Some(i) = ab_index(fp) else {
        BAD.fetch_add(1, Relaxed);
        return 1;
    };
    for k in 0..3 {
        // SAFETY: the probe's 3 words of entry data for this call.
        unsafe { data.cast::<usize>().add(k).write(AB_TAG + 16 * i + k) };
    }
    0
}

/// A callback C calls: probe A's or B's exit; checks its tag.
///
/// # Safety
///
/// As for [`on_exit`].
unsafe extern "C" fn ab_exit(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    let Some(i) = ab_index(fp) else {
        BAD.fetch_add(1, Relaxed);
        return;
    };
    AB_EXITS[i].fetch_add(1, Relaxed);
    for k in 0..3 {
        // SAFETY: the probe's 3 words of entry data for this call.
        if unsafe { data.cast::<usize>().add(k).read() } != AB_TAG + 16 * i + k {
            BAD.fetch_add(1, Relaxed);
        }
    }
}

/// Called by `ufg_test_call` inside its frame: registers or unregisters A and B as
/// [`CHANGES`] says.
///
/// # Safety
///
/// Only from `ufg_test_call`, in `exit_probe_changes_during_a_call`.
unsafe extern "C" fn change_in_call(x: kernel::ffi::c_long) -> kernel::ffi::c_long {
    let Some(c) = fprobes() else {
        BAD.fetch_add(1, Relaxed);
        return x * 2;
    };
    for ch in CHANGES.iter() {
        let (which, on) = match ch.swap(0, Relaxed) {
            1 => (1, true),
            2 => (1, false),
            3 => (0, false),
            _ => continue,
        };
        let fp = AB[which].load(Relaxed) as *mut ufgraph_fprobe;
        let r = if on {
            // SAFETY: the test's probe, unregistered before the test returns.
            unsafe { c.register(fp, &Target::Syms(&[c_str!("ufg_test_call")])) }
        } else {
            c.unregister(fp)
        };
        if r.is_err() {
            BAD.fetch_add(1, Relaxed);
        }
    }
    x * 2
}

/// Exit probes registered and unregistered between a call's entry and its return: the only
/// exit probe A (3 words, entry and return through the one-step paths) is joined by B (the
/// same size, so the frame's layout matches B's too: only the header's registration tells them
/// apart), or replaced by it, or B comes and goes within the call. The return runs A's exit
/// with A's data when A is still registered, never B's for a call B did not enter, and never
/// one with the other's words.
fn exit_probe_changes_during_a_call(t: &mut Test) -> CaseResult {
    let call = |x: kernel::ffi::c_long| {
        // SAFETY: a plain C fixture; `change_in_call` needs nothing but process context.
        unsafe { bindings::ufg_test_call(Some(change_in_call), x) }
    };
    // (what happens in the call, A's and B's exits for it, whether A is then still registered)
    // B registered before A goes keeps the shared graph ops (and its index) throughout: the
    // frame's header then matches B's layout but not its registration. A gone first takes the
    // ops with it (the return finds no slot), and B comes back on another.
    let cases: [(&[usize], usize, usize, bool); 5] = [
        (&[], 1, 0, true),
        (&[1], 1, 0, true),
        (&[1, 2], 1, 0, true),
        (&[1, 3], 0, 0, false),
        (&[3, 1], 0, 0, false),
    ];
    let cr = core(t)?;
    for (n, &(changes, a_exits, b_exits, a_stays)) in cases.iter().enumerate() {
        reset();
        for c in AB_EXITS.iter() {
            c.store(0, Relaxed);
        }
        let mut a = probe(false, true, 24);
        a.entry_handler = Some(ab_entry);
        a.exit_handler = Some(ab_exit);
        let mut b = probe(false, true, 24);
        b.entry_handler = Some(ab_entry);
        b.exit_handler = Some(ab_exit);
        AB[0].store(&mut a.0 as *mut _ as usize, Relaxed);
        AB[1].store(&mut b.0 as *mut _ as usize, Relaxed);
        reg(t, &mut a, Target::Syms(&[c_str!("ufg_test_call")]))?;
        for (ch, &v) in CHANGES.iter().zip(changes) {
            ch.store(v, Relaxed);
        }
        // `ufg_test_call` returns fn(x) + 1.
        kcheck_eq!(t, call(5), 11);
        kcheck_eq!(
            t,
            (
                n,
                AB_EXITS[0].load(Relaxed),
                AB_EXITS[1].load(Relaxed),
                BAD.load(Relaxed)
            ),
            (n, a_exits, b_exits, 0)
        );
        kcheck_eq!(t, cr.is_registered(&mut a.0), a_stays);
        // The next call is entered by whoever is registered now, and each gets its own.
        let (a_now, b_now) = (
            cr.is_registered(&mut a.0) as usize,
            cr.is_registered(&mut b.0) as usize,
        );
        kcheck_eq!(t, call(3), 7);
        kcheck_eq!(
            t,
            (
                n,
                AB_EXITS[0].load(Relaxed),
                AB_EXITS[1].load(Relaxed),
                BAD.load(Relaxed)
            ),
            (n, a_exits + a_now, b_exits + b_now, 0)
        );
        // Unregistered in place (a `drop` would move them first): `AB` names them only while
        // they are registered.
        for p in [&mut a, &mut b] {
            if cr.is_registered(&mut p.0) {
                t.check_ok(cr.unregister(&mut p.0), "unregister")?;
            }
        }
        AB[0].store(0, Relaxed);
        AB[1].store(0, Relaxed);
    }
    Ok(())
}

/// A graph ops beside fprobe on the same calls: reserves `words` words (none for 0) holding a
/// pattern of its own and the call's first argument, and checks them at the return.
struct Beside {
    words: usize,
    returns: AtomicUsize,
    bad: AtomicUsize,
}

impl Beside {
    fn pattern(arg: usize, i: usize) -> usize {
        0xbe51_de00 ^ (arg << 8) ^ i
    }
}

impl crate::fgraph::GraphHandler for Beside {
    fn entry(&self, e: &mut crate::fgraph::Entry<'_>) -> bool {
        if self.words == 0 {
            return true;
        }
        let arg = e.regs.arg(0);
        match e.reserve(self.words * 8) {
            Some(w) => {
                for (i, x) in w.iter_mut().enumerate() {
                    *x = Self::pattern(arg, i);
                }
                // Word 0 holds the argument itself, for the return (which no longer has it).
                w[0] = arg;
            }
            None => {
                self.bad.fetch_add(1, Relaxed);
            }
        }
        true
    }

    fn ret(&self, r: &mut crate::fgraph::Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
        if self.words == 0 {
            return;
        }
        let ok = matches!(r.data(), Some(w) if w.len() == self.words
            && w.iter().enumerate().skip(1).all(|(i, &x)| x == Self::pattern(w[0], i)));
        if !ok {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

/// The only exit probe sharing its calls' frames with another graph ops, registered before or
/// after it (so entering first or second), reserving nothing or data of its own: the frame then
/// has two ops, and fprobe's data is all the frame holds (the other reserved nothing), or lies
/// under or over the other's. Every exit handler gets its own words at every size, and so does
/// the other ops.
fn single_exit_probe_shares_its_frame(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    for words in [0usize, 1, 2, 7, 15] {
        for other in [0usize, 1, 3] {
            for fprobe_first in [false, true] {
                reset();
                let mut ops = t.check_ok(
                    crate::fgraph::GraphOps::new(Beside {
                        words: other,
                        returns: AtomicUsize::new(0),
                        bad: AtomicUsize::new(0),
                    }),
                    "GraphOps::new",
                )?;
                t.check_ok(ops.set_filter(c_str!("ufg_test_add")), "set_filter")?;
                let mut fp = probe(true, true, words * 8);
                if fprobe_first {
                    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
                }
                t.check_ok(ops.register(), "register ops")?;
                if !fprobe_first {
                    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
                }
                for i in 0..4 {
                    kcheck_eq!(t, add(i, 3), i + 3);
                }
                let h = ops.handler();
                kcheck_eq!(
                    t,
                    (
                        words,
                        other,
                        fprobe_first,
                        ENTRIES.load(Relaxed),
                        EXITS.load(Relaxed),
                        BAD.load(Relaxed),
                        h.returns.load(Relaxed),
                        h.bad.load(Relaxed)
                    ),
                    (words, other, fprobe_first, 4, 4, 0, 4, 0)
                );
                t.check_ok(cr.unregister(&mut *fp), "unregister")?;
                t.check_ok(ops.unregister(), "unregister ops")?;
            }
        }
    }
    Ok(())
}

kunit_suite!(
    FPROBE_SUITE,
    "ufgraph_fprobe",
    [
        rust_api,
        rust_api_missed_reentry,
        rust_api_exit_only,
        entry_exit_with_data,
        entry_only_skips_the_shadow_stack,
        both_kinds_share_one_ops,
        recursion_misses_both_kinds,
        filter_and_notfilter,
        bad_registrations_leave_nothing,
        stale_and_going_modules_are_refused,
        several_probes_on_one_function,
        disable_and_skip,
        single_exit_probe_after_a_shared_call,
        entry_data_without_entry_handler_is_zeroed,
        single_exit_probe_every_data_size,
        exit_probe_changes_during_a_call,
        single_exit_probe_shares_its_frame,
        recursion_and_nmissed,
        missed_total_counts_each_miss_once,
        overrun_misses_only_exit_probes,
        mass_attach_everything,
    ]
);
