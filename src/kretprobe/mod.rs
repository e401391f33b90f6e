// SPDX-License-Identifier: GPL-2.0

//! kretprobe and rethook users on the shared shadow stack.
//!
//! The kernel's kretprobe keeps a pool of `maxactive` instances per probe; when more tasks are
//! inside the function at once, returns are missed. Here a kretprobe is an internal fprobe with
//! an exit handler: its instance (the probe, the return address, then `data_size` bytes of the
//! user's data) is that fprobe's entry data, which lives in the task's shadow stack frame. There
//! is no pool to run dry; `maxactive` is accepted and ignored.
//!
//! ```text
//!   ufgraph_kretprobe (C) <--rp-- Shim { fp: ufgraph_fprobe (first), rp }   (kmalloc'd)
//!                                   fp.entry_handler = shim_entry --> rp.entry_handler(ri, regs)
//!                                   fp.exit_handler  = shim_exit  --> rp.handler(ri, regs)
//!   entry data (shadow stack): [ rp | ret_addr | data[data_size] ]  = the kretprobe_instance
//! ```
//!
//! rethook is the lower-level form: code that hooks a return from its own entry hook (a kprobe
//! pre-handler, an ftrace_ops callback) asks for it with [`rethook_hook`]. All rethooks share one
//! graph slot registered without an ftrace filter; each hooked return reserves the rethook's
//! registration id and its data on the shadow stack, and a table of live registrations makes a
//! return skip a rethook unregistered since (even if the same structure was registered again:
//! ids are never reused).

use crate::bindings::{
    self, ufgraph_fprobe, ufgraph_kretprobe, ufgraph_kretprobe_instance, ufgraph_rethook,
};
use crate::fgraph::graph::{graph, Slot};
use crate::fgraph::{Entry, GraphHandler, Return};
use crate::fprobe::{fprobes, Fprobes, Target};
use crate::pure::tasktable::Counts;
use crate::sys::ftrace::{RawOps, Regs};
use crate::sys::rcutable::RcuTable;
use crate::sys::sync::synchronize_rcu;
use core::ffi::c_void;
use core::mem::{offset_of, size_of, MaybeUninit};
use core::sync::atomic::{AtomicI32, AtomicUsize, Ordering::*};
use kernel::alloc::KBox;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;
use kernel::str::CStr;

/// An fprobe flag of ours: the probe is a kretprobe shim (so misses count on the kretprobe).
pub const FL_KRETPROBE: u32 = 1 << 31;

/// The per-kretprobe record, in `ufgraph_private`.
#[repr(C)]
pub struct Shim {
    fp: ufgraph_fprobe,
    rp: *mut ufgraph_kretprobe,
}

const INSTANCE_HDR: usize = size_of::<ufgraph_kretprobe_instance>();

/// Called by the fprobe core when a shim probe missed a call.
pub fn missed(fp: *mut ufgraph_fprobe) {
    // SAFETY: `fp` carries FL_KRETPROBE, so it is the first field of a live `Shim`.
    let shim = unsafe { &*fp.cast::<Shim>() };
    // SAFETY: the kretprobe outlives its registration; `nmissed` is updated atomically only.
    unsafe { AtomicI32::from_ptr(core::ptr::addr_of_mut!((*shim.rp).nmissed)) }
        .fetch_add(1, Relaxed);
}

/// fprobe entry handler of a kretprobe's shim.
///
/// # Safety
///
/// Called by the fprobe core only, for a registered `Shim`'s `fp`, with the hooked call's
/// registers and the probe's entry data.
unsafe extern "C" fn shim_entry(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the fprobe core calls us only for our shims, registered, with their entry data.
    let shim = unsafe { &*fp.cast::<Shim>() };
    let ri = data.cast::<ufgraph_kretprobe_instance>();
    // SAFETY: `data` holds INSTANCE_HDR + data_size bytes for this call.
    unsafe {
        (*ri).rp = shim.rp;
        (*ri).ret_addr = ret_ip;
    }
    // SAFETY: the kretprobe is valid while registered.
    let Some(h) = (unsafe { (*shim.rp).entry_handler }) else {
        return 0;
    };
    let mut regs = MaybeUninit::<bindings::pt_regs>::uninit();
    // SAFETY: the fprobe core passes the entry registers, valid for the call.
    crate::arch::fill_pt_regs(unsafe { Regs::from_raw(fregs) }, None, &mut regs);
    // SAFETY: the user's handler with the kretprobe API's arguments.
    unsafe { h(ri, regs.as_mut_ptr()) }
}

