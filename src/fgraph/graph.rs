// SPDX-License-Identifier: GPL-2.0

//! The multi-user function-graph core: up to 16 graph ops share each task's shadow stack.
//!
//! Each registered ops owns an `ftrace_ops` (its own filter) whose callback is [`graph_entry`].
//! At a hooked function's entry, the first ops to see the call pushes a frame on the task's
//! shadow stack and swaps the return address for our trampoline; the other ops hooking the same
//! call join that frame, each adding its bit to the frame's bitmap (and its data above it) if its
//! entry callback wants the return. On return the trampoline calls [`ufgraph_return_handler`],
//! which runs the return callbacks of the ops in the bitmap and hands back the real address.
//!
//! ```text
//!   hooked fn entry --ftrace--> graph_entry(ops A) --push frame, *retp = trampoline
//!                   --ftrace--> graph_entry(ops B) --join frame (same call), bit B
//!   hooked fn `ret` ----------> ufgraph_return_trampoline (asm) --> ufgraph_return_handler
//!                                   ret callbacks of A, B; pop; --> real return address
//! ```
//!
//! With one ops on a function, ftrace calls its callback directly (no list walk) and the return
//! path runs a single bit: that is the single-user fast path.
//!
//! Module lifetime: a live frame's return lands in this module's trampoline, so the module's text
//! must not go while one can still get there. Rather than refuse `rmmod` (the kernel checks the
//! module's reference count before calling us, and with broad filters `rmmod` itself runs hooked
//! functions), the core *hands the return addresses back* when it is torn down, and tracks, frame
//! by frame, the ones it cannot hand back (see [`Graph::release_frames`]):
//!
//! 1. every graph ops is unregistered first: no new frame can appear;
//! 2. under `stop_machine()` (no task runs), every frame of every stack is judged, and marked on
//!    the shadow stack itself (`fgraph::shadow::mark`); frames sharing a return slot (a chain: tail
//!    calls, several ops' frames for one call) are judged together (`fgraph::graph::handback`):
//!    - its task can never run again (switched out for the last time: a zombie, whose kernel
//!      stack may be freed already; or the idle task of an offline CPU): left alone, untouched;
//!    - every copy of our trampoline in the chain can be reached (the return slot, and the copies
//!      the kernel's function_graph and rethook saved when they stacked over our frames): each is
//!      replaced by the real return address, the frames are *handed back*; those tasks will
//!      return without passing through us;
//!    - a copy cannot be reached (another hooker saved it, or the slot cannot be rewritten):
//!      *pending*, the whole chain, nothing written. The task is pinned (`get_task_struct`);
//!    - anything else (the slot was reused, below the stack pointer...): the call was abandoned
//!      and can never return through us;
//! 3. a grace period lets tasks that had already entered the trampoline finish it;
//! 4. teardown waits until every pending frame has returned (it is no longer on its stack) or its
//!    task can no longer run, naming the tasks and functions in the kernel log every 5 seconds;
//!    then a grace period again, for the pending frames' last trampoline instructions.
//!
//! No count is involved: a frame handed back and later dropped by a return below it, a task that
//! exits with frames, an idle task whose CPU went offline, a task preempted inside the trampoline,
//! none of them can make teardown end early or wait for ever.

use super::hub::{Hub, HubState};
use super::tasks::{Owner, Stack, TaskStack, Tasks};
use crate::fgraph::arch::{self, Slot as ArchSlot};
use crate::fgraph::graph::handback::{Hooker, Plan};
use crate::fgraph::lru::Lru;
use crate::fgraph::shadow::{
    mark, DataRef, DataSize, Frame, Head, IndexWords, OneStep, ARRAY_SIZE, FRAME_WORDS,
};
use crate::sys::ftrace::{RawOps, Regs};
use crate::sys::global::Global;
use crate::sys::ksym::Target;
#[cfg(CONFIG_PREEMPTION)]
use crate::sys::sync::synchronize_rcu_tasks;
use crate::sys::sync::{msleep, synchronize_rcu, NoPreempt, Recursion, Refused};
use crate::sys::task::Current;
use crate::sys::tracepoint::Probe;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use kernel::alloc::KVec;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Mutex;

