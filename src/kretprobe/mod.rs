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
//!   ufgraph_kretprobe (C) <--rp-- Fprobe<Shim> (the Rust fprobe API, fprobe::api; kmalloc'd,
//!        ufgraph_private -------->   its handler Shim { rp }:
//!                                      entry  --> rp.entry_handler(ri, regs)
//!                                      exit   --> rp.handler(ri, regs)
//!                                      missed --> rp.nmissed += 1
//!   entry data (shadow stack): [ rp | ret_addr | data[data_size] ]  = the kretprobe_instance
//! ```
//!
//! A kretprobe with neither an entry handler nor data has no entry side at all: its fprobe is
//! exit-only, and the exit makes the instance on its own stack.

pub mod capi;
mod rethook;

pub use rethook::*;

use crate::fprobe::api::{Fprobe, FprobeHandler};
use crate::fprobe::{fprobes, Fprobes, Target};
use crate::sys::cabi::{ufgraph_kretprobe, ufgraph_kretprobe_instance, UFGRAPH_KRETPROBE_MAX_DATA};
use crate::sys::ftrace::Regs;
use crate::sys::regs::{fill_pt_regs, PtRegs};
use core::mem::{size_of, MaybeUninit};
use core::pin::Pin;
use core::sync::atomic::{AtomicI32, Ordering::*};
use kernel::alloc::KBox;
use kernel::prelude::*;
use kernel::str::CStr;

/// A kretprobe's fprobe: its handlers turn the fprobe's calls into the kretprobe API's.
pub struct Shim {
    rp: *mut ufgraph_kretprobe,
    /// No entry handler and no data (read once, at registration): see
    /// [`FprobeHandler::has_entry`] below.
    bare: bool,
}

// SAFETY: `rp` is the caller's kretprobe, valid while the shim is registered (the API's
// contract); the handlers only read it and update `nmissed` atomically, from any CPU.
unsafe impl Send for Shim {}
// SAFETY: as above.
unsafe impl Sync for Shim {}

/// The probe `ufgraph_private` holds.
type ShimProbe = Fprobe<Shim>;

const INSTANCE_HDR: usize = size_of::<ufgraph_kretprobe_instance>();

impl FprobeHandler for Shim {
    const EXIT: bool = true;

    // A kretprobe without an entry handler and without data (the common kind: a return
    // handler alone) needs nothing from the entry: its probe has no entry handler and no entry
    // data, so a call costs what an exit-only fprobe's does, and the exit builds the instance
    // (the probe and the return address, both known there) on its own stack.
    fn has_entry(&self) -> bool {
        !self.bare
    }

    fn entry_data_size(&self) -> usize {
        if self.bare {
            return 0;
        }
        // SAFETY: the kretprobe is valid while the shim exists.
        INSTANCE_HDR + unsafe { (*self.rp).data_size }
    }

    fn entry(&self, _ip: usize, ret_ip: usize, regs: &Regs, data: &mut [u8]) -> bool {
        // The entry data is the kretprobe_instance: the probe, the return address, then the
        // user's `data_size` bytes (`entry_data_size`: never less).
        if data.len() < INSTANCE_HDR {
            return false;
        }
        let ri = data.as_mut_ptr().cast::<ufgraph_kretprobe_instance>();
        // SAFETY: `data` holds INSTANCE_HDR + data_size bytes for this call, word-aligned (the
        // shadow stack's words).
        unsafe {
            (*ri).rp = self.rp;
            (*ri).ret_addr = ret_ip as _;
        }
        // SAFETY: the kretprobe is valid while registered.
        let Some(h) = (unsafe { (*self.rp).entry_handler }) else {
            return true;
        };
        let mut pt = MaybeUninit::<PtRegs>::uninit();
        fill_pt_regs(regs, None, &mut pt);
        // SAFETY: the user's handler with the kretprobe API's arguments; nonzero skips the
        // return handler.
        unsafe { h(ri, pt.as_mut_ptr()) == 0 }
    }

    fn exit(&self, _ip: usize, ret_ip: usize, regs: &Regs, data: &mut [u8]) {
        self.call_handler(ret_ip, data, |h, ri| {
            let mut pt = MaybeUninit::<PtRegs>::uninit();
            fill_pt_regs(regs, Some(ret_ip), &mut pt);
            // SAFETY: the user's handler with the kretprobe API's arguments: the instance
            // (`call_handler`) and the registers just made.
            unsafe { h(ri, pt.as_mut_ptr()) };
        });
    }

    // x86_64: the `pt_regs` made in place in the return trampoline's register block, not
    // copied (`sys::regs::with_exit_pt_regs`).
    #[cfg(CONFIG_X86_64)]
    unsafe fn exit_from_trampoline(&self, _ip: usize, ret_ip: usize, regs: &Regs, data: &mut [u8]) {
        self.call_handler(ret_ip, data, |h, ri| {
            // SAFETY: `regs` is the trampoline's block, during its return (this method's
            // contract); the user's handler with the kretprobe API's arguments.
            unsafe { crate::sys::regs::with_exit_pt_regs(regs, ret_ip, |pt| h(ri, pt)) };
        });
    }

    fn missed(&self) {
        // SAFETY: the kretprobe outlives its registration; `nmissed` is updated atomically only.
        unsafe { AtomicI32::from_ptr(core::ptr::addr_of_mut!((*self.rp).nmissed)) }
            .fetch_add(1, Relaxed);
    }
}

