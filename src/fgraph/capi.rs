// SPDX-License-Identifier: GPL-2.0

//! The C API of include/ufgraph/fgraph.h, implemented in Rust. `exports.c` (beside it) exports these
//! symbols to other modules (EXPORT_SYMBOL_GPL); each checks its arguments and hands over to the
//! safe core.

use crate::bindings::{self, ufgraph_ent, ufgraph_ops, ufgraph_ret};
use crate::fgraph::graph::{self, graph, Batched, Entry, GraphHandler, Return, Slot};
use crate::sys::ftrace::RawOps;
use crate::sys::task::TaskRef;
use core::ffi::{c_int, c_uint, c_ulong, c_void};
use core::ptr::addr_of_mut;
use kernel::alloc::KBox;
use kernel::prelude::*;
use kernel::types::Opaque;

/// A C `struct ufgraph_ops`, seen as a graph handler: its callbacks are the C function pointers.
/// Behind an `Opaque` (an `UnsafeCell`): the core writes the ops' `idx` while C code may read it.
#[repr(transparent)]
pub(crate) struct COps(Opaque<bindings::ufgraph_ops>);

// SAFETY: the C caller guarantees its callbacks may run on any CPU concurrently (the API's
// documented contract); we read the function pointers, and write `idx` only while registering
// and unregistering, which the C caller does not run concurrently with itself.
unsafe impl Send for COps {}
// SAFETY: as above.
unsafe impl Sync for COps {}

impl COps {
    fn gops(&self) -> *mut ufgraph_ops {
        self.0.get()
    }

    /// What a C entry callback is told of the call `e` is an entry of.
    #[inline(always)]
    fn ent_of(e: &Entry<'_>) -> ufgraph_ent {
        ufgraph_ent {
            func: e.func as _,
            depth: e.depth() as c_int,
        }
    }

    /// What a C return callback is told of the return `r`.
    #[inline(always)]
    fn ret_struct(r: &Return<'_>) -> ufgraph_ret {
        ufgraph_ret {
            func: r.func as _,
            retval: r.retval() as _,
            depth: r.depth() as c_int,
            overrun: r.overrun() as c_uint,
        }
    }

    /// The C entry callback, told `ent` and the entry registers `fregs`.
    #[inline(always)]
    fn c_entry(&self, ent: &mut ufgraph_ent, fregs: *mut bindings::ftrace_regs) -> bool {
        // SAFETY: the ops is valid while registered; C leaves the callbacks alone meanwhile.
        let Some(f) = (unsafe { (*self.gops()).entryfunc }) else {
            return false;
        };
        // SAFETY: the C caller registered this callback for exactly these arguments, and the
        // callers pass the registers of the entry being run.
        unsafe { f(ent, self.gops(), fregs) != 0 }
    }

    /// The C return callback, told `ret` and the return registers `fregs`.
    #[inline(always)]
    fn c_ret(&self, ret: &mut ufgraph_ret, fregs: *mut bindings::ftrace_regs) {
        // SAFETY: as in `c_entry`.
        let Some(f) = (unsafe { (*self.gops()).retfunc }) else {
            return;
        };
        // SAFETY: as in `c_entry`, for the return being run.
        unsafe { f(ret, self.gops(), fregs) };
    }
}

impl GraphHandler for COps {
    // No times in `struct ufgraph_ret` (as upstream's `ftrace_graph_ret` since v6.14): a call
    // hooked by C ops only reads no clock.
    const WANTS_TIMES: bool = false;

    #[inline(always)]
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        self.c_entry(&mut Self::ent_of(e), e.regs.as_ptr())
    }

    #[inline(always)]
    fn ret(&self, r: &mut Return<'_>) {
        self.c_ret(&mut Self::ret_struct(r), r.regs.as_ptr())
    }

    fn set_index(&self, idx: Option<usize>) {
        let v = idx.map_or(-1, |i| i as c_int);
        // C callbacks read `gops->idx` without a lock; an aligned int store is never torn.
        // SAFETY: the ops is valid while it is being (un)registered (`ufgraph_register`'s
        // contract), and only the core ever writes its `idx`.
        unsafe { addr_of_mut!((*self.gops()).idx).write_volatile(v) };
    }
}

/// What the C entry callbacks of one call are given: the `struct ufgraph_ent` they see, and the
/// registers.
pub(crate) struct CCall {
    ent: ufgraph_ent,
    fregs: *mut bindings::ftrace_regs,
}

/// What the C return callbacks of one frame are given: the `struct ufgraph_ret` they see, and
/// the registers.
pub(crate) struct CRet {
    ret: ufgraph_ret,
    fregs: *mut bindings::ftrace_regs,
}

