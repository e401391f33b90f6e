// SPDX-License-Identifier: GPL-2.0

//! fprobe on the fgraph core (upstream v6.14's design, kernel/trace/fprobe.c there).
//!
//! ```text
//!                      +---------------------------+
//!   ips (RCU table):   | ip -> IpEntry             |   IpEntry: the probes on that ip (and
//!                      +---------------------------+   their registration ids), copied on
//!                                                      write, freed after a GP
//!   regs (RCU table):  | id -> Live { id, fp }     |   registrations: checked before an exit
//!                      +---------------------------+   handler runs
//!   live (table):      | fprobe -> fprobe          |   registered probes (API checks)
//!                      +---------------------------+
//!
//!   every probe --> one shared graph ops with its own ftrace_ops (filter: every probed ip)
//!     pre_entry (no shadow stack yet): entry-only probes on ip: entry_handler; done unless
//!               a probe on ip has an exit handler
//!     entry:    for each probe with an exit handler: entry_handler, then a header
//!               (registration id, size) + entry data on the shadow stack (one reservation
//!               per call, pure::fprobe_hdr)
//!     return:   for each recorded registration still in `regs`: exit_handler(entry data)
//! ```
//!
//! One ftrace_ops for both kinds of probe: an exit probe added on functions entry-only probes
//! hook already (or the other way round) patches no call site, and a function with both kinds
//! is one ftrace callback per call. An entry-only call never looks for the task's stack.
//!
//! Which path a call takes is decided by two words, so that the common cases need no lookup:
//!
//! ```text
//!   DISPATCH     0: no entry-only probe                 -> on to entry (cookie 0)
//!                LOOKUP: entry-only probes              -> look ip up in pre_entry, run its
//!                                                          entry-only probes; on to entry
//!                                                          (cookie: the ip's entry) if it
//!                                                          has exit probes
//!                a `Live`: the only probe, entry-only   -> run it, done
//!   single_exit  set: exactly one exit probe            -> entry with cookie 0: run it,
//!                                                          no lookup
//! ```
//!
//! A shortcut read in a callback is right for the functions the filter held when it was
//! published. Before the filter grows, a registration that invalidates one clears it and waits
//! a grace period; an unregistration shrinks the filter, waits, then publishes what is now true.
//!
//! Registering a probe on N functions updates the filter of the shared ops once (one
//! `ftrace_set_filter_ips` call with the ips that are new to it) and publishes the N entries;
//! the entries it replaced are freed after a grace period by a work item. Unregistering clears
//! the probe from its entries in place (readers skip it), removes it from `live`, updates the
//! filter once and waits one grace period: after that no handler of it runs.
//!
//! A module that holds probed functions can go: a module notifier drops its addresses from
//! every probe when it starts going away.

pub mod capi;

use crate::bindings::{self, ufgraph_fprobe};
use crate::fgraph::{Entry, GraphHandler, GraphOps, Return};
use crate::pure::fprobe_hdr;
use crate::pure::tasktable::Counts;
use crate::sys::ftrace::Regs;
use crate::sys::ksym;
use crate::sys::rcutable::RcuTable;
use crate::sys::sync::{synchronize_rcu, NoPreempt, Work};
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Mutex;

/// The probes on one function. Immutable once published but for `probes[i].fp`, which
/// unregistration clears in place (readers skip null).
pub struct IpEntry {
    ip: usize,
    exit: u32,
    entry_only: u32,
    probes: KVec<ProbeRef>,
}

/// A probe on a function, and its registration's id: what the entry records for the return.
struct ProbeRef {
    fp: AtomicPtr<ufgraph_fprobe>,
    id: usize,
}

/// One registration, as the return side sees it: immutable, freed a grace period after it
/// leaves `regs`.
struct Live {
    id: usize,
    fp: *mut ufgraph_fprobe,
}

fn ip_key(e: usize) -> usize {
    // SAFETY: table entries are live `IpEntry`s (freed only after removal and a grace period,
    // read by readers inside preemption-disabled sections or by serialised writers).
    unsafe { (*(e as *const IpEntry)).ip }
}

fn fp_key(e: usize) -> usize {
    e
}

fn reg_key(e: usize) -> usize {
    // SAFETY: `regs` entries are live `Live`s (freed only after removal and a grace period).
    unsafe { (*(e as *const Live)).id }
}

/// What ufgraph keeps per registered probe, in `fprobe::hlist_array`. Writers only (under
/// `Fprobes::reg`); the return side reads the separate `Live`.
struct Private {
    ips: KVec<usize>,
    exit: bool,
    live: *mut Live,
    /// Room for what unregistration collects (the functions that leave the filter, the entries
    /// it frees), allocated at registration: unregistration cannot fail, and must not lose
    /// track of an entry (leaked) or of a function (left in the filter, the ops never going)
    /// for want of memory. At least `ips.len()` each (`ips` only shrinks).
    gone: KVec<usize>,
    dead: KVec<usize>,
}

struct Reg {
    ips_counts: Counts,
    live_counts: Counts,
    regs_counts: Counts,
    /// The id the next registration gets (never reused).
    next_id: usize,
    /// The shared ops of every probe, registered while `graph_ips` (the functions in its
    /// filter: those with a probe) is not 0.
    graph: Option<GraphOps<GraphSide>>,
    graph_ips: usize,
    /// Registered probes with an exit handler, and without.
    exit_probes: usize,
    entry_probes: usize,
    /// Replaced `IpEntry`s waiting for a grace period, freed by `Fprobes::reaper`: a
    /// registration does not wait for readers to leave the entries it replaced.
    garbage: KVec<usize>,
    /// Bumped whenever a module comes or goes (the module notifier, `module_coming` and
    /// `module_going`): functions resolved before are stale (see [`Resolved`]).
    modules_gen: u64,
    /// The misses of probes unregistered since the core started (`Fprobes::missed`).
    missed_retired: usize,
    /// Modules between their `MODULE_STATE_GOING` notification and their end, by name: their
    /// functions are still listed by ftrace (until `ftrace_release_mod()`, after the notifiers)
    /// but must not be resolved any more. A name leaves when a module of that name comes again
    /// (which the module loader allows only once the old one is gone).
    going: KVec<KVec<u8>>,
}

