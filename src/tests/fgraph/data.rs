// SPDX-License-Identifier: GPL-2.0

//! What a frame and a task keep for an ops: the parent frame's data, task variables (0 when an
//! ops registers).

use super::*;

/// Records, in each frame, the function; checks the parent frame's record from the inner call,
/// and counts entries in the task variable.
struct Nest {
    outer: usize,
    inner: usize,
    parent_ok: AtomicUsize,
    parent_bad: AtomicUsize,
    var_seen: AtomicUsize,
}

impl GraphHandler for Nest {
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        let v = e.task_var();
        v.store(v.load(Relaxed) + 1, Relaxed);
        let func = e.func;
        if let Some(w) = e.reserve(8) {
            w[0] = func;
        }
        if near(func, self.inner) {
            match e.parent_data(1) {
                Some(p) if near(p[0], self.outer) => self.parent_ok.fetch_add(1, Relaxed),
                _ => self.parent_bad.fetch_add(1, Relaxed),
            };
        }
        true
    }

    fn ret(&self, r: &mut Return<'_>) {
        if r.data().map(|w| w[0]) != Some(r.func) {
            self.parent_bad.fetch_add(1, Relaxed);
        }
        self.var_seen.store(r.task_var().load(Relaxed), Relaxed);
    }
}

pub(super) fn parent_data_and_task_var(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let outer = bindings::ufg_test_outer as *const () as usize;
    let inner = bindings::ufg_test_inner as *const () as usize;
    let nest = Nest {
        outer,
        inner,
        parent_ok: AtomicUsize::new(0),
        parent_bad: AtomicUsize::new(0),
        var_seen: AtomicUsize::new(0),
    };
    let mut ops = t.check_ok(GraphOps::new(nest), "GraphOps::new")?;
    t.check_ok(ops.set_filter(c_str!("ufg_test_outer")), "filter")?;
    // By address: ftrace maps a function's start to its patch site.
    t.check_ok(ops.set_filter_ips(&[inner], false, false), "filter ips")?;
    t.check_ok(ops.register(), "register")?;
    for i in 0..10 {
        // SAFETY: plain C fixtures.
        let r = unsafe { bindings::ufg_test_outer(i) } as i64;
        kcheck_eq!(t, r, (i as i64 + 1) * 3 + 1);
    }
    let h = ops.handler();
    kcheck_eq!(t, h.parent_ok.load(Relaxed), 10);
    kcheck_eq!(t, h.parent_bad.load(Relaxed), 0);
    // Each call enters two hooked functions: the task variable grows by two per call.
    let end = h.var_seen.load(Relaxed);
    // SAFETY: as above.
    unsafe { bindings::ufg_test_outer(0) };
    kcheck_eq!(t, ops.handler().var_seen.load(Relaxed), end + 2);
    Ok(())
}

/// Counts entries, and keeps the value of its task variable the first entry found (then adds
/// one to it): what a fresh ops must find there is 0.
struct VarSeen {
    first: AtomicUsize,
    entries: AtomicUsize,
}

impl VarSeen {
    fn new() -> Self {
        Self {
            first: AtomicUsize::new(usize::MAX),
            entries: AtomicUsize::new(0),
        }
    }
}

impl GraphHandler for VarSeen {
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        let v = e.task_var();
        let _ = self
            .first
            .compare_exchange(usize::MAX, v.load(Relaxed), Relaxed, Relaxed);
        v.fetch_add(1, Relaxed);
        self.entries.fetch_add(1, Relaxed);
        true
    }

    fn ret(&self, _r: &mut Return<'_>) {}
}

/// An ops's task variable is 0 when it registers (the API's promise, and upstream's: it clears
/// the variable of an index it hands out), on the hub and on its own ftrace_ops alike, even
/// when the index's previous owner left a value there. (The index, and its variables, used to
/// pass on as they were.)
pub(super) fn task_vars_start_at_zero(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    let mut a = t.check_ok(GraphOps::new(VarSeen::new()), "GraphOps::new")?;
    t.check_ok(a.set_filter(c_str!("ufg_test_add")), "set_filter")?;
    t.check_ok(a.register(), "register a")?;
    for i in 0..5 {
        add(i, i);
    }
    kcheck_eq!(t, a.handler().first.load(Relaxed), 0);
    let idx = a.idx();
    t.check_ok(a.unregister(), "unregister a")?;
    // Every other index taken: the next registration gets `a`'s.
    let others = fill(t, ARRAY_SIZE - 1)?;
    let mut b = t.check_ok(GraphOps::new(VarSeen::new()), "GraphOps::new")?;
    t.check_ok(b.set_filter_ips(&[add_ip], false, false), "set_filter_ips")?;
    t.check_ok(b.register(), "register b")?;
    kcheck!(t, b.slot().on_hub(), "b is on the hub");
    kcheck_eq!(t, b.idx(), idx);
    add(1, 2);
    kcheck_eq!(t, b.handler().entries.load(Relaxed), 1);
    kcheck!(
        t,
        b.handler().first.load(Relaxed) == 0,
        "b found {} in its fresh task variable",
        b.handler().first.load(Relaxed)
    );
    t.check_ok(b.unregister(), "unregister b")?;
    // And on an own ftrace_ops, after `b` left 1 there.
    let mut c = t.check_ok(GraphOps::new(VarSeen::new()), "GraphOps::new")?;
    t.check_ok(c.set_filter(c_str!("ufg_test_add")), "set_filter")?;
    t.check_ok(c.register(), "register c")?;
    kcheck_eq!(t, c.idx(), idx);
    add(1, 2);
    kcheck!(
        t,
        c.handler().first.load(Relaxed) == 0,
        "c found {} in its fresh task variable",
        c.handler().first.load(Relaxed)
    );
    drop(c);
    drop(others);
    core_is_idle(t)
}
