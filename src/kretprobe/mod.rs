// SPDX-License-Identifier: GPL-2.0

//! kretprobe and rethook users on the shared shadow stack: the kretprobe shim here, rethook in
//! [`rethook`], their C API in [`capi`].
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

pub mod capi;
mod rethook;

pub use rethook::*;

use crate::bindings::{self, ufgraph_fprobe, ufgraph_kretprobe, ufgraph_kretprobe_instance};
use crate::fprobe::{fprobes, Fprobes, Target};
use crate::sys::ftrace::Regs;
use core::ffi::c_void;
use core::mem::{offset_of, size_of, MaybeUninit};
use core::sync::atomic::{AtomicI32, Ordering::*};
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

const _: () = assert!(offset_of!(Shim, fp) == 0);