/// Several C ops on one call share one `struct ufgraph_ent` (and one `struct ufgraph_ret` on its
/// return), as upstream's `fgraph_ops` share their `ftrace_graph_ent`: the header says so.
impl Batched for COps {
    type Call = CCall;
    type Ret = CRet;

    #[inline(always)]
    fn call_of(e: &Entry<'_>) -> CCall {
        CCall {
            ent: Self::ent_of(e),
            fregs: e.regs.as_ptr(),
        }
    }

    #[inline(always)]
    fn entry_batched(&self, call: &mut CCall) -> bool {
        self.c_entry(&mut call.ent, call.fregs)
    }

    #[inline(always)]
    fn ret_of(r: &Return<'_>) -> CRet {
        CRet {
            ret: Self::ret_struct(r),
            fregs: r.regs.as_ptr(),
        }
    }

    #[inline(always)]
    fn ret_batched(&self, ret: &mut CRet) {
        self.c_ret(&mut ret.ret, ret.fregs)
    }

    #[inline(always)]
    fn entry_cached(slot: &Slot, call: &mut CCall) -> Option<bool> {
        let f = slot.c_entry?;
        let gops = slot.this.cast::<ufgraph_ops>().cast_mut();
        // Only `ufgraph_register` sets a slot's C callbacks, on the slot it makes for a C ops:
        // `gops` is that `struct ufgraph_ops`, registered while its slot is in the array (the
        // caller found it there with preemption disabled).
        // SAFETY: `f` is that ops' entry callback, which its C caller registered for exactly
        // these arguments, called while the ops is registered (above).
        let keep = unsafe { f(&mut call.ent, gops, call.fregs) };
        Some(keep != 0)
    }

