// SPDX-License-Identifier: GPL-2.0

//! The kretprobe shim and rethook on the shared shadow stack.

use crate::bindings::{self, ufgraph_kretprobe, ufgraph_kretprobe_instance, ufgraph_rethook};
use crate::kretprobe::{
    register_kretprobe, rethook_hook, rethook_register, rethook_unregister, unregister_kretprobe,
};
use crate::sys::ftrace::{Handler, Ops, Regs};
use crate::sys::ktest::{CaseResult, Test};
use crate::{kcheck, kcheck_eq, kunit_suite};
use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use kernel::c_str;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;
use kernel::types::ScopeGuard;

static ENTRIES: AtomicUsize = AtomicUsize::new(0);
static RETURNS: AtomicUsize = AtomicUsize::new(0);
static BAD: AtomicUsize = AtomicUsize::new(0);
static SKIP: AtomicUsize = AtomicUsize::new(0);

fn reset() {
    for a in [&ENTRIES, &RETURNS, &BAD, &SKIP] {
        a.store(0, Relaxed);
    }
}

#[repr(C)]
struct MyData {
    expect: usize,
    magic: usize,
}

// ufg_test_add(a, b): remember a + b in the instance data.
/// A callback C calls.
///
/// # Safety
///
/// Called by the kretprobe shim only, for a registered test kretprobe.
unsafe extern "C" fn rp_entry(
    ri: *mut ufgraph_kretprobe_instance,
    regs: *mut bindings::pt_regs,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    // SAFETY: `regs` is the pt_regs the shim built, with the argument registers valid.
    let (a, b) = unsafe {
        (
            bindings::ufg_regs_arg(regs, 0),
            bindings::ufg_regs_arg(regs, 1),
        )
    };
    // SAFETY: the instance has data_size (= sizeof MyData) bytes of data.
    let d = unsafe { core::ptr::addr_of_mut!((*ri).data).cast::<MyData>() };
    // SAFETY: as above.
    unsafe {
        d.write(MyData {
            expect: a.wrapping_add(b) as u32 as usize,
            magic: 0xabcd,
        })
    };
    SKIP.load(Relaxed) as c_int
}

/// A callback C calls.
///
/// # Safety
///
/// As for [`rp_entry`], at the return.
unsafe extern "C" fn rp_ret(
    ri: *mut ufgraph_kretprobe_instance,
    regs: *mut bindings::pt_regs,
) -> c_int {
    RETURNS.fetch_add(1, Relaxed);
    // SAFETY: the instance the entry filled.
    let d = unsafe { core::ptr::addr_of!((*ri).data).cast::<MyData>().read() };
    // SAFETY: a full pt_regs.
    let ret = unsafe { bindings::ufg_regs_return_value(regs) } as u32 as usize;
    // SAFETY: the instance.
    let ret_addr = unsafe { (*ri).ret_addr };
    if d.magic != 0xabcd || d.expect != ret || ret_addr == 0 {
        BAD.fetch_add(1, Relaxed);
    }
    0
}

fn kretprobe_on(sym: &'static kernel::str::CStr) -> ufgraph_kretprobe {
    let mut rp = ufgraph_kretprobe::default();
    rp.kp.symbol_name = sym.as_char_ptr();
    rp.entry_handler = Some(rp_entry);
    rp.handler = Some(rp_ret);
    rp.data_size = core::mem::size_of::<MyData>();
    rp.maxactive = 1; // accepted, never limiting
    rp
}

fn add(a: i32, b: i32) -> i32 {
    // SAFETY: a plain C fixture.
    unsafe { bindings::ufg_test_add(a, b) }
}

