// SPDX-License-Identifier: GPL-2.0

//! fprobe on the fgraph core (upstream v6.14's design, kernel/trace/fprobe.c there).
//!
//! ```text
//!                      +---------------------------+
//!   ips (RCU table):   | ip -> IpEntry             |   IpEntry: the probes on that ip (and
//!                      +---------------------------+   their registration ids), copied on
//!                                                      write, freed after a GP
//!   regs (RCU table):  | id -> Live { id, fp, .. } |   registrations: checked before an exit
//!                      +---------------------------+   handler runs
//!   live (table):      | fprobe -> fprobe          |   registered probes (API checks)
//!                      +---------------------------+
//!
//!   every probe --> one shared graph ops with its own ftrace_ops (filter: every probed ip)
//!     pre_entry (no shadow stack yet): entry-only probes on ip: entry_handler; done unless
//!               a probe on ip has an exit handler
//!     entry:    for each probe with an exit handler: entry_handler, then a header
//!               (registration id, size) + entry data on the shadow stack (one reservation
//!               per call, fprobe::hdr)
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
//!                IDLE: no probe registered, while the   -> return at once, before the
//!                      first one registers or the last      recursion guard
//!                      one unregisters
//!   SINGLE_EXIT  set: exactly one exit probe            -> entry with cookie 0: run it,
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

pub mod api;
mod callpath;
pub mod capi;
pub mod hdr;
mod registry;

pub use callpath::*;

use crate::fgraph::{Entry, FirstEntry, FirstReturn, GraphHandler, GraphOps, Return};
use crate::sys::cabi::{ufgraph_fprobe, UFGRAPH_FPROBE_FL_DISABLED};
use crate::sys::ftrace::Regs;
use crate::sys::global::Global;
use crate::sys::rcutable::{Keyed, RcuTable, Writer};
use crate::sys::sync::{synchronize_rcu, NoPreempt, Work, WorkItem};
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Mutex;

/// The probes on one function. Immutable once published but for each probe's `fp`, which
/// unregistration clears in place (readers skip null), and the writers' counts.
///
/// # Invariants
///
/// - An entry in `Fprobes::ips` (or handed on as a call's cookie by `pre_entry`) stays valid
///   until a grace period after it left the table: replaced entries go to `Reg::garbage` (the
///   reaper frees them after one), removed ones are freed after one (`unregister`, which
///   hands those of the last probe to the reaper, `drop_module`).
/// - A non-null `fp` of one of its probes is a registered probe: unregistration nulls it in
///   every entry before it returns, after a grace period, to its caller (who may then free the
///   probe).
/// - `ip` is the table key, fixed at creation.
pub struct IpEntry {
    ip: usize,
    /// How many probes on the function have an exit handler, and how many have none: writers
    /// only (under `Fprobes::reg`), which update them in place on a published entry.
    exit: AtomicU32,
    entry_only: AtomicU32,
    probes: Probes,
}

/// The probes of an [`IpEntry`], in registration order: the first in the entry itself, the
/// others (if any) in a vector of their own. A function with one probe, the common case, is one
/// allocation: a probe on all 18165 functions of the test kernel makes 18165, not 36330 (each
/// about 350 instructions).
struct Probes {
    first: ProbeRef,
    more: KVec<ProbeRef>,
}

impl Probes {
    fn iter(&self) -> impl Iterator<Item = &ProbeRef> {
        Iterator::chain(core::iter::once(&self.first), self.more.iter())
    }
}

impl Keyed for IpEntry {
    fn key(&self) -> usize {
        self.ip
    }
}

/// A probe on a function, and its registration's id: what the entry records for the return.
struct ProbeRef {
    fp: AtomicPtr<ufgraph_fprobe>,
    id: usize,
}