/// A kretprobe's return handler.
type ReturnHandler = unsafe extern "C" fn(
    *mut ufgraph_kretprobe_instance,
    *mut crate::bindings::pt_regs,
) -> core::ffi::c_int;

impl Shim {
    /// At a return: calls `call` with the kretprobe's return handler (if it has one) and the
    /// call's instance: the one the entry filled in `data`, or, for a bare kretprobe, one made
    /// here for the handler's call only (the kernel's handlers do not keep `ri`; it goes back
    /// to its pool when they return).
    fn call_handler(
        &self,
        ret_ip: usize,
        data: &mut [u8],
        call: impl FnOnce(ReturnHandler, *mut ufgraph_kretprobe_instance),
    ) {
        // SAFETY: the kretprobe is valid while registered.
        let Some(h) = (unsafe { (*self.rp).handler }) else {
            return;
        };
        let mut own = MaybeUninit::<ufgraph_kretprobe_instance>::uninit();
        let ri = if self.bare {
            let ri = own.as_mut_ptr();
            // SAFETY: a local instance with no data bytes (`data_size` is 0): its two fields
            // are all of it.
            unsafe {
                (*ri).rp = self.rp;
                (*ri).ret_addr = ret_ip as _;
            }
            ri
        } else if data.len() >= INSTANCE_HDR {
            data.as_mut_ptr().cast::<ufgraph_kretprobe_instance>()
        } else {
            return;
        };
        call(h, ri);
    }
}

/// Registers a kretprobe. See include/ufgraph/kretprobe.h for the errors.
///
/// # Safety
///
/// `rp` must stay valid until [`unregister_kretprobe`] returns.
pub unsafe fn register_kretprobe(rp: *mut ufgraph_kretprobe) -> Result {
    fprobes().ok_or(ENODEV)?;
    // SAFETY: the caller passes a valid kretprobe.
    let r = unsafe { &mut *rp };
    if !r.ufgraph_private.is_null() {
        return Err(EBUSY);
    }
    if r.handler.is_none() && r.entry_handler.is_none() {
        return Err(EINVAL);
    }
    if r.data_size > UFGRAPH_KRETPROBE_MAX_DATA as usize {
        return Err(E2BIG);
    }
    if r.kp.offset != 0 || (r.kp.symbol_name.is_null() == r.kp.addr.is_null()) {
        return Err(EINVAL);
    }
    let bare = r.entry_handler.is_none() && r.data_size == 0;
    let mut probe = ShimProbe::new(Shim { rp, bare })?;
    let name = if r.kp.symbol_name.is_null() {
        None
    } else {
        // SAFETY: `symbol_name` is the caller's NUL-terminated string.
        Some(unsafe { CStr::from_char_ptr(r.kp.symbol_name) })
    };
    let addr = r.kp.addr as usize;
    r.nmissed = 0;
    // A module that comes or goes between resolution and registration makes the resolution
    // stale (`EAGAIN`): resolve again, a few times.
    let mut tries = 0;
    loop {
        let res = match name {
            None => Fprobes::resolve_gen(&Target::Ips(&[addr]))?,
            Some(name) => Fprobes::resolve_gen(&Target::Syms(&[name]))?,
        };
        // What the handlers may read of the kretprobe is in place before the probe goes live:
        // its first handler may run on another CPU before the registration returns.
        if let Some(&a) = res.ips.first() {
            r.kp.addr = a as *mut _;
        }
        match probe.as_mut().register_resolved(res) {
            Err(e) if e == EAGAIN && tries < 8 => tries += 1,
            other => break other?,
        }
    }
    // Through the raw pointer: `r` is not used past registration, as handlers now reach the
    // kretprobe too (its `nmissed`). Only the API reads `ufgraph_private`.
    // SAFETY: the caller's kretprobe, valid (contract). The probe stays pinned in its box,
    // which `unregister_kretprobe` takes back.
    unsafe { (*rp).ufgraph_private = KBox::into_raw(Pin::into_inner_unchecked(probe)).cast() };
    Ok(())
}

/// Unregisters a kretprobe: when this returns no handler of it runs any more.
///
/// # Safety
///
/// `rp` must be a valid kretprobe (registered or not), not used concurrently.
pub unsafe fn unregister_kretprobe(rp: *mut ufgraph_kretprobe) {
    // Through the raw pointer only: handlers on other CPUs read the kretprobe and update its
    // `nmissed` until the unregistration returns.
    // SAFETY: the caller passes its kretprobe (contract).
    let p = unsafe { (*rp).ufgraph_private }.cast::<ShimProbe>();
    if p.is_null() {
        return;
    }
    // SAFETY: `ufgraph_private` is the pinned probe `register_kretprobe` leaked; it goes back
    // into its box, pinned again.
    let mut probe = unsafe { Pin::new_unchecked(KBox::from_raw(p)) };
    if probe.as_mut().unregister().is_err() {
        // Not registered after all (the core is gone): keep what the core may know (leak)
        // rather than free it.
        // SAFETY: the box is leaked, never moved.
        KBox::into_raw(unsafe { Pin::into_inner_unchecked(probe) });
        return;
    }
    // SAFETY: as above; no handler runs any more.
    unsafe { (*rp).ufgraph_private = core::ptr::null_mut() };
}
