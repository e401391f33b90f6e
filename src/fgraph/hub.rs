// SPDX-License-Identifier: GPL-2.0

//! The hub: one `ftrace_ops` for every graph ops whose filter the core knows as a list of
//! functions, dispatching each hooked call to the ops that selected it (upstream 6.12 does the
//! same with its `fgraph_ops` sub-ops under one manager ops).
//!
//! ```text
//!   ftrace ---> hub_entry(ip) --> masks (RCU table): ip -> IpMask { mask: ops 3, 7 }
//!                  |                 guard + stack found once for the call
//!                  +--> ops 3: push the frame (or join), entry callback
//!                  +--> ops 7: join the frame, entry callback
//! ```
//!
//! Without it each graph ops has an `ftrace_ops` of its own: ftrace's list function tests each
//! ops' filter and calls each, and every call takes the recursion guard, finds the task's stack
//! and decodes the top frame again. Ops whose filter ufgraph cannot read (a C user's filter set
//! with `ftrace_set_filter()` on its own `ftrace_ops`, a glob) keep that path.
//!
//! Writers (registration, filter changes) hold the graph's registration lock, which owns
//! [`HubState`]. A function's mask is one word, changed in place with atomic bit operations; an
//! entry appears before its function joins the hub's ftrace filter, and leaves it, with a mask
//! of 0, only after the function left the filter; it is freed a grace period later (ftrace
//! callbacks are RCU-sched readers). The hub's `ftrace_ops` is registered only while its filter
//! is not empty: an empty filter would make ftrace call it for every function.

use super::graph::{graph, Batched, Graph, Slot};
use crate::sys::ftrace::RawOps;
use crate::sys::rcutable::{Keyed, RcuTable, Writer};
use crate::sys::sync::{NoPreempt, Recursion, Refused};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use kernel::alloc::{KBox, KVec};
use kernel::prelude::*;
use kernel::types::Opaque;

/// The ops (one bit per graph array index) that selected one function.
struct IpMask {
    ip: usize,
    mask: AtomicUsize,
    /// Whether the function is in the hub's ftrace filter (writers only).
    filtered: AtomicBool,
}

impl Keyed for IpMask {
    fn key(&self) -> usize {
        self.ip
    }
}

/// What the writers keep, under the graph's registration lock.
pub(super) struct HubState {
    /// The writer of [`Hub`]'s table.
    counts: Writer<IpMask>,
    /// Functions in the hub's ftrace filter.
    filtered: usize,
    /// Whether the hub's `ftrace_ops` is registered.
    live: bool,
}

impl HubState {
    /// Functions in the hub's ftrace filter; 0 exactly when its `ftrace_ops` is unregistered.
    pub(super) fn filtered(&self) -> usize {
        self.filtered
    }
}

/// See the module documentation.
pub(super) struct Hub {
    ops: Opaque<crate::sys::ftrace::RawFtraceOps>,
    masks: RcuTable<IpMask>,
}

// SAFETY: the ftrace_ops is handed to ftrace only (which locks), the table is shared by design.
unsafe impl Send for Hub {}
// SAFETY: as above.
unsafe impl Sync for Hub {}

impl Hub {
    /// The hub, and the state its writers keep (under the graph's registration lock).
    pub(super) fn new() -> (Self, HubState) {
        let (masks, counts) = RcuTable::new();
        let hub = Self {
            ops: Opaque::new(crate::sys::ftrace::RawFtraceOps::default()),
            masks,
        };
        let st = HubState {
            counts,
            filtered: 0,
            live: false,
        };
        (hub, st)
    }

    fn raw(&self) -> RawOps {
        // SAFETY: the ops lives inside the pinned graph core, at a fixed address, until the core's
        // drop has unregistered it and freed its filter.
        unsafe { RawOps::from_raw(self.ops.get()) }
    }

    /// The ops that selected `ip`, one bit per array index.
    #[inline(always)]
    fn mask(&self, ip: usize, np: &NoPreempt) -> usize {
        self.masks
            .lookup(ip, np)
            .map_or(0, |e| e.mask.load(Acquire))
    }

    /// See [`Graph::test_hub_mask_bits`].
    #[cfg(ufgraph_kunit)]
    pub(super) fn test_mask_bits(&self, ip: usize, bits: usize, set: bool, np: &NoPreempt) -> bool {
        let Some(e) = self.masks.lookup(ip, np) else {
            return false;
        };
        if set {
            e.mask.fetch_or(bits, Release);
        } else {
            e.mask.fetch_and(!bits, Release);
        }
        true
    }