/// Functions resolved for a registration ([`Fprobes::resolve_gen`]), and the module generation
/// they were resolved at. A module that comes or goes in between makes them stale:
/// [`Fprobes::register_checked`] refuses them with `EAGAIN`, and the caller resolves again. So
/// no registration hooks a function of a module that started going after it was resolved (the
/// notifier has already dropped that module's functions from every probe, and would not see
/// this one).
pub struct Resolved {
    /// Sorted ftrace locations, without duplicates.
    pub ips: KVec<usize>,
    /// `Reg::modules_gen` when resolution started.
    pub gen: u64,
}

/// The fprobe core: one per module instance.
#[pin_data(PinnedDrop)]
pub struct Fprobes {
    ips: RcuTable,
    live: RcuTable,
    regs: RcuTable,
    /// The one registered probe with an exit handler, when there is exactly one (else null).
    /// While `DISPATCH` is 0 the filter holds only its functions: a call needs no lookup.
    single_exit: AtomicPtr<Live>,
    #[pin]
    reg: Mutex<Reg>,
    /// Frees `Reg::garbage` a grace period after it was replaced.
    #[pin]
    reaper: Work,
}

static FPROBES: AtomicPtr<Fprobes> = AtomicPtr::new(core::ptr::null_mut());

/// What `GraphSide::pre_entry` does (the diagram above): 0 while no entry-only probe is
/// registered; the `Live` of the only probe when it is entry-only; else `LOOKUP`. One word, so
/// that a call reads one; a static (one fprobe core per module), so that reading it needs no
/// pointer to the core first. Written under `Fprobes::reg`.
static DISPATCH: AtomicUsize = AtomicUsize::new(0);

/// `DISPATCH`: look the function up (a `Live` is at least word-aligned: never 1).
const LOOKUP: usize = 1;

fn core_ref<'a>() -> Option<&'a Fprobes> {
    let p = FPROBES.load(Acquire);
    // SAFETY: published by `Fprobes::publish` while the module lives; handlers and API calls
    // run only then.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The fprobe core of this module, for the C API and the events.
pub fn fprobes<'a>() -> Option<&'a Fprobes> {
    core_ref()
}

fn missed(fp: *mut ufgraph_fprobe) {
    // Callers found `fp` in a published entry, inside a preemption-disabled section that
    // unregistration waits for, so it is a registered probe.
    // SAFETY: `fp` is valid (above); `nmissed` is only ever updated atomically.
    unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp).nmissed).cast()) }
        .fetch_add(1, Relaxed);
    // SAFETY: as above; the flags word is read once.
    if unsafe { core::ptr::addr_of!((*fp).flags).read_volatile() } & crate::kretprobe::FL_KRETPROBE
        != 0
    {
        crate::kretprobe::missed(fp);
    }
}

fn disabled(fp: *mut ufgraph_fprobe) -> bool {
    // SAFETY: as for `missed`; the flags word is read once.
    let flags = unsafe { core::ptr::addr_of!((*fp).flags).read_volatile() };
    flags & bindings::UFGRAPH_FPROBE_FL_DISABLED != 0
}

/// The shared graph ops' handler: probes with exit handlers.
pub struct GraphSide;

/// The return trampoline's handler. fprobe (with the kretprobe shim on it) is the graph core's
/// main user, so the core's return path is instantiated here with fprobe's handler type: its
/// return callback is inlined, not called through the slot.
///
/// # Safety
///
/// Only from the trampoline (see [`crate::fgraph::graph::return_handler`]).
#[no_mangle]
pub unsafe extern "C" fn ufgraph_return_handler(fregs: *mut bindings::ftrace_regs) -> usize {
    // SAFETY: the caller's contract.
    unsafe { crate::fgraph::graph::return_handler::<GraphSide, crate::fgraph::capi::COps>(fregs) }
}

impl GraphHandler for GraphSide {
    // Upstream's fprobe, rethook and kretprobe handlers get no call times: no clock reads.
    const WANTS_TIMES: bool = false;
    // Both entry paths reserve before they call a probe's entry handler.
    const RESERVES_FIRST: bool = true;
    const OWN_FTRACE_OPS: bool = true;
    // Entry-only probes never push a frame: stacks come with the first exit probe.
    const STACKS_ON_DEMAND: bool = true;

    #[inline(always)]
    fn pre_entry(
        &self,
        ip: usize,
        parent_ip: usize,
        regs: &Regs,
        np: &NoPreempt,
        enter: impl FnOnce(usize, &Regs, &NoPreempt, usize),
    ) {
        let d = DISPATCH.load(Acquire);
        if d <= LOOKUP {
            if d == 0 {
                // Entry-only probes went since `wants_pre_entry` looked.
                return enter(ip, regs, np, 0);
            }
            let Some(core) = core_ref() else { return };
            return entry_side_lookup(core, ip, parent_ip, regs, np, enter);
        }
        {
            // Published while its probe is the only one, entry-only (the filter then holds only
            // its functions), and freed a grace period after it is unpublished.
            // SAFETY: a live `Live`: this callback runs with preemption disabled, which holds
            // that grace period off.
            let fp = unsafe { (*(d as *const Live)).fp };
            if !disabled(fp) {
                // SAFETY: `fp` is the registered probe found above; its handler is read once.
                if let Some(h) = unsafe { (*fp).entry_handler } {
                    // SAFETY: the caller's handler, for its registered probe, with the documented
                    // arguments and no entry data.
                    unsafe {
                        h(
                            fp,
                            ip as _,
                            parent_ip as _,
                            regs.as_ptr(),
                            core::ptr::null_mut(),
                        )
                    };
                }
            }
        }
    }

    #[inline(always)]
    fn wants_pre_entry() -> bool {
        DISPATCH.load(Relaxed) != 0
    }

    // The cookie is the function's entry if `pre_entry` found it, else 0.
    #[inline(always)]
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        if e.cookie != 0 {
            // SAFETY: `pre_entry` found this entry under the recursion guard still held: it
            // stays valid until a grace period after it is replaced.
            let ent = unsafe { &*(e.cookie as *const IpEntry) };
            return graph_side_probes(e, ent);
        }
        let Some(core) = core_ref() else { return false };
        let single = core.single_exit.load(Acquire);
        if !single.is_null() {
            // Published while its probe is the only exit probe (and, while no entry-only probe
            // is registered, the filter holds only its functions).
            // SAFETY: freed a grace period after it is cleared, which this preemption-disabled
            // callback holds off.
            let (id, fp) = unsafe { ((*single).id, (*single).fp) };
            return only_exit_probe(e, id, fp);
        }
        graph_side_lookup(core, e)
    }

    #[inline(always)]
    fn ret(&self, r: &mut Return<'_>) {
        graph_side_ret(r)
    }

    // No stack, or a full one: the entry-only probes ran (in `pre_entry`).
    fn missed(&self, func: usize) {
        missed_at(func, Some(true));
    }

    fn missed_recursion(&self, func: usize) {
        missed_at(func, None);
    }
}

