// SPDX-License-Identifier: GPL-2.0

//! The C API's ops and its shared filter.

use super::*;
use core::ptr;

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

/// `n` C ops with the callbacks `entry` and `ret`, each on the function at `ip` through the
/// shared filter, not registered; the `i`th one's `private` is the state `state(i)`, returned
/// beside it (to be dropped after the ops, which unregister when dropped).
#[allow(clippy::type_complexity)]
fn c_ops_on<S>(
    t: &Test,
    ip: usize,
    n: usize,
    state: impl Fn(usize) -> S,
    entry: bindings::ufgraph_entry_t,
    ret: bindings::ufgraph_ret_t,
) -> Result<(KVec<KBox<S>>, KVec<CTestOps>), Failed> {
    let mut states = KVec::new();
    let mut ops = KVec::new();
    for i in 0..n {
        let s = t.check_ok(KBox::new(state(i), GFP_KERNEL).map_err(Into::into), "alloc")?;
        let o = bindings::ufgraph_ops {
            entryfunc: entry,
            retfunc: ret,
            private: (&*s as *const S).cast_mut().cast(),
            idx: -1,
            ..Default::default()
        };
        let mut o = CTestOps(
            t.check_ok(KBox::new(o, GFP_KERNEL).map_err(Into::into), "alloc")?,
            t.check_ok(
                KBox::new(AtomicUsize::new(0), GFP_KERNEL).map_err(Into::into),
                "alloc",
            )?,
        );
        kcheck_eq!(t, o.set_ips(&[ip], false, false), 0);
        t.check_ok(states.push(s, GFP_KERNEL).map_err(Into::into), "push")?;
        t.check_ok(ops.push(o, GFP_KERNEL).map_err(Into::into), "push")?;
    }
    Ok((states, ops))
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
    g.drop_module(|_| false, "in a test");
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

/// What a [`CSharer`] does at an entry (set once its place in the hub's call order is known).
const CS_KEEP: usize = 0;
/// Reserves 24 bytes, then declines: the reservation must go with it.
const CS_RESERVE_DECLINE: usize = 1;
/// Declines without reserving.
const CS_DECLINE: usize = 2;
/// Keeps the call without reserving: its return finds no data.
const CS_KEEP_BARE: usize = 3;

/// What `trace->func` must be in [`c_ops_share_one_call`]: `ufg_test_add`'s ftrace location.
static CS_FUNC: AtomicUsize = AtomicUsize::new(0);

/// The state of a C ops of [`c_ops_share_one_call`], in its `private`: what its callbacks saw.
struct CSharer {
    mode: AtomicUsize,
    tag: usize,
    /// The index of an ops whose data must be gone when this one's entry runs.
    peek: AtomicUsize,
    entries: AtomicUsize,
    returns: AtomicUsize,
    bad: AtomicUsize,
    depth: AtomicUsize,
    ret_depth: AtomicUsize,
}

/// The [`CSharer`] of `gops`.
///
/// # Safety
///
/// `gops` must be a registered ops of [`c_ops_share_one_call`], whose `private` is its
/// `CSharer`, alive while registered.
unsafe fn sharer<'a>(gops: *mut bindings::ufgraph_ops) -> &'a CSharer {
    // SAFETY: the caller's contract.
    unsafe { &*(*gops).private.cast::<CSharer>() }
}

/// A [`CSharer`]'s entry, as a C client writes one: the function and depth from `trace`, its
/// data through `ufgraph_reserve_data()`.
///
/// # Safety
///
/// Called by the graph core only, for a registered ops of [`c_ops_share_one_call`].
unsafe extern "C" fn c_share_entry(
    trace: *mut bindings::ufgraph_ent,
    gops: *mut bindings::ufgraph_ops,
    fregs: *mut bindings::ftrace_regs,
) -> core::ffi::c_int {
    // SAFETY: the caller's contract.
    let (s, trace) = unsafe { (sharer(gops), &*trace) };
    // SAFETY: ftrace's registers for this entry, valid during the callback.
    let regs = unsafe { crate::sys::ftrace::Regs::from_raw(fregs.cast()) };
    // SAFETY: as above.
    let idx = unsafe { (*gops).idx };
    s.entries.fetch_add(1, Relaxed);
    s.depth.store(trace.depth as usize, Relaxed);
    if trace.func != CS_FUNC.load(Relaxed) {
        s.bad.fetch_add(1, Relaxed);
    }
    let peek = s.peek.load(Relaxed);
    if peek != usize::MAX {
        // SAFETY: no size is asked for.
        let left =
            unsafe { crate::fgraph::capi::ufgraph_retrieve_data(peek as _, ptr::null_mut()) };
        if !left.is_null() {
            s.bad.fetch_add(1, Relaxed);
        }
    }
    let sum = regs.arg(0).wrapping_add(regs.arg(1)) as u32 as usize;
    match s.mode.load(Relaxed) {
        CS_RESERVE_DECLINE => {
            let p = crate::fgraph::capi::ufgraph_reserve_data(idx, 24).cast::<usize>();
            if !p.is_null() {
                // SAFETY: 24 bytes, word-aligned, just reserved for this ops.
                unsafe { core::slice::from_raw_parts_mut(p, 3) }.fill(usize::MAX);
            }
            0
        }
        CS_DECLINE => 0,
        CS_KEEP_BARE => 1,
        _ => {
            let p = crate::fgraph::capi::ufgraph_reserve_data(idx, 16).cast::<usize>();
            if p.is_null() {
                s.bad.fetch_add(1, Relaxed);
            } else {
                // SAFETY: 16 bytes, word-aligned, just reserved for this ops.
                unsafe { p.write(sum ^ s.tag) };
                // SAFETY: as above.
                unsafe { p.add(1).write(!s.tag) };
            }
            1
        }
    }
}

/// A [`CSharer`]'s return: the function, the return value and the depth from `trace`, its data
/// through `ufgraph_retrieve_data()`.
///
/// # Safety
///
/// As for [`c_share_entry`].
unsafe extern "C" fn c_share_ret(
    trace: *mut bindings::ufgraph_ret,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the caller's contract.
    let (s, trace) = unsafe { (sharer(gops), &*trace) };
    // SAFETY: as above.
    let idx = unsafe { (*gops).idx };
    s.returns.fetch_add(1, Relaxed);
    s.ret_depth.store(trace.depth as usize, Relaxed);
    let mut size = 0;
    // SAFETY: `size` is writable.
    let p = unsafe { crate::fgraph::capi::ufgraph_retrieve_data(idx, &mut size) }.cast::<usize>();
    let ok = trace.func == CS_FUNC.load(Relaxed)
        && if s.mode.load(Relaxed) == CS_KEEP_BARE {
            p.is_null()
        } else {
            !p.is_null()
                && size == 16
                // SAFETY: the 16 bytes this ops reserved at the entry.
                && unsafe { (p.read(), p.add(1).read()) }
                    == ((trace.retval as u32 as usize) ^ s.tag, !s.tag)
        };
    if !ok {
        s.bad.fetch_add(1, Relaxed);
    }
}

/// Calls per round of [`c_ops_share_one_call`].
const SHARE_CALLS: usize = 20;

/// One round of [`c_ops_share_one_call`]: [`SHARE_CALLS`] calls, each returning its value; then
/// every ops saw each call at depth 1, and those that keep the call (by their mode) each return
/// at depth 1, with nothing wrong found (`bad`: function, data, return value).
fn share_round(t: &mut Test, states: &[KBox<CSharer>]) -> CaseResult {
    const N: usize = SHARE_CALLS;
    for i in 0..N as i32 {
        kcheck_eq!(t, add(i, 2 * i + 1), 3 * i + 1);
    }
    for s in states.iter() {
        let m = s.mode.load(Relaxed);
        let keeps = matches!(m, CS_KEEP | CS_KEEP_BARE);
        // (mode, entries, returns, bad, entry depth, return depth)
        let got = (
            m,
            s.entries.load(Relaxed),
            s.returns.load(Relaxed),
            s.bad.load(Relaxed),
            s.depth.load(Relaxed),
            s.ret_depth.load(Relaxed),
        );
        let want = (m, N, if keeps { N } else { 0 }, 0, 1, keeps as usize);
        kcheck_eq!(t, got, want);
    }
    Ok(())
}

/// Several C ops on one function of the hub, with a Rust ops among them: the C ops share one
/// `struct ufgraph_ent` per call and one `struct ufgraph_ret` per return (`Batched`). Each
/// still gets the right function, depth and return value, its own data back (a reservation
/// made by a declining ops is gone before the next ops runs, the first's included, and an ops
/// that kept the call bare finds none), and only the ops that kept the call see its return;
/// when none keeps it, the frame the hub pushed for them goes again.
pub(super) fn c_ops_share_one_call(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let loc = t.check_ok(crate::sys::ksym::locations(&[add_ip]), "locations")?;
    CS_FUNC.store(loc[0], Relaxed);
    const MODES: [usize; 6] = [
        CS_KEEP,
        CS_KEEP,
        CS_RESERVE_DECLINE,
        CS_DECLINE,
        CS_KEEP_BARE,
        CS_KEEP,
    ];
    let (states, mut ops) = c_ops_on(
        t,
        add_ip,
        MODES.len(),
        |tag| CSharer {
            mode: AtomicUsize::new(CS_KEEP),
            tag: 0x5a00 + tag,
            peek: AtomicUsize::new(usize::MAX),
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            bad: AtomicUsize::new(0),
            depth: AtomicUsize::new(0),
            ret_depth: AtomicUsize::new(0),
        },
        Some(c_share_entry),
        Some(c_share_ret),
    )?;
    // A Rust ops on the same function, registered in the middle: its index falls among theirs.
    let mut rust = t.check_ok(GraphOps::new(Rec::new(16, 7, true)), "GraphOps::new")?;
    t.check_ok(
        rust.set_filter_ips(&[add_ip], false, false),
        "set_filter_ips",
    )?;
    for (n, o) in ops.iter_mut().enumerate() {
        if n == 2 {
            t.check_ok(rust.register(), "register rust")?;
        }
        kcheck_eq!(t, o.register(), 0);
    }
    // The hub calls its ops lowest index first: the modes go by that order.
    let mut order = [0usize, 1, 2, 3, 4, 5];
    order.sort_unstable_by_key(|&i| ops[i].0.idx);
    for (&i, &m) in order.iter().zip(MODES.iter()) {
        states[i].mode.store(m, Relaxed);
    }
    // The last keeper looks for the data the reserving decliner left.
    let decliner = ops[order[2]].0.idx as usize;
    states[order[5]].peek.store(decliner, Relaxed);
    share_round(t, &states)?;
    let h = rust.handler();
    kcheck_eq!(
        t,
        (
            h.entries.load(Relaxed),
            h.returns.load(Relaxed),
            h.bad.load(Relaxed)
        ),
        (SHARE_CALLS, SHARE_CALLS, 0)
    );
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.tasks().frames_now(), 0);
    t.check_ok(rust.unregister(), "unregister rust")?;
    // Round 2, the C ops alone: the first reserves and declines on the frame the hub pushed
    // for them all, the later ones keep it and find none of its data. Round 3: every ops
    // declines, the first after reserving: the frame goes again (no trampoline, the stack as
    // it was), and the calls return their values.
    let rounds: [([usize; 6], usize); 2] = [
        (
            [
                CS_RESERVE_DECLINE,
                CS_KEEP,
                CS_KEEP,
                CS_KEEP_BARE,
                CS_KEEP,
                CS_KEEP,
            ],
            order[0],
        ),
        (
            [
                CS_RESERVE_DECLINE,
                CS_DECLINE,
                CS_DECLINE,
                CS_DECLINE,
                CS_DECLINE,
                CS_DECLINE,
            ],
            order[0],
        ),
    ];
    for (modes, decliner) in rounds {
        for (&i, &m) in order.iter().zip(modes.iter()) {
            let s = &states[i];
            s.mode.store(m, Relaxed);
            s.peek.store(usize::MAX, Relaxed);
            s.entries.store(0, Relaxed);
            s.returns.store(0, Relaxed);
            s.depth.store(0, Relaxed);
            s.ret_depth.store(0, Relaxed);
        }
        for &i in &order[1..] {
            states[i].peek.store(ops[decliner].0.idx as usize, Relaxed);
        }
        share_round(t, &states)?;
        kcheck_eq!(t, g.tasks().frames_now(), 0);
    }
    drop(ops);
    drop(states);
    core_is_idle(t)
}

