// SPDX-License-Identifier: GPL-2.0

//! The C API of include/ufgraph/fprobe.h (exported by exports.c, beside it), and the module-unload watch.

use super::{fprobes, Fprobes, Target};
use crate::bindings::{self, ufgraph_fprobe};
use kernel::alloc::{KBox, KVec};
use kernel::ffi::c_char;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::Opaque;

fn result(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// `p` must be null or a NUL-terminated string valid for `'a`.
unsafe fn opt_cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: per the function's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_char_ptr(p) })
}

/// See include/ufgraph/fprobe.h.
///
/// # Safety
///
/// `fp` must stay valid until unregistered; the strings are NUL-terminated or null.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_register_fprobe(
    fp: *mut ufgraph_fprobe,
    filter: *const c_char,
    notfilter: *const c_char,
) -> c_int {
    let Some(core) = fprobes() else {
        return ENODEV.to_errno();
    };
    // SAFETY: the caller passes NUL-terminated strings (or null).
    let (Some(f), nf) = (unsafe { opt_cstr(filter) }, unsafe { opt_cstr(notfilter) }) else {
        return EINVAL.to_errno();
    };
    if fp.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: a probe (contract).
    if unsafe { (*fp).flags } & super::api::FL_RUST != 0 {
        // The core's own flag: a C probe is not the head of a Rust one.
        return EINVAL.to_errno();
    }
    // SAFETY: the caller keeps `fp` valid until it unregisters it.
    result(unsafe { core.register(fp, &Target::Filter(f, nf)) })
}

/// See include/ufgraph/fprobe.h.
///
/// # Safety
///
/// `fp` as above; `addrs` valid for `num` reads.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_register_fprobe_ips(
    fp: *mut ufgraph_fprobe,
    addrs: *mut c_ulong,
    num: c_int,
) -> c_int {
    let Some(core) = fprobes() else {
        return ENODEV.to_errno();
    };
    if fp.is_null() || addrs.is_null() || num <= 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: a probe (contract).
    if unsafe { (*fp).flags } & super::api::FL_RUST != 0 {
        // The core's own flag: a C probe is not the head of a Rust one.
        return EINVAL.to_errno();
    }
    // SAFETY: the caller passes `num` readable addresses.
    let ips = unsafe { core::slice::from_raw_parts(addrs.cast::<usize>(), num as usize) };
    // SAFETY: as above.
    result(unsafe { core.register(fp, &Target::Ips(ips)) })
}

/// See include/ufgraph/fprobe.h.
///
/// # Safety
///
/// `fp` as above; `syms` valid for `num` reads of NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_register_fprobe_syms(
    fp: *mut ufgraph_fprobe,
    syms: *mut *const c_char,
    num: c_int,
) -> c_int {
    let Some(core) = fprobes() else {
        return ENODEV.to_errno();
    };
    if fp.is_null() || syms.is_null() || num <= 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: a probe (contract).
    if unsafe { (*fp).flags } & super::api::FL_RUST != 0 {
        // The core's own flag: a C probe is not the head of a Rust one.
        return EINVAL.to_errno();
    }
    let mut names: KVec<&CStr> = KVec::new();
    for i in 0..num as usize {
        // SAFETY: the caller passes `num` readable pointers.
        let p = unsafe { *syms.add(i) };
        // SAFETY: each is a NUL-terminated string (or null, refused).
        let Some(s) = (unsafe { opt_cstr(p) }) else {
            return EINVAL.to_errno();
        };
        if names.push(s, GFP_KERNEL).is_err() {
            return ENOMEM.to_errno();
        }
    }
    // SAFETY: as above.
    result(unsafe { core.register(fp, &Target::Syms(&names)) })
}

/// See include/ufgraph/fprobe.h.
///
/// # Safety
///
/// `fp` must be null or point to a probe.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_unregister_fprobe(fp: *mut ufgraph_fprobe) -> c_int {
    let Some(core) = fprobes() else {
        return ENODEV.to_errno();
    };
    if fp.is_null() {
        return EINVAL.to_errno();
    }
    result(core.unregister(fp))
}