/// [`GraphSide::entry`] with several exit probes: find those on the function. Inline: an
/// out-of-line call taking the `Entry` by reference would make the compiler build the whole
/// `Entry` in memory on every path, the single-probe one included (40 instructions a call).
#[inline(always)]
fn graph_side_lookup(core: &Fprobes, e: &mut Entry<'_>) -> bool {
    let Some(ent) = core.ips.lookup(e.func, ip_key, e.no_preempt()) else {
        return false;
    };
    // SAFETY: a published entry stays valid until a grace period after it is replaced, which
    // the entry's preemption-disabled section holds off.
    graph_side_probes(e, unsafe { &*(ent as *const IpEntry) })
}

/// The exit probes of `ent` (the called function's entry) at a call's entry.
#[inline(always)]
fn graph_side_probes(e: &mut Entry<'_>, ent: &IpEntry) -> bool {
    {
        // One reservation for all exit probes here: header + data words each, up to 32 words.
        let mut words = 0;
        for p in ent.probes.iter() {
            let fp = p.fp.load(Acquire);
            // SAFETY: a non-null probe in a published entry is registered (see `missed`).
            if fp.is_null() || unsafe { (*fp).exit_handler.is_none() } || disabled(fp) {
                continue;
            }
            // SAFETY: as above.
            words += 1 + unsafe { (*fp).entry_data_size }.div_ceil(8);
        }
        if words == 0 {
            return false;
        }
        let Some(data) = e.reserve(words.min(32) * 8) else {
            // The probes this call would have run: entry-only probes ran (from the other
            // shared ops), disabled ones would not have.
            for p in ent.probes.iter() {
                let fp = p.fp.load(Acquire);
                // SAFETY: as above.
                if !fp.is_null() && unsafe { (*fp).exit_handler.is_some() } && !disabled(fp) {
                    missed(fp);
                }
            }
            return false;
        };
        let mut off = 0;
        let mut any = false;
        for p in ent.probes.iter() {
            let fp = p.fp.load(Acquire);
            // SAFETY: as above.
            if fp.is_null() || unsafe { (*fp).exit_handler.is_none() } || disabled(fp) {
                continue;
            }
            // SAFETY: as above.
            let w = unsafe { (*fp).entry_data_size }.div_ceil(8);
            if off + 1 + w > data.len() {
                missed(fp);
                continue;
            }
            let dptr = if w > 0 {
                data[off + 1..].as_mut_ptr().cast::<c_void>()
            } else {
                core::ptr::null_mut()
            };
            // SAFETY: as above.
            let handler = unsafe { (*fp).entry_handler };
            let skip = match handler {
                Some(h) => {
                    // SAFETY: the C caller's handler, for its registered probe, with the
                    // documented arguments; `dptr` points to `w` words reserved for this call.
                    (unsafe { h(fp, e.func as _, e.ret_ip as _, e.regs.as_ptr(), dptr) }) != 0
                }
                None => false,
            };
            data[off] = if skip {
                fprobe_hdr::encode(0, w)
            } else {
                fprobe_hdr::encode(p.id, w)
            };
            any |= !skip;
            off += 1 + w;
        }
        // Words reserved beyond `off` (probes that turned out disabled) stay zero: a skip marker
        // of size 0 each.
        for w in data[off..].iter_mut() {
            *w = 0;
        }
        any
    }
}

/// [`GraphSide::ret`].
#[inline(always)]
fn graph_side_ret(r: &mut Return<'_>) {
    {
        let Some(core) = core_ref() else { return };
        let Some(data) = r.data() else { return };
        // The common case first: the only exit probe, alone in the call's data.
        let single = core.single_exit.load(Acquire);
        if let (false, Some(&hdr)) = (single.is_null(), data.first()) {
            let (id, w) = fprobe_hdr::decode(hdr);
            // SAFETY: see `GraphSide::entry`.
            let (sid, fp) = unsafe { ((*single).id, (*single).fp) };
            if id == Some(sid) && w + 1 == data.len() {
                let dptr = if w > 0 {
                    data[1..].as_ptr().cast_mut().cast::<c_void>()
                } else {
                    core::ptr::null_mut()
                };
                call_exit(fp, r.func, r.ret_ip, r.regs, dptr);
                return;
            }
        }
        graph_side_ret_all(core, r.func, r.ret_ip, r.regs, r.no_preempt(), data);
    }
}

/// Runs `fp`'s exit handler (a registered probe, found live for this return) unless the probe
/// is disabled.
#[inline(always)]
fn call_exit(fp: *mut ufgraph_fprobe, func: usize, ret_ip: usize, regs: &Regs, dptr: *mut c_void) {
    if disabled(fp) {
        return;
    }
    // SAFETY: registered (the caller found it live, and unregistration waits for us).
    if let Some(h) = unsafe { (*fp).exit_handler } {
        // SAFETY: the caller's exit handler with the documented arguments.
        unsafe { h(fp, func as _, ret_ip as _, regs.as_ptr(), dptr) };
    }
}

/// [`graph_side_ret`] for a call with data of several probes, or of a probe that is not the
/// only one. Takes the return's fields, not the `Return`: an out-of-line call given the
/// `Return` by reference would make the caller build it in memory on the fast path too.
#[inline(never)]
fn graph_side_ret_all(
    core: &Fprobes,
    func: usize,
    ret_ip: usize,
    regs: &Regs,
    np: &NoPreempt,
    data: &[usize],
) {
    {
        let mut off = 0;
        while off < data.len() {
            let (id, w) = fprobe_hdr::decode(data[off]);
            let dptr = if w > 0 && off + 1 < data.len() {
                data[off + 1..].as_ptr().cast_mut().cast::<c_void>()
            } else {
                core::ptr::null_mut()
            };
            if let Some(id) = id {
                // A registration that ended since the entry is gone from `regs`; its exit handler
                // must not run (the probe may be freed memory by now, or registered again: a
                // new registration has a new id and never sees this entry's data). The only
                // exit probe, if this is it, needs no lookup.
                let single = core.single_exit.load(Acquire);
                // SAFETY: see `entry`.
                let l = if !single.is_null() && unsafe { (*single).id } == id {
                    Some(single as usize)
                } else {
                    core.regs.lookup(id, reg_key, np)
                };
                if let Some(l) = l {
                    // SAFETY: a `Live` found in `regs` (or published as the single one) stays
                    // allocated until a grace period after it leaves, which `np` holds off.
                    call_exit(
                        unsafe { (*(l as *const Live)).fp },
                        func,
                        ret_ip,
                        regs,
                        dptr,
                    );
                }
            }
            off += 1 + w;
        }
    }
}