/// The two C ops of the tail-call cases on `ufg_test_tail` (at `ip`), registered; with the
/// positions of the lower and the higher index.
#[allow(clippy::type_complexity)]
fn tail_ops_on(
    t: &Test,
    ip: usize,
) -> Result<(KVec<KBox<TailState>>, KVec<CTestOps>, usize, usize), Failed> {
    let (states, mut ops) = c_ops_on(
        t,
        ip,
        2,
        |_| TailState {
            decline_outer: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            inner_depth: AtomicUsize::new(0),
            arrive: AtomicUsize::new(0),
            leave: AtomicUsize::new(0),
        },
        Some(tail_entry),
        Some(tail_ret),
    )?;
    for o in ops.iter_mut() {
        kcheck_eq!(t, o.register(), 0);
    }
    let (lo, hi) = if ops[0].0.idx < ops[1].0.idx {
        (0, 1)
    } else {
        (1, 0)
    };
    Ok((states, ops, lo, hi))
}

/// An ops that joins a tail-recursing function's hub mask between its two entries (registered
/// on another CPU then: made here by the outer entry, which sets its bit in the function's mask)
/// at the lowest index: at the inner entry it comes first, has no "seen" mark on the outer
/// frame, and must not take that frame for this call. It gets the inner call, in a frame of its
/// own (depth 2); the ops already there gets both calls, each with its return. Taking the outer
/// frame, it would have the hub's other ops enter it again: two entries, one return, the inner
/// call at depth 1. Then with the ops already there also leaving the function at the outer
/// entry (the hub's own mark on the frame tells the calls apart).
pub(super) fn hub_tail_call_ops_arrives_between_entries(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let ip = bindings::ufg_test_tail as *const () as usize;
    let (states, ops, lo, hi) = tail_ops_on(t, ip)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let loc = t.check_ok(crate::sys::ksym::locations(&[ip]), "locations")?[0];
    let lo_bit = 1usize << ops[lo].0.idx;
    states[hi].arrive.store(lo_bit, Relaxed);
    const N: usize = 10;
    for _ in 0..N {
        // The lower ops off the function again: the outer call is the higher one's alone.
        kcheck!(t, g.test_hub_mask_bits(loc, lo_bit, false));
        // SAFETY: a plain C fixture.
        kcheck_eq!(t, unsafe { bindings::ufg_test_tail(1) }, 7);
    }
    // Its entry put the lower ops back on the function each time: the mask is what the two
    // registrations made, for their unregistration.
    states[hi].arrive.store(0, Relaxed);
    let got = |i: usize| {
        (
            states[i].entries.load(Relaxed),
            states[i].returns.load(Relaxed),
            states[i].inner_depth.load(Relaxed),
        )
    };
    kcheck_eq!(t, (got(lo), got(hi)), ((N, N, 2), (2 * N, 2 * N, 2)));
    kcheck_eq!(t, g.tasks().frames_now(), 0);
    // Again, the higher ops also leaving the function at the outer entry: the inner entry's
    // mask has nothing in common with the outer frame's marks but the hub's own, which alone
    // tells it is another call. Joining the outer frame, the lower ops would see the inner call
    // at depth 1.
    let hi_bit = 1usize << ops[hi].0.idx;
    for s in states.iter() {
        s.entries.store(0, Relaxed);
        s.returns.store(0, Relaxed);
        s.inner_depth.store(0, Relaxed);
    }
    states[hi].arrive.store(lo_bit, Relaxed);
    states[hi].leave.store(hi_bit, Relaxed);
    for _ in 0..N {
        kcheck!(t, g.test_hub_mask_bits(loc, lo_bit, false));
        kcheck!(t, g.test_hub_mask_bits(loc, hi_bit, true));
        // SAFETY: a plain C fixture.
        kcheck_eq!(t, unsafe { bindings::ufg_test_tail(1) }, 7);
    }
    states[hi].arrive.store(0, Relaxed);
    states[hi].leave.store(0, Relaxed);
    // Both registered: both bits on the function again, for their unregistration.
    kcheck!(t, g.test_hub_mask_bits(loc, hi_bit, true));
    kcheck_eq!(t, (got(lo), got(hi)), ((N, N, 2), (N, N, 0)));
    kcheck_eq!(t, g.tasks().frames_now(), 0);
    drop(ops);
    drop(states);
    core_is_idle(t)
}

