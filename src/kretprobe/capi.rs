// SPDX-License-Identifier: GPL-2.0

//! The C API of include/ufgraph/kretprobe.h and rethook.h, implemented in Rust.
//! `exports.c` (beside it) exports these symbols to other modules (EXPORT_SYMBOL_GPL); each checks
//! its arguments and hands over to the shim.

use crate::bindings;
use core::ffi::{c_int, c_void};
use kernel::prelude::*;

/// See include/ufgraph/kretprobe.h.
///
/// # Safety
///
/// `rp` must stay valid until unregistered.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_register_kretprobe(rp: *mut bindings::ufgraph_kretprobe) -> c_int {
    if rp.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: forwarded contract.
    match unsafe { crate::kretprobe::register_kretprobe(rp) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// See include/ufgraph/kretprobe.h.
///
/// # Safety
///
/// `rp` must be null or a kretprobe.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_unregister_kretprobe(rp: *mut bindings::ufgraph_kretprobe) {
    if !rp.is_null() {
        // SAFETY: a kretprobe (contract).
        unsafe { crate::kretprobe::unregister_kretprobe(rp) };
    }
}

/// See include/ufgraph/kretprobe.h. On failure the ones registered are unregistered.
///
/// # Safety
///
/// `rps` must hold `num` valid kretprobes.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_register_kretprobes(
    rps: *mut *mut bindings::ufgraph_kretprobe,
    num: c_int,
) -> c_int {
    if rps.is_null() || num <= 0 {
        return EINVAL.to_errno();
    }
    for i in 0..num as usize {
        // SAFETY: `num` readable entries (contract).
        let rp = unsafe { *rps.add(i) };
        // SAFETY: forwarded contract.
        let r = unsafe { ufgraph_register_kretprobe(rp) };
        if r != 0 {
            for j in 0..i {
                // SAFETY: registered just above.
                unsafe { ufgraph_unregister_kretprobe(*rps.add(j)) };
            }
            return r;
        }
    }
    0
}

/// See include/ufgraph/kretprobe.h.
///
/// # Safety
///
/// `rps` must hold `num` kretprobes.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_unregister_kretprobes(
    rps: *mut *mut bindings::ufgraph_kretprobe,
    num: c_int,
) {
    if rps.is_null() {
        return;
    }
    for i in 0..num.max(0) as usize {
        // SAFETY: `num` readable entries (contract).
        unsafe { ufgraph_unregister_kretprobe(*rps.add(i)) };
    }
}

/// See include/ufgraph/rethook.h.
///
/// # Safety
///
/// `rh` must stay valid until unregistered.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_rethook_register(rh: *mut bindings::ufgraph_rethook) -> c_int {
    if rh.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: forwarded contract.
    match unsafe { crate::kretprobe::rethook_register(rh) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// See include/ufgraph/rethook.h.
///
/// # Safety
///
/// `rh` must be null or a rethook.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_rethook_unregister(rh: *mut bindings::ufgraph_rethook) {
    if !rh.is_null() {
        crate::kretprobe::rethook_unregister(rh);
    }
}

/// See include/ufgraph/rethook.h.
///
/// # Safety
///
/// From an entry hook, with that entry's registers; `rh` registered.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_rethook_hook(
    rh: *mut bindings::ufgraph_rethook,
    fregs: *mut bindings::ftrace_regs,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { crate::kretprobe::rethook_hook(rh, fregs) }
}
