// SPDX-License-Identifier: GPL-2.0

//! The hub, one ftrace_ops for the ops whose functions it knows: sharing, refusals, the filter
//! list, mixing with own-ftrace_ops ops, recursion in a callback, frames that outlive their ops.

use super::*;

pub(super) fn hub_shares_one_ftrace_ops(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let mul_ip = bindings::ufg_test_mul as *const () as usize;
    // Three ops on the hub and one on its own ftrace_ops hook ufg_test_add together; a fourth
    // hub ops hooks ufg_test_mul only.
    let mut a = hub_ops(t, &[add_ip], Rec::new(8, 1, true))?;
    let mut b = hub_ops(t, &[add_ip, add_ip], Rec::new(24, 2, false))?;
    let mut c = hub_ops(t, &[add_ip], Rec::new(0, 3, false))?;
    let mut own = ops_on(t, c_str!("ufg_test_add"), Rec::new(16, 4, false))?;
    let mut m = hub_ops(t, &[mul_ip], Rec::new(8, 5, false))?;
    for ops in [&mut a, &mut b, &mut c, &mut own, &mut m] {
        t.check_ok(ops.register(), "register")?;
    }
    kcheck_eq!(t, g.hub_functions(), 2);
    kcheck!(
        t,
        a.slot().on_hub() && m.slot().on_hub() && !own.slot().on_hub(),
        "hub membership"
    );
    kcheck!(
        t,
        own.set_filter(c_str!("ufg_test_mul")).is_ok(),
        "a glob on an own-ops ops"
    );
    kcheck!(
        t,
        a.set_filter(c_str!("ufg_test_mul")) == Err(EBUSY),
        "a glob on a hub ops is refused"
    );
    // The own ops now hooks ufg_test_mul instead: put it back.
    t.check_ok(own.set_filter(c_str!("ufg_test_add")), "set_filter back")?;
    for i in 0..50 {
        kcheck_eq!(t, add(i, 2 * i), 3 * i);
    }
    for i in 0..10 {
        kcheck_eq!(t, mul(i, 3), 3 * i);
    }
    for (n, ops, want) in [
        (0, &a, 50),
        (1, &b, 50),
        (2, &c, 50),
        (3, &own, 50),
        (4, &m, 10),
    ] {
        let h = ops.handler();
        kcheck!(
            t,
            h.entries.load(Relaxed) == want
                && h.returns.load(Relaxed) == want
                && h.bad.load(Relaxed) == 0,
            "ops {}: {} entries {} returns {} bad, want {}",
            n,
            h.entries.load(Relaxed),
            h.returns.load(Relaxed),
            h.bad.load(Relaxed),
            want
        );
    }
    // Filter changes while registered: `a` moves from ufg_test_add to ufg_test_mul.
    t.check_ok(a.set_filter_ips(&[mul_ip], false, false), "add mul")?;
    t.check_ok(a.set_filter_ips(&[add_ip], true, false), "remove add")?;
    kcheck!(
        t,
        a.set_filter_ips(&[mul_ip], true, false) == Err(EINVAL),
        "removing the last function is refused"
    );
    kcheck!(
        t,
        a.set_filter_ips(&[mul_ip], false, true) == Err(EINVAL),
        "reset while on the hub is refused"
    );
    kcheck!(
        t,
        a.set_filter_ips(&[1], false, false) == Err(EINVAL),
        "not a function"
    );
    add(1, 1);
    mul(2, 2);
    kcheck_eq!(t, a.handler().entries.load(Relaxed), 51);
    kcheck_eq!(t, b.handler().entries.load(Relaxed), 51);
    kcheck_eq!(t, m.handler().entries.load(Relaxed), 11);
    kcheck_eq!(t, a.handler().bad.load(Relaxed), 0);
    // Unregistering the ops on a function leaves the others on it hooked; the last one takes
    // the function off the hub, and the hub's ftrace_ops goes with its last function.
    t.check_ok(m.unregister(), "unregister m")?;
    kcheck_eq!(t, g.hub_functions(), 2);
    t.check_ok(a.unregister(), "unregister a")?;
    kcheck_eq!(t, g.hub_functions(), 1);
    mul(3, 3);
    add(2, 2);
    kcheck_eq!(t, m.handler().entries.load(Relaxed), 11);
    kcheck_eq!(t, b.handler().entries.load(Relaxed), 52);
    kcheck_eq!(t, b.handler().returns.load(Relaxed), 52);
    for ops in [&mut b, &mut c, &mut own] {
        t.check_ok(ops.unregister(), "unregister")?;
    }
    kcheck_eq!(t, g.hub_functions(), 0);
    add(3, 3);
    kcheck_eq!(t, c.handler().entries.load(Relaxed), 52);
    core_is_idle(t)
}