mod callpath;
pub mod handback;
mod handler;
mod teardown;

pub use callpath::*;
pub use handler::*;

struct RegState {
    lru: Lru<ARRAY_SIZE>,
    count: usize,
    probes: KVec<Probe>,
    hub: HubState,
    /// Modules between their `MODULE_STATE_GOING` notification and their end, by name: their
    /// functions are still listed by ftrace (until `ftrace_release_mod()`, after the notifiers)
    /// but must not be resolved any more ([`resolve`]). A name leaves when a module of that
    /// name comes again (which the module loader allows only once the old one is gone).
    going: KVec<KVec<u8>>,
    /// Bumped with every change of `going` (a module coming or going): functions resolved at
    /// an older generation may belong to a module whose functions the notifier has already
    /// taken off the hub ([`Graph::hub_filter_resolved`]).
    modules_gen: u64,
}

/// Counters shown in debugfs.
pub struct GraphStats {
    /// Returns that did not find their frame on top and had to skip frames above it.
    pub skipped_frames: AtomicU64,
    /// Data reservations refused because the shadow stack was full: the ops' return callback
    /// then finds no data (`ufgraph_retrieve_data()` returns NULL).
    pub reserve_failed: AtomicU64,
}

/// The graph core: one per module instance.
///
/// # Invariants
///
/// - `array[i]` is null or points to the registered [`Slot`] at index `i`; it is set and
///   cleared only under `reg` (`register*`, `unregister`), and a slot cleared from it stays
///   valid until a grace period later (`unregister` waits for one before it returns, and the
///   slot's owner frees it only after that: [`Graph::register`]'s contract). So a slot loaded
///   from the array is valid under the registration lock, or for as long as the loader keeps
///   preemption disabled.
/// - A slot's `hub_ips` is touched only with `reg` held.
/// - Once published ([`Graph::publish`]), the core is withdrawn only by its drop, after every
///   ops is unregistered and every live frame handed back or returned.
#[pin_data(PinnedDrop)]
pub struct Graph {
    array: [AtomicPtr<Slot>; ARRAY_SIZE],
    #[pin]
    reg: Mutex<RegState>,
    #[pin]
    tasks: Tasks,
    module: &'static ThisModule,
    /// Registered handlers that want call times (`GraphHandler::WANTS_TIMES`).
    timed: AtomicUsize,
    /// The shared `ftrace_ops` of the ops whose functions the core knows.
    pub(super) hub: Hub,
    /// Counters.
    pub stats: GraphStats,
}

// The one instance the trampoline and the ftrace callbacks reach.
static GRAPH: Global<Graph> = Global::new();

/// The graph core of this module: published by [`Graph::publish`] until its teardown.
#[inline(always)]
pub fn graph() -> Option<&'static Graph> {
    GRAPH.get()
}

/// The address of the return trampoline.
pub fn trampoline() -> usize {
    crate::sys::ftrace::return_trampoline()
}

/// The ftrace locations `t` selects, sorted and without duplicates (`sys::ksym::resolve`),
/// leaving out the functions of modules that are going away: what fprobes and the C API's
/// `ufgraph_set_filter()` hook. Process context.
pub fn resolve(t: &Target<'_>) -> Result<KVec<usize>> {
    resolve_gen(t).map(|(ips, _)| ips)
}

/// [`resolve`], with the graph core's module generation the list of going modules was read at
/// (0 without a core): [`Graph::hub_filter_resolved`] refuses the functions if a module came
/// or went since.
pub fn resolve_gen(t: &Target<'_>) -> Result<(KVec<usize>, u64)> {
    match graph() {
        Some(g) => g.resolve_gen(t),
        None => Ok((crate::sys::ksym::resolve(t, None)?, 0)),
    }
}

/// How many times a hub change resolves its functions again when a module came or went
/// meanwhile (each round is a module load or unload: a few are plenty).
const STALE_TRIES: usize = 8;