/// The entry of a call when exactly one probe with an exit handler is registered (`fp`,
/// registration `id`): no lookup, one probe.
#[inline(always)]
fn only_exit_probe(e: &mut Entry<'_>, id: usize, fp: *mut ufgraph_fprobe) -> bool {
    if disabled(fp) {
        return false;
    }
    // SAFETY: a registered probe (see the caller). Registration bounds the size; the `min`
    // tells the compiler, which then needs no overflow check below.
    let w = unsafe { (*fp).entry_data_size }
        .div_ceil(8)
        .min(fprobe_hdr::MAX_DATA_WORDS);
    let Some(data) = e.reserve((1 + w) * 8) else {
        missed(fp);
        return false;
    };
    let dptr = if w > 0 {
        data[1..].as_mut_ptr().cast::<c_void>()
    } else {
        core::ptr::null_mut()
    };
    // SAFETY: as above.
    let skip = match unsafe { (*fp).entry_handler } {
        // SAFETY: the caller's handler, for its registered probe, with the documented arguments;
        // `dptr` points to `w` words reserved for this call.
        Some(h) => (unsafe { h(fp, e.func as _, e.ret_ip as _, e.regs.as_ptr(), dptr) }) != 0,
        None => false,
    };
    data[0] = fprobe_hdr::encode(if skip { 0 } else { id }, w);
    !skip
}

/// Counts a missed call of `func` on its probes with (`Some(true)`) or without an exit handler,
/// or on all of them (`None`): the call found no shadow stack, or a full one (the entry-only
/// probes ran), or the recursion guard refused it (nothing ran). Calls nothing traceable (it
/// may run in a context the recursion guard turned away).
fn missed_at(func: usize, exit: Option<bool>) {
    let Some(core) = core_ref() else { return };
    let np = NoPreempt::new();
    if let Some(ent) = core.ips.lookup(func, ip_key, &np) {
        // SAFETY: as in `GraphSide::entry`.
        for p in unsafe { &*(ent as *const IpEntry) }.probes.iter() {
            let fp = p.fp.load(Acquire);
            if !fp.is_null()
                // SAFETY: as in `GraphSide::entry`.
                && exit.is_none_or(|x| unsafe { (*fp).exit_handler.is_some() } == x)
                && !disabled(fp)
            {
                missed(fp);
            }
        }
    }
}

/// [`GraphSide::pre_entry`] while entry-only probes are registered (and not alone): runs those
/// on `ip`, and goes on to the shadow stack with the function's entry (`GraphSide::entry` then
/// needs no second lookup) if a probe on it has an exit handler. Out of line, so that the
/// shortcut paths save no registers they do not use.
#[inline(never)]
fn entry_side_lookup(
    core: &Fprobes,
    ip: usize,
    parent_ip: usize,
    regs: &Regs,
    np: &NoPreempt,
    enter: impl FnOnce(usize, &Regs, &NoPreempt, usize),
) {
    let Some(e) = core.ips.lookup(ip, ip_key, np) else {
        return;
    };
    // SAFETY: as in `GraphSide::entry`.
    let ent = unsafe { &*(e as *const IpEntry) };
    let mut exit = false;
    for p in ent.probes.iter() {
        let fp = p.fp.load(Acquire);
        if fp.is_null() {
            continue;
        }
        // SAFETY: as in `GraphSide::entry`.
        if unsafe { (*fp).exit_handler.is_some() } {
            exit = true;
            continue;
        }
        if disabled(fp) {
            continue;
        }
        // SAFETY: as above.
        if let Some(h) = unsafe { (*fp).entry_handler } {
            // SAFETY: the caller's handler, documented arguments, no entry data.
            unsafe {
                h(
                    fp,
                    ip as _,
                    parent_ip as _,
                    regs.as_ptr(),
                    core::ptr::null_mut(),
                )
            };
        }
    }
    if exit {
        enter(ip, regs, np, e);
    }
}

/// ftrace's glob semantics (`*`, `?`, `[...]`), the kernel's own `glob_match()`.
pub fn glob_match(pat: &CStr, s: &CStr) -> bool {
    // SAFETY: two NUL-terminated strings, only read.
    unsafe { bindings::ufg_glob_match(pat.as_char_ptr(), s.as_char_ptr()) }
}

impl Reg {
    /// Adds (or removes) `ips` to the shared ops' filter, `graph_ips` being how many it holds:
    /// registers the ops with its first functions and unregisters it (drops it) before its last
    /// one goes, as an empty ftrace filter would trace every function.
    fn update_filter(&mut self, ips: &[usize], remove: bool) -> Result {
        if ips.is_empty() {
            return Ok(());
        }
        if remove {
            self.graph_ips -= ips.len();
            if self.graph_ips == 0 {
                self.graph = None;
            } else if let Some(o) = self.graph.as_mut() {
                o.set_filter_ips(ips, true, false)?;
            }
            return Ok(());
        }
        match self.graph.as_mut() {
            Some(o) => o.set_filter_ips(ips, false, false)?,
            None => {
                let mut o = GraphOps::new(GraphSide)?;
                o.set_filter_ips(ips, false, true)?;
                o.register()?;
                self.graph = Some(o);
            }
        }
        self.graph_ips += ips.len();
        Ok(())
    }
}

/// What to register a probe on.
pub enum Target<'a> {
    /// Functions whose names match a glob, and not a second one.
    Filter(&'a CStr, Option<&'a CStr>),
    /// Functions by address (start or ftrace location).
    Ips(&'a [usize]),
    /// Functions by name.
    Syms(&'a [&'a CStr]),
}

