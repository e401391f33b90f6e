// SPDX-License-Identifier: GPL-2.0

//! rethook on the shared shadow stack, the lower-level form of a kretprobe: code that hooks a return from its own entry hook (a kprobe
//! pre-handler, an ftrace_ops callback) asks for it with [`rethook_hook`]. All rethooks share one
//! graph slot registered without an ftrace filter; each hooked return reserves the rethook's
//! registration id and its data on the shadow stack, and a table of live registrations makes a
//! return skip a rethook unregistered since (even if the same structure was registered again:
//! ids are never reused).

use crate::fgraph::graph::{graph, Slot};
use crate::fgraph::{Entry, GraphHandler, Return};
use crate::sys::cabi::ufgraph_rethook;
use crate::sys::ftrace::RawOps;
use crate::sys::global::Global;
use crate::sys::rcutable::{Keyed, RcuTable, Writer};
use crate::sys::sync::synchronize_rcu;
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering::*};
use kernel::alloc::KBox;
use kernel::ffi::c_ulong;
use kernel::prelude::*;

/// The handler of the shared rethook slot.
pub struct RethookSide;

#[pin_data]
struct RethookCore {
    slot: Slot,
    /// Registrations by id: `RhLive`s.
    live: RcuTable<RhLive>,
    /// The table's counts, the number of registered rethooks, the next id.
    #[pin]
    counts: kernel::sync::Mutex<(Writer<RhLive>, usize, usize)>,
}

/// One registration of a rethook (in its `ufgraph_private`): immutable, freed a grace period
/// after it leaves `live`.
///
/// # Invariants
///
/// `rh` is a registered rethook (valid, the caller's contract of [`rethook_register`]) for as
/// long as this registration is in `live`, or may still be found there by a reader (until a
/// grace period after it left: unregistration frees the `RhLive` only then).
struct RhLive {
    id: usize,
    rh: *mut ufgraph_rethook,
}

// SAFETY: immutable; `rh` is only dereferenced under the type invariant, which holds on any CPU.
unsafe impl Send for RhLive {}
// SAFETY: as above.
unsafe impl Sync for RhLive {}

impl Keyed for RhLive {
    fn key(&self) -> usize {
        self.id
    }
}

static RETHOOK: Global<RethookCore> = Global::new();

/// The registration of `rh`, found in the table rather than through `rh->ufgraph_private`, so
/// that a rethook the caller never registered (or never zeroed) is simply not found. Writers
/// only (under `counts`); registration and unregistration are rare, a scan is fine.
fn registration_of(
    rc: &RethookCore,
    w: &Writer<RhLive>,
    rh: *mut ufgraph_rethook,
) -> Option<usize> {
    let mut found = None;
    rc.live.for_each(w, |e| {
        if e.rh == rh {
            found = Some(e.id);
        }
    });
    found
}

impl GraphHandler for RethookSide {
    // Upstream's fprobe, rethook and kretprobe handlers get no call times: no clock reads.
    const WANTS_TIMES: bool = false;

    fn entry(&self, e: &mut Entry<'_>) -> bool {
        let l = e.cookie as *const RhLive;
        if l.is_null() {
            return false;
        }
        // SAFETY: the cookie is the registration `rethook_hook` found, live while the caller
        // (inside an entry hook, preemption disabled) runs: it is freed after a grace period.
        let (id, rh) = unsafe { ((*l).id, (*l).rh) };
        // SAFETY: a registered rethook (the caller's contract).
        let size = unsafe { (*rh).data_size };
        match e.reserve(8 + size) {
            Some(w) => {
                w[0] = id;
                true
            }
            None => false,
        }
    }

    fn ret(&self, r: &mut Return<'_>) {
        let Some(rc) = RETHOOK.get() else { return };
        let Some(w) = r.data() else { return };
        let Some(l) = rc.live.lookup(w[0], r.no_preempt()) else {
            return;
        };
        let rh = l.rh;
        // SAFETY: registered: `l` is in `live` (`RhLive`'s invariant).
        if let Some(h) = unsafe { (*rh).handler } {
            let data = if w.len() > 1 {
                w[1..].as_ptr().cast_mut().cast::<c_void>()
            } else {
                core::ptr::null_mut()
            };
            // SAFETY: the user's handler with its data for this call.
            unsafe { h(rh, data, r.ret_ip as c_ulong, r.regs.as_ptr()) };
        }
    }
}

static RETHOOK_SIDE: RethookSide = RethookSide;

/// The rethook core: a graph slot without filter, and the live rethooks.
pub struct Rethooks {
    inner: Pin<KBox<RethookCore>>,
}