/// The state of a C ops of [`hub_slot_gone_mid_call`], in its `private`.
struct GoneState {
    entries: AtomicUsize,
    returns: AtomicUsize,
    /// An index whose slot this ops' entry (`take_at_entry`) or return (`take_at_ret`) takes
    /// out of the array, plus one (0: none).
    take_at_entry: AtomicUsize,
    take_at_ret: AtomicUsize,
    /// An index whose slot this ops' return puts back (what it took), plus one (0: none).
    put_at_ret: AtomicUsize,
    /// The slot taken, until it is put back.
    taken: core::sync::atomic::AtomicPtr<crate::fgraph::graph::Slot>,
}

impl GoneState {
    fn take(&self, which: &AtomicUsize) {
        let i = which.load(Relaxed);
        if i == 0 {
            return;
        }
        if let Some(g) = graph() {
            self.taken.store(g.test_take_slot(i - 1), Relaxed);
        }
    }

    fn put(&self) {
        let i = self.put_at_ret.load(Relaxed);
        if i == 0 {
            return;
        }
        if let Some(g) = graph() {
            g.test_put_slot(i - 1, self.taken.swap(ptr::null_mut(), Relaxed));
        }
    }
}

/// [`hub_slot_gone_mid_call`]'s entry: keeps the call.
///
/// # Safety
///
/// Called by the graph core only, for a registered ops whose `private` is a [`GoneState`].
unsafe extern "C" fn gone_entry(
    _trace: *mut bindings::ufgraph_ent,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) -> core::ffi::c_int {
    // SAFETY: the caller's contract.
    let s = unsafe { &*(*gops).private.cast::<GoneState>() };
    s.entries.fetch_add(1, Relaxed);
    s.take(&s.take_at_entry);
    1
}