/// See include/ufgraph/fprobe.h.
///
/// # Safety
///
/// `fp` must be null or point to a probe.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_fprobe_is_registered(fp: *mut ufgraph_fprobe) -> bool {
    match fprobes() {
        Some(core) if !fp.is_null() => core.is_registered(fp),
        _ => false,
    }
}

/// See include/ufgraph/fprobe.h.
///
/// # Safety
///
/// The strings are NUL-terminated or null.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_fprobe_count_ips_from_filter(
    filter: *const c_char,
    notfilter: *const c_char,
) -> c_int {
    // SAFETY: the caller passes NUL-terminated strings (or null).
    let (Some(f), nf) = (unsafe { opt_cstr(filter) }, unsafe { opt_cstr(notfilter) }) else {
        return EINVAL.to_errno();
    };
    match Fprobes::resolve(&Target::Filter(f, nf)) {
        Ok(ips) => ips.len() as c_int,
        Err(e) if e == ENOENT => 0,
        Err(e) => e.to_errno(),
    }
}

/// Drops a going module's functions from every probe and from the graph core's hub, and tells `sys::ksym` that the traceable
/// functions changed when a module comes or goes (a module notifier, registered while this
/// lives).
pub struct ModuleWatch {
    nb: Pin<KBox<Opaque<bindings::notifier_block>>>,
}

/// The module notifier.
///
/// # Safety
///
/// Called by the module notifier chain only, while a [`ModuleWatch`] is registered.
unsafe extern "C" fn on_module(
    _nb: *mut bindings::notifier_block,
    action: c_ulong,
    data: *mut c_void,
) -> c_int {
    let coming = action == bindings::module_state_MODULE_STATE_COMING as c_ulong;
    let going = action == bindings::module_state_MODULE_STATE_GOING as c_ulong;
    if coming || going {
        crate::sys::ksym::modules_changed();
    }
    let m = data.cast::<bindings::module>();
    // SAFETY: the notifier gets the module, valid for the call.
    let within = |ip: usize| unsafe { bindings::ufg_within_module(ip as _, m) };
    if !(coming || going) {
        return 0;
    }
    // SAFETY: as above; its name is NUL-terminated.
    let name = unsafe { CStr::from_char_ptr(bindings::ufg_module_name(m)) }.as_bytes();
    let graph = crate::fgraph::graph::graph();
    // The graph core's list of going modules first, then fprobe's generation: a resolution
    // that reads the generation after it moved sees the list as it now is
    // (`Fprobes::resolve_gen`).
    if let Some(g) = graph {
        if coming {
            g.module_coming(name);
        } else {
            g.module_going(name);
        }
    }
    if let Some(core) = fprobes() {
        if coming {
            core.module_coming();
        } else {
            core.module_going(within);
        }
    }
    if let (true, Some(g)) = (going, graph) {
        g.drop_module(within);
    }
    0
}

impl ModuleWatch {
    /// Starts watching.
    pub fn new() -> Result<Self> {
        let nb = bindings::notifier_block {
            notifier_call: Some(on_module),
            ..Default::default()
        };
        let nb = KBox::pin(Opaque::new(nb), GFP_KERNEL)?;
        // SAFETY: the block is pinned and unregistered in `drop` before it is freed.
        kernel::error::to_result(unsafe { bindings::register_module_notifier(nb.get()) })?;
        // Modules are watched from here on: the list of traceable functions may be kept.
        crate::sys::ksym::watch(true);
        Ok(Self { nb })
    }
}

impl Drop for ModuleWatch {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; the notifier chain waits for running callbacks.
        unsafe { bindings::unregister_module_notifier(self.nb.get()) };
        crate::sys::ksym::watch(false);
    }
}

// SAFETY: the notifier block is only handed to the notifier API, which locks.
unsafe impl Send for ModuleWatch {}
// SAFETY: `&ModuleWatch` exposes nothing.
unsafe impl Sync for ModuleWatch {}