/// One registration, as the return side sees it: immutable, freed a grace period after it
/// leaves `regs`.
///
/// # Invariants
///
/// - A `Live` is in `Fprobes::regs`, or published as `SINGLE_EXIT` or in `DISPATCH`,
///   only while its probe is registered; it is freed (by `unregister`) only after it left all
///   three and a grace period has passed. So it is valid for a reader that keeps preemption
///   disabled, and `fp` is then a registered probe.
/// - `hdr == fprobe_hdr::encode(id, words)` and `size` is `1 + words` words, where `words` is
///   the probe's entry data in words.
struct Live {
    id: usize,
    fp: *mut ufgraph_fprobe,
    /// The header word the probe's calls' data starts with (`fprobe_hdr::encode(id, words)`,
    /// `words` its `entry_data_size` at registration in words, which must not change while it
    /// is registered: include/ufgraph/fprobe.h): the single-probe paths write and compare it
    /// whole.
    hdr: usize,
    /// What a call reserves for the probe alone, the header and the data, as a size made once:
    /// the single-probe paths push and find it without encoding the stack's word.
    size: crate::fgraph::DataSize,
    /// The words of a frame that the shared ops' single-probe entry pushes for this probe
    /// (`fgraph::OneStep`, for the shared ops' index and `size`), by which the return path
    /// tells one with two compares (`SingleExit::ret_first`); `OneStep::none()`'s while no
    /// shared ops is registered. Written by `Fprobes::settle` only while the `Live` is not
    /// published as `SINGLE_EXIT` (the only place they are read from) and no reader that
    /// loaded it from there is left: readers see the words it was published with.
    one_step: [AtomicUsize; 2],
}

impl Live {
    /// The words of this probe's one-step frames (see `one_step`).
    #[inline(always)]
    fn one_step(&self) -> crate::fgraph::OneStep {
        crate::fgraph::OneStep::from_words(
            [
                self.one_step[0].load(Relaxed),
                self.one_step[1].load(Relaxed),
            ],
            self.size,
        )
    }
}

// SAFETY: immutable; `fp` is dereferenced only while it is a registered probe (the type
// invariants), which holds on any CPU (the C API's contract: a probe stays valid while
// registered).
unsafe impl Send for Live {}
// SAFETY: as above.
unsafe impl Sync for Live {}

impl Keyed for Live {
    fn key(&self) -> usize {
        self.id
    }
}

/// A registered probe, as the `live` table holds it: the C caller's `ufgraph_fprobe`, whose
/// fields change under us (the caller's flags, the atomic miss count), so only ever reached
/// through the raw pointer [`RegisteredProbe::fp`] gives (an `Opaque`, never a `&ufgraph_fprobe`).
#[repr(transparent)]
struct RegisteredProbe(kernel::types::Opaque<ufgraph_fprobe>);

// SAFETY: only its address is used (as the key, and as the raw pointer `fp` returns), and a
// registered probe is valid on any CPU until it is unregistered (the C API's contract).
unsafe impl Send for RegisteredProbe {}
// SAFETY: as above.
unsafe impl Sync for RegisteredProbe {}

impl RegisteredProbe {
    /// The probe.
    fn fp(&self) -> *mut ufgraph_fprobe {
        self.0.get()
    }
}