/// [`hub_slot_gone_mid_call`]'s return.
///
/// # Safety
///
/// As for [`gone_entry`].
unsafe extern "C" fn gone_ret(
    _trace: *mut bindings::ufgraph_ret,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the caller's contract.
    let s = unsafe { &*(*gops).private.cast::<GoneState>() };
    s.returns.fetch_add(1, Relaxed);
    s.put();
    s.take(&s.take_at_ret);
}

/// Three C ops on one hub function; the lowest one takes the highest one's slot out of the
/// array in the middle of a call, as its unregistration on another CPU does first.
/// - Taken in the lowest one's entry callback (the join loop is then on its way to the
///   highest): the highest gets no entry for that call, and the frame must not carry its bit.
///   The lowest one's return callback puts the slot back before the return reaches the
///   highest, which would then get a return for an entry it never had, were its bit there.
/// - Taken in the lowest one's return callback (the highest kept the call): the highest gets
///   no return, and the frame is popped all the same.
///
/// The function returns its value each time and no frame is left.
pub(super) fn hub_slot_gone_mid_call(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let (states, mut ops) = c_ops_on(
        t,
        add_ip,
        3,
        |_| GoneState {
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            take_at_entry: AtomicUsize::new(0),
            take_at_ret: AtomicUsize::new(0),
            put_at_ret: AtomicUsize::new(0),
            taken: core::sync::atomic::AtomicPtr::new(ptr::null_mut()),
        },
        Some(gone_entry),
        Some(gone_ret),
    )?;
    for o in ops.iter_mut() {
        kcheck_eq!(t, o.register(), 0);
    }
    let mut order = [0usize, 1, 2];
    order.sort_unstable_by_key(|&i| ops[i].0.idx);
    let [lo, mid, hi] = order;
    let hi_idx = ops[hi].0.idx as usize;
    const N: usize = 10;
    // (phase, entries, returns) of each ops; phase 0: taken at the entry, 1: at the return.
    for phase in 0..2 {
        for s in states.iter() {
            s.entries.store(0, Relaxed);
            s.returns.store(0, Relaxed);
        }
        let l = &states[lo];
        if phase == 0 {
            l.take_at_entry.store(hi_idx + 1, Relaxed);
            l.put_at_ret.store(hi_idx + 1, Relaxed);
        } else {
            l.take_at_ret.store(hi_idx + 1, Relaxed);
        }
        for i in 0..N as i32 {
            let sum = add(i, 2 * i + 1);
            // Put back by the lowest one's return (phase 0), else here, before any check: the
            // ops must be whole again for its unregistration.
            let p = l.taken.swap(ptr::null_mut(), Relaxed);
            let put_here = !p.is_null();
            if put_here {
                g.test_put_slot(hi_idx, p);
            }
            kcheck_eq!(t, sum, 3 * i + 1);
            kcheck_eq!(t, put_here, phase == 1);
        }
        l.take_at_entry.store(0, Relaxed);
        l.put_at_ret.store(0, Relaxed);
        l.take_at_ret.store(0, Relaxed);
        let got = |i: usize| {
            (
                phase,
                states[i].entries.load(Relaxed),
                states[i].returns.load(Relaxed),
            )
        };
        kcheck_eq!(t, got(lo), (phase, N, N));
        kcheck_eq!(t, got(mid), (phase, N, N));
        kcheck_eq!(t, got(hi), (phase, if phase == 0 { 0 } else { N }, 0));
        kcheck_eq!(t, g.tasks().frames_now(), 0);
    }
    // The slot back in place: the highest is an ordinary ops again.
    states[hi].entries.store(0, Relaxed);
    kcheck_eq!(t, add(1, 2), 3);
    kcheck_eq!(t, states[hi].entries.load(Relaxed), 1);
    drop(ops);
    drop(states);
    core_is_idle(t)
}