fn kretprobe_sees_every_return(t: &mut Test) -> CaseResult {
    reset();
    let mut rp = kretprobe_on(c_str!("ufg_test_add"));
    // SAFETY: `rp` outlives its registration (unregistered below).
    t.check_ok(unsafe { register_kretprobe(&mut rp) }, "register_kretprobe")?;
    // Unregistered however the test ends: a failed check must not leave a kretprobe on this
    // stack frame registered.
    let rpp: *mut ufgraph_kretprobe = &mut rp;
    // SAFETY: `rp` lives on this frame, which the guard does not outlive.
    let _undo = ScopeGuard::new(move || unsafe { unregister_kretprobe(rpp) });
    let fentry = bindings::ufg_test_add as *const () as usize;
    kcheck!(
        t,
        (rp.kp.addr as usize) >= fentry && (rp.kp.addr as usize) < fentry + 16,
        "kp.addr {:#x}",
        rp.kp.addr as usize
    );
    for i in 0..40 {
        kcheck_eq!(t, add(i, 1000), i + 1000);
    }
    // The entry handler can refuse an instance: no return handler for it.
    SKIP.store(1, Relaxed);
    add(1, 1);
    // SAFETY: a valid kretprobe.
    unsafe { unregister_kretprobe(&mut rp) };
    kcheck_eq!(t, ENTRIES.load(Relaxed), 41);
    kcheck_eq!(t, RETURNS.load(Relaxed), 40);
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    kcheck_eq!(t, rp.nmissed, 0);
    add(1, 1);
    kcheck_eq!(t, ENTRIES.load(Relaxed), 41);
    Ok(())
}

static BARE_RP: AtomicUsize = AtomicUsize::new(0);
static BARE_RET_ADDR: AtomicUsize = AtomicUsize::new(0);
static BARE_RETVAL: AtomicUsize = AtomicUsize::new(0);

/// The return handler of a kretprobe without entry handler or data.
///
/// # Safety
///
/// Called by the kretprobe shim only, for a registered test kretprobe.
unsafe extern "C" fn bare_ret(
    ri: *mut ufgraph_kretprobe_instance,
    regs: *mut bindings::pt_regs,
) -> c_int {
    RETURNS.fetch_add(1, Relaxed);
    // SAFETY: the instance the shim made for this call, and its pt_regs.
    unsafe {
        BARE_RP.store((*ri).rp as usize, Relaxed);
        BARE_RET_ADDR.store((*ri).ret_addr, Relaxed);
        BARE_RETVAL.store(
            bindings::ufg_regs_return_value(regs) as u32 as usize,
            Relaxed,
        );
    }
    0
}

// A kretprobe with a return handler alone (the common kind) has no entry side: its instance is
// made at the return. The handler must still see its probe, the real return address (inside
// the C caller) and the return value, on every call.
fn bare_kretprobe_gets_its_instance(t: &mut Test) -> CaseResult {
    reset();
    let mut rp = ufgraph_kretprobe::default();
    rp.kp.symbol_name = c_str!("ufg_test_add").as_char_ptr();
    rp.handler = Some(bare_ret);
    // SAFETY: `rp` outlives its registration (unregistered below).
    t.check_ok(unsafe { register_kretprobe(&mut rp) }, "register_kretprobe")?;
    let rpp: *mut ufgraph_kretprobe = &mut rp;
    // SAFETY: `rp` lives on this frame, which the guard does not outlive.
    let _undo = ScopeGuard::new(move || unsafe { unregister_kretprobe(rpp) });
    let caller = bindings::ufg_test_caller as *const () as usize;
    for i in 0..20 {
        // SAFETY: a plain C fixture: ufg_test_add(i, 1) + 1.
        kcheck_eq!(t, unsafe { bindings::ufg_test_caller(i) }, i + 2);
        kcheck_eq!(t, BARE_RP.load(Relaxed), rpp as usize);
        kcheck_eq!(t, BARE_RETVAL.load(Relaxed), (i + 1) as usize);
        let ret_addr = BARE_RET_ADDR.load(Relaxed);
        kcheck!(
            t,
            ret_addr > caller && ret_addr < caller + 256,
            "ret_addr {:#x}, ufg_test_caller at {:#x}",
            ret_addr,
            caller
        );
    }
    kcheck_eq!(t, RETURNS.load(Relaxed), 20);
    kcheck_eq!(t, rp.nmissed, 0);
    Ok(())
}