impl Graph {
    /// [`resolve_gen`] against this core's list of going modules.
    fn resolve_gen(&self, t: &Target<'_>) -> Result<(KVec<usize>, u64)> {
        let mut going: KVec<KVec<u8>> = KVec::new();
        let gen = {
            let reg = self.reg.lock();
            for m in reg.going.iter() {
                let mut v = KVec::with_capacity(m.len(), GFP_KERNEL)?;
                v.extend_from_slice(m, GFP_KERNEL)?;
                going.push(v, GFP_KERNEL)?;
            }
            reg.modules_gen
        };
        resolve_skipping(t, &going).map(|ips| (ips, gen))
    }
}

/// Whether any of `ips` may be a module's function, which a module going away may take along
/// (anything but a function of the kernel image).
pub(crate) fn in_modules(ips: &[usize]) -> bool {
    ips.iter()
        .any(|&ip| !crate::sys::ksym::is_image_function(ip))
}

/// `sys::ksym::resolve`, leaving out the functions of the modules named in `going`.
fn resolve_skipping(t: &Target<'_>, going: &[KVec<u8>]) -> Result<KVec<usize>> {
    let gone = |f: &crate::sys::ksym::funclist::Func<'_>| {
        f.module
            .is_some_and(|m| going.iter().any(|g| g.as_slice() == m))
    };
    // No module going: nothing to leave out (nor to look up, for addresses).
    let skip: Option<&dyn Fn(&crate::sys::ksym::funclist::Func<'_>) -> bool> =
        (!going.is_empty()).then_some(&gone);
    crate::sys::ksym::resolve(t, skip)
}

impl Graph {
    /// A graph core with nothing registered.
    pub fn new(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        let (hub, hub_state) = Hub::new();
        try_pin_init!(Self {
            array: [const { AtomicPtr::new(core::ptr::null_mut()) }; ARRAY_SIZE],
            reg <- new_mutex!(RegState {
                lru: Lru::new(),
                count: 0,
                probes: KVec::new(),
                hub: hub_state,
                going: KVec::new(),
                modules_gen: 0,
            }),
            hub,
            tasks <- Tasks::new(),
            module,
            timed: AtomicUsize::new(0),
            stats: GraphStats {
                skipped_frames: AtomicU64::new(0),
                reserve_failed: AtomicU64::new(0),
            },
        }? Error)
    }

    /// Makes this the instance the trampoline and callbacks use. `EBUSY` if another is.
    pub fn publish(self: Pin<&Self>) -> Result {
        // Its drop withdraws it last, once nothing can reach it any more: every ops unregistered
        // (no callback runs after unregistration returns), every live frame handed back or
        // returned, and grace periods for code still inside the trampoline (`release_frames`).
        // API calls come from this module's users, which it outlives, and from clients that
        // link against it, which keep it loaded; the debugfs files go before the core.
        // SAFETY: pinned, so it stays where it is until dropped, and (above) nothing that
        // loaded it from `GRAPH` still uses it once its drop has withdrawn it.
        unsafe { GRAPH.publish(self.get_ref()) }
    }

    /// Calls `f` on every registered slot with its index (under the registration lock).
    pub fn for_each_slot<E>(
        &self,
        mut f: impl FnMut(usize, &Slot) -> core::result::Result<(), E>,
    ) -> core::result::Result<(), E> {
        let _reg = self.reg.lock();
        for (i, a) in self.array.iter().enumerate() {
            let p = a.load(Acquire);
            if !p.is_null() {
                // SAFETY: slots in the array are valid while registered, and the lock we hold
                // keeps them so (the type invariants).
                f(i, unsafe { &*p })?;
            }
        }
        Ok(())
    }

    /// The per-task stacks.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Functions on the hub's ftrace filter (0 when it is not registered).
    pub fn hub_functions(&self) -> usize {
        self.reg.lock().hub.filtered()
    }