/// The state of a C ops of [`hub_tail_call_after_a_decline`], in its `private`.
struct TailState {
    /// 1: declines the outer call (`n == 1`); 2: declines the inner one; 0: keeps both.
    decline_outer: AtomicUsize,
    entries: AtomicUsize,
    returns: AtomicUsize,
    /// The depth the inner (tail) call's entry saw.
    inner_depth: AtomicUsize,
    /// Ops (a bit per index) put on the function's hub mask by the outer call's entry, as their
    /// registration on another CPU would between the two entries.
    arrive: AtomicUsize,
    /// Ops taken off the function's hub mask by the outer call's entry, as their unregistration
    /// on another CPU would begin.
    leave: AtomicUsize,
}

/// [`hub_tail_call_after_a_decline`]'s entry.
///
/// # Safety
///
/// Called by the graph core only, for a registered ops whose `private` is a [`TailState`].
unsafe extern "C" fn tail_entry(
    trace: *mut bindings::ufgraph_ent,
    gops: *mut bindings::ufgraph_ops,
    fregs: *mut bindings::ftrace_regs,
) -> core::ffi::c_int {
    // SAFETY: the caller's contract.
    let (s, trace) = unsafe { (&*(*gops).private.cast::<TailState>(), &*trace) };
    // SAFETY: ftrace's registers for this entry.
    let regs = unsafe { crate::sys::ftrace::Regs::from_raw(fregs.cast()) };
    s.entries.fetch_add(1, Relaxed);
    let n = regs.arg(0) as i32;
    if n == 0 {
        s.inner_depth.store(trace.depth as usize, Relaxed);
    }
    let (arrive, leave) = (s.arrive.load(Relaxed), s.leave.load(Relaxed));
    if n != 0 && (arrive | leave) != 0 {
        if let Some(g) = graph() {
            g.test_hub_mask_bits(trace.func, arrive, true);
            g.test_hub_mask_bits(trace.func, leave, false);
        }
    }
    match s.decline_outer.load(Relaxed) {
        1 => (n == 0) as _,
        2 => (n != 0) as _,
        _ => 1,
    }
}