/// fprobe exit handler of a kretprobe's shim.
///
/// # Safety
///
/// As for [`shim_entry`], at the hooked call's return.
unsafe extern "C" fn shim_exit(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    ret_ip: c_ulong,
    fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    // SAFETY: as in `shim_entry`.
    let shim = unsafe { &*fp.cast::<Shim>() };
    // SAFETY: as above.
    let Some(h) = (unsafe { (*shim.rp).handler }) else {
        return;
    };
    let mut regs = MaybeUninit::<bindings::pt_regs>::uninit();
    // SAFETY: the fprobe core passes the exit registers, valid for the call.
    crate::arch::fill_pt_regs(unsafe { Regs::from_raw(fregs) }, Some(ret_ip), &mut regs);
    // SAFETY: the instance the entry filled, and the user's handler.
    unsafe { h(data.cast(), regs.as_mut_ptr()) };
}

/// Registers a kretprobe. See include/ufgraph/kretprobe.h for the errors.
///
/// # Safety
///
/// `rp` must stay valid until [`unregister_kretprobe`] returns.
pub unsafe fn register_kretprobe(rp: *mut ufgraph_kretprobe) -> Result {
    let core = fprobes().ok_or(ENODEV)?;
    // SAFETY: the caller passes a valid kretprobe.
    let r = unsafe { &mut *rp };
    if !r.ufgraph_private.is_null() {
        return Err(EBUSY);
    }
    if r.handler.is_none() && r.entry_handler.is_none() {
        return Err(EINVAL);
    }
    if r.data_size > bindings::UFGRAPH_KRETPROBE_MAX_DATA as usize {
        return Err(E2BIG);
    }
    if r.kp.offset != 0 || (r.kp.symbol_name.is_null() == r.kp.addr.is_null()) {
        return Err(EINVAL);
    }
    let mut shim = KBox::new(
        Shim {
            fp: ufgraph_fprobe::default(),
            rp,
        },
        GFP_KERNEL,
    )?;
    shim.fp.entry_handler = Some(shim_entry);
    shim.fp.exit_handler = Some(shim_exit);
    shim.fp.entry_data_size = INSTANCE_HDR + r.data_size;
    shim.fp.flags = FL_KRETPROBE;
    let ips = if r.kp.symbol_name.is_null() {
        Fprobes::resolve(&Target::Ips(&[r.kp.addr as usize]))?
    } else {
        // SAFETY: `symbol_name` is the caller's NUL-terminated string.
        let name = unsafe { CStr::from_char_ptr(r.kp.symbol_name) };
        Fprobes::resolve(&Target::Syms(&[name]))?
    };
    // What the handlers may read of the kretprobe is in place before the probe goes live: its
    // first handler may run on another CPU before `register_resolved` returns.
    if let Some(&a) = ips.first() {
        r.kp.addr = a as *mut _;
    }
    r.nmissed = 0;
    let fp = core::ptr::addr_of_mut!(shim.fp);
    // SAFETY: the shim lives in its box until unregistered.
    unsafe { core.register_resolved(fp, ips) }?;
    // Through the raw pointer: `r` is not used past registration, as handlers now reach the
    // kretprobe too (its `nmissed`). Only the API reads `ufgraph_private`.
    // SAFETY: the caller's kretprobe, valid (contract).
    unsafe { (*rp).ufgraph_private = KBox::into_raw(shim).cast() };
    Ok(())
}

/// Unregisters a kretprobe: when this returns no handler of it runs any more.
///
/// # Safety
///
/// `rp` must be a valid kretprobe (registered or not), not used concurrently.
pub unsafe fn unregister_kretprobe(rp: *mut ufgraph_kretprobe) {
    let Some(core) = fprobes() else { return };
    // SAFETY: the caller passes its kretprobe (contract).
    let r = unsafe { &mut *rp };
    let shim = r.ufgraph_private.cast::<Shim>();
    if shim.is_null() {
        return;
    }
    // SAFETY: `ufgraph_private` is the shim `register_kretprobe` leaked.
    let mut shim = unsafe { KBox::from_raw(shim) };
    if core.unregister(core::ptr::addr_of_mut!(shim.fp)).is_err() {
        // Not registered after all: keep what the core may know (leak) rather than free it.
        KBox::into_raw(shim);
        return;
    }
    r.ufgraph_private = core::ptr::null_mut();
}

// --- rethook -------------------------------------------------------------------------------

/// The handler of the shared rethook slot.
pub struct RethookSide;

#[pin_data]
struct RethookCore {
    slot: Slot,
    /// Registrations by id: `RhLive`s.
    live: RcuTable,
    /// The table's counts, the number of registered rethooks, the next id.
    #[pin]
    counts: kernel::sync::Mutex<(Counts, usize, usize)>,
}

/// One registration of a rethook (in its `ufgraph_private`): immutable, freed a grace period
/// after it leaves `live`.
struct RhLive {
    id: usize,
    rh: *mut ufgraph_rethook,
}

