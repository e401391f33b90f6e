// SPDX-License-Identifier: GPL-2.0

//! The C API of include/ufgraph/fprobe.h (exported by exports.c, beside it), and the module-unload watch.

use super::{fprobes, Fprobes, Target};
use crate::bindings::{self, ufgraph_fprobe};
use crate::sys::ksym::LocList;
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

/// Drops a going module's functions from every probe and from the graph core's hub, and keeps
/// `sys::ksym`'s list of traceable functions up to date as modules come, go live and go (a
/// module notifier, registered while this lives).
#[pin_data(PinnedDrop)]
pub struct ModuleWatch {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    #[pin]
    locs: LocList,
}

/// The module notifier.
///
/// # Safety
///
/// Called by the module notifier chain only, while a [`ModuleWatch`] is registered.
unsafe extern "C" fn on_module(
    nb: *mut bindings::notifier_block,
    action: c_ulong,
    data: *mut c_void,
) -> c_int {
    let coming = action == bindings::module_state_MODULE_STATE_COMING as c_ulong;
    let going = action == bindings::module_state_MODULE_STATE_GOING as c_ulong;
    let live = action == bindings::module_state_MODULE_STATE_LIVE as c_ulong;
    let m = data.cast::<bindings::module>();
    // SAFETY: `nb` is the `nb` field of a pinned `ModuleWatch`, registered by it and
    // unregistered before it is dropped (the notifier chain waits for running callbacks).
    let watch = unsafe {
        &*nb.cast::<u8>()
            .sub(core::mem::offset_of!(ModuleWatch, nb))
            .cast::<ModuleWatch>()
    };
    // The list of traceable functions first: a resolution after the notifier finds it current.
    // SAFETY: the notifier gets the module, valid for the call, in the state `action` names.
    unsafe {
        if coming {
            watch.locs.module_coming(m);
        } else if live {
            watch.locs.module_live(m);
        } else if going {
            watch.locs.module_going(m);
        }
    }
    // SAFETY: the notifier gets the module, valid for the call.
    let within = |ip: usize| unsafe { bindings::ufg_within_module(ip as _, m) };
    if live {
        // Its init text goes after the notifiers, and ftrace's records of it: probes and hub
        // users let go of its functions now, while ftrace can still take them out of a filter
        // (`Fprobes::module_live`).
        // SAFETY: as above.
        let within_init = |ip: usize| unsafe { bindings::ufg_within_module_init(ip as _, m) };
        if let Some(core) = fprobes() {
            if let Err(e) = core.module_live(within_init) {
                pr_warn!(
                    "fprobe: filter update for a module's init text failed: {:?}\n",
                    e
                );
            }
        }
        if let Some(g) = crate::fgraph::graph::graph() {
            g.module_live(within_init);
        }
        return 0;
    }
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
        g.drop_module(within, "of a module going away");
    }
    0
}

impl ModuleWatch {
    /// Starts watching: the list of traceable functions is kept from now on.
    pub fn new() -> Result<Pin<KBox<Self>>> {
        let w = KBox::pin_init(
            pin_init!(Self {
                nb: Opaque::new(bindings::notifier_block {
                    notifier_call: Some(on_module),
                    ..Default::default()
                }),
                locs <- LocList::new(),
            }),
            GFP_KERNEL,
        )?;
        // The notifier first: a list read once it is published misses no module.
        // SAFETY: the block is pinned and unregistered in `drop` before it is freed (a failed
        // registration's unregistration finds nothing).
        kernel::error::to_result(unsafe { bindings::register_module_notifier(w.nb.get()) })?;
        // SAFETY: the list is pinned in `w`, withdrawn in its drop before it is freed; the
        // module's users, the only resolutions, are gone by then.
        unsafe { w.locs.publish() }?;
        Ok(w)
    }
}

#[pinned_drop]
impl PinnedDrop for ModuleWatch {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: registered in `new`; the notifier chain waits for running callbacks.
        unsafe { bindings::unregister_module_notifier(self.nb.get()) };
        self.locs.withdraw();
    }
}

// SAFETY: the notifier block is only handed to the notifier API, which locks.
unsafe impl Send for ModuleWatch {}
// SAFETY: `&ModuleWatch` exposes nothing.
unsafe impl Sync for ModuleWatch {}