/// Refused hub registrations leave nothing: no index taken, no function on the hub, and the
/// ops registers fine once the cause is gone.
pub(super) fn hub_refusals_leave_nothing(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    // An address that is no traceable function, beside a good one.
    let mut bad = hub_ops(t, &[add_ip, 1], Rec::new(8, 1, true))?;
    kcheck!(t, bad.register() == Err(EINVAL), "a bad address is refused");
    kcheck_eq!(t, g.registered(), 0);
    kcheck_eq!(t, g.hub_functions(), 0);
    kcheck!(t, bad.idx().is_none());
    add(1, 1);
    kcheck_eq!(t, bad.handler().entries.load(Relaxed), 0);
    // A 17th ops, on the hub, while 16 own-ftrace_ops ops are registered.
    let all = fill(t, ARRAY_SIZE)?;
    let mut extra = hub_ops(t, &[add_ip], Rec::new(8, 2, true))?;
    kcheck!(
        t,
        extra.register() == Err(ENOSPC),
        "a 17th ops on the hub is refused"
    );
    kcheck_eq!(t, g.hub_functions(), 0);
    kcheck_eq!(t, g.registered(), ARRAY_SIZE);
    drop(all);
    t.check_ok(extra.register(), "register with room again")?;
    kcheck_eq!(t, g.hub_functions(), 1);
    kcheck_eq!(t, add(2, 3), 5);
    let h = extra.handler();
    kcheck!(
        t,
        h.entries.load(Relaxed) == 1 && h.returns.load(Relaxed) == 1 && h.bad.load(Relaxed) == 0,
        "after the refusals: {} entries {} returns {} bad",
        h.entries.load(Relaxed),
        h.returns.load(Relaxed),
        h.bad.load(Relaxed)
    );
    t.check_ok(extra.unregister(), "unregister")?;
    kcheck_eq!(t, g.hub_functions(), 0);
    core_is_idle(t)
}

/// The list of functions a hub ops registers with follows what it hooked: changes made while
/// it was registered are there after it unregisters, either address of a function (its start,
/// its ftrace location) names it, and a list emptied again is refused at registration rather
/// than taken for "no filter" (every function).
pub(super) fn hub_filter_list_follows_the_ops(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let mul_ip = bindings::ufg_test_mul as *const () as usize;
    let add_loc = t.check_ok(crate::sys::ksym::locations(&[add_ip]), "locations")?[0];
    // Changes while registered survive a restart: `a` moves from ufg_test_add to ufg_test_mul.
    let mut a = hub_ops(t, &[add_ip], Rec::new(8, 1, true))?;
    t.check_ok(a.register(), "register a")?;
    t.check_ok(a.set_filter_ips(&[mul_ip], false, false), "add mul")?;
    t.check_ok(a.set_filter_ips(&[add_ip], true, false), "remove add")?;
    t.check_ok(a.unregister(), "unregister a")?;
    t.check_ok(a.register(), "register a again")?;
    add(1, 2);
    kcheck!(
        t,
        a.handler().entries.load(Relaxed) == 0,
        "a hooks ufg_test_add after the restart"
    );
    mul(2, 3);
    kcheck!(
        t,
        a.handler().entries.load(Relaxed) == 1 && a.handler().returns.load(Relaxed) == 1,
        "a after the restart: {} entries, want 1 (ufg_test_mul)",
        a.handler().entries.load(Relaxed)
    );
    t.check_ok(a.unregister(), "unregister a (2)")?;
    // Added by its ftrace location, removed by its start (they differ with ENDBR or BTI).
    let mut b = hub_ops(t, &[add_loc, mul_ip], Rec::new(0, 2, false))?;
    t.check_ok(
        b.set_filter_ips(&[add_ip], true, false),
        "remove add by its start",
    )?;
    t.check_ok(b.register(), "register b")?;
    add(1, 2);
    kcheck!(
        t,
        b.handler().entries.load(Relaxed) == 0,
        "b hooks ufg_test_add (at {:#x}, its location {:#x})",
        add_ip,
        add_loc
    );
    mul(2, 3);
    kcheck_eq!(t, b.handler().entries.load(Relaxed), 1);
    t.check_ok(b.unregister(), "unregister b")?;
    // Emptied: refused, nothing registered, nothing hooked.
    let mut c = hub_ops(t, &[add_ip], Rec::new(0, 3, false))?;
    t.check_ok(c.set_filter_ips(&[add_loc], true, false), "remove add")?;
    let r = c.register();
    let hooked = c.handler().entries.load(Relaxed);
    let _ = c.unregister();
    kcheck!(
        t,
        r == Err(EINVAL),
        "an emptied filter: register returned {:?}, {} entries meanwhile",
        r,
        hooked
    );
    core_is_idle(t)
}