    /// Tests only: what an ops' registration or unregistration on another CPU does first, made
    /// here from inside a callback on this one, at a chosen point of a call. `bits` (one per
    /// array index) are set in (`set`) or cleared from `ip`'s hub mask; nothing else a callback
    /// reads changes before a grace period. `false` if `ip` is not on the hub.
    #[cfg(ufgraph_kunit)]
    pub fn test_hub_mask_bits(&self, ip: usize, bits: usize, set: bool) -> bool {
        self.hub.test_mask_bits(ip, bits, set, &NoPreempt::new())
    }

    /// Tests only: takes the slot at `idx` out of the array, as an unregistration on another CPU
    /// does first (its callbacks in flight on this one see it gone from then on); returns it for
    /// [`Graph::test_put_slot`], which must put it back before the ops is unregistered.
    #[cfg(ufgraph_kunit)]
    pub fn test_take_slot(&self, idx: usize) -> *mut Slot {
        self.array[idx % ARRAY_SIZE].swap(core::ptr::null_mut(), AcqRel)
    }

    /// Tests only: the current task's shadow-stack top and depth (`None` without a stack).
    #[cfg(ufgraph_kunit)]
    pub fn test_current_top(&self) -> Option<(usize, usize)> {
        let np = NoPreempt::new();
        let s = self.tasks.current(&np)?;
        Some((s.top(), s.depth()))
    }

    /// Tests only: undoes [`Graph::test_take_slot`].
    #[cfg(ufgraph_kunit)]
    pub fn test_put_slot(&self, idx: usize, slot: *mut Slot) {
        self.array[idx % ARRAY_SIZE].store(slot, Release);
    }