impl Fprobes {
    /// An empty core.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            ips: RcuTable::new(),
            live: RcuTable::new(),
            regs: RcuTable::new(),
            single_exit: AtomicPtr::new(core::ptr::null_mut()),
            reg <- new_mutex!(Reg {
                ips_counts: Counts::default(),
                live_counts: Counts::default(),
                regs_counts: Counts::default(),
                next_id: 1,
                graph: None,
                graph_ips: 0,
                exit_probes: 0,
                entry_probes: 0,
                garbage: KVec::new(),
                modules_gen: 0,
                missed_retired: 0,
                going: KVec::new(),
            }),
            reaper <- Work::new(reap),
        })
    }

    /// Makes this the instance handlers and the C API use.
    pub fn publish(self: Pin<&Self>) {
        FPROBES.store(self.get_ref() as *const Self as *mut Self, Release);
    }

    /// The ftrace locations `t` selects, sorted and without duplicates. `ENOENT` (with a log
    /// line naming it) for an unknown symbol or an empty match, `EINVAL` for an address that is
    /// neither a traceable function's ftrace location nor its start.
    pub fn resolve(t: &Target<'_>) -> Result<KVec<usize>> {
        Self::resolve_gen(t).map(|r| r.ips)
    }

    /// [`Fprobes::resolve`], with the module generation it started at, leaving out functions of
    /// modules that are going away.
    pub fn resolve_gen(t: &Target<'_>) -> Result<Resolved> {
        // The generation first, and the going modules as of then: a module that starts going
        // later bumps it, and the registration notices.
        let mut going: KVec<KVec<u8>> = KVec::new();
        let gen = match core_ref() {
            Some(c) => {
                let reg = c.reg.lock();
                for g in reg.going.iter() {
                    let mut v = KVec::with_capacity(g.len(), GFP_KERNEL)?;
                    v.extend_from_slice(g, GFP_KERNEL)?;
                    going.push(v, GFP_KERNEL)?;
                }
                reg.modules_gen
            }
            None => 0,
        };
        let gone = |f: &crate::pure::funclist::Func<'_>| {
            f.module
                .is_some_and(|m| going.iter().any(|g| g.as_slice() == m))
        };
        let mut out = KVec::new();
        match t {
            Target::Ips(ips) => out = ksym::locations(ips)?,
            Target::Syms(syms) => {
                let mut found: KVec<Option<usize>> = KVec::new();
                found.extend_with(syms.len(), None, GFP_KERNEL)?;
                // The names sorted (as positions), searched by binary search per function.
                let mut order: KVec<usize> = KVec::with_capacity(syms.len(), GFP_KERNEL)?;
                for i in 0..syms.len() {
                    order.push(i, GFP_KERNEL)?;
                }
                crate::pure::slice::sort_by(&mut order, |&a, &b| {
                    syms[a].as_bytes() < syms[b].as_bytes()
                });
                ksym::for_each_function(|f| {
                    if gone(f) {
                        return true;
                    }
                    let from = order.partition_point(|&i| syms[i].as_bytes() < f.name);
                    for &i in order[from..]
                        .iter()
                        .take_while(|&&i| syms[i].as_bytes() == f.name)
                    {
                        if found[i].is_none() {
                            found[i] = Some(f.loc);
                        }
                    }
                    true
                })?;
                for (i, loc) in found.iter().enumerate() {
                    let Some(loc) = loc else {
                        pr_err!("fprobe: {} is not a traceable function\n", syms[i]);
                        return Err(ENOENT);
                    };
                    out.push(*loc, GFP_KERNEL)?;
                }
            }
            Target::Filter(filter, notfilter) => {
                let mut err = Ok(());
                let mut name = [0u8; 256];
                ksym::for_each_function(|f| {
                    if f.name.len() >= name.len() || gone(f) {
                        return true;
                    }
                    crate::pure::slice::copy(&mut name[..f.name.len()], f.name);
                    name[f.name.len()] = 0;
                    // SAFETY: NUL-terminated just above, no NUL inside (a symbol name).
                    let n = unsafe { CStr::from_bytes_with_nul_unchecked(&name[..=f.name.len()]) };
                    if glob_match(filter, n) && !notfilter.is_some_and(|nf| glob_match(nf, n)) {
                        if out.push(f.loc, GFP_KERNEL).is_err() {
                            err = Err(ENOMEM);
                            return false;
                        }
                    }
                    true
                })?;
                err?;
            }
        }
        crate::pure::slice::sort(&mut out);
        let mut n = 0;
        for i in 0..out.len() {
            if i == 0 || out[i] != out[n - 1] {
                out[n] = out[i];
                n += 1;
            }
        }
        // SAFETY: `n <= len`, and the first `n` elements are initialised.
        unsafe { out.set_len(n) };
        if out.is_empty() {
            if let Target::Filter(f, _) = t {
                pr_err!("fprobe: no traceable function matches {}\n", f);
            }
            return Err(ENOENT);
        }
        Ok(Resolved { ips: out, gen })
    }

    /// Registers `fp` on `t`. On failure nothing is left behind.
    ///
    /// # Safety
    ///
    /// `fp` must point to a probe that stays valid until [`Fprobes::unregister`] returns.
    pub unsafe fn register(&self, fp: *mut ufgraph_fprobe, t: &Target<'_>) -> Result {
        // SAFETY: the caller passes a valid probe.
        unsafe { Self::check(fp)? };
        // A module that comes or goes between resolution and registration makes the functions
        // stale: resolve again (each round is a module load or unload: a few are plenty).
        let mut tries = 0;
        loop {
            let r = Self::resolve_gen(t)?;
            // SAFETY: as above.
            match unsafe { self.register_checked(fp, r) } {
                Err(e) if e == EAGAIN && tries < 8 => tries += 1,
                res => return res,
            }
        }
    }

    /// Checks what registration checks of `fp` itself.
    ///
    /// # Safety
    ///
    /// `fp` must point to a valid probe.
    unsafe fn check(fp: *mut ufgraph_fprobe) -> Result {
        // SAFETY: the caller passes a valid probe.
        Self::check_probe(unsafe { &*fp })
    }

    /// What registration checks of a probe itself (handlers, entry data size), without
    /// registering it: `EINVAL` or `E2BIG` as [`Fprobes::register`] would fail.
    pub fn check_probe(fp: &ufgraph_fprobe) -> Result {
        let (has_entry, has_exit, size) = (
            fp.entry_handler.is_some(),
            fp.exit_handler.is_some(),
            fp.entry_data_size,
        );
        if !has_entry && !has_exit {
            return Err(EINVAL);
        }
        if fprobe_hdr::data_words(size).is_none() {
            return Err(E2BIG);
        }
        Ok(())
    }

    /// Registers `fp` on `ips`, ftrace locations from [`Fprobes::resolve`] (sorted, without
    /// duplicates). Unlike [`Fprobes::register`] this reads no file, so callers holding locks
    /// that tracefs readers also take (the kernel's `event_mutex`) may call it: resolve first,
    /// without locks, then register.
    ///
    /// # Safety
    ///
    /// As for [`Fprobes::register`].
    pub unsafe fn register_resolved(&self, fp: *mut ufgraph_fprobe, ips: KVec<usize>) -> Result {
        // SAFETY: as for this function.
        unsafe { self.register_ips(fp, ips, None) }
    }

    /// [`Fprobes::register_resolved`] on functions from [`Fprobes::resolve_gen`]: `EAGAIN`, and
    /// nothing registered, if a module came or went since they were resolved.
    ///
    /// # Safety
    ///
    /// As for [`Fprobes::register`].
    pub unsafe fn register_checked(&self, fp: *mut ufgraph_fprobe, r: Resolved) -> Result {
        // SAFETY: as for this function.
        unsafe { self.register_ips(fp, r.ips, Some(r.gen)) }
    }

    /// The current module generation (see [`Resolved`]).
    pub fn modules_gen(&self) -> u64 {
        self.reg.lock().modules_gen
    }

    /// # Safety
    ///
    /// As for [`Fprobes::register`].
    unsafe fn register_ips(
        &self,
        fp: *mut ufgraph_fprobe,
        ips: KVec<usize>,
        gen: Option<u64>,
    ) -> Result {
        // SAFETY: the caller passes a valid probe.
        unsafe { Self::check(fp)? };
        // SAFETY: as above.
        let has_exit = unsafe { (*fp).exit_handler.is_some() };
        let mut reg = self.reg.lock();
        if self
            .live
            .lookup_w(&reg.live_counts, fp as usize, fp_key)
            .is_some()
        {
            return Err(EBUSY);
        }
        // Checked under `reg`, which the module notifier takes to drop a going module's
        // functions: either it has not run yet (and will drop them from this probe too), or
        // the generation moved.
        if gen.is_some_and(|g| g != reg.modules_gen) {
            return Err(EAGAIN);
        }
        let id = reg.next_id;
        let Some(next_id) = fprobe_hdr::next_id(id) else {
            return Err(ENOSPC);
        };
        // The shared ops gives tasks no shadow stack until a probe needs one (an exit probe).
        if has_exit {
            // SAFETY: API calls are made while the module (and its graph core) is loaded.
            unsafe { crate::fgraph::graph::graph() }
                .ok_or(ENODEV)?
                .need_stacks()?;
        }
        // Everything that can fail first: the new entries, room in both tables, the private
        // record. Then the filter update (which can fail too, and is undone by not publishing).
        let mut fresh: KVec<KBox<IpEntry>> = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        // The functions new to the filter.
        let mut path_new: KVec<usize> = KVec::new();
        for &ip in ips.iter() {
            let old = self.ips.lookup_w(&reg.ips_counts, ip, ip_key).map(|e| {
                // SAFETY: writers own the entries (serialised by `reg`).
                unsafe { &*(e as *const IpEntry) }
            });
            let mut probes = KVec::new();
            let (mut exit, mut entry_only) = (0, 0);
            if let Some(o) = old {
                for p in o.probes.iter() {
                    let q = p.fp.load(Relaxed);
                    if !q.is_null() {
                        probes.push(
                            ProbeRef {
                                fp: AtomicPtr::new(q),
                                id: p.id,
                            },
                            GFP_KERNEL,
                        )?;
                    }
                }
                exit = o.exit;
                entry_only = o.entry_only;
            }
            probes.push(
                ProbeRef {
                    fp: AtomicPtr::new(fp),
                    id,
                },
                GFP_KERNEL,
            )?;
            if old.is_none() {
                path_new.push(ip, GFP_KERNEL)?;
            }
            if has_exit {
                exit += 1
            } else {
                entry_only += 1
            }
            fresh.push(
                KBox::new(
                    IpEntry {
                        ip,
                        exit,
                        entry_only,
                        probes,
                    },
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        let Reg {
            ips_counts,
            live_counts,
            regs_counts,
            ..
        } = &mut *reg;
        self.ips.reserve(ips_counts, ips.len(), ip_key)?;
        self.live.reserve(live_counts, 1, fp_key)?;
        self.regs.reserve(regs_counts, 1, reg_key)?;
        let live = KBox::new(Live { id, fp }, GFP_KERNEL)?;
        let gone = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        let dead = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        let private = KBox::new(
            Private {
                ips,
                exit: has_exit,
                live: core::ptr::null_mut(),
                gone,
                dead,
            },
            GFP_KERNEL,
        )?;
        let mut old_entries: KVec<usize> = KVec::with_capacity(fresh.len(), GFP_KERNEL)?;
        // The shortcuts this probe makes wrong: the single entry-only probe (any new probe),
        // no lookup (a first entry-only probe), the single exit probe (a second one). LOOKUP
        // is right for any filter. A callback may have read the old word and be about to act
        // on it for a function the filter is about to gain: wait for those callbacks before it
        // grows. A probe on functions hooked already does not grow it: no need to wait.
        let d = DISPATCH.load(Relaxed);
        let mut changed = false;
        if d != 0 || !has_exit {
            changed |= DISPATCH.swap(LOOKUP, AcqRel) != LOOKUP;
        }
        if has_exit {
            changed |= !self
                .single_exit
                .swap(core::ptr::null_mut(), AcqRel)
                .is_null();
        }
        if changed && !path_new.is_empty() {
            synchronize_rcu();
        }
        if let Err(e) = reg.update_filter(&path_new, false) {
            self.settle(&reg);
            return Err(e);
        }

        // A registration starts its count of misses at 0, as upstream's `register_fprobe()`
        // does: what it missed before was added to `missed_retired` when it was unregistered,
        // and would be counted again (an `f:` event's probes are registered at every enable).
        // No handler of `fp` runs before it is published below.
        // SAFETY: the caller's valid probe; `nmissed` is only ever updated atomically.
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp).nmissed).cast()) }
            .store(0, Relaxed);
        // Publish: nothing below can fail (room was reserved, capacity too).
        for e in fresh.into_iter() {
            let ip = e.ip;
            let raw = KBox::into_raw(e) as usize;
            match self.ips.upsert(&mut reg.ips_counts, ip, raw, ip_key) {
                Ok(Some(old)) => {
                    // Within the capacity reserved above: does not allocate.
                    let _ = old_entries.push(old, GFP_ATOMIC);
                }
                Ok(None) => {}
                Err(_) => {
                    // Cannot happen after `reserve`; keep the entry (leaked) rather than race.
                    pr_err!("fprobe: ip table refused {:#x} after reserving room\n", ip);
                }
            }
        }
        let _ = self
            .live
            .upsert(&mut reg.live_counts, fp as usize, fp as usize, fp_key);
        let live = KBox::into_raw(live);
        let _ = self
            .regs
            .upsert(&mut reg.regs_counts, id, live as usize, reg_key);
        reg.next_id = next_id;
        let mut private = private;
        private.live = live;
        // SAFETY: the probe is ours to annotate while registered (the field is private to us).
        unsafe { (*fp).hlist_array = KBox::into_raw(private).cast() };
        if has_exit {
            reg.exit_probes += 1
        } else {
            reg.entry_probes += 1
        }
        self.settle(&reg);
        // The entries replaced go after a grace period, without this registration waiting for
        // it (a second probe on 10000 hooked functions replaces 10000 entries).
        if !old_entries.is_empty() {
            if reg
                .garbage
                .extend_from_slice(&old_entries, GFP_KERNEL)
                .is_ok()
            {
                self.reaper.schedule();
                return Ok(());
            }
            drop(reg);
            synchronize_rcu();
            for &o in old_entries.iter() {
                // SAFETY: unpublished; readers are gone after the grace period.
                drop(unsafe { KBox::from_raw(o as *mut IpEntry) });
            }
        }
        Ok(())
    }

    /// Whether `fp` is registered.
    pub fn is_registered(&self, fp: *mut ufgraph_fprobe) -> bool {
        let reg = self.reg.lock();
        self.live
            .lookup_w(&reg.live_counts, fp as usize, fp_key)
            .is_some()
    }

    /// Unregisters `fp`: when this returns, neither handler runs any more. `EINVAL` if it is not
    /// registered.
    // `fp` is dereferenced only once the registry has it: a registered probe is valid until it is
    // unregistered (the contract of `register`). Any other pointer is only compared.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn unregister(&self, fp: *mut ufgraph_fprobe) -> Result {
        let mut reg = self.reg.lock();
        if self
            .live
            .remove(&mut reg.live_counts, fp as usize, fp_key)
            .is_none()
        {
            return Err(EINVAL);
        }
        // SAFETY: registered probes carry our private record.
        let mut private = unsafe { KBox::from_raw((*fp).hlist_array.cast::<Private>()) };
        // SAFETY: as above.
        unsafe { (*fp).hlist_array = core::ptr::null_mut() };
        // SAFETY: the registration's `Live`, allocated at registration and freed only here.
        let id = unsafe { (*private.live).id };
        // Not the single probe any more: callbacks look it up (and find it gone) from now on.
        if private.exit {
            let _ = self.single_exit.compare_exchange(
                private.live,
                core::ptr::null_mut(),
                AcqRel,
                Relaxed,
            );
        } else {
            let _ = DISPATCH.compare_exchange(private.live as usize, LOOKUP, AcqRel, Relaxed);
        }
        if private.exit {
            reg.exit_probes -= 1
        } else {
            reg.entry_probes -= 1
        }
        self.regs.remove(&mut reg.regs_counts, id, reg_key);
        // Freed after the grace period below: the return side may be reading it.
        // SAFETY: as above; unpublished now, and nothing else frees it.
        let live = unsafe { KBox::from_raw(private.live) };
        // Within the capacity reserved at registration: the pushes below do not allocate.
        let mut path_gone = core::mem::replace(&mut private.gone, KVec::new());
        let mut dead = core::mem::replace(&mut private.dead, KVec::new());
        for &ip in private.ips.iter() {
            let Some(e) = self.ips.lookup_w(&reg.ips_counts, ip, ip_key) else {
                continue;
            };
            // SAFETY: writers own the entries.
            let ent = unsafe { &mut *(e as *mut IpEntry) };
            for p in ent.probes.iter() {
                if p.fp.load(Relaxed) == fp {
                    p.fp.store(core::ptr::null_mut(), Release);
                }
            }
            let n = if private.exit {
                &mut ent.exit
            } else {
                &mut ent.entry_only
            };
            *n -= 1;
            if ent.exit == 0 && ent.entry_only == 0 {
                let _ = path_gone.push(ip, GFP_KERNEL);
                self.ips.remove(&mut reg.ips_counts, ip, ip_key);
                let _ = dead.push(e, GFP_KERNEL);
            }
        }
        if let Err(e) = reg.update_filter(&path_gone, true) {
            // The probe is gone from every entry: a stale filter only costs callbacks that find
            // nothing.
            pr_warn!("fprobe: filter update on unregister failed: {:?}\n", e);
        }
        // Whether `settle` below may publish a shortcut (one probe left of a kind, none of the
        // other), which says every function in the filter is its probe's.
        let shortcut = matches!((reg.entry_probes, reg.exit_probes), (1, 0) | (0, 1));
        drop(reg);
        synchronize_rcu();
        // A call of a function the filter just lost may still be on its way to our callback:
        // in ftrace's trampoline, before the callback takes the recursion guard, where a
        // preemptible kernel can preempt it. The grace period above does not wait for it; were
        // a shortcut published now, it would run the remaining probe on that function. RCU
        // Tasks waits for it, as ftrace waits for its trampolines (on a kernel without
        // preemption the wait above covers it).
        #[cfg(CONFIG_PREEMPTION)]
        if shortcut && !path_gone.is_empty() {
            crate::sys::sync::synchronize_rcu_tasks();
        }
        #[cfg(not(CONFIG_PREEMPTION))]
        let _ = shortcut;
        for &d in dead.iter() {
            // SAFETY: unpublished, readers gone.
            drop(unsafe { KBox::from_raw(d as *mut IpEntry) });
        }
        drop(live);
        // The filter has settled: publish the shortcuts that are true again.
        let mut reg = self.reg.lock();
        // Handlers that could count a miss for `fp` are gone (the grace periods above): its
        // misses join the core's total, which stays monotonic when probes come and go (an
        // event's probes are unregistered each time it is disabled).
        // SAFETY: the caller's probe, valid for the call; `nmissed` is only updated atomically.
        reg.missed_retired +=
            unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp).nmissed).cast()) }
                .load(Relaxed);
        self.settle(&reg);
        Ok(())
    }

    // Publishes the dispatch words (see the module's diagram) that the registered probes make
    // true. Under `reg`, with the filter holding exactly the registered probes' functions (and
    // no callback still acting on a larger filter: after a grace period if it shrank).
    fn settle(&self, reg: &Reg) {
        let (mut exit, mut entry) = (core::ptr::null_mut(), core::ptr::null_mut());
        if reg.exit_probes == 1 || reg.entry_probes == 1 {
            self.live.for_each(|fp| {
                // SAFETY: registered probes carry our private record, and we hold `reg`.
                let p = unsafe { &*(*(fp as *mut ufgraph_fprobe)).hlist_array.cast::<Private>() };
                if p.exit {
                    exit = p.live
                } else {
                    entry = p.live
                }
            });
        }
        self.single_exit.store(
            if reg.exit_probes == 1 {
                exit
            } else {
                core::ptr::null_mut()
            },
            Release,
        );
        let d = match (reg.entry_probes, reg.exit_probes) {
            (0, _) => 0,
            (1, 0) => entry as usize,
            _ => LOOKUP,
        };
        DISPATCH.store(d, Release);
    }

    /// Calls probes missed, all together (`nmissed`: no shadow stack, a full one, or the
    /// recursion guard refused the call): the registered probes' and those unregistered since
    /// the core started.
    pub fn missed(&self) -> usize {
        let reg = self.reg.lock();
        let mut n = reg.missed_retired;
        self.live.for_each(|fp| {
            // SAFETY: registered probes (we hold `reg`, which unregistration takes); `nmissed`
            // is only ever updated atomically.
            n += unsafe {
                AtomicUsize::from_ptr(
                    core::ptr::addr_of_mut!((*(fp as *mut ufgraph_fprobe)).nmissed).cast(),
                )
            }
            .load(Relaxed);
        });
        n
    }

    /// How many distinct functions carry probes, and how many probes are registered.
    pub fn counts(&self) -> (usize, usize) {
        let reg = self.reg.lock();
        (reg.ips_counts.used, reg.live_counts.used)
    }

    /// A module came: functions resolved before are stale, and a module of its name is no
    /// longer going.
    pub fn module_coming(&self, name: &[u8]) {
        let mut reg = self.reg.lock();
        reg.modules_gen += 1;
        if let Some(i) = reg.going.iter().position(|g| g.as_slice() == name) {
            drop(crate::sys::kvec::remove(&mut reg.going, i));
        }
    }

    /// A module is going away: its functions are resolved no more, and every address inside
    /// it (`within`) is dropped from the probes.
    pub fn module_going(&self, name: &[u8], within: impl Fn(usize) -> bool) {
        {
            let mut reg = self.reg.lock();
            reg.modules_gen += 1;
            if !reg.going.iter().any(|g| g.as_slice() == name) {
                let mut v = KVec::new();
                // Out of memory: the generation still moved, so only a resolution in the window
                // before ftrace forgets the module could still see its functions.
                if v.extend_from_slice(name, GFP_KERNEL).is_ok() {
                    let _ = reg.going.push(v, GFP_KERNEL);
                }
            }
        }
        self.drop_module(within);
    }

    /// Drops every address inside `module` from the probes (the module is going away).
    fn drop_module(&self, within: impl Fn(usize) -> bool) {
        let mut reg = self.reg.lock();
        let mut doomed: KVec<usize> = KVec::new();
        self.ips.for_each(|e| {
            if within(ip_key(e)) {
                let _ = doomed.push(e, GFP_KERNEL);
            }
        });
        if doomed.is_empty() {
            return;
        }
        let mut gone: KVec<usize> = KVec::new();
        for &e in doomed.iter() {
            // SAFETY: writers own the entries.
            let ent = unsafe { &*(e as *const IpEntry) };
            for p in ent.probes.iter() {
                let fp = p.fp.load(Relaxed);
                if fp.is_null() {
                    continue;
                }
                // SAFETY: registered probes carry our private record; we hold `reg`.
                let private = unsafe { &mut *(*fp).hlist_array.cast::<Private>() };
                let mut kept = KVec::new();
                for &ip in private.ips.iter() {
                    if ip != ent.ip {
                        let _ = kept.push(ip, GFP_KERNEL);
                    }
                }
                private.ips = kept;
            }
            let _ = gone.push(ent.ip, GFP_KERNEL);
            self.ips.remove(&mut reg.ips_counts, ent.ip, ip_key);
        }
        let _ = reg.update_filter(&gone, true);
        drop(reg);
        synchronize_rcu();
        for &e in doomed.iter() {
            // SAFETY: unpublished, readers gone.
            drop(unsafe { KBox::from_raw(e as *mut IpEntry) });
        }
        pr_info!(
            "fprobe: dropped {} probed functions of a module going away\n",
            doomed.len()
        );
    }
}