/// Hub ops and an own-ftrace_ops ops on one function, registered and unregistered in every
/// order: after each step, each registered ops sees every call once with its own data, the
/// others none, and the hub's filter holds the function exactly while a hub ops is registered.
pub(super) fn hub_and_own_ops_in_every_order(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    const ORDERS: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for on in ORDERS {
        for off in ORDERS {
            let mut ops = [
                hub_ops(t, &[add_ip], Rec::new(8, 1, true))?,
                hub_ops(t, &[add_ip], Rec::new(24, 2, false))?,
                ops_on(t, c_str!("ufg_test_add"), Rec::new(16, 3, false))?,
            ];
            let mut want = [0usize; 3];
            let mut live = [false; 3];
            let steps = Iterator::chain(
                on.iter().map(|&i| (i, true)),
                off.iter().map(|&i| (i, false)),
            );
            for (i, reg) in steps {
                if reg {
                    t.check_ok(ops[i].register(), "register")?;
                } else {
                    t.check_ok(ops[i].unregister(), "unregister")?;
                }
                live[i] = reg;
                kcheck_eq!(t, add(7, 8), 15);
                for j in 0..3 {
                    want[j] += live[j] as usize;
                    let h = ops[j].handler();
                    kcheck!(t, h.entries.load(Relaxed) == want[j] && h.returns.load(Relaxed) == want[j] && h.bad.load(Relaxed) == 0,
                        "on {:?} off {:?}, after ops {} {}: ops {}: {} entries {} returns {} bad, want {}", on, off, i,
                        if reg { "registered" } else { "unregistered" }, j,
                        h.entries.load(Relaxed), h.returns.load(Relaxed), h.bad.load(Relaxed), want[j]);
                }
                kcheck_eq!(t, g.hub_functions(), (live[0] || live[1]) as usize);
            }
        }
    }
    core_is_idle(t)
}

/// Counts; its entry callback calls `ufg_test_add` if `nest`.
struct Reenter {
    nest: bool,
    entries: AtomicUsize,
    returns: AtomicUsize,
}

impl GraphHandler for Reenter {
    fn entry(&self, _e: &mut Entry<'_>) -> bool {
        self.entries.fetch_add(1, Relaxed);
        if self.nest {
            add(1, 2);
        }
        true
    }
    fn ret(&self, _r: &mut Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
    }
}

/// An entry callback on the hub that calls the function it hooks: as everywhere in ftrace,
/// one nested level passes the recursion guard's transition bit, the next is refused and
/// counted for every ops the hub would have called; every frame is popped.
pub(super) fn hub_callback_recursion(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let new = |nest| Reenter {
        nest,
        entries: AtomicUsize::new(0),
        returns: AtomicUsize::new(0),
    };
    let mut r = t.check_ok(GraphOps::new(new(true)), "GraphOps::new")?;
    let mut s = t.check_ok(GraphOps::new(new(false)), "GraphOps::new")?;
    for ops in [&mut r, &mut s] {
        t.check_ok(
            ops.set_filter_ips(&[add_ip], false, false),
            "set_filter_ips",
        )?;
        t.check_ok(ops.register(), "register")?;
    }
    kcheck_eq!(t, add(2, 3), 5);
    // Where ftrace's list function may stand between the call site and the hub (see
    // `LIST_FUNC_GUARDS`), its own guard may refuse the second nested call before the hub sees
    // it: then nothing counts it, but it still never reaches an ops.
    let missed_ok = |m: u64| m == 1 || (crate::tests::LIST_FUNC_GUARDS && m == 0);
    for (n, ops) in [("r", &r), ("s", &s)] {
        let (h, sl) = (ops.handler(), ops.slot());
        kcheck!(
            t,
            h.entries.load(Relaxed) == 2
                && h.returns.load(Relaxed) == 2
                && missed_ok(sl.missed_recursion.load(Relaxed)),
            "{}: {} entries {} returns {} missed_recursion, want 2 2 1",
            n,
            h.entries.load(Relaxed),
            h.returns.load(Relaxed),
            sl.missed_recursion.load(Relaxed)
        );
    }
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.tasks().frames_now(), 0);
    drop(r);
    drop(s);
    core_is_idle(t)
}