// `kretprobe_kinds_get_their_instance`: the kretprobe under test, whether its entry handler
// writes its data (then the return handler checks it), and whether the return handler calls
// the probed function itself (once: `NESTED` counts those calls).
static KIND_RP: AtomicUsize = AtomicUsize::new(0);
static KIND_DATA: AtomicUsize = AtomicUsize::new(0);
static KIND_NEST: AtomicUsize = AtomicUsize::new(0);
static NESTED: AtomicUsize = AtomicUsize::new(0);
const KIND_MAGIC: usize = 0x6b69_6e64;

/// Whether `ri` is the test kretprobe's, returning into `ufg_test_caller` (a call from the
/// test) or into `kind_ret` (the return handler's own call): Some(true) for the first.
///
/// # Safety
///
/// `ri` is the instance the shim passed to a handler.
unsafe fn kind_instance(ri: *mut ufgraph_kretprobe_instance) -> Option<bool> {
    // SAFETY: the caller's.
    let (rp, ret_addr) = unsafe { ((*ri).rp as usize, (*ri).ret_addr) };
    let caller = bindings::ufg_test_caller as *const () as usize;
    // Through `black_box`: a folded `kind_ret + 4096` would be a relocation into another
    // function, which objtool rejects.
    let nest = core::hint::black_box(kind_ret as *const () as usize);
    if rp != KIND_RP.load(Relaxed) {
        return None;
    }
    if ret_addr > caller && ret_addr < caller + 256 {
        Some(true)
    } else if ret_addr.wrapping_sub(nest).wrapping_sub(1) < 4095 {
        Some(false)
    } else {
        None
    }
}

/// A callback C calls.
///
/// # Safety
///
/// Called by the kretprobe shim only, for the registered test kretprobe.
unsafe extern "C" fn kind_entry(
    ri: *mut ufgraph_kretprobe_instance,
    _regs: *mut bindings::pt_regs,
) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    // SAFETY: the shim's instance.
    if unsafe { kind_instance(ri) }.is_none() {
        BAD.fetch_add(1, Relaxed);
    }
    if KIND_DATA.load(Relaxed) != 0 {
        // SAFETY: the instance has data_size (>= 16) bytes of data.
        unsafe {
            let d = core::ptr::addr_of_mut!((*ri).data).cast::<usize>();
            d.write(KIND_MAGIC);
            d.add(1).write(ri as usize);
        }
    }
    0
}

/// A callback C calls.
///
/// # Safety
///
/// As for [`kind_entry`], at the return.
unsafe extern "C" fn kind_ret(
    ri: *mut ufgraph_kretprobe_instance,
    regs: *mut bindings::pt_regs,
) -> c_int {
    RETURNS.fetch_add(1, Relaxed);
    // SAFETY: a full pt_regs.
    let ret = unsafe { bindings::ufg_regs_return_value(regs) } as u32 as usize;
    // SAFETY: the shim's instance.
    match unsafe { kind_instance(ri) } {
        // From the test: ufg_test_caller(i) calls ufg_test_add(i, 1); i < 100.
        Some(true) if ret < 101 => {}
        // From below: ufg_test_add(1000, 1).
        Some(false) if ret == 1001 => {}
        _ => {
            BAD.fetch_add(1, Relaxed);
        }
    }
    if KIND_DATA.load(Relaxed) != 0 {
        // SAFETY: as in `kind_entry`: the instance's data, written by the entry.
        let (m, p) = unsafe {
            let d = core::ptr::addr_of!((*ri).data).cast::<usize>();
            (d.read(), d.add(1).read())
        };
        if m != KIND_MAGIC || p != ri as usize {
            BAD.fetch_add(1, Relaxed);
        }
    }
    if KIND_NEST.load(Relaxed) != 0 && NESTED.fetch_add(1, Relaxed) == 0 {
        // The probed function, from its own return handler.
        add(1000, 1);
    }
    0
}

