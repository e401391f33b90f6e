// SPDX-License-Identifier: GPL-2.0

//! fprobe on the fgraph core, through the same entry points the C API uses.
//!
//! One suite (`ufgraph_fprobe`), its cases by concept in the files here; this file holds what
//! they share (the C handlers and what they saw, the test probe, the fixtures' wrappers) and
//! the suite's list, in its order.

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

mod data;
mod fused;
mod handlers;
mod missed;
mod registry;
mod returns;
mod rust_api;

use data::{entry_data_without_entry_handler_is_zeroed, single_exit_probe_after_a_shared_call};
use fused::{
    own_return_follows_the_shared_ops, own_return_leaves_tail_calls_alone,
    single_exit_probe_takes_its_own_ways,
};
use handlers::{
    both_kinds_share_one_ops, disable_and_skip, entry_exit_with_data,
    entry_only_skips_the_shadow_stack, filter_and_notfilter, several_probes_on_one_function,
};
use missed::{
    missed_total_counts_each_miss_once, overrun_misses_only_exit_probes, recursion_and_nmissed,
    recursion_misses_both_kinds,
};
use registry::{
    bad_registrations_leave_nothing, init_functions_leave_probes_at_live,
    location_list_follows_modules, mass_attach_everything, stale_and_going_modules_are_refused,
    stale_filter_publishes_no_shortcut,
};
use returns::{
    exit_probe_changes_during_a_call, single_exit_probe_every_data_size,
    single_exit_probe_shares_its_frame,
};
use rust_api::{rust_api, rust_api_exit_only, rust_api_missed_reentry};

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

/// What the test handlers counted since [`reset`]: entries, exits, and calls with bad data.
fn calls() -> (usize, usize, usize) {
    (
        ENTRIES.load(Relaxed),
        EXITS.load(Relaxed),
        BAD.load(Relaxed),
    )
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

/// Tagged probes: up to two probes, named in [`TAGGED`], whose entry handler writes a tag of
/// its own into every word of its entry data and whose exit handler counts itself in
/// [`TAGGED_EXITS`] and checks the tag. A probe must find its own data at its return, never
/// another probe's words or none.
static TAGGED: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
/// The exits of the probes of [`TAGGED`], by their index there.
static TAGGED_EXITS: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

/// A probe with entry data of `data` bytes and the tagging handlers; [`tag`] names it.
fn tagged_probe(data: usize) -> TestProbe {
    let mut fp = probe(false, true, data);
    fp.entry_handler = Some(tag_entry);
    fp.exit_handler = Some(tag_exit);
    fp
}

/// Names `probes` (by address: they must not move until [`untag`]) as the tagged probes 0 and
/// 1, and clears their exit counts.
fn tag(probes: [&mut TestProbe; 2]) {
    for (slot, fp) in TAGGED.iter().zip(probes) {
        slot.store(&mut fp.0 as *mut ufgraph_fprobe as usize, Relaxed);
    }
    for c in TAGGED_EXITS.iter() {
        c.store(0, Relaxed);
    }
}

/// Forgets the tagged probes (before they go out of scope).
fn untag() {
    for slot in TAGGED.iter() {
        slot.store(0, Relaxed);
    }
}

/// The exits of tagged probe `i` so far.
fn tagged_exits(i: usize) -> usize {
    TAGGED_EXITS[i].load(Relaxed)
}

fn tagged_index(fp: *mut ufgraph_fprobe) -> Option<usize> {
    TAGGED.iter().position(|a| a.load(Relaxed) == fp as usize)
}

/// Word `k` of the tag of probe `fp`: its address mixed with the word's position, so that no
/// two probes' data and no two words of one probe's data are alike.
fn tag_word(fp: *mut ufgraph_fprobe, k: usize) -> usize {
    fp as usize ^ (0x7a90_0000 + k)
}

/// A callback C calls: a tagged probe's entry; writes its tag into all its entry data.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered test probe.
unsafe extern "C" fn tag_entry(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    if tagged_index(fp).is_none() {
        BAD.fetch_add(1, Relaxed);
        return 1;
    }
    // SAFETY: `fp` is the registered probe the handler belongs to.
    let words = unsafe { (*fp).entry_data_size } / 8;
    for k in 0..words {
        // SAFETY: `data` holds `entry_data_size` bytes for this call.
        unsafe { data.cast::<usize>().add(k).write(tag_word(fp, k)) };
    }
    0
}

/// A callback C calls: a tagged probe's exit; counts itself and checks its tag.
///
/// # Safety
///
/// As for [`tag_entry`], at the return.
unsafe extern "C" fn tag_exit(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    let Some(i) = tagged_index(fp) else {
        BAD.fetch_add(1, Relaxed);
        return;
    };
    TAGGED_EXITS[i].fetch_add(1, Relaxed);
    // SAFETY: as above.
    let words = unsafe { (*fp).entry_data_size } / 8;
    for k in 0..words {
        // SAFETY: the entry data the entry handler filled.
        if unsafe { data.cast::<usize>().add(k).read() } != tag_word(fp, k) {
            BAD.fetch_add(1, Relaxed);
        }
    }
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

fn expect_err(t: &Test, r: Result, want: Error, what: &str) -> CaseResult {
    match r {
        Ok(()) => Err(t.fail(format_args!("{}: accepted", what))),
        Err(e) => {
            kcheck!(t, e == want, "{}: got {:?}, want {:?}", what, e, want);
            Ok(())
        }
    }
}

fn mul(a: i64, b: i64) -> i64 {
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_mul(a as _, b as _) as i64 }
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
        location_list_follows_modules,
        init_functions_leave_probes_at_live,
        stale_filter_publishes_no_shortcut,
        several_probes_on_one_function,
        disable_and_skip,
        single_exit_probe_after_a_shared_call,
        entry_data_without_entry_handler_is_zeroed,
        single_exit_probe_every_data_size,
        exit_probe_changes_during_a_call,
        single_exit_probe_shares_its_frame,
        single_exit_probe_takes_its_own_ways,
        own_return_leaves_tail_calls_alone,
        own_return_follows_the_shared_ops,
        recursion_and_nmissed,
        missed_total_counts_each_miss_once,
        overrun_misses_only_exit_probes,
        mass_attach_everything,
    ]
);