    /// Adds ops `idx` on `ips` (sorted, no duplicates). Functions new to the hub join its ftrace
    /// filter, and the hub's `ftrace_ops` is registered if it was not. On failure ops `idx` is
    /// on none of `ips`.
    pub(super) fn add(
        &self,
        st: &mut HubState,
        idx: usize,
        ips: &[usize],
        dead: &mut KVec<usize>,
    ) -> Result {
        let r = self.try_add(st, idx, ips);
        if r.is_err() {
            self.remove(st, idx, ips, dead);
        }
        r
    }

    fn try_add(&self, st: &mut HubState, idx: usize, ips: &[usize]) -> Result {
        let bit = 1usize << idx;
        self.masks.reserve(&mut st.counts, ips.len())?;
        // The functions not in the hub's filter yet.
        let mut fresh = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        for &ip in ips {
            if let Some(e) = self.masks.lookup_w(&st.counts, ip) {
                e.mask.fetch_or(bit, Release);
                if !e.filtered.load(Relaxed) {
                    fresh.push(ip, GFP_KERNEL)?;
                }
                continue;
            }
            let e = KBox::new(
                IpMask {
                    ip,
                    mask: AtomicUsize::new(bit),
                    filtered: AtomicBool::new(false),
                },
                GFP_KERNEL,
            )?;
            let p = KBox::into_raw(e);
            // Ours until it leaves the table, and freed a grace period after that (`remove`
            // hands it to `free_dead`); only its atomics change meanwhile.
            // SAFETY: `p` is a new entry (`KBox::into_raw` never returns null) that lives as the
            // table's entries must (above).
            let r = unsafe { self.masks.upsert(&mut st.counts, NonNull::new_unchecked(p)) };
            if let Err(err) = r {
                // SAFETY: never published: ours to free.
                drop(unsafe { KBox::from_raw(p) });
                return Err(err);
            }
            fresh.push(ip, GFP_KERNEL)?;
        }
        if fresh.is_empty() {
            return Ok(());
        }
        self.raw().set_filter_ips(&fresh, false, false)?;
        for &ip in fresh.iter() {
            if let Some(e) = self.masks.lookup_w(&st.counts, ip) {
                e.filtered.store(true, Relaxed);
            }
        }
        st.filtered += fresh.len();
        if !st.live {
            let op = self.ops.get();
            // SAFETY: the hub's ops is not registered, so nothing else reads these fields; the
            // callback reaches the graph core through its global, which outlives the ops.
            unsafe {
                (*op).func = Some(hub_entry::<Direct>);
                (*op).private = core::ptr::null_mut();
            }
            // SAFETY: `func` is set; it uses only the graph core, which unregisters the hub before
            // it goes.
            unsafe { self.raw().register() }?;
            st.live = true;
        }
        Ok(())
    }

    /// Takes ops `idx` off `ips`. Functions no ops selects any more leave the filter and the
    /// table; their entries go to `dead`, for [`Hub::free_dead`] after a grace period.
    pub(super) fn remove(
        &self,
        st: &mut HubState,
        idx: usize,
        ips: &[usize],
        dead: &mut KVec<usize>,
    ) {
        let bit = 1usize << idx;
        let mut gone = KVec::new();
        let mut unfilter = KVec::new();
        for &ip in ips {
            let Some(m) = self.masks.lookup_w(&st.counts, ip) else {
                continue;
            };
            if m.mask.fetch_and(!bit, Release) & !bit != 0 {
                continue;
            }
            // If memory for the lists runs out, the entry stays (mask 0: callbacks for it do
            // nothing) until teardown.
            if m.filtered.load(Relaxed) && unfilter.push(ip, GFP_KERNEL).is_err() {
                continue;
            }
            if gone.push(ip, GFP_KERNEL).is_err() {
                // Out of the filter (or on its way out) but kept in the table: still harmless,
                // but no longer filtered, so that a later `add` puts it back in the filter.
                m.filtered.store(false, Relaxed);
                continue;
            }
        }
        if st.live && unfilter.len() == st.filtered {
            // The filter would become empty: ftrace would call an ops with an empty filter for
            // every function. Unregister first. (Not `ftrace_free_filter()`: 6.12's frees the
            // hashes but leaves the ops pointing at them; it runs once, at teardown.)
            if let Err(e) = self.raw().unregister() {
                pr_err!("hub: unregister failed ({:?})\n", e);
            }
            st.live = false;
        }
        // ftrace refuses a whole removal if one function in it is no longer there (init text
        // freed, a module gone that the module notifier could not take off): then one by one, so
        // that the others do leave the filter. What stays is inert: out of the table, its calls
        // find no ops (and the filter is freed at teardown).
        if !unfilter.is_empty() && self.raw().set_filter_ips(&unfilter, true, false).is_err() {
            for &ip in unfilter.iter() {
                if let Err(e) = self.raw().set_filter_ips(&[ip], true, false) {
                    pr_warn!("hub: {:#x} stays in the hub's filter ({:?})\n", ip, e);
                }
            }
        }
        st.filtered -= unfilter.len();
        for &ip in gone.iter() {
            let Some(e) = self.masks.remove(&mut st.counts, ip) else {
                continue;
            };
            if dead.push(e.as_ptr() as usize, GFP_KERNEL).is_err() {
                // Cannot remember it for freeing: leak one small entry rather than free it early.
                pr_warn!("hub: leaking an entry\n");
            }
        }
    }