/// [`hub_tail_call_after_a_decline`]'s return.
///
/// # Safety
///
/// As for [`tail_entry`].
unsafe extern "C" fn tail_ret(
    _trace: *mut bindings::ufgraph_ret,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the caller's contract.
    unsafe { &*(*gops).private.cast::<TailState>() }
        .returns
        .fetch_add(1, Relaxed);
}

/// A function that tail-calls itself (same return slot, `ufg_test_tail(1)` -> `ufg_test_tail(0)`)
/// with two C ops on the hub: two calls, so every ops that keeps both sees two entries, two
/// returns and the inner call at depth 2 (upstream pushes a frame per call). The lower ops
/// declines the outer call: its "seen" bit must still be on the outer frame, or at the inner
/// entry it takes the outer frame for the same call, joins it, and the higher ops then joins
/// it again (one return for its two entries, the inner call at depth 1).
pub(super) fn hub_tail_call_after_a_decline(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let ip = bindings::ufg_test_tail as *const () as usize;
    let (states, ops, lo, hi) = tail_ops_on(t, ip)?;
    const N: usize = 10;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    // (entries, returns, inner depth) of each; phase 0: both keep both calls (the control),
    // phase 1: the lower declines the outer call.
    // Phase 2: the lower declines the inner call: the higher must not join the outer frame
    // then (its "seen" bit, set by the join loop, says it saw that call).
    for phase in [0, 2, 1] {
        for s in states.iter() {
            s.entries.store(0, Relaxed);
            s.returns.store(0, Relaxed);
            s.inner_depth.store(0, Relaxed);
        }
        states[lo].decline_outer.store(phase, Relaxed);
        for _ in 0..N {
            // SAFETY: a plain C fixture.
            kcheck_eq!(t, unsafe { bindings::ufg_test_tail(1) }, 7);
        }
        let got = |i: usize| {
            (
                phase,
                states[i].entries.load(Relaxed),
                states[i].returns.load(Relaxed),
                states[i].inner_depth.load(Relaxed),
            )
        };
        kcheck_eq!(t, got(hi), (phase, 2 * N, 2 * N, 2));
        kcheck_eq!(
            t,
            got(lo),
            (phase, 2 * N, if phase == 0 { 2 * N } else { N }, 2)
        );
        kcheck_eq!(t, g.tasks().frames_now(), 0);
    }
    drop(ops);
    drop(states);
    core_is_idle(t)
}