impl Keyed for RegisteredProbe {
    fn key(&self) -> usize {
        self.fp() as usize
    }
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
    /// The writers of `Fprobes::ips`, `live` and `regs`.
    ips_counts: Writer<IpEntry>,
    live_counts: Writer<RegisteredProbe>,
    regs_counts: Writer<Live>,
    /// The id the next registration gets (never reused).
    next_id: usize,
    /// The shared ops of every probe, registered while `graph_ips` (the functions in its
    /// filter: those with a probe) is not 0.
    graph: Option<GraphOps<GraphSide>>,
    graph_ips: usize,
    /// A removal from the shared ops' filter failed (ftrace changes a filter whole or not at
    /// all, and refuses a function it no longer knows): the filter may hold functions no probe
    /// has, whose calls find none, so no shortcut may say every function in it is one probe's
    /// (`Fprobes::settle`). Until the shared ops goes with its last function.
    filter_stale: bool,
    /// A shared ops whose unregistration failed was leaked, still hooking its functions: the
    /// filter stays stale for good.
    ops_leaked: bool,
    /// Registered probes with an exit handler, and without.
    exit_probes: usize,
    entry_probes: usize,
    /// Replaced `IpEntry`s waiting for a grace period, freed by `Fprobes::reaper`: a
    /// registration does not wait for readers to leave the entries it replaced.
    garbage: KVec<usize>,
    /// The shared ops, unregistered when its last function went, for `Fprobes::reaper` to
    /// free (with ftrace's filter of 18165 functions, about 4 million instructions): the
    /// unregistration that let it go does not wait for that.
    retired: Option<GraphOps<GraphSide>>,
    /// Bumped whenever a module comes, goes live (its init text goes) or goes (the module
    /// notifier, `module_coming`, `module_live` and `module_going`): functions resolved before
    /// are stale (see [`Resolved`]).
    modules_gen: u64,
    /// The misses of probes unregistered since the core started (`Fprobes::missed`).
    missed_retired: usize,
}

/// Functions resolved for a registration ([`Fprobes::resolve_gen`]), and the module generation
/// they were resolved at. A module that comes or goes in between makes them stale if any of
/// them is not a function of the kernel image (`sys::ksym::is_image_function`: a symbol of no
/// module, so that a module gone already counts as a module): [`Fprobes::register_checked`] refuses them with
/// `EAGAIN`, and the caller resolves again. So no registration hooks a function of a module
/// that started going after it was resolved (the notifier has already dropped that module's
/// functions from every probe, and would not see this one), and module churn does not hold
/// back probes on the kernel's own functions.
pub struct Resolved {
    /// Sorted ftrace locations, without duplicates.
    pub ips: KVec<usize>,
    /// `Reg::modules_gen` when resolution started.
    pub gen: u64,
}

/// The fprobe core: one per module instance.
#[pin_data(PinnedDrop)]
pub struct Fprobes {
    ips: RcuTable<IpEntry>,
    live: RcuTable<RegisteredProbe>,
    regs: RcuTable<Live>,
    #[pin]
    reg: Mutex<Reg>,
    /// Frees `Reg::garbage` a grace period after it was replaced.
    #[pin]
    reaper: Work<Fprobes, 0>,
}

static FPROBES: Global<Fprobes> = Global::new();

/// What `GraphSide::pre_entry` does (the diagram above): 0 while no entry-only probe is
/// registered; the `Live` of the only probe when it is entry-only; else `LOOKUP`. One word, so
/// that a call reads one; a static (one fprobe core per module), so that reading it needs no
/// pointer to the core first. Written under `Fprobes::reg`.
static DISPATCH: AtomicUsize = AtomicUsize::new(0);

/// The one registered probe with an exit handler, when there is exactly one (else null).
/// While `DISPATCH` is 0 the filter holds only its functions: a call needs no lookup. A static,
/// as `DISPATCH` is: the single-probe paths, entry and return, then read it without reaching
/// the core first (three instructions each). Written under `Fprobes::reg`.
static SINGLE_EXIT: AtomicPtr<Live> = AtomicPtr::new(core::ptr::null_mut());

/// `DISPATCH`: look the function up (a `Live` is at least word-aligned: never 1).
const LOOKUP: usize = 1;

/// `DISPATCH`: no probe is registered, and the shared ops' filter is changing (the first probe
/// is registering, the last one unregistering): nothing to run for any call (a `Live` is never
/// 2 either). Set only while nothing else is published (no `SINGLE_EXIT` either), and replaced
/// by `Fprobes::settle`.
const IDLE: usize = 2;

