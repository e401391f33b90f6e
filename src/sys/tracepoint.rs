// SPDX-License-Identifier: GPL-2.0

//! Attaching probes to kernel tracepoints that are not exported to modules.
//!
//! `task_newtask` and `sched_process_free` (the tasks table's) have no `__tracepoint_*` export, but
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
    /// A callback C calls.
    ///
    /// # Safety
    ///
    /// `data` must be the `Search` of the walk below.
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

/// A tracepoint found by name: a built-in one, which lives as long as the kernel, or a
/// module's, which lives as long as the [`ModuleRef`] found with it is held.
///
/// Tracepoint probe events (`t:`) use its *probestub*, `__probestub_<name>`, an empty function
/// with the tracepoint's probe signature that every tracepoint has for this purpose: attached
/// to the tracepoint as a probe, it is called on every hit, and an fprobe on it sees the
/// tracepoint's arguments (after the probe's `data`, its first parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tracepoint(*mut bindings::tracepoint);

// SAFETY: the tracepoint outlives its users (see above); the pointer is only handed to the
// tracepoint API, which may be called from any task.
unsafe impl Send for Tracepoint {}
// SAFETY: as above.
unsafe impl Sync for Tracepoint {}

pub use super::module::ModuleRef;

/// The state of a search of the modules' tracepoints: a notifier block first (the callback
/// gets its address), then what is searched for and what was found.
#[repr(C)]
struct ModSearch<'a> {
    nb: bindings::notifier_block,
    name: &'a [u8],
    found: Option<(*mut bindings::tracepoint, ModuleRef)>,
}

/// A tracepoint module notifier's callback, for [`find_in_modules`]: it is called with
/// `MODULE_STATE_COMING` for each loaded module that has tracepoints when it is registered
/// (and for any such module that comes while it is), with its `struct tp_module`.
///
/// # Safety
///
/// Called by the tracepoint module notifier chain only, with the `notifier_block` of a live
/// `ModSearch` and a `struct tp_module`.
unsafe extern "C" fn search_module(
    nb: *mut bindings::notifier_block,
    action: kernel::ffi::c_ulong,
    data: *mut c_void,
) -> kernel::ffi::c_int {
    // SAFETY: `nb` is the first field of the `ModSearch` registered by `find_in_modules`,
    // alive until it unregisters it, which waits for running callbacks.
    let s = unsafe { &mut *nb.cast::<ModSearch<'_>>() };
    if action != bindings::module_state_MODULE_STATE_COMING as kernel::ffi::c_ulong
        || s.found.is_some()
    {
        return 0;
    }
    // SAFETY: the notifier gets a `struct tp_module`, valid for the call.
    let m = unsafe { bindings::ufg_tp_module_mod(data) };
    // SAFETY: `m` is a module that has tracepoints, live for the call (the tracepoint
    // core holds its module list's lock).
    let n = unsafe { bindings::ufg_module_num_tracepoints(m) };
    for i in 0..n {
        // SAFETY: `i` is below the module's count of tracepoints.
        let tp = unsafe { bindings::ufg_module_tracepoint(m, i) };
        // SAFETY: a tracepoint of a live module; its name is a NUL-terminated string there.
        let tn = unsafe { CStr::from_char_ptr(bindings::ufg_tracepoint_name(tp) as *const c_char) };
        if tn.as_bytes() != s.name {
            continue;
        }
        // A module that is going cannot be held: its tracepoint is as good as gone.
        // SAFETY: `m` is live for the call.
        if let Some(r) = unsafe { ModuleRef::try_get(m) } {
            s.found = Some((tp, r));
            break;
        }
    }
    0
}

/// The tracepoint `name` of a loaded module, and a reference on that module. 6.12 exports no
/// walk over the modules' tracepoints (`for_each_module_tracepoint()` is not exported), but
/// registering a tracepoint module notifier (exported) calls it at once for every loaded module
/// with tracepoints.
fn find_in_modules(name: &[u8]) -> Option<(*mut bindings::tracepoint, ModuleRef)> {
    let mut s = ModSearch {
        nb: bindings::notifier_block::default(),
        name,
        found: None,
    };
    s.nb.notifier_call = Some(search_module);
    let nb = core::ptr::addr_of_mut!(s.nb);
    // SAFETY: `s` outlives its registration: it is unregistered below, which waits for
    // running callbacks; the callback reaches `s` through `nb`, its first field.
    if unsafe { bindings::register_tracepoint_module_notifier(nb) } != 0 {
        return None;
    }
    // SAFETY: registered just above.
    unsafe { bindings::unregister_tracepoint_module_notifier(nb) };
    s.found
}

impl Tracepoint {
    /// The tracepoint `name`: a built-in one (`for_each_kernel_tracepoint()`), else one of a
    /// loaded module, returned with a reference on that module, which keeps the tracepoint
    /// (and its probestub) for as long as it is held.
    pub fn find(name: &[u8]) -> Option<(Self, Option<ModuleRef>)> {
        if let Some(tp) = find(name) {
            return Some((Self(tp), None));
        }
        find_in_modules(name).map(|(tp, m)| (Self(tp), Some(m)))
    }

    /// The address of the tracepoint's probestub.
    pub fn probestub(self) -> usize {
        // SAFETY: a live tracepoint (see `find`).
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
        // SAFETY: a live tracepoint and its own probestub, which has its probe signature.
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
    // `data` is only a key the tracepoint core compares: never dereferenced.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn detach_stub(self, data: *mut c_void) {
        // SAFETY: a live tracepoint; the tracepoint core refuses a pair it does not have.
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