// Every kind of kretprobe the shim tells apart: a return handler alone (bare: the instance is
// made at the return), with an entry handler and no data, with data and no entry handler, and
// with both. Each return handler must see its own probe, the real return address and the
// return value; an entry handler the same probe and return address, and its data come back
// unchanged. A bare one whose return handler calls the probed function gets a second instance
// for that call (returning into the handler), or counts it missed, never a wrong one.
fn kretprobe_kinds_get_their_instance(t: &mut Test) -> CaseResult {
    type H = Option<
        unsafe extern "C" fn(*mut ufgraph_kretprobe_instance, *mut bindings::pt_regs) -> c_int,
    >;
    let kinds: [(H, usize, bool); 5] = [
        (None, 0, false),
        (Some(kind_entry), 0, false),
        (None, 16, false),
        (Some(kind_entry), 16, false),
        (None, 0, true),
    ];
    for (n, &(entry, data_size, nest)) in kinds.iter().enumerate() {
        reset();
        NESTED.store(0, Relaxed);
        let mut rp = ufgraph_kretprobe::default();
        rp.kp.symbol_name = c_str!("ufg_test_add").as_char_ptr();
        rp.handler = Some(kind_ret);
        rp.entry_handler = entry;
        rp.data_size = data_size;
        let rpp: *mut ufgraph_kretprobe = &mut rp;
        KIND_RP.store(rpp as usize, Relaxed);
        KIND_DATA.store((entry.is_some() && data_size > 0) as usize, Relaxed);
        KIND_NEST.store(nest as usize, Relaxed);
        // SAFETY: `rp` outlives its registration (unregistered below).
        t.check_ok(unsafe { register_kretprobe(rpp) }, "register_kretprobe")?;
        // SAFETY: `rp` lives on this frame, which the guard does not outlive.
        let undo = ScopeGuard::new(move || unsafe { unregister_kretprobe(rpp) });
        for i in 0..10 {
            // SAFETY: a plain C fixture: ufg_test_add(i, 1) + 1.
            kcheck_eq!(t, unsafe { bindings::ufg_test_caller(i) }, i + 2);
        }
        drop(undo);
        KIND_NEST.store(0, Relaxed);
        // SAFETY: read after the unregistration: no handler updates it any more.
        let missed = unsafe { (*rpp).nmissed } as usize;
        let nested = if nest { 1 } else { 0 };
        kcheck_eq!(
            t,
            (
                n,
                ENTRIES.load(Relaxed),
                RETURNS.load(Relaxed) + missed,
                BAD.load(Relaxed)
            ),
            (n, if entry.is_some() { 10 } else { 0 }, 10 + nested, 0)
        );
        kcheck_eq!(t, (n, NESTED.load(Relaxed) > 0), (n, nest));
    }
    Ok(())
}

fn kretprobe_errors(t: &mut Test) -> CaseResult {
    let mut rp = kretprobe_on(c_str!("ufg_no_such_function"));
    // SAFETY: (all below) each kretprobe outlives its (failed or undone) registration.
    unsafe {
        kcheck!(t, register_kretprobe(&mut rp) == Err(ENOENT));
        let mut big = kretprobe_on(c_str!("ufg_test_add"));
        big.data_size = bindings::UFGRAPH_KRETPROBE_MAX_DATA as usize + 1;
        kcheck!(t, register_kretprobe(&mut big) == Err(E2BIG));
        let mut off = kretprobe_on(c_str!("ufg_test_add"));
        off.kp.offset = 4;
        kcheck!(t, register_kretprobe(&mut off) == Err(EINVAL));
        let mut ok = kretprobe_on(c_str!("ufg_test_add"));
        kcheck!(t, register_kretprobe(&mut ok).is_ok());
        let okp: *mut ufgraph_kretprobe = &mut ok;
        let _undo = ScopeGuard::new(move || unregister_kretprobe(okp));
        kcheck!(t, register_kretprobe(&mut ok) == Err(EBUSY));
    }
    kcheck!(t, rp.ufgraph_private.is_null());
    Ok(())
}

// --- rethook -------------------------------------------------------------------------------

/// A callback C calls.
///
/// # Safety
///
/// Called by the rethook shim only, for a registered test rethook.
unsafe extern "C" fn rh_ret(
    _rh: *mut ufgraph_rethook,
    data: *mut c_void,
    ret_addr: c_ulong,
    fregs: *mut bindings::ftrace_regs,
) {
    RETURNS.fetch_add(1, Relaxed);
    // SAFETY: the 8 bytes the hook stored.
    let expect = unsafe { data.cast::<usize>().read() };
    // SAFETY: the exit registers.
    let ret = unsafe { Regs::from_raw(fregs) }.retval();
    if expect != ret || ret_addr == 0 {
        BAD.fetch_add(1, Relaxed);
    }
}