/// Tests only: where a call from the shared ops goes now (`GraphSide::route`): "direct",
/// "pre" or "idle".
#[cfg(ufgraph_kunit)]
pub fn test_route() -> &'static str {
    let way = core::cell::Cell::new("idle");
    <GraphSide as GraphHandler>::route(|| way.set("direct"), || way.set("pre"));
    way.get()
}

/// Tests only: runs `f` with `DISPATCH` idle, as while a first probe registers or a last one
/// unregisters, whatever is registered, then publishes what is true again. Unlike the real
/// idle state, `SINGLE_EXIT` may stay published meanwhile: harmless, as no call reaches it
/// (the entry routes nowhere, and a return finds only frames its probe pushed). `false` (and
/// `f` not run) without a core.
#[cfg(ufgraph_kunit)]
pub fn test_idle_while(f: impl FnOnce()) -> bool {
    let Some(core) = core_ref() else {
        return false;
    };
    let reg = core.reg.lock();
    DISPATCH.store(IDLE, Release);
    f();
    core.settle(&reg);
    true
}

#[inline(always)]
fn core_ref() -> Option<&'static Fprobes> {
    FPROBES.get()
}

/// The fprobe core of this module, for the C API and the events.
pub fn fprobes() -> Option<&'static Fprobes> {
    core_ref()
}

fn missed(fp: *mut ufgraph_fprobe) {
    // Callers found `fp` in a published entry (`IpEntry`'s invariants) or `Live` (`Live`'s),
    // inside a preemption-disabled section that unregistration waits for: a registered probe.
    // SAFETY: `fp` is valid (above); `nmissed` is only ever updated atomically.
    unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp).nmissed).cast()) }
        .fetch_add(1, Relaxed);
    // SAFETY: as above; the flags word is read once.
    if unsafe { core::ptr::addr_of!((*fp).flags).read_volatile() } & api::FL_RUST != 0 {
        // SAFETY: a registered probe flagged FL_RUST, which the C API refuses: a Rust probe.
        unsafe { api::notify_missed(fp) };
    }
}

fn disabled(fp: *mut ufgraph_fprobe) -> bool {
    // SAFETY: as for `missed`; the flags word is read once.
    let flags = unsafe { core::ptr::addr_of!((*fp).flags).read_volatile() };
    flags & UFGRAPH_FPROBE_FL_DISABLED != 0
}

/// The shared graph ops' handler: probes with exit handlers.
pub struct GraphSide;

pub use crate::sys::ksym::glob_match;

impl Reg {
    /// The words of a one-step frame of the shared ops registered now, with `size` words of
    /// data (`OneStep::none()`'s while none is registered): how the return path tells the
    /// single exit probe's frames (`Live::one_step`).
    fn one_step(&self, size: crate::fgraph::DataSize) -> crate::fgraph::OneStep {
        match self.graph.as_ref().and_then(|o| o.idx()) {
            Some(idx) => crate::fgraph::OneStep::new(&crate::fgraph::IndexWords::new(idx), size),
            None => crate::fgraph::OneStep::none(),
        }
    }

    /// Whether no probe is registered (fprobe's shared ops then hooks nothing).
    fn no_probes(&self) -> bool {
        self.entry_probes == 0 && self.exit_probes == 0
    }