/// What the C ops of [`c_ret_sees_overrun`] saw: entries, returns, and the `overrun` of every
/// return (the first one's, and how many differed from it).
struct OverrunSeen {
    entries: AtomicUsize,
    returns: AtomicUsize,
    first: AtomicUsize,
    differ: AtomicUsize,
}

/// [`c_ret_sees_overrun`]'s entry: counts, keeps the call.
///
/// # Safety
///
/// Called by the graph core only, for a registered ops whose `private` is an [`OverrunSeen`].
unsafe extern "C" fn c_overrun_entry(
    _trace: *mut bindings::ufgraph_ent,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) -> core::ffi::c_int {
    // SAFETY: the caller's contract.
    unsafe { &*(*gops).private.cast::<OverrunSeen>() }
        .entries
        .fetch_add(1, Relaxed);
    1
}

/// [`c_ret_sees_overrun`]'s return: records `trace->overrun`.
///
/// # Safety
///
/// As for [`c_overrun_entry`].
unsafe extern "C" fn c_overrun_ret(
    trace: *mut bindings::ufgraph_ret,
    gops: *mut bindings::ufgraph_ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the caller's contract.
    let (s, trace) = unsafe { (&*(*gops).private.cast::<OverrunSeen>(), &*trace) };
    s.returns.fetch_add(1, Relaxed);
    let o = trace.overrun as usize;
    if s.first
        .compare_exchange(usize::MAX, o, Relaxed, Relaxed)
        .is_err()
        && s.first.load(Relaxed) != o
    {
        s.differ.fetch_add(1, Relaxed);
    }
}

/// `struct ufgraph_ret.overrun` (upstream's `ftrace_graph_ret.overrun`): the calls of the task
/// that found its shadow stack full. A recursion deeper than the stack overruns at its deepest
/// calls, before any hooked frame returns: every return then tells how many calls were not
/// hooked, which with the hooked ones make every call.
pub(super) fn c_ret_sees_overrun(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let ip = bindings::ufg_test_recurse as *const () as usize;
    let (states, mut ops) = c_ops_on(
        t,
        ip,
        1,
        |_| OverrunSeen {
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            first: AtomicUsize::new(usize::MAX),
            differ: AtomicUsize::new(0),
        },
        Some(c_overrun_entry),
        Some(c_overrun_ret),
    )?;
    kcheck_eq!(t, ops[0].register(), 0);
    const DEPTH: i32 = 150;
    // SAFETY: a plain C fixture; 150 levels are well within the kernel stack.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(DEPTH) }, DEPTH);
    drop(ops);
    let s = &states[0];
    let (entries, returns) = (s.entries.load(Relaxed), s.returns.load(Relaxed));
    let overrun = s.first.load(Relaxed);
    kcheck_eq!(t, returns, entries);
    kcheck!(
        t,
        overrun > 0 && overrun != usize::MAX,
        "no overrun seen: {overrun}"
    );
    kcheck_eq!(t, entries + overrun, DEPTH as usize + 1);
    kcheck_eq!(t, s.differ.load(Relaxed), 0);
    drop(states);
    core_is_idle(t)
}