static mut RH: ufgraph_rethook = ufgraph_rethook {
    handler: Some(rh_ret),
    data_size: 8,
    nmissed: 0,
    ufgraph_private: core::ptr::null_mut(),
};

fn rh() -> *mut ufgraph_rethook {
    core::ptr::addr_of_mut!(RH)
}

// Hooks from a kprobe pre-handler: the kernel's kprobe on ufg_test_mul(a, b). x86_64 only: there
// a kprobe's pt_regs has ftrace_regs' layout; on arm64 rethook needs the ftrace_regs ftrace passes.
/// A callback C calls.
///
/// # Safety
///
/// Called by kprobes only, for the registered test kprobe.
#[cfg(CONFIG_X86_64)]
unsafe extern "C" fn kp_pre(_p: *mut bindings::kprobe, regs: *mut bindings::pt_regs) -> c_int {
    ENTRIES.fetch_add(1, Relaxed);
    // x86_64: a kprobe's pt_regs has ftrace_regs' layout (include/ufgraph/rethook.h).
    let fregs = regs.cast::<bindings::ftrace_regs>();
    // SAFETY: entry registers of ufg_test_mul, from its kprobe; RH is registered.
    let d = unsafe { rethook_hook(rh(), fregs) };
    if !d.is_null() {
        // SAFETY: as above.
        let (a, b) = unsafe {
            (
                bindings::ufg_fregs_arg(fregs, 0),
                bindings::ufg_fregs_arg(fregs, 1),
            )
        };
        // SAFETY: 8 bytes of data for this call.
        unsafe {
            d.cast::<usize>()
                .write((a as i64).wrapping_mul(b as i64) as usize)
        };
    }
    0
}

#[cfg(not(CONFIG_X86_64))]
fn rethook_from_a_kprobe(_t: &mut Test) -> CaseResult {
    // See `kp_pre`: covered by rethook_from_an_ftrace_ops on this architecture.
    Ok(())
}

#[cfg(CONFIG_X86_64)]
fn rethook_from_a_kprobe(t: &mut Test) -> CaseResult {
    reset();
    // SAFETY: RH is a static, valid for ever; unregistered below.
    t.check_ok(unsafe { rethook_register(rh()) }, "rethook_register")?;
    let mut kp = bindings::kprobe {
        symbol_name: c_str!("ufg_test_mul").as_char_ptr(),
        pre_handler: Some(kp_pre),
        ..Default::default()
    };
    // SAFETY: `kp` outlives its registration (unregistered below).
    let r = unsafe { bindings::register_kprobe(&mut kp) };
    if r != 0 {
        rethook_unregister(rh());
        return Err(t.fail(format_args!("register_kprobe: {}", r)));
    }
    // Undone however the test ends (the kprobe lives on this stack frame).
    let kpp: *mut bindings::kprobe = &mut kp;
    let _undo = ScopeGuard::new(move || {
        // SAFETY: registered above; unregistering twice is a no-op for the kernel.
        unsafe { bindings::unregister_kprobe(kpp) };
        rethook_unregister(rh());
    });
    for i in 1..=30i64 {
        // SAFETY: a plain C fixture.
        let v = unsafe { bindings::ufg_test_mul(i as _, 7) } as i64;
        kcheck_eq!(t, v, 7 * i);
    }
    // SAFETY: registered above.
    unsafe { bindings::unregister_kprobe(&mut kp) };
    rethook_unregister(rh());
    kcheck_eq!(
        t,
        (
            ENTRIES.load(Relaxed),
            RETURNS.load(Relaxed),
            BAD.load(Relaxed)
        ),
        (30, 30, 0)
    );
    Ok(())
}

// Hooks from an ftrace_ops callback.
struct HookFromFtrace;
impl Handler for HookFromFtrace {
    fn call(&self, _ip: usize, _parent: usize, regs: &Regs, _np: &crate::sys::sync::NoPreempt) {
        ENTRIES.fetch_add(1, Relaxed);
        // SAFETY: entry registers from ftrace; RH is registered.
        let d = unsafe { rethook_hook(rh(), regs.as_ptr()) };
        if !d.is_null() {
            let sum = regs.arg(0).wrapping_add(regs.arg(1)) as u32 as usize;
            // SAFETY: 8 bytes of data for this call.
            unsafe { d.cast::<usize>().write(sum) };
        }
    }
}