    #[inline(always)]
    fn ret_cached(slot: &Slot, ret: &mut CRet) -> bool {
        let Some(f) = slot.c_ret else {
            return false;
        };
        // SAFETY: as in `entry_cached`, for the return callback.
        unsafe {
            f(
                &mut ret.ret,
                slot.this.cast::<ufgraph_ops>().cast_mut(),
                ret.fregs,
            )
        };
        true
    }
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `gops` must point to a `struct ufgraph_ops` that stays valid until `ufgraph_unregister`.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_register(gops: *mut ufgraph_ops) -> c_int {
    if gops.is_null() {
        return EINVAL.to_errno();
    }
    // The ops is only ever reached through raw pointers here: once registered, the core holds
    // one too (its `COps` view) and writes `idx` through it.
    // SAFETY: the caller passes a valid ops (contract).
    if !unsafe { (*gops).ufgraph_slot }.is_null() {
        return EBUSY.to_errno();
    }
    let Some(g) = graph() else {
        return ENODEV.to_errno();
    };
    // SAFETY: `COps` is a transparent view of the caller's ops, which outlives the registration;
    // so does its embedded ftrace_ops.
    let mut slot = unsafe {
        Slot::new(
            gops.cast::<COps>().cast_const(),
            RawOps::from_raw(addr_of_mut!((*gops).ops).cast()),
        )
    };
    // The callbacks, read once: they do not change while the ops is registered (the header).
    // SAFETY: the caller passes a valid ops (contract).
    let callbacks = unsafe { ((*gops).entryfunc, (*gops).retfunc) };
    (slot.c_entry, slot.c_ret) = callbacks;
    let slot = match KBox::new(slot, GFP_KERNEL) {
        Ok(s) => s,
        Err(_) => return ENOMEM.to_errno(),
    };
    // SAFETY: valid (contract); only this file touches the private fields.
    let filter = unsafe { (*gops).ufgraph_filter }.cast::<Filter>();
    // SAFETY: the slot lives in its box until `ufgraph_unregister` frees it after unregistering;
    // `filter` is the list `set_filter` keeps (read during the call).
    let r = match unsafe { filter.as_ref() } {
        // SAFETY: as above.
        Some(ips) if !ips.is_empty() => unsafe { g.register_hub(&slot, ips) },
        // A shared filter set, then emptied (its functions removed, or their module gone): not
        // "no filter", which on the ops' own ftrace_ops would hook every function.
        Some(_) => Err(EINVAL),
        // SAFETY: as above.
        None => unsafe { g.register(&slot) },
    };
    if let Err(e) = r {
        return e.to_errno();
    }
    // `gops->idx` was set by the core before the ops went live (`COps::set_index`).
    // SAFETY: valid (contract); the core never touches this field.
    unsafe { (*gops).ufgraph_slot = KBox::into_raw(slot).cast() };
    0
}

/// The functions a C ops selected with the shared filter API (`gops->ufgraph_filter`).
type Filter = KVec<usize>;

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `gops` must point to a valid ops; `ips` to `cnt` addresses.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_set_filter_ips(
    gops: *mut ufgraph_ops,
    ips: *mut c_ulong,
    cnt: c_uint,
    remove: c_int,
    reset: c_int,
) -> c_int {
    if gops.is_null() || (ips.is_null() && cnt != 0) {
        return EINVAL.to_errno();
    }
    let ips = if cnt == 0 {
        &[][..]
    } else {
        // SAFETY: the caller passes `cnt` readable addresses (contract).
        unsafe { core::slice::from_raw_parts(ips.cast::<usize>(), cnt as usize) }
    };
    // SAFETY: a valid ops (contract).
    match unsafe { set_filter(gops, ips, remove != 0, reset != 0, None) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `gops` must point to a valid ops; `glob` to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_set_filter(
    gops: *mut ufgraph_ops,
    glob: *const kernel::ffi::c_char,
    remove: c_int,
    reset: c_int,
) -> c_int {
    if gops.is_null() || glob.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: a NUL-terminated string (contract), read during the call.
    let glob = unsafe { kernel::str::CStr::from_char_ptr(glob) };
    let target = crate::sys::ksym::Target::Filter(glob, None);
    // A module that comes or goes between resolution and the change of a registered ops'
    // functions makes them stale (`Graph::hub_filter_resolved`): resolve again (each round is
    // a module load or unload: a few are plenty).
    let mut tries = 0;
    let r = loop {
        let r = crate::fgraph::graph::resolve_gen(&target)
            // SAFETY: a valid ops (contract).
            .and_then(|(ips, gen)| unsafe {
                set_filter(gops, &ips, remove != 0, reset != 0, Some(gen))
            });
        match r {
            Err(e) if e == EAGAIN && tries < 8 => tries += 1,
            r => break r,
        }
    };
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The shared filter of `gops`: kept in `gops->ufgraph_filter` (so it outlives a registration,
/// as an ftrace filter does). While the ops is registered on the hub the core has its own copy,
/// changed here at once, and `ufgraph_unregister` puts that one back in `gops`.
///
/// # Safety
///
/// `gops` must point to a valid ops that the caller does not register or unregister
/// concurrently. `gen`: the module generation `ips` were resolved at, if they were
/// (`fgraph::graph::resolve_gen`).
unsafe fn set_filter(
    gops: *mut ufgraph_ops,
    ips: &[usize],
    remove: bool,
    reset: bool,
    gen: Option<u64>,
) -> Result {
    // SAFETY: valid (contract); only this file touches these private fields.
    let (slot, fp) = unsafe {
        (
            (*gops).ufgraph_slot.cast::<Slot>(),
            addr_of_mut!((*gops).ufgraph_filter),
        )
    };
    if !slot.is_null() {
        // SAFETY: the slot `ufgraph_register` made, alive while registered.
        let slot = unsafe { &*slot };
        if !slot.on_hub() {
            return Err(EBUSY);
        }
        if reset {
            return Err(EINVAL);
        }
        let g = graph().ok_or(ENODEV)?;
        return match gen {
            Some(gen) => g.hub_filter_resolved(slot, ips, remove, gen),
            None => g.hub_filter(slot, ips, remove),
        };
    }
    if !remove && !ips.is_empty() {
        // Checked now, not at registration: a bad address is the caller's error here.
        crate::sys::ksym::locations(ips)?;
    }
    // SAFETY: as above.
    let cur = unsafe { *fp }.cast::<Filter>();
    if cur.is_null() {
        let mut list = KVec::new();
        graph::edit_hub_list(&mut list, ips, remove, reset)?;
        let b = KBox::new(list, GFP_KERNEL)?;
        // SAFETY: as above; freed by `ufgraph_free_filter`.
        unsafe { *fp = KBox::into_raw(b).cast() };
        return Ok(());
    }
    // SAFETY: the box this function leaked before, owned by the ops; unchanged on error.
    graph::edit_hub_list(unsafe { &mut *cur }, ips, remove, reset)
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `gops` must be null or a valid, unregistered ops.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_free_filter(gops: *mut ufgraph_ops) {
    if gops.is_null() {
        return;
    }
    // SAFETY: valid (contract).
    let (slot, cur) = unsafe { ((*gops).ufgraph_slot, (*gops).ufgraph_filter) };
    if !slot.is_null() || cur.is_null() {
        return;
    }
    // SAFETY: the box `set_filter` leaked; cleared so that it is freed once.
    unsafe {
        drop(KBox::from_raw(cur.cast::<Filter>()));
        (*gops).ufgraph_filter = core::ptr::null_mut();
    }
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `gops` must be null or an ops passed to `ufgraph_register`.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_unregister(gops: *mut ufgraph_ops) {
    if gops.is_null() {
        return;
    }
    // SAFETY: the caller passes its registered ops (contract).
    let sp = unsafe { (*gops).ufgraph_slot }.cast::<Slot>();
    if sp.is_null() {
        return;
    }
    let Some(g) = graph() else {
        return;
    };
    // SAFETY: `ufgraph_slot` is the box `ufgraph_register` leaked.
    let slot = unsafe { KBox::from_raw(sp) };
    let on_hub = slot.on_hub();
    let ips = match g.unregister(&slot) {
        Ok(ips) => ips,
        Err(e) => {
            pr_err!("ufgraph_unregister: {:?}\n", e);
            // Not ours, or not registered: do not free what the core may still use.
            KBox::into_raw(slot);
            return;
        }
    };
    // SAFETY: valid (contract); the list `set_filter` made (registered on the hub, so not
    // null: `ufgraph_free_filter` refuses a registered ops).
    if let Some(list) = unsafe { (*gops).ufgraph_filter.cast::<Filter>().as_mut() } {
        if on_hub {
            // The functions the ops had at the end: changes made while registered, without
            // those of modules that went meanwhile.
            *list = ips;
        }
    }
    // `gops->idx` is -1 again (`COps::set_index`).
    // SAFETY: valid (contract); the core no longer holds the ops.
    unsafe { (*gops).ufgraph_slot = core::ptr::null_mut() };
}

/// See include/ufgraph/fgraph.h.
#[no_mangle]
pub extern "C" fn ufgraph_reserve_data(idx: c_int, size_bytes: c_int) -> *mut c_void {
    if idx < 0 || size_bytes <= 0 {
        return core::ptr::null_mut();
    }
    let Some(g) = graph() else {
        return core::ptr::null_mut();
    };
    g.reserve_data(idx as usize, size_bytes as usize)
        .map_or(core::ptr::null_mut(), |p| p.cast())
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `size_bytes` must be null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_retrieve_parent_data(
    idx: c_int,
    size_bytes: *mut c_int,
    depth: c_int,
) -> *mut c_void {
    if idx < 0 || depth < 0 {
        return core::ptr::null_mut();
    }
    let Some(g) = graph() else {
        return core::ptr::null_mut();
    };
    match g.retrieve_data(idx as usize, depth as usize) {
        Some((p, words)) => {
            if !size_bytes.is_null() {
                // SAFETY: the caller passes a writable int (contract).
                unsafe { *size_bytes = (words * core::mem::size_of::<usize>()) as c_int };
            }
            p.cast()
        }
        None => core::ptr::null_mut(),
    }
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// As for `ufgraph_retrieve_parent_data`.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_retrieve_data(idx: c_int, size_bytes: *mut c_int) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { ufgraph_retrieve_parent_data(idx, size_bytes, 0) }
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `gops` must be a registered ops.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_get_task_var(gops: *mut ufgraph_ops) -> *mut c_ulong {
    if gops.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: the caller passes its registered ops (contract).
    let idx = unsafe { (*gops).idx };
    let Some(g) = graph() else {
        return core::ptr::null_mut();
    };
    if idx < 0 {
        return core::ptr::null_mut();
    }
    g.task_var(idx as usize)
        .map_or(core::ptr::null_mut(), |p| p.cast())
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `idx` must be valid for reads and writes; `task` current or pinned.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_ret_addr(
    task: *mut bindings::task_struct,
    idx: *mut c_int,
    ret: c_ulong,
    retp: *mut c_ulong,
) -> c_ulong {
    if task.is_null() || idx.is_null() {
        return ret;
    }
    // SAFETY: the caller passes a valid int (contract).
    let mut pos = unsafe { *idx }.max(0) as usize;
    let r = graph::ret_addr(
        TaskRef(task as usize),
        &mut pos,
        ret as usize,
        retp as usize,
    );
    // SAFETY: as above.
    unsafe { *idx = pos as c_int };
    r as c_ulong
}

/// See include/ufgraph/fgraph.h.
///
/// # Safety
///
/// `store` must be valid for `size` writes.
#[no_mangle]
pub unsafe extern "C" fn ufgraph_stack_trace_save(
    store: *mut c_ulong,
    size: c_uint,
    skipnr: c_uint,
) -> c_uint {
    if store.is_null() {
        return 0;
    }
    // SAFETY: the caller passes `size` writable entries (contract).
    let s = unsafe { core::slice::from_raw_parts_mut(store.cast::<usize>(), size as usize) };
    graph::stack_trace(s, skipnr as usize) as c_uint
}

/// See include/ufgraph/fgraph.h.
#[no_mangle]
pub extern "C" fn ufgraph_trampoline_addr() -> c_ulong {
    graph::trampoline() as c_ulong
}