/// `Fprobes::reaper`: frees the replaced entries once no reader can hold them.
///
/// # Safety
///
/// `work` must be the `reaper` work of a live `Fprobes`.
unsafe extern "C" fn reap(work: *mut bindings::work_struct) {
    // SAFETY: the work item is `Fprobes::reaper`, inside a live `Fprobes` (its drop cancels
    // the work, waiting for this, before the rest goes).
    let this = unsafe { &*kernel::container_of!(work.cast::<Work>(), Fprobes, reaper) };
    this.reap_now();
}

impl Fprobes {
    fn reap_now(&self) {
        let list = core::mem::replace(&mut self.reg.lock().garbage, KVec::new());
        if list.is_empty() {
            return;
        }
        synchronize_rcu();
        for &o in list.iter() {
            // SAFETY: replaced (unpublished) before it was queued; readers are gone after the
            // grace period.
            drop(unsafe { KBox::from_raw(o as *mut IpEntry) });
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Fprobes {
    fn drop(self: Pin<&mut Self>) {
        FPROBES.store(core::ptr::null_mut(), Release);
        DISPATCH.store(0, Release);
        self.reaper.cancel_sync();
        self.reap_now();
        let mut reg = self.reg.lock();
        // Probes of other modules keep this module loaded; the module's own users (events)
        // unregistered before. Anything left is leaked on purpose rather than freed under a
        // registered ops.
        if reg.live_counts.used != 0 {
            pr_err!(
                "fprobe: {} probes still registered at teardown\n",
                reg.live_counts.used
            );
            return;
        }
        reg.graph = None;
        let Reg {
            ips_counts,
            live_counts,
            regs_counts,
            ..
        } = &mut *reg;
        self.ips.free(ips_counts);
        self.live.free(live_counts);
        self.regs.free(regs_counts);
    }
}
