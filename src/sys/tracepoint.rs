// SPDX-License-Identifier: GPL-2.0

//! Attaching probes to kernel tracepoints that are not exported to modules.
//!
//! `sched_process_fork` and `sched_process_free` have no `__tracepoint_*` export, but
//! `for_each_kernel_tracepoint()` (exported) walks every built-in tracepoint, so we find them by
//! name and attach with `tracepoint_probe_register()`.

use crate::bindings;
use core::ffi::c_void;
use kernel::ffi::c_char;
use kernel::prelude::*;
use kernel::str::CStr;

/// A probe attached to a tracepoint; detached on drop (after which the probe may still be
/// running on another CPU until [`synchronize_unregister`] returns).
pub struct Probe {
    tp: *mut bindings::tracepoint,
    func: *mut c_void,
    data: *mut c_void,
}

// SAFETY: the pointers are only handed to the tracepoint API, which may be called from any task.
unsafe impl Send for Probe {}
// SAFETY: `&Probe` exposes nothing.
unsafe impl Sync for Probe {}

fn find(name: &[u8]) -> Option<*mut bindings::tracepoint> {
    struct Search<'a> {
        name: &'a [u8],
        found: *mut bindings::tracepoint,
    }
    unsafe extern "C" fn visit(tp: *mut bindings::tracepoint, data: *mut c_void) {
        // SAFETY: `data` is the `Search` below, alive for the walk.
        let s = unsafe { &mut *data.cast::<Search<'_>>() };
        // SAFETY: `tp` is a valid built-in tracepoint, whose name is a static string.
        let n = unsafe { CStr::from_char_ptr(bindings::ufg_tracepoint_name(tp) as *const c_char) };
        if s.found.is_null() && n.as_bytes() == s.name {
            s.found = tp;
        }
    }
    let mut s = Search {
        name,
        found: core::ptr::null_mut(),
    };
    // SAFETY: `visit` matches the callback type; `s` outlives the synchronous walk.
    unsafe {
        bindings::for_each_kernel_tracepoint(Some(visit), (&mut s as *mut Search<'_>).cast())
    };
    (!s.found.is_null()).then_some(s.found)
}

impl Probe {
    /// Attaches `func` (whose C signature must match the tracepoint's, with `data` first) to the
    /// built-in tracepoint `name`. Fails with `ENOENT` if the kernel has no such tracepoint.
    ///
    /// # Safety
    ///
    /// `func` must be a function with the tracepoint's probe signature, and `data` must stay
    /// valid until the probe is dropped and [`synchronize_unregister`] has returned.
    pub unsafe fn attach(name: &CStr, func: *mut c_void, data: *mut c_void) -> Result<Self> {
        let Some(tp) = find(name.as_bytes()) else {
            pr_err!("the kernel has no tracepoint {}\n", name);
            return Err(ENOENT);
        };
        // SAFETY: `tp` is a built-in tracepoint; the caller vouches for `func` and `data`.
        kernel::error::to_result(unsafe { bindings::tracepoint_probe_register(tp, func, data) })?;
        Ok(Self { tp, func, data })
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // SAFETY: we registered exactly this (tracepoint, func, data) triple.
        let r = unsafe { bindings::tracepoint_probe_unregister(self.tp, self.func, self.data) };
        if r != 0 {
            pr_err!("tracepoint_probe_unregister failed: {}\n", r);
        }
    }
}

/// A built-in tracepoint, found by name: it lives as long as the kernel.
///
/// Tracepoint probe events (`t:`) use its *probestub*, `__probestub_<name>`, an empty function
/// with the tracepoint's probe signature that every tracepoint has for this purpose: attached
/// to the tracepoint as a probe, it is called on every hit, and an fprobe on it sees the
/// tracepoint's arguments (after the probe's `data`, its first parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tracepoint(*mut bindings::tracepoint);

// SAFETY: a built-in tracepoint is static; the pointer is only handed to the tracepoint API,
// which may be called from any task.
unsafe impl Send for Tracepoint {}
// SAFETY: as above.
unsafe impl Sync for Tracepoint {}

impl Tracepoint {
    /// The built-in tracepoint `name`, if the kernel has one. Module tracepoints are not
    /// searched: 6.12 does not export `for_each_module_tracepoint()`.
    pub fn find(name: &[u8]) -> Option<Self> {
        find(name).map(Self)
    }

    /// The address of the tracepoint's probestub.
    pub fn probestub(self) -> usize {
        // SAFETY: a built-in tracepoint (see `find`).
        unsafe { bindings::ufg_tracepoint_probestub(self.0) as usize }
    }

    /// Attaches the probestub to the tracepoint with `data`, at priority 0 (after the probes
    /// of default priority), as upstream's tracepoint probe events do
    /// (`tracepoint_probe_register_prio_may_exist()`: `EEXIST`, without a warning, if that
    /// pair is attached already).
    ///
    /// # Safety
    ///
    /// `data` must stay valid until [`Tracepoint::detach_stub`] and then
    /// [`synchronize_unregister`] have returned (the stub ignores it; the callers' fprobe
    /// handlers may read it).
    pub unsafe fn attach_stub(self, data: *mut c_void) -> Result {
        // SAFETY: a built-in tracepoint and its own probestub, which has its probe signature.
        kernel::error::to_result(unsafe {
            bindings::tracepoint_probe_register_prio_may_exist(
                self.0,
                bindings::ufg_tracepoint_probestub(self.0),
                data,
                0,
            )
        })
    }

    /// Detaches what [`Tracepoint::attach_stub`] attached with `data`. The stub may still be
    /// running on another CPU until [`synchronize_unregister`] returns.
    pub fn detach_stub(self, data: *mut c_void) {
        // SAFETY: a built-in tracepoint; the tracepoint core refuses a pair it does not have.
        let r = unsafe {
            bindings::tracepoint_probe_unregister(
                self.0,
                bindings::ufg_tracepoint_probestub(self.0),
                data,
            )
        };
        if r != 0 {
            pr_err!("tracepoint_probe_unregister (probestub) failed: {}\n", r);
        }
    }
}

/// Waits until no CPU runs a probe that was detached before the call.
pub fn synchronize_unregister() {
    // SAFETY: may sleep; process context.
    unsafe { bindings::ufg_tracepoint_synchronize_unregister() };
}