    /// Frees entries [`Hub::remove`] took out of the table, once a grace period has passed.
    pub(super) fn free_dead(dead: &mut KVec<usize>) {
        for &e in dead.iter() {
            // SAFETY: out of the table, and no reader is left after the caller's grace period.
            drop(unsafe { KBox::from_raw(e as *mut IpMask) });
        }
        *dead = KVec::new();
    }

    /// At the graph core's end, with no ops registered: nothing is left to remove but the table.
    pub(super) fn teardown(&self, st: &mut HubState) {
        if st.live {
            let _ = self.raw().unregister();
            st.live = false;
        }
        self.raw().free_filter();
        let mut left = KVec::new();
        self.masks.for_each(&st.counts, |e| {
            let _ = left.push(e as *const IpMask as usize, GFP_KERNEL);
        });
        // The table is freed a grace period from now (RCU frees it); the entries after one
        // too. No callback can still be reading them (the hub's `ftrace_ops` is unregistered,
        // and ftrace waited for its callbacks), but teardown is rare enough to wait anyway.
        self.masks.free(&mut st.counts);
        crate::sys::sync::synchronize_rcu();
        Self::free_dead(&mut left);
    }
}

/// The hub's ftrace callback: every ops that selected `ip`, under one recursion guard.
/// The handler type the hub calls directly (inlined) rather than through a slot's function
/// pointer: the C API's ops, the hub's main users (several on one function is the case the hub
/// is for). Others are called through the slot.
type Direct = crate::fgraph::capi::COps;

/// A callback C calls.
///
/// # Safety
///
/// Called by ftrace only, as the hub's `ftrace_ops` callback, with ftrace's arguments.
unsafe extern "C" fn hub_entry<Q: Batched>(
    ip: usize,
    parent_ip: usize,
    _op: *mut crate::sys::ftrace::RawFtraceOps,
    fregs: *mut crate::sys::ftrace::RawFregs,
) {
    // Never null: the module builds only for kernels with DYNAMIC_FTRACE_WITH_ARGS (helpers.c),
    // whose ftrace always passes its registers.
    debug_assert!(!fregs.is_null());
    let Some(g) = graph() else {
        return;
    };
    let guard = match Recursion::try_lock(ip, parent_ip) {
        Ok(guard) => guard,
        Err(Refused::Recursion) => {
            let np = NoPreempt::new();
            each_slot(g, g.hub.mask(ip, &np), |slot| {
                slot.note_missed(ip, |s| &s.missed_recursion)
            });
            return;
        }
        Err(Refused::Unsafe) => return,
    };
    let np = guard.no_preempt();
    let mask = g.hub.mask(ip, np);
    if mask == 0 {
        return;
    }
    let Some(stack) = g.tasks().current(np) else {
        each_slot(g, mask, |slot| slot.note_missed(ip, |s| &s.missed_nostack));
        return;
    };
    // One frame for every ops of the mask, pushed (or joined) once, and each ops' callback
    // in turn on it (`Graph::hub_enter`).
    // SAFETY: ftrace's entry registers for `ip`, the guard held; the slots' handlers are alive
    // while the slots are in the array (unregistration waits a grace period).
    unsafe { g.hub_enter::<Q>(mask, ip, fregs, stack, np) };
    drop(guard);
}

/// Calls `f` on the registered slots of `mask`, lowest index first.
#[inline(always)]
pub(in crate::fgraph) fn each_slot(g: &Graph, mut mask: usize, mut f: impl FnMut(&Slot)) {
    while mask != 0 {
        let idx = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if let Some(slot) = g.slot_at(idx) {
            f(slot);
        }
    }
}
