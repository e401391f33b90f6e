// SPDX-License-Identifier: GPL-2.0

//! The C API's ops and its shared filter.

use super::*;

/// A C `ufgraph_ops`, counting its entries in `private`; unregistered and its shared filter freed
/// when dropped.
struct CTestOps(KBox<bindings::ufgraph_ops>, KBox<AtomicUsize>);

/// The C ops' entry callback.
///
/// # Safety
///
/// Called by the graph core only, for a registered `CTestOps`.
unsafe extern "C" fn c_test_entry(
    _trace: *mut bindings::ufgraph_ent,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) -> core::ffi::c_int {
    // SAFETY: `private` is the counter of the `CTestOps` that registered `gops`, alive while it is.
    unsafe { &*(*gops).private.cast::<AtomicUsize>() }.fetch_add(1, Relaxed);
    0
}

impl CTestOps {
    fn new(t: &Test) -> Result<Self, Failed> {
        let n = t.check_ok(
            KBox::new(AtomicUsize::new(0), GFP_KERNEL).map_err(Into::into),
            "alloc",
        )?;
        let o = bindings::ufgraph_ops {
            entryfunc: Some(c_test_entry),
            private: (&*n as *const AtomicUsize).cast_mut().cast(),
            idx: -1,
            ..Default::default()
        };
        Ok(Self(
            t.check_ok(KBox::new(o, GFP_KERNEL).map_err(Into::into), "alloc")?,
            n,
        ))
    }
    fn ptr(&mut self) -> *mut bindings::ufgraph_ops {
        &mut *self.0
    }
    fn entries(&self) -> usize {
        self.1.load(Relaxed)
    }
    fn set_ips(&mut self, ips: &[usize], remove: bool, reset: bool) -> core::ffi::c_int {
        let mut v: [core::ffi::c_ulong; 4] = [0; 4];
        for (d, &s) in v.iter_mut().zip(ips) {
            *d = s as _;
        }
        // SAFETY: a valid ops, `ips.len()` (at most 4) addresses.
        unsafe {
            crate::fgraph::capi::ufgraph_set_filter_ips(
                self.ptr(),
                v.as_mut_ptr(),
                ips.len().min(4) as _,
                remove as _,
                reset as _,
            )
        }
    }
    fn register(&mut self) -> core::ffi::c_int {
        // SAFETY: the ops lives in its box until dropped, which unregisters it.
        unsafe { crate::fgraph::capi::ufgraph_register(self.ptr()) }
    }
    fn unregister(&mut self) {
        // SAFETY: our ops.
        unsafe { crate::fgraph::capi::ufgraph_unregister(self.ptr()) }
    }
}

impl Drop for CTestOps {
    fn drop(&mut self) {
        self.unregister();
        // SAFETY: our ops, unregistered.
        unsafe { crate::fgraph::capi::ufgraph_free_filter(self.ptr()) };
    }
}

/// The C API's shared filter: a glob adds functions by their ftrace location and an address
/// removes them by their start; changes made while registered are kept for the next
/// registration; a filter emptied again is refused (-EINVAL) at registration.
pub(super) fn c_shared_filter(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let mul_ip = bindings::ufg_test_mul as *const () as usize;
    let mut o = CTestOps::new(t)?;
    kcheck_eq!(
        t,
        // SAFETY: a valid ops and a NUL-terminated glob.
        unsafe {
            crate::fgraph::capi::ufgraph_set_filter(
                o.ptr(),
                c_str!("ufg_test_add").as_char_ptr(),
                0,
                0,
            )
        },
        0
    );
    kcheck_eq!(t, o.set_ips(&[mul_ip, mul_ip], false, false), 0);
    kcheck_eq!(t, o.set_ips(&[add_ip], true, false), 0);
    kcheck_eq!(t, o.set_ips(&[1], false, false), EINVAL.to_errno());
    kcheck_eq!(t, o.register(), 0);
    kcheck_eq!(t, g.hub_functions(), 1);
    add(1, 1);
    kcheck_eq!(t, o.entries(), 0);
    mul(1, 1);
    kcheck_eq!(t, o.entries(), 1);
    // While registered: ufg_test_add instead of ufg_test_mul, kept across a restart.
    kcheck_eq!(t, o.set_ips(&[add_ip], false, false), 0);
    kcheck_eq!(t, o.set_ips(&[mul_ip], true, false), 0);
    kcheck_eq!(t, o.set_ips(&[add_ip], true, false), EINVAL.to_errno());
    o.unregister();
    kcheck_eq!(t, g.hub_functions(), 0);
    kcheck_eq!(t, o.register(), 0);
    add(1, 1);
    mul(1, 1);
    kcheck_eq!(t, o.entries(), 2);
    o.unregister();
    // Emptied while unregistered: refused.
    kcheck_eq!(t, o.set_ips(&[add_ip], true, false), 0);
    let r = o.register();
    let hooked = o.entries();
    o.unregister();
    kcheck!(
        t,
        r == EINVAL.to_errno(),
        "an emptied shared filter: ufgraph_register returned {}, {} entries meanwhile",
        r,
        hooked.wrapping_sub(2)
    );
    drop(o);
    core_is_idle(t)
}