impl Rethooks {
    /// Creates (unregistered) the rethook slot.
    pub fn new() -> Result<Self> {
        // SAFETY: the handler is a static; the slot has no ftrace_ops (never registered with
        // ftrace: `register_manual`), so the RawOps is never used.
        let slot = unsafe {
            Slot::new(
                &RETHOOK_SIDE as *const RethookSide,
                RawOps::from_raw(core::ptr::null_mut()),
            )
        };
        let (live, writer) = RcuTable::new();
        let inner = KBox::pin_init(
            pin_init!(RethookCore {
                slot,
                live,
                counts <- kernel::new_mutex!((writer, 0, 1)),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self { inner })
    }

    /// Makes this the instance the C API uses. `EBUSY` if another is.
    pub fn publish(&self) -> Result {
        // The drop of `Rethooks` withdraws it, then unregisters the slot (waiting for running
        // return callbacks) before the box goes; API calls come from clients linking against
        // the module, which keep it loaded.
        // SAFETY: pinned in its box until `Rethooks` is dropped, and (above) nothing that
        // loaded it from `RETHOOK` still uses it once the drop has withdrawn it.
        unsafe { RETHOOK.publish(&self.inner) }
    }
}

impl Drop for Rethooks {
    fn drop(&mut self) {
        RETHOOK.withdraw(&self.inner);
        let mut c = self.inner.counts.lock();
        if c.1 > 0 {
            if let Some(g) = graph() {
                g.unregister_manual(&self.inner.slot);
            }
        }
        let (counts, _, _) = &mut *c;
        self.inner.live.free(counts);
    }
}

/// Registers a rethook.
///
/// # Safety
///
/// `rh` must stay valid until [`rethook_unregister`] returns.
pub unsafe fn rethook_register(rh: *mut ufgraph_rethook) -> Result {
    let rc = RETHOOK.get().ok_or(ENODEV)?;
    // SAFETY: the caller's rethook.
    let r = unsafe { &*rh };
    if r.handler.is_none() {
        return Err(EINVAL);
    }
    if r.data_size > 240 {
        return Err(E2BIG);
    }
    let mut c = rc.counts.lock();
    let (counts, users, next_id) = &mut *c;
    if registration_of(rc, counts, rh).is_some() {
        return Err(EBUSY);
    }
    let id = *next_id;
    let next = crate::fprobe::hdr::next_id(id).ok_or(ENOSPC)?;
    rc.live.reserve(counts, 1)?;
    let live = KBox::new(RhLive { id, rh }, GFP_KERNEL)?;
    if *users == 0 {
        let g = graph().ok_or(ENODEV)?;
        // SAFETY: the slot lives until `Rethooks` is dropped, which unregisters it.
        unsafe { g.register_manual(&rc.slot) }?;
    }
    *users += 1;
    *next_id = next;
    let live = KBox::into_raw(live);
    // Immutable, freed by `rethook_unregister` only a grace period after it leaves the table;
    // `rh` stays valid until then (the caller's contract).
    // SAFETY: `live` is a new registration (`KBox::into_raw` never returns null) that lives as
    // `RhLive`'s invariant requires (above).
    let _ = unsafe { rc.live.upsert(counts, NonNull::new_unchecked(live)) };
    // SAFETY: the caller's rethook (contract); the field is ours while registered. Written
    // last: `rethook_hook` finds the registration through it.
    unsafe { core::ptr::addr_of_mut!((*rh).ufgraph_private).write_volatile(live.cast()) };
    Ok(())
}

/// Unregisters a rethook: afterwards no handler of it runs (pending returns skip it).
// `rh` is dereferenced only once the registry has it: a registered rethook is valid until it is
// unregistered (the contract of `rethook_register`). Any other pointer is only compared.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn rethook_unregister(rh: *mut ufgraph_rethook) {
    let Some(rc) = RETHOOK.get() else { return };
    let mut c = rc.counts.lock();
    let (counts, users, _) = &mut *c;
    let Some(id) = registration_of(rc, counts, rh) else {
        return;
    };
    let Some(l) = rc.live.remove(counts, id) else {
        return;
    };
    // SAFETY: `rh` was registered (its registration was in the table), so it is valid until
    // this returns (the contract of `rethook_register`).
    unsafe { core::ptr::addr_of_mut!((*rh).ufgraph_private).write_volatile(core::ptr::null_mut()) };
    *users -= 1;
    if *users == 0 {
        if let Some(g) = graph() {
            g.unregister_manual(&rc.slot);
        }
    }
    drop(c);
    synchronize_rcu();
    // SAFETY: unpublished (table and rethook) and every reader is gone after the grace period.
    drop(unsafe { KBox::from_raw(l.as_ptr()) });
}

/// Hooks the return of the function whose entry registers are `fregs`, for `rh`.
///
/// # Safety
///
/// `fregs` must be the entry registers of the function being entered on the current task,
/// from an entry hook (preemption disabled); `rh` a registered rethook.
pub unsafe fn rethook_hook(
    rh: *mut ufgraph_rethook,
    fregs: *mut crate::sys::ftrace::RawFregs,
) -> *mut c_void {
    let rc = RETHOOK.get();
    let Some(g) = graph() else {
        return core::ptr::null_mut();
    };
    let Some(rc) = rc else {
        return core::ptr::null_mut();
    };
    if fregs.is_null() || rh.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: the caller's rethook; its registration (freed a grace period after unregistering,
    // and the caller runs with preemption disabled) or null.
    let l = unsafe { core::ptr::addr_of!((*rh).ufgraph_private).read_volatile() };
    if l.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: valid entry registers (caller).
    let ip = unsafe { crate::sys::ftrace::Regs::from_raw(fregs) }.ip();
    // SAFETY: the caller's contract is `enter`'s; the slot is registered while `rh` is.
    if !unsafe { g.enter(&rc.slot, ip, 0, fregs, l as usize) } {
        // SAFETY: the caller's rethook; nmissed is updated atomically only.
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*rh).nmissed).cast()) }
            .fetch_add(1, Relaxed);
        return core::ptr::null_mut();
    }
    match g.retrieve_data(rc.slot.idx(), 0) {
        // The first word is the rethook's address; the user's data follows.
        Some((w, _)) => w.wrapping_add(1).cast(),
        None => core::ptr::null_mut(),
    }
}