fn rethook_from_an_ftrace_ops(t: &mut Test) -> CaseResult {
    reset();
    // SAFETY: as above.
    t.check_ok(unsafe { rethook_register(rh()) }, "rethook_register")?;
    let mut ops = t.check_ok(Ops::new(HookFromFtrace, 0), "Ops::new")?;
    t.check_ok(ops.set_filter(c_str!("ufg_test_add")), "filter")?;
    t.check_ok(ops.register(), "register")?;
    for i in 0..25 {
        kcheck_eq!(t, add(i, 3), i + 3);
    }
    drop(ops);
    rethook_unregister(rh());
    // After unregistering, pending and new returns skip it.
    kcheck_eq!(
        t,
        (
            ENTRIES.load(Relaxed),
            RETURNS.load(Relaxed),
            BAD.load(Relaxed)
        ),
        (25, 25, 0)
    );
    Ok(())
}

/// What [`live_ret`] saw: calls, a field not as `with_exit_pt_regs` makes it, and what the
/// fprobe after it saw of `cs` and of the return value.
#[cfg(CONFIG_X86_64)]
static LIVE_CALLS: AtomicUsize = AtomicUsize::new(0);
#[cfg(CONFIG_X86_64)]
static LIVE_BAD: AtomicUsize = AtomicUsize::new(0);
#[cfg(CONFIG_X86_64)]
static LIVE_CS_AFTER: AtomicUsize = AtomicUsize::new(usize::MAX);
#[cfg(CONFIG_X86_64)]
static LIVE_RET_AFTER: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The return handler of [`kretprobe_return_regs_are_live`]: checks the `pt_regs` it is given,
/// then makes the function return 1000 more.
///
/// # Safety
///
/// Called by the kretprobe shim only, for the test's registered kretprobe.
#[cfg(CONFIG_X86_64)]
unsafe extern "C" fn live_ret(
    ri: *mut ufgraph_kretprobe_instance,
    regs: *mut bindings::pt_regs,
) -> c_int {
    LIVE_CALLS.fetch_add(1, Relaxed);
    // SAFETY: the instance and the pt_regs the shim passes, valid during the call.
    let (r, ret_addr) = unsafe { (&mut *regs, (*ri).ret_addr) };
    // SAFETY: plain integers in the unions.
    let (cs, ss) = unsafe { (r.__bindgen_anon_1.csx, r.__bindgen_anon_2.ssx) };
    let zeros = [
        r.r15, r.r14, r.r13, r.r12, r.bx, r.r11, r.r10, r.r9, r.r8, r.cx, r.si, r.di, r.orig_ax,
        ss as _,
    ];
    if zeros.iter().any(|&z| z != 0)
        || r.ip != ret_addr
        || ret_addr == 0
        || cs != bindings::UFG_KERNEL_CS as u64
        || r.flags != bindings::UFG_EFLAGS_FIXED as _
        || r.sp == 0
    {
        LIVE_BAD.fetch_add(1, Relaxed);
    }
    // The live registers: the function returns this (as with the kernel's kretprobes).
    r.ax = r.ax.wrapping_add(1000);
    0
}

/// An exit probe registered after the kretprobe on the same function: its exit handler runs
/// after the kretprobe's, on the same registers.
#[cfg(CONFIG_X86_64)]
struct AfterShim;

#[cfg(CONFIG_X86_64)]
impl crate::fprobe::api::FprobeHandler for AfterShim {
    const EXIT: bool = true;
    fn has_entry(&self) -> bool {
        false
    }
    fn entry(&self, _ip: usize, _ret_ip: usize, _regs: &Regs, _data: &mut [u8]) -> bool {
        true
    }
    fn exit(&self, _ip: usize, _ret_ip: usize, regs: &Regs, _data: &mut [u8]) {
        // SAFETY: on x86_64 the return registers are a whole pt_regs (`sys::regs`); `cs` is a
        // plain integer in its union.
        let cs = unsafe {
            (*regs.as_ptr().cast::<bindings::pt_regs>())
                .__bindgen_anon_1
                .csx
        };
        LIVE_CS_AFTER.store(cs as usize, Relaxed);
        // The kretprobe's handler ran first (it added 1000) if this is the changed value.
        LIVE_RET_AFTER.store(regs.retval() as u32 as usize, Relaxed);
    }
}