static RETHOOK: core::sync::atomic::AtomicPtr<RethookCore> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// The registration of `rh`, found in the table rather than through `rh->ufgraph_private`, so
/// that a rethook the caller never registered (or never zeroed) is simply not found. Writers
/// only (under `counts`); registration and unregistration are rare, a scan is fine.
fn registration_of(rc: &RethookCore, _w: &Counts, rh: *mut ufgraph_rethook) -> Option<*mut RhLive> {
    let mut found = None;
    rc.live.for_each(|e| {
        // SAFETY: entries are live `RhLive`s, freed only by unregistration, which holds the
        // same lock as the caller.
        if unsafe { (*(e as *const RhLive)).rh } == rh {
            found = Some(e as *mut RhLive);
        }
    });
    found
}

fn rh_key(e: usize) -> usize {
    // SAFETY: table entries are live `RhLive`s (freed only after removal and a grace period).
    unsafe { (*(e as *const RhLive)).id }
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
        let p = RETHOOK.load(Acquire);
        if p.is_null() {
            return;
        }
        // SAFETY: published while the module lives.
        let rc = unsafe { &*p };
        let Some(w) = r.data() else { return };
        let Some(l) = rc.live.lookup(w[0], rh_key, r.no_preempt()) else {
            return;
        };
        // SAFETY: found in `live`: freed only a grace period after it leaves, which the
        // preemption-disabled return path holds off.
        let rh = unsafe { (*(l as *const RhLive)).rh };
        // SAFETY: registered (checked; unregistration waits for us).
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
        let inner = KBox::pin_init(
            pin_init!(RethookCore {
                slot,
                live: RcuTable::new(),
                counts <- kernel::new_mutex!((Counts::default(), 0, 1)),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self { inner })
    }

    /// Makes this the instance the C API uses.
    pub fn publish(&self) {
        RETHOOK.store(
            &*self.inner as *const RethookCore as *mut RethookCore,
            Release,
        );
    }
}

impl Drop for Rethooks {
    fn drop(&mut self) {
        RETHOOK.store(core::ptr::null_mut(), Release);
        let mut c = self.inner.counts.lock();
        if c.1 > 0 {
            // SAFETY: the graph core outlives us (module field order).
            if let Some(g) = unsafe { graph() } {
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
    let p = RETHOOK.load(Acquire);
    if p.is_null() {
        return Err(ENODEV);
    }
    // SAFETY: published while the module lives.
    let rc = unsafe { &*p };
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
    let next = crate::pure::fprobe_hdr::next_id(id).ok_or(ENOSPC)?;
    rc.live.reserve(counts, 1, rh_key)?;
    let live = KBox::new(RhLive { id, rh }, GFP_KERNEL)?;
    if *users == 0 {
        // SAFETY: the graph core exists while the module does; the slot is pinned in `rc`.
        let g = unsafe { graph() }.ok_or(ENODEV)?;
        // SAFETY: the slot lives until `Rethooks` is dropped, which unregisters it.
        unsafe { g.register_manual(&rc.slot) }?;
    }
    *users += 1;
    *next_id = next;
    let live = KBox::into_raw(live);
    let _ = rc.live.upsert(counts, id, live as usize, rh_key);
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
    let p = RETHOOK.load(Acquire);
    if p.is_null() {
        return;
    }
    // SAFETY: published while the module lives.
    let rc = unsafe { &*p };
    let mut c = rc.counts.lock();
    let (counts, users, _) = &mut *c;
    let Some(l) = registration_of(rc, counts, rh) else {
        return;
    };
    // SAFETY: set by `rethook_register`, freed only here.
    let id = unsafe { (*l).id };
    if rc.live.remove(counts, id, rh_key).is_none() {
        return;
    }
    // SAFETY: as above.
    unsafe { core::ptr::addr_of_mut!((*rh).ufgraph_private).write_volatile(core::ptr::null_mut()) };
    *users -= 1;
    if *users == 0 {
        // SAFETY: as in `rethook_register`.
        if let Some(g) = unsafe { graph() } {
            g.unregister_manual(&rc.slot);
        }
    }
    drop(c);
    synchronize_rcu();
    // SAFETY: unpublished (table and rethook) and every reader is gone after the grace period.
    drop(unsafe { KBox::from_raw(l) });
}

/// Hooks the return of the function whose entry registers are `fregs`, for `rh`.
///
/// # Safety
///
/// `fregs` must be the entry registers of the function being entered on the current task,
/// from an entry hook (preemption disabled); `rh` a registered rethook.
pub unsafe fn rethook_hook(
    rh: *mut ufgraph_rethook,
    fregs: *mut bindings::ftrace_regs,
) -> *mut c_void {
    let p = RETHOOK.load(Acquire);
    // SAFETY: the graph core exists while the module does.
    let Some(g) = (unsafe { graph() }) else {
        return core::ptr::null_mut();
    };
    if p.is_null() || fregs.is_null() || rh.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: published while the module lives.
    let rc = unsafe { &*p };
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

const _: () = assert!(offset_of!(Shim, fp) == 0);