    /// The slot registered at `idx`, if any. With preemption disabled (a callback): a slot stays
    /// valid until a grace period after it leaves the array.
    #[inline(always)]
    pub(super) fn slot_at(&self, idx: usize) -> Option<&Slot> {
        let p = self.array.get(idx)?.load(Acquire);
        // SAFETY: a slot loaded from the array stays valid while the loader keeps preemption
        // disabled (the type invariants); the callers are callbacks, which do.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// How many ops are registered.
    pub fn registered(&self) -> usize {
        self.reg.lock().count
    }

    /// Registers `slot`: allocates its index (least recently used first), gives every task a
    /// shadow stack on first use, and starts its ftrace_ops. `ENOSPC` when 16 ops are registered.
    /// On failure nothing is left behind.
    ///
    /// # Safety
    ///
    /// `slot` must stay valid and unmoved until [`Graph::unregister`] returns.
    pub unsafe fn register(&self, slot: &Slot) -> Result {
        let mut reg = self.reg.lock();
        let RegState { lru, probes, .. } = &mut *reg;
        if !slot.stacks_on_demand {
            self.tasks.attach(probes)?;
        }
        let Some(idx) = lru.alloc() else {
            return Err(ENOSPC);
        };
        // The index's task variables start at 0 again, whatever its previous owner left there.
        self.tasks.clear_task_vars(idx);
        // Before the ops goes live: its first entry may run on another CPU at once.
        slot.assign(self, Some(idx));
        let slot_ptr = (slot as *const Slot).cast_mut();
        // SAFETY: we are the only writer of `private`/`func` before registration; the callback
        // only uses `private` (the slot), which the caller keeps alive while registered.
        unsafe {
            let op = slot.ftrace.as_ptr();
            (*op).func = Some(slot.ftrace_func);
            (*op).private = slot_ptr.cast();
        }
        self.array[idx].store(slot_ptr, Release);
        // SAFETY: func and private are set; the slot outlives the registration.
        if let Err(e) = unsafe { slot.ftrace.register() } {
            self.array[idx].store(core::ptr::null_mut(), Release);
            let _ = reg.lru.release(idx);
            slot.assign(self, None);
            return Err(e);
        }
        reg.count += 1;
        Ok(())
    }

    /// Gives every task a shadow stack, now and at fork, if that is not done yet (it stays done
    /// until the core is torn down): for a handler with [`GraphHandler::STACKS_ON_DEMAND`],
    /// before its first call can need one.
    pub fn need_stacks(&self) -> Result {
        let mut reg = self.reg.lock();
        self.tasks.attach(&mut reg.probes)
    }

    /// Registers `slot` on the hub, for the functions at `ips` (not empty; start addresses or
    /// ftrace locations): no `ftrace_ops` of its own. `ENOSPC` when 16 ops are registered,
    /// `EINVAL` for an address that is not a traceable function (or a function of a module
    /// going away), `EAGAIN` if modules keep coming and going; on failure nothing is left
    /// behind.
    ///
    /// # Safety
    ///
    /// As for [`Graph::register`] (the slot's own `ftrace_ops` is not used).
    pub unsafe fn register_hub(&self, slot: &Slot, ips: &[usize]) -> Result {
        if ips.is_empty() {
            return Err(EINVAL);
        }
        // The functions, and the generation they were resolved at: checked under `reg` (as in
        // `hub_filter_gen`), so a module that started going meanwhile cannot have its functions
        // put on the hub after the notifier took its functions off.
        let mut tries = 0;
        let (mut want, mut reg) = loop {
            let (want, gen) = self.resolve_gen(&Target::Ips(ips))?;
            let reg = self.reg.lock();
            // A moved generation matters only to a module's functions: under module churn
            // (a client loaded and unloaded in a loop) the kernel's are never refused.
            if reg.modules_gen == gen || !in_modules(&want) {
                break (want, reg);
            }
            drop(reg);
            if tries == STALE_TRIES {
                return Err(EAGAIN);
            }
            tries += 1;
        };
        let RegState { lru, probes, .. } = &mut *reg;
        self.tasks.attach(probes)?;
        let Some(idx) = lru.alloc() else {
            return Err(ENOSPC);
        };
        // As in `register`.
        self.tasks.clear_task_vars(idx);
        slot.assign(self, Some(idx));
        self.array[idx].store((slot as *const Slot).cast_mut(), Release);
        let mut dead = KVec::new();
        if let Err(e) = self.hub.add(&mut reg.hub, idx, &want, &mut dead) {
            self.array[idx].store(core::ptr::null_mut(), Release);
            synchronize_rcu();
            Hub::free_dead(&mut dead);
            let _ = reg.lru.release(idx);
            slot.assign(self, None);
            return Err(e);
        }
        // SAFETY: the registration lock is held (`Slot`'s `hub_ips` invariant).
        core::mem::swap(unsafe { &mut *slot.hub_ips.get() }, &mut want);
        slot.on_hub.store(true, Relaxed);
        reg.count += 1;
        Ok(())
    }

    /// Adds (or with `remove`, removes) functions of a slot registered on the hub. Removing
    /// the last one is refused (`EINVAL`): unregister instead.
    pub fn hub_filter(&self, slot: &Slot, ips: &[usize], remove: bool) -> Result {
        self.hub_filter_gen(slot, ips, remove, None)
    }

    /// [`Graph::hub_filter`] on functions from [`resolve_gen`] at module generation `gen`:
    /// `EAGAIN`, and nothing changed, if a module came or went since they were resolved and
    /// some of them are a module's (the kernel image's functions never go).
    /// Without the check, a module whose `MODULE_STATE_GOING` notification ran after the
    /// resolution read the list of going modules, and whose functions ftrace still listed
    /// (until `ftrace_release_mod()`), would have its functions added after the notifier took
    /// that module's functions off the hub ([`Graph::drop_module`]): left in the hub's filter
    /// and table for good.
    pub fn hub_filter_resolved(
        &self,
        slot: &Slot,
        ips: &[usize],
        remove: bool,
        gen: u64,
    ) -> Result {
        self.hub_filter_gen(slot, ips, remove, Some(gen))
    }

    /// The current module generation (see [`resolve_gen`]).
    pub fn modules_gen(&self) -> u64 {
        self.reg.lock().modules_gen
    }

    fn hub_filter_gen(&self, slot: &Slot, ips: &[usize], remove: bool, gen: Option<u64>) -> Result {
        let mut tries = 0;
        let (change, mut reg) = loop {
            // What is added is resolved as an fprobe's addresses are: a going module's
            // functions refused (`EINVAL`). A removal adds nothing: any address ftrace knows.
            let (change, now) = if remove || ips.is_empty() {
                (sorted(&crate::sys::ksym::locations(ips)?)?, None)
            } else {
                let (change, now) = self.resolve_gen(&Target::Ips(ips))?;
                (change, Some(gen.unwrap_or(now)))
            };
            let reg = self.reg.lock();
            // Checked under `reg`, which the notifier takes to change the list and the
            // generation, and again to drop a going module's functions: either it has not run
            // yet (and will drop them from this slot too), or the generation moved.
            if now.is_none_or(|g| g == reg.modules_gen) || !in_modules(&change) {
                break (change, reg);
            }
            drop(reg);
            // Functions the caller resolved (a glob) are the caller's to resolve again.
            if gen.is_some() || tries == STALE_TRIES {
                return Err(EAGAIN);
            }
            tries += 1;
        };
        let idx = slot.idx();
        if !slot.on_hub()
            || idx >= ARRAY_SIZE
            || self.array[idx].load(Relaxed) != (slot as *const Slot).cast_mut()
        {
            return Err(ENOENT);
        }
        // SAFETY: the registration lock is held (`Slot`'s `hub_ips` invariant).
        let cur = unsafe { &mut *slot.hub_ips.get() };
        // Entries the hub took out of its table, on success or (an add that failed half way)
        // not: freed a grace period later either way.
        let mut dead = KVec::new();
        let r = (|| {
            if remove {
                let mut keep = KVec::with_capacity(cur.len(), GFP_KERNEL)?;
                for &ip in cur.iter() {
                    if change.binary_search(&ip).is_err() {
                        keep.push(ip, GFP_KERNEL)?;
                    }
                }
                if keep.is_empty() {
                    return Err(EINVAL);
                }
                self.hub.remove(&mut reg.hub, idx, &change, &mut dead);
                *cur = keep;
            } else {
                let mut new = KVec::with_capacity(change.len(), GFP_KERNEL)?;
                for &ip in change.iter() {
                    if cur.binary_search(&ip).is_err() {
                        new.push(ip, GFP_KERNEL)?;
                    }
                }
                let mut all = KVec::with_capacity(cur.len() + new.len(), GFP_KERNEL)?;
                all.extend_from_slice(cur, GFP_KERNEL)?;
                all.extend_from_slice(&new, GFP_KERNEL)?;
                crate::sys::slice::sort(&mut all);
                self.hub.add(&mut reg.hub, idx, &new, &mut dead)?;
                *cur = all;
            }
            Ok(())
        })();
        if !dead.is_empty() {
            synchronize_rcu();
            Hub::free_dead(&mut dead);
        }
        r
    }

    /// A module came: a module of its name is no longer going. From the module notifier,
    /// before anything that resolved functions earlier is told they are stale.
    pub fn module_coming(&self, name: &[u8]) {
        let mut reg = self.reg.lock();
        reg.modules_gen += 1;
        if let Some(i) = reg.going.iter().position(|g| g.as_slice() == name) {
            drop(crate::sys::kvec::remove(&mut reg.going, i));
        }
    }

    /// A module went live: its init functions are freed right after the notifiers. Functions
    /// resolved before are stale (a resolution by address that found one in the location list,
    /// which has lost them now, must not add it after the drop), then those `within` says
    /// leave every ops on the hub ([`Graph::drop_module`]).
    pub fn module_live(&self, within: impl Fn(usize) -> bool) {
        self.reg.lock().modules_gen += 1;
        self.drop_module(within, "in the init text of a module gone live");
    }

    /// A module is going away: its functions are resolved no more ([`resolve`]). From the
    /// module notifier, before anything that resolved functions earlier is told they are stale
    /// (fprobe's module generation), so that what resolves after that cannot see them.
    pub fn module_going(&self, name: &[u8]) {
        let mut reg = self.reg.lock();
        reg.modules_gen += 1;
        if !reg.going.iter().any(|g| g.as_slice() == name) {
            let mut v = KVec::new();
            // Out of memory: fprobe's generation still moves, so only a resolution in the
            // window before ftrace forgets the module could still see its functions.
            if v.extend_from_slice(name, GFP_KERNEL).is_ok() {
                let _ = reg.going.push(v, GFP_KERNEL);
            }
        }
    }

    /// Takes the functions `within` selects (a going module's) off every ops on the hub: out of
    /// the hub's table and ftrace filter, and out of the ops' lists of functions (which their
    /// users get back when they unregister). Left there, they would keep the hub's filter
    /// naming addresses that the next module loaded may reuse for other functions (ftrace
    /// keeps stale addresses in the filters of its users), and ftrace would refuse any later
    /// removal from the filter that names them. From the module notifier, while the module's
    /// ftrace records are still there (ftrace drops them after the notifier has run).
    pub fn drop_module(&self, within: impl Fn(usize) -> bool, what: &str) {
        let mut reg = self.reg.lock();
        let mut dead = KVec::new();
        let mut dropped = 0;
        for (idx, a) in self.array.iter().enumerate() {
            let p = a.load(Relaxed);
            if p.is_null() {
                continue;
            }
            // SAFETY: slots in the array are valid while registered, and the lock we hold keeps
            // them so (the type invariants).
            let slot = unsafe { &*p };
            if !slot.on_hub() {
                continue;
            }
            // SAFETY: the registration lock is held (`Slot`'s `hub_ips` invariant).
            let cur = unsafe { &mut *slot.hub_ips.get() };
            if !cur.iter().any(|&ip| within(ip)) {
                continue;
            }
            let (mut keep, mut gone) = (KVec::new(), KVec::new());
            let mut ok = true;
            for &ip in cur.iter() {
                ok &= if within(ip) {
                    gone.push(ip, GFP_KERNEL)
                } else {
                    keep.push(ip, GFP_KERNEL)
                }
                .is_ok();
            }
            if !ok {
                pr_err!(
                    "hub: out of memory: ops {} keeps functions of a going module\n",
                    idx
                );
                continue;
            }
            self.hub.remove(&mut reg.hub, idx, &gone, &mut dead);
            dropped += gone.len();
            // Possibly empty: the ops stays registered, hooking nothing, until its user adds
            // functions or unregisters.
            *cur = keep;
        }
        drop(reg);
        if dropped > 0 {
            synchronize_rcu();
            Hub::free_dead(&mut dead);
            pr_info!("hub: dropped {} functions {}\n", dropped, what);
        }
    }

    /// Unregisters `slot`. When this returns no callback of it runs any more, and it may be freed.
    /// Frames it hooked may still be live: their returns skip it (or, if its index was reused
    /// meanwhile, call the new owner: hence the LRU order). Returns the functions the slot had
    /// on the hub (ftrace locations, sorted; empty for a slot with its own `ftrace_ops`): its
    /// filter as changed while registered, for its user to keep.
    pub fn unregister(&self, slot: &Slot) -> Result<KVec<usize>> {
        let mut reg = self.reg.lock();
        let idx = slot.idx();
        if idx >= ARRAY_SIZE || self.array[idx].load(Relaxed) != (slot as *const Slot).cast_mut() {
            return Err(ENOENT);
        }
        self.array[idx].store(core::ptr::null_mut(), Release);
        let mut dead = KVec::new();
        let mut ips = KVec::new();
        let on_hub = slot.on_hub();
        let r = if on_hub {
            // SAFETY: the registration lock is held (`Slot`'s `hub_ips` invariant).
            ips = core::mem::replace(unsafe { &mut *slot.hub_ips.get() }, KVec::new());
            self.hub.remove(&mut reg.hub, idx, &ips, &mut dead);
            slot.on_hub.store(false, Relaxed);
            Ok(())
        } else {
            slot.ftrace.unregister()
        };
        // Return paths (and hub callbacks) that loaded the slot did so with preemption disabled:
        // wait for them. An own `ftrace_ops` that ftrace unregistered needs no second wait:
        // ftrace marks every ops outside the kernel image's data FTRACE_OPS_FL_DYNAMIC (ours
        // are allocated), and 6.12's `ftrace_shutdown()` ends every successful unregistration
        // of a dynamic ops with `synchronize_rcu_tasks_rude()` (a context switch on every
        // CPU, so past every preemption-disabled section begun before it, ours included:
        // the slot was cleared before) and `synchronize_rcu_tasks()`. On a mass detach the
        // grace period saved is about 9 million instructions.
        if on_hub || r.is_err() {
            synchronize_rcu();
        }
        Hub::free_dead(&mut dead);
        let _ = reg.lru.release(idx);
        slot.assign(self, None);
        reg.count -= 1;
        r.map(|()| ips)
    }

    /// Reserves data for ops `idx` in the frame being built by the current task (C API).
    pub fn reserve_data(&self, idx: usize, bytes: usize) -> Option<*mut usize> {
        let np = NoPreempt::new();
        let stack = self.tasks.current(&np)?;
        let Some(d) = stack.reserve_data(idx, bytes) else {
            reserve_failed(bytes);
            return None;
        };
        Some(stack.word_ptr(d.start))
    }

    /// The data ops `idx` reserved `depth` frames down the current task's stack (C API).
    pub fn retrieve_data(&self, idx: usize, depth: usize) -> Option<(*mut usize, usize)> {
        let np = NoPreempt::new();
        let stack = self.tasks.current(&np)?;
        let d = stack.retrieve_data(idx, depth)?;
        Some((stack.word_ptr(d.start), d.words))
    }

    /// Ops `idx`'s variable in the current task (C API).
    pub fn task_var(&self, idx: usize) -> Option<*mut usize> {
        if idx >= ARRAY_SIZE {
            return None;
        }
        let np = NoPreempt::new();
        Some(self.tasks.current(&np)?.task_var(idx).as_ptr())
    }
}

#[pinned_drop]
impl PinnedDrop for Graph {
    fn drop(self: Pin<&mut Self>) {
        let mut reg = self.reg.lock();
        // The module's own users unregistered before us; other modules' users keep this module
        // loaded (they link against it).
        if reg.count != 0 {
            pr_err!("graph core torn down with {} ops registered\n", reg.count);
        }
        self.hub.teardown(&mut reg.hub);
        self.release_frames();
        self.tasks.detach(&mut reg.probes);
        drop(reg);
        GRAPH.withdraw(&self);
    }
}

/// Edits the list of functions a hub user keeps while unregistered (the filter it registers
/// with; [`Graph::unregister`] hands back the one it had while registered): adds the functions
/// at `ips`, or with `remove` takes them out; `reset` empties the list first. Functions are
/// kept as their ftrace locations, so that either address names them (what registration will
/// hook); an address that is no traceable function is kept as it is, for registration to
/// refuse, and removed as it is. The list stays sorted, without duplicates; on error (out of
/// memory) it is unchanged.
pub fn edit_hub_list(list: &mut KVec<usize>, ips: &[usize], remove: bool, reset: bool) -> Result {
    let locs = crate::sys::ksym::try_locations(ips)?;
    let mut new = KVec::new();
    if !reset {
        new.extend_from_slice(list, GFP_KERNEL)?;
    }
    if remove {
        let mut keep = KVec::with_capacity(new.len(), GFP_KERNEL)?;
        for &ip in new.iter() {
            if !ips.contains(&ip) && !locs.contains(&Some(ip)) {
                keep.push(ip, GFP_KERNEL)?;
            }
        }
        new = keep;
    } else {
        for (&ip, &loc) in ips.iter().zip(locs.iter()) {
            new.push(loc.unwrap_or(ip), GFP_KERNEL)?;
        }
    }
    *list = sorted(&new)?;
    Ok(())
}

/// `ips` sorted, without duplicates.
fn sorted(ips: &[usize]) -> Result<KVec<usize>> {
    let mut all = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
    all.extend_from_slice(ips, GFP_KERNEL)?;
    crate::sys::slice::sort(&mut all);
    let mut v = KVec::with_capacity(all.len(), GFP_KERNEL)?;
    for (i, &ip) in all.iter().enumerate() {
        if i == 0 || all[i - 1] != ip {
            v.push(ip, GFP_KERNEL)?;
        }
    }
    Ok(v)
}