/// A registered C ops' glob against a module that starts going between the resolution of the
/// glob and the change of the ops' functions (the module notifier's steps for this module,
/// in its order, between the two): the change is refused (`EAGAIN`) and nothing of the going
/// module reaches the hub. `ufgraph_set_filter()` then resolves again, without the module's
/// functions (`ENOENT` here: the glob matches nothing else); its function's address is refused
/// (`EINVAL`) by `ufgraph_set_filter_ips()` and by the registration of an ops whose shared
/// filter names it; once a module of that name has come again both take the function.
pub(super) fn c_set_filter_racing_a_going_module(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let mul_ip = bindings::ufg_test_mul as *const () as usize;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let mut o = CTestOps::new(t)?;
    kcheck_eq!(t, o.set_ips(&[mul_ip], false, false), 0);
    kcheck_eq!(t, o.register(), 0);
    kcheck_eq!(t, g.hub_functions(), 1);
    // An ops whose shared filter names the module's function, registered while it goes.
    let mut p = CTestOps::new(t)?;
    kcheck_eq!(t, p.set_ips(&[add_ip], false, false), 0);
    let glob = c_str!("ufg_test_ad?");
    let resolved = graph::resolve_gen(&crate::sys::ksym::Target::Filter(glob, None));
    let (ips, gen) = t.check_ok(resolved, "resolve")?;
    // SAFETY: registered above, so `ufgraph_slot` is the slot `ufgraph_register` made.
    let slot = unsafe { &*(*o.ptr()).ufgraph_slot.cast::<graph::Slot>() };
    // Another module came since the resolution: the generation moved, the change is refused
    // before anything looks at the functions (the notifier may be between its steps).
    g.module_coming(b"ufgraph_no_such_module");
    let moved = g.hub_filter_resolved(slot, &ips, false, gen);
    let on_hub_moved = g.hub_functions();
    let resolved = graph::resolve_gen(&crate::sys::ksym::Target::Filter(glob, None));
    let (ips, gen) = t.check_ok(resolved, "resolve again")?;
    // The notifier for this module, going, after the resolution read the list of going
    // modules: the list and the generation, then the hub (nothing of the module on it yet).
    g.module_going(b"ufgraph_kunit");
    g.drop_module(|_| false);
    let stale = g.hub_filter_resolved(slot, &ips, false, gen);
    let on_hub = g.hub_functions();
    // SAFETY: a valid, registered ops and a NUL-terminated glob.
    let again =
        unsafe { crate::fgraph::capi::ufgraph_set_filter(o.ptr(), glob.as_char_ptr(), 0, 0) };
    let on_hub_again = g.hub_functions();
    // By address: refused as an fprobe's address is, for the registered ops and at the other
    // one's registration.
    let by_address = o.set_ips(&[add_ip], false, false);
    let register = p.register();
    let on_hub_by_address = g.hub_functions();
    add(1, 1);
    let hooked = o.entries() + p.entries();
    p.unregister();
    g.module_coming(b"ufgraph_kunit");
    kcheck!(
        t,
        moved == Err(EAGAIN) && on_hub_moved == 1,
        "functions resolved before a module came: {:?}, {} functions on the hub (want EAGAIN, 1)",
        moved,
        on_hub_moved
    );
    // Its address is refused first (as any going module's), before the generation is looked at.
    kcheck!(
        t,
        stale == Err(EINVAL) && on_hub == 1,
        "stale functions of a going module: {:?}, {} functions on the hub (want EINVAL, 1)",
        stale,
        on_hub
    );
    kcheck!(
        t,
        again == ENOENT.to_errno() && on_hub_again == 1 && hooked == 0,
        "the glob while going: {}, {} on the hub, {} entries (want -ENOENT, 1, 0)",
        again,
        on_hub_again,
        hooked
    );
    kcheck!(
        t,
        by_address == EINVAL.to_errno() && register == EINVAL.to_errno() && on_hub_by_address == 1,
        "by address while going: set_filter_ips {}, register {}, {} on the hub (want -EINVAL, \
         -EINVAL, 1)",
        by_address,
        register,
        on_hub_by_address
    );
    // SAFETY: as above.
    let back =
        unsafe { crate::fgraph::capi::ufgraph_set_filter(o.ptr(), glob.as_char_ptr(), 0, 0) };
    kcheck_eq!(t, back, 0);
    kcheck_eq!(t, g.hub_functions(), 2);
    add(1, 1);
    kcheck_eq!(t, o.entries(), 1);
    drop(o);
    // The other ops registers on the function now that a module of that name came.
    kcheck_eq!(t, p.register(), 0);
    add(1, 1);
    kcheck_eq!(t, p.entries(), 1);
    drop(p);
    core_is_idle(t)
}