/// What [`unregister_inside`] does inside `ufg_test_call`'s frame: the ops to unregister there.
static INSIDE: [core::sync::atomic::AtomicPtr<GraphOps<Rec>>; 2] =
    [const { core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()) }; 2];

/// Called by `ufg_test_call` inside its frame.
///
/// # Safety
///
/// Only from `ufg_test_call`, in a test.
unsafe extern "C" fn unregister_inside(x: kernel::ffi::c_long) -> kernel::ffi::c_long {
    for p in INSIDE.iter() {
        let ops = p.swap(core::ptr::null_mut(), Relaxed);
        // SAFETY: the test put its ops here and is blocked in `ufg_test_call` until we return:
        // nothing else touches it meanwhile.
        if let Some(ops) = unsafe { ops.as_mut() } {
            let _ = ops.unregister();
        }
    }
    x * 2
}

/// A frame several ops share (hub ops that pushed and joined it, an own-ftrace_ops ops that
/// joined it) outlives some of them: unregistered while the call is live, they are skipped at
/// its return, and the others get their own data back, whichever of them pushed the frame.
pub(super) fn shared_frame_outlives_its_ops(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let call_ip = bindings::ufg_test_call as *const () as usize;
    let call = |x: kernel::ffi::c_long| {
        // SAFETY: a plain C fixture; `unregister_inside` needs nothing but process context.
        unsafe { bindings::ufg_test_call(Some(unregister_inside), x) }
    };
    for gone in [[true, false], [false, true], [true, true]] {
        // `a` and `b` on the hub (its callback runs `a` first: the lowest index), `c` from its
        // own ftrace_ops, on the one frame of the call.
        let mut a = hub_ops(t, &[call_ip], Rec::new(16, 1, false))?;
        let mut b = hub_ops(t, &[call_ip], Rec::new(24, 2, false))?;
        let mut c = ops_on(t, c_str!("ufg_test_call"), Rec::new(8, 3, false))?;
        for ops in [&mut a, &mut b, &mut c] {
            t.check_ok(ops.register(), "register")?;
        }
        // Indexes come in LRU order, possibly wrapping around.
        if a.idx() > b.idx() {
            core::mem::swap(&mut a, &mut b);
        }
        for (p, (ops, g)) in INSIDE.iter().zip([(&mut a, gone[0]), (&mut b, gone[1])]) {
            p.store(
                if g {
                    ops as *mut GraphOps<Rec>
                } else {
                    core::ptr::null_mut()
                },
                Relaxed,
            );
        }
        kcheck_eq!(t, call(5), 11);
        for (n, ops, g) in [("a", &a, gone[0]), ("b", &b, gone[1]), ("c", &c, false)] {
            let h = ops.handler();
            let want = if g { 0 } else { 1 };
            kcheck!(
                t,
                h.entries.load(Relaxed) == 1
                    && h.returns.load(Relaxed) == want
                    && h.bad.load(Relaxed) == 0,
                "{:?} gone, ops {}: {} entries {} returns {} bad, want 1 {} 0",
                gone,
                n,
                h.entries.load(Relaxed),
                h.returns.load(Relaxed),
                h.bad.load(Relaxed),
                want
            );
        }
        // The ones left go on: a call now is theirs alone.
        kcheck_eq!(t, call(1), 3);
        kcheck!(
            t,
            c.handler().returns.load(Relaxed) == 2 && c.handler().bad.load(Relaxed) == 0,
            "c after"
        );
        if !gone[1] {
            kcheck!(
                t,
                b.handler().returns.load(Relaxed) == 2 && b.handler().bad.load(Relaxed) == 0,
                "b after"
            );
        }
    }
    core_is_idle(t)
}