    /// Adds (or removes) `ips` to the shared ops' filter, `graph_ips` being how many it holds:
    /// registers the ops with its first functions and unregisters it (and drops it) before its
    /// last one goes, as an empty ftrace filter would trace every function ([`Unhooked`]).
    fn update_filter(&mut self, ips: &[usize], remove: bool) -> Result<Unhooked> {
        if ips.is_empty() {
            return Ok(Unhooked(false));
        }
        if remove {
            self.graph_ips -= ips.len();
            if self.graph_ips == 0 {
                if let Some(mut o) = self.graph.take() {
                    // The single exit probe's one-step words name this ops' index, which
                    // another ops may get once it is free: withdrawn first, before the
                    // unregistration's grace periods (`Fprobes::settle` publishes it again, with
                    // the words of the shared ops registered then, if any).
                    SINGLE_EXIT.store(core::ptr::null_mut(), Release);
                    // Unregistered here rather than by its drop, so that a failure is seen (its
                    // drop then leaks it, still registered). Freed by the reaper (the caller
                    // schedules it), or here if another is still waiting for it.
                    let gone = o.unregister().is_ok();
                    if gone {
                        drop(self.retired.replace(o));
                        self.filter_stale = self.ops_leaked;
                    } else {
                        // Leaked, still registered with its whole filter: for good, no
                        // shortcut may say every function hooked is one probe's.
                        self.ops_leaked = true;
                        self.filter_stale = true;
                    }
                    return Ok(Unhooked(gone));
                }
            } else if let Some(o) = self.graph.as_mut() {
                if let Err(e) = o.set_filter_ips(ips, true, false) {
                    // ftrace refuses a whole removal for one function it no longer knows: the
                    // others go one by one, so that only such functions stay (as the hub does).
                    let mut kept = false;
                    for ip in ips {
                        kept |= o
                            .set_filter_ips(core::slice::from_ref(ip), true, false)
                            .is_err();
                    }
                    if kept {
                        self.filter_stale = true;
                        return Err(e);
                    }
                }
            }
            return Ok(Unhooked(false));
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
        Ok(Unhooked(false))
    }
}

/// What [`Reg::update_filter`] says of a removal: whether it unregistered the shared graph ops
/// (the filter lost its last function), and left it in `Reg::retired` for the reaper to free.
/// Its unregistration waited for every callback of it and for the return paths that found its
/// slot (ftrace's wait for a dynamic ops, see `Graph::unregister`), and later returns find no
/// slot: no handler runs any more.
pub(crate) struct Unhooked(bool);

/// What to register a probe on (resolved by `sys::ksym::resolve`).
pub use crate::sys::ksym::Target;

// SAFETY: `reaper` is a `Work<Fprobes, 0>` field of `Fprobes`, initialised only by `Fprobes::new`
// (a pin-initialiser: pinned), and `Fprobes` cancels the work in its drop.
unsafe impl WorkItem<0> for Fprobes {
    const OFFSET: usize = core::mem::offset_of!(Fprobes, reaper);

    /// `Fprobes::reaper`: frees the replaced (or, after the last probe, removed) entries once
    /// no reader can hold them, and the retired shared ops.
    fn run(&self) {
        self.reap_now();
    }
}

impl Fprobes {
    fn reap_now(&self) {
        let (list, retired) = {
            let mut reg = self.reg.lock();
            (
                core::mem::replace(&mut reg.garbage, KVec::new()),
                reg.retired.take(),
            )
        };
        // Unregistered already (`Reg::update_filter`): frees its filter and its box.
        drop(retired);
        if list.is_empty() {
            return;
        }
        synchronize_rcu();
        for &o in list.iter() {
            // SAFETY: replaced (unpublished) before it was queued; readers are gone after the
            // grace period (`IpEntry`'s invariants: nothing else frees it).
            drop(unsafe { KBox::from_raw(o as *mut IpEntry) });
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Fprobes {
    fn drop(self: Pin<&mut Self>) {
        FPROBES.withdraw(&self);
        DISPATCH.store(0, Release);
        SINGLE_EXIT.store(core::ptr::null_mut(), Release);
        self.reaper.cancel_sync();
        self.reap_now();
        let mut reg = self.reg.lock();
        // Probes of other modules keep this module loaded; the module's own users (events)
        // unregistered before. Anything left is leaked on purpose rather than freed under a
        // registered ops.
        if reg.live_counts.counts().used != 0 {
            pr_err!(
                "fprobe: {} probes still registered at teardown\n",
                reg.live_counts.counts().used
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