#[cfg(not(CONFIG_X86_64))]
fn kretprobe_return_regs_are_live(_t: &mut Test) -> CaseResult {
    // arm64's return handlers get a copy (`sys::regs::fill_pt_regs`), covered by the other
    // cases; the registers made in place are x86_64's.
    Ok(())
}

/// x86_64: a return handler's `pt_regs` is the return's registers, completed in place
/// (`sys::regs::with_exit_pt_regs`): every field as documented (Documentation/kretprobe.md),
/// a return value it sets is what the function returns, first with the kretprobe alone (the
/// single-probe return path), then with an exit probe registered after it, which runs after it
/// on the same registers: it reads the new return value, and finds the registers partial again
/// (`cs` 0, so `ftrace_get_regs()` says NULL), as the trampoline made them.
#[cfg(CONFIG_X86_64)]
fn kretprobe_return_regs_are_live(t: &mut Test) -> CaseResult {
    use crate::fprobe::api::Fprobe;
    use crate::fprobe::Target;
    LIVE_CALLS.store(0, Relaxed);
    LIVE_BAD.store(0, Relaxed);
    LIVE_CS_AFTER.store(usize::MAX, Relaxed);
    LIVE_RET_AFTER.store(usize::MAX, Relaxed);
    let mut rp = ufgraph_kretprobe::default();
    rp.kp.symbol_name = c_str!("ufg_test_add").as_char_ptr();
    rp.handler = Some(live_ret);
    // SAFETY: `rp` outlives its registration (unregistered below).
    t.check_ok(unsafe { register_kretprobe(&mut rp) }, "register_kretprobe")?;
    let rpp: *mut ufgraph_kretprobe = &mut rp;
    // SAFETY: `rp` lives on this frame, which the guard does not outlive.
    let _undo = ScopeGuard::new(move || unsafe { unregister_kretprobe(rpp) });
    // Alone: the single-probe return path.
    for i in 0..5 {
        kcheck_eq!(t, add(i, 1), i + 1 + 1000);
    }
    kcheck_eq!(t, LIVE_CALLS.load(Relaxed), 5);
    let mut after = t.check_ok(Fprobe::new(AfterShim), "Fprobe::new")?;
    t.check_ok(
        after
            .as_mut()
            .register(&Target::Syms(&[c_str!("ufg_test_add")])),
        "register the probe after",
    )?;
    for i in 0..10 {
        kcheck_eq!(t, add(i, 1), i + 1 + 1000);
        kcheck_eq!(t, LIVE_RET_AFTER.load(Relaxed), (i + 1 + 1000) as usize);
        kcheck_eq!(t, LIVE_CS_AFTER.load(Relaxed), 0);
        LIVE_CS_AFTER.store(usize::MAX, Relaxed);
        LIVE_RET_AFTER.store(usize::MAX, Relaxed);
    }
    t.check_ok(after.as_mut().unregister(), "unregister the probe after")?;
    // SAFETY: a valid kretprobe.
    unsafe { unregister_kretprobe(&mut rp) };
    kcheck_eq!(t, LIVE_CALLS.load(Relaxed), 15);
    kcheck_eq!(t, LIVE_BAD.load(Relaxed), 0);
    kcheck_eq!(t, add(2, 3), 5);
    Ok(())
}

kunit_suite!(
    KRETPROBE_SUITE,
    "ufgraph_kretprobe",
    [
        kretprobe_sees_every_return,
        bare_kretprobe_gets_its_instance,
        kretprobe_kinds_get_their_instance,
        kretprobe_errors,
        rethook_from_a_kprobe,
        rethook_from_an_ftrace_ops,
        kretprobe_return_regs_are_live,
    ]
);
