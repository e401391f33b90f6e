// SPDX-License-Identifier: GPL-2.0

//! The fgraph core on real functions: return values, data slots, the 16-ops limit, LRU index
//! reuse, deep recursion, parent data and task variables, unwinding.

use crate::bindings;
use crate::fgraph::graph::{self, graph, trampoline};
use crate::fgraph::{Entry, GraphHandler, GraphOps, Return};
use crate::pure::shadow::ARRAY_SIZE;
use crate::sys::ktest::{CaseResult, Failed, Test};
use crate::{kcheck, kcheck_eq, kunit_suite};
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use kernel::alloc::{KBox, KVec};
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;

/// Counts entries and returns; optionally reserves `bytes` per entry holding a pattern derived
/// from `tag` and the first argument, and checks it (and, for `ufg_test_add`, the return value)
/// at the return.
struct Rec {
    entries: AtomicUsize,
    returns: AtomicUsize,
    bad: AtomicUsize,
    bytes: usize,
    tag: usize,
    check_sum: bool,
}

impl Rec {
    fn new(bytes: usize, tag: usize, check_sum: bool) -> Self {
        Self {
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            bad: AtomicUsize::new(0),
            bytes,
            tag,
            check_sum,
        }
    }

    fn pattern(&self, arg: usize, i: usize) -> usize {
        self.tag.wrapping_mul(0x1000_0001) ^ (arg << 8) ^ i
    }
}

impl GraphHandler for Rec {
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        self.entries.fetch_add(1, Relaxed);
        if self.bytes > 0 {
            let arg = e.regs.arg(0);
            let sum = e.regs.arg(0).wrapping_add(e.regs.arg(1)) as u32 as usize;
            match e.reserve(self.bytes) {
                Some(w) => {
                    for (i, x) in w.iter_mut().enumerate() {
                        *x = self.pattern(arg, i);
                    }
                    if self.check_sum {
                        w[0] = sum;
                    }
                }
                None => {
                    self.bad.fetch_add(1, Relaxed);
                }
            }
        }
        true
    }

    fn ret(&self, r: &mut Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
        if self.bytes == 0 {
            return;
        }
        let ok = match r.data() {
            Some(w) if w.len() == self.bytes.div_ceil(8) => {
                if self.check_sum {
                    w[0] == r.retval() as u32 as usize
                } else {
                    // The first argument is gone at return: recover it from word 1's pattern.
                    let arg = (w.get(1).map_or(w[0], |&x| x ^ 1)
                        ^ self.tag.wrapping_mul(0x1000_0001))
                        >> 8;
                    w.iter()
                        .enumerate()
                        .all(|(i, &x)| x == self.pattern(arg, i))
                }
            }
            _ => false,
        };
        if !ok {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

fn ops_on(t: &Test, glob: &CStr, h: Rec) -> Result<GraphOps<Rec>, Failed> {
    let mut ops = t.check_ok(GraphOps::new(h), "GraphOps::new")?;
    t.check_ok(ops.set_filter(glob), "set_filter")?;
    Ok(ops)
}

fn core_is_idle(t: &Test) -> CaseResult {
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.registered(), 0);
    Ok(())
}

fn add(a: i32, b: i32) -> i32 {
    // SAFETY: a plain C fixture (testfns.c) with no preconditions.
    unsafe { bindings::ufg_test_add(a, b) }
}

fn return_values_and_counts(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let mut ops = ops_on(t, c_str!("ufg_test_add"), Rec::new(8, 1, true))?;
    t.check_ok(ops.register(), "register")?;
    for i in 0..200 {
        kcheck_eq!(t, add(i, 2 * i), 3 * i);
    }
    let h = ops.handler();
    kcheck_eq!(t, h.entries.load(Relaxed), 200);
    kcheck_eq!(t, h.returns.load(Relaxed), 200);
    kcheck_eq!(t, h.bad.load(Relaxed), 0);
    t.check_ok(ops.unregister(), "unregister")?;
    add(1, 1);
    kcheck_eq!(t, ops.handler().entries.load(Relaxed), 200);
    Ok(())
}

/// Counts, at each return, whether the call times were taken (`calltime` set and `rettime` not
/// before it) or left at 0 (both 0).
struct Timed<const WANT: bool> {
    taken: AtomicUsize,
    zero: AtomicUsize,
}

impl<const WANT: bool> Timed<WANT> {
    fn new() -> Self {
        Self {
            taken: AtomicUsize::new(0),
            zero: AtomicUsize::new(0),
        }
    }
}

impl<const WANT: bool> GraphHandler for Timed<WANT> {
    const WANTS_TIMES: bool = WANT;

    fn entry(&self, _e: &mut Entry<'_>) -> bool {
        true
    }

    fn ret(&self, r: &mut Return<'_>) {
        if r.calltime != 0 && r.rettime >= r.calltime {
            self.taken.fetch_add(1, Relaxed);
        } else if r.calltime == 0 && r.rettime == 0 {
            self.zero.fetch_add(1, Relaxed);
        }
    }
}

// The clock is read only while a registered handler wants call times; one that does, on the
// same function as one that does not, gets them whichever of the two pushed the frame.
fn call_times_only_when_wanted(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let mut plain = t.check_ok(GraphOps::new(Timed::<false>::new()), "GraphOps::new")?;
    t.check_ok(plain.set_filter(c_str!("ufg_test_add")), "set_filter")?;
    t.check_ok(plain.register(), "register")?;
    for i in 0..20 {
        add(i, 1);
    }
    kcheck_eq!(t, plain.handler().zero.load(Relaxed), 20);

    let mut timed = t.check_ok(GraphOps::new(Timed::<true>::new()), "GraphOps::new")?;
    t.check_ok(timed.set_filter(c_str!("ufg_test_add")), "set_filter")?;
    t.check_ok(timed.register(), "register")?;
    for i in 0..20 {
        add(i, 1);
    }
    kcheck_eq!(t, timed.handler().taken.load(Relaxed), 20);
    kcheck_eq!(t, timed.handler().zero.load(Relaxed), 0);
    t.check_ok(timed.unregister(), "unregister")?;

    for i in 0..20 {
        add(i, 1);
    }
    kcheck_eq!(t, plain.handler().zero.load(Relaxed), 40);
    t.check_ok(plain.unregister(), "unregister")?;
    Ok(())
}

// Upstream's "multiple fgraph storage" selftest: several ops on one function, each storing data
// of a different size, each reading back exactly its own on return.
fn multiple_storage(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let sizes = [1usize, 8, 24, 100, 256];
    let mut all = KVec::new();
    for (n, &bytes) in sizes.iter().enumerate() {
        let mut ops = ops_on(t, c_str!("ufg_test_add"), Rec::new(bytes, n + 7, false))?;
        t.check_ok(ops.register(), "register")?;
        t.check_ok(all.push(ops, GFP_KERNEL).map_err(Into::into), "push")?;
    }
    for i in 0..50 {
        kcheck_eq!(t, add(i, 1), i + 1);
    }
    for (n, ops) in all.iter().enumerate() {
        let h = ops.handler();
        kcheck!(
            t,
            h.entries.load(Relaxed) == 50 && h.returns.load(Relaxed) == 50,
            "ops {} ({} bytes): {} entries {} returns",
            n,
            sizes[n],
            h.entries.load(Relaxed),
            h.returns.load(Relaxed)
        );
        kcheck!(
            t,
            h.bad.load(Relaxed) == 0,
            "ops {} ({} bytes): {} bad data",
            n,
            sizes[n],
            h.bad.load(Relaxed)
        );
    }
    Ok(())
}

fn mul(a: i64, b: i64) -> i64 {
    // SAFETY: a plain C fixture with no preconditions.
    unsafe { bindings::ufg_test_mul(a as _, b as _) as i64 }
}

fn fill(t: &Test, n: usize) -> Result<KVec<GraphOps<Rec>>, Failed> {
    let mut v = KVec::new();
    for _ in 0..n {
        let mut ops = ops_on(t, c_str!("ufg_test_mul"), Rec::new(0, 0, false))?;
        t.check_ok(ops.register(), "register")?;
        t.check_ok(v.push(ops, GFP_KERNEL).map_err(Into::into), "push")?;
    }
    Ok(v)
}

fn seventeenth_ops_is_enospc(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let all = fill(t, ARRAY_SIZE)?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.registered(), ARRAY_SIZE);
    let mut extra = ops_on(t, c_str!("ufg_test_mul"), Rec::new(0, 0, false))?;
    match extra.register() {
        Err(e) => kcheck!(t, e == ENOSPC, "17th register: {:?}", e),
        Ok(()) => return Err(t.fail(format_args!("a 17th ops was accepted"))),
    }
    kcheck_eq!(t, g.registered(), ARRAY_SIZE);
    kcheck!(t, extra.idx().is_none());
    kcheck_eq!(t, mul(6, 7), 42);
    // Every registered ops saw the call; the refused one did not.
    for ops in all.iter() {
        kcheck_eq!(t, ops.handler().returns.load(Relaxed), 1);
    }
    kcheck_eq!(t, extra.handler().entries.load(Relaxed), 0);
    drop(all);
    kcheck_eq!(t, g.registered(), 0);
    // With room again, the refused ops registers fine.
    t.check_ok(extra.register(), "register after the others left")?;
    kcheck_eq!(t, mul(2, 3), 6);
    kcheck_eq!(t, extra.handler().returns.load(Relaxed), 1);
    Ok(())
}

fn lru_reuses_released_index_last(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    // With free indexes around, a released index is not handed out next.
    let a = fill(t, 1)?;
    let freed = a[0].idx().unwrap_or(usize::MAX);
    drop(a);
    let b = fill(t, 1)?;
    kcheck!(
        t,
        b[0].idx() != Some(freed),
        "index {} reused at once",
        freed
    );
    drop(b);
    // Full array: free two, in order; they come back in the order they were freed.
    let mut all = fill(t, ARRAY_SIZE)?;
    let first = all[3].idx().unwrap_or(usize::MAX);
    let second = all[11].idx().unwrap_or(usize::MAX);
    t.check_ok(all[3].unregister(), "unregister")?;
    t.check_ok(all[11].unregister(), "unregister")?;
    let x = fill(t, 1)?;
    let y = fill(t, 1)?;
    kcheck_eq!(t, x[0].idx(), Some(first));
    kcheck_eq!(t, y[0].idx(), Some(second));
    Ok(())
}

fn deep_recursion_counts_overrun(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let mut ops = ops_on(t, c_str!("ufg_test_recurse"), Rec::new(0, 0, false))?;
    t.check_ok(ops.register(), "register")?;
    const DEPTH: i32 = 150;
    // SAFETY: a plain C fixture; 150 levels are well within the kernel stack.
    let r = unsafe { bindings::ufg_test_recurse(DEPTH) };
    kcheck_eq!(t, r, DEPTH);
    let h = ops.handler();
    let overrun = ops.slot().missed_overrun.load(Relaxed) as usize;
    kcheck!(t, overrun > 0, "150 nested frames fit in one page?");
    kcheck_eq!(t, h.entries.load(Relaxed) + overrun, DEPTH as usize + 1);
    kcheck_eq!(t, h.returns.load(Relaxed), h.entries.load(Relaxed));
    t.info(format_args!(
        "{} frames hooked, {} overrun",
        h.entries.load(Relaxed),
        overrun
    ));
    // And the stack is usable again at once.
    // SAFETY: as above.
    kcheck_eq!(t, unsafe { bindings::ufg_test_recurse(5) }, 5);
    Ok(())
}

// ftrace reports a function by its patched call site, a few bytes into it (after ENDBR).
fn near(ip: usize, sym: usize) -> bool {
    ip >= sym && ip < sym + 16
}

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

fn parent_data_and_task_var(t: &mut Test) -> CaseResult {
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

/// Takes a stack trace in the return callback of the function at `only` (any, if 0): ufgraph's
/// unwinder, or with `kernel` the kernel's own `stack_trace_save()`, as an upstream client's
/// exit handler calls it.
struct Tracer {
    kernel: bool,
    only: usize,
    trace: [AtomicUsize; 16],
    n: AtomicUsize,
}

impl Tracer {
    fn new(kernel: bool, only: usize) -> Self {
        Tracer {
            kernel,
            only,
            trace: [const { AtomicUsize::new(0) }; 16],
            n: AtomicUsize::new(0),
        }
    }

    fn trace(&self) -> KVec<usize> {
        let mut v = KVec::new();
        for slot in self.trace.iter().take(self.n.load(Relaxed).min(16)) {
            let _ = v.push(slot.load(Relaxed), GFP_KERNEL);
        }
        v
    }
}

impl GraphHandler for Tracer {
    fn entry(&self, _e: &mut Entry<'_>) -> bool {
        true
    }

    fn ret(&self, r: &mut Return<'_>) {
        if self.only != 0 && !near(r.func, self.only) {
            return;
        }
        let mut buf = [0usize; 16];
        let n = if self.kernel {
            // SAFETY: `buf` has room for 16 entries; the walk reads the current task's stacks.
            unsafe { bindings::stack_trace_save(buf.as_mut_ptr(), 16, 0) as usize }
        } else {
            graph::stack_trace(&mut buf, 0)
        };
        for (slot, v) in self.trace.iter().zip(buf.iter()) {
            slot.store(*v, Relaxed);
        }
        self.n.store(n, Relaxed);
    }
}

/// Whether `ip` is a return address inside the small fixture at `func` (past its first
/// instruction). The fixtures are a few instructions long; the bound stays short of what the
/// linker may put after them (testfns.c's last fixture is followed by the trampoline).
fn inside(ip: usize, func: usize) -> bool {
    ip > func && ip < func + 0x40
}

fn unwinding_shows_the_real_caller(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let mut ops = t.check_ok(GraphOps::new(Tracer::new(false, 0)), "GraphOps::new")?;
    t.check_ok(ops.set_filter(c_str!("ufg_test_add")), "filter")?;
    t.check_ok(ops.register(), "register")?;
    // SAFETY: a plain C fixture.
    kcheck_eq!(t, unsafe { bindings::ufg_test_caller(5) }, 7);
    let trace = ops.handler().trace();
    kcheck!(t, trace.len() > 3, "only {} frames", trace.len());
    let caller = bindings::ufg_test_caller as *const () as usize;
    for (i, ip) in trace.iter().enumerate() {
        kcheck!(t, *ip != trampoline(), "frame {} is the trampoline", i);
    }
    kcheck!(
        t,
        trace.iter().any(|ip| inside(*ip, caller)),
        "ufg_test_caller ({:#x}) is not in the trace",
        caller
    );
    drop(ops);
    // Both hooked, the trace taken at the inner return: each trampoline stands for its own
    // frame (the inner one's return in progress, settled already, must be accounted for, or the
    // outer frame's trampoline would be given the inner frame's address, inside ufg_test_outer,
    // a second time).
    let outer = bindings::ufg_test_outer as *const () as usize;
    let inner = bindings::ufg_test_inner as *const () as usize;
    let mut ops = t.check_ok(GraphOps::new(Tracer::new(false, inner)), "GraphOps::new")?;
    t.check_ok(
        ops.set_filter_ips(&[outer, inner], false, false),
        "filter ips",
    )?;
    t.check_ok(ops.register(), "register")?;
    // SAFETY: a plain C fixture.
    kcheck_eq!(t, unsafe { bindings::ufg_test_outer(1) }, 7);
    let trace = ops.handler().trace();
    for (i, ip) in trace.iter().enumerate() {
        kcheck!(
            t,
            *ip != trampoline(),
            "nested: frame {} is the trampoline",
            i
        );
    }
    let twice = trace.iter().filter(|ip| inside(**ip, outer)).count();
    kcheck_eq!(t, twice, 1);
    Ok(())
}

/// The kernel's own unwinder, called in a return callback as upstream's fprobe sample does,
/// shows the real caller of the function returning (the trampoline settles the real address
/// where its frame keeps the function's before any callback runs). A hooked frame further out
/// still returns to our trampoline: the kernel cannot know its real address. On x86_64 ORC
/// stops there cleanly (the guard before the trampoline); arm64's unwinder follows frame
/// records and reports it as our address, then goes on.
fn kernel_unwinder_sees_the_caller(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let caller = bindings::ufg_test_caller as *const () as usize;
    let outer = bindings::ufg_test_outer as *const () as usize;
    let inner = bindings::ufg_test_inner as *const () as usize;
    {
        let mut ops = t.check_ok(GraphOps::new(Tracer::new(true, 0)), "GraphOps::new")?;
        t.check_ok(ops.set_filter(c_str!("ufg_test_add")), "filter")?;
        t.check_ok(ops.register(), "register")?;
        // SAFETY: a plain C fixture.
        kcheck_eq!(t, unsafe { bindings::ufg_test_caller(5) }, 7);
        let trace = ops.handler().trace();
        kcheck!(t, trace.len() > 2, "only {} frames", trace.len());
        for (i, ip) in trace.iter().enumerate() {
            kcheck!(
                t,
                *ip != trampoline(),
                "frame {} of {} is the trampoline",
                i,
                trace.len()
            );
        }
        kcheck!(
            t,
            trace.iter().any(|ip| inside(*ip, caller)),
            "ufg_test_caller ({:#x}) is not in the trace",
            caller
        );
    }
    // Both hooked: the trace taken at ufg_test_inner's return names its caller, ufg_test_outer,
    // and then meets the trampoline ufg_test_outer will return to.
    let mut ops = t.check_ok(GraphOps::new(Tracer::new(true, inner)), "GraphOps::new")?;
    t.check_ok(
        ops.set_filter_ips(&[outer, inner], false, false),
        "filter ips",
    )?;
    t.check_ok(ops.register(), "register")?;
    // SAFETY: a plain C fixture.
    kcheck_eq!(t, unsafe { bindings::ufg_test_outer(1) }, 7);
    let trace = ops.handler().trace();
    let at_outer = trace.iter().position(|ip| inside(*ip, outer));
    let at_tramp = trace.iter().position(|ip| *ip == trampoline());
    kcheck!(
        t,
        at_outer.is_some(),
        "ufg_test_outer ({:#x}) is not in the trace ({} frames)",
        outer,
        trace.len()
    );
    kcheck!(
        t,
        at_tramp.is_some(),
        "the outer frame's trampoline is not in the trace ({} frames)",
        trace.len()
    );
    if let (Some(o), Some(tr)) = (at_outer, at_tramp) {
        kcheck!(
            t,
            o < tr,
            "ufg_test_outer at {} is after the trampoline at {}",
            o,
            tr
        );
        #[cfg(CONFIG_X86_64)]
        kcheck_eq!(t, tr + 1, trace.len());
    }
    Ok(())
}

/// A `Rec` on the hub: its filter given as addresses.
fn hub_ops(t: &Test, ips: &[usize], h: Rec) -> Result<GraphOps<Rec>, Failed> {
    let mut ops = t.check_ok(GraphOps::new(h), "GraphOps::new")?;
    t.check_ok(ops.set_filter_ips(ips, false, false), "set_filter_ips")?;
    Ok(ops)
}

fn hub_shares_one_ftrace_ops(t: &mut Test) -> CaseResult {
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
fn hub_refusals_leave_nothing(t: &mut Test) -> CaseResult {
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
fn hub_filter_list_follows_the_ops(t: &mut Test) -> CaseResult {
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
fn hub_and_own_ops_in_every_order(t: &mut Test) -> CaseResult {
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
fn hub_callback_recursion(t: &mut Test) -> CaseResult {
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
    let missed_ok = |m: u64| m == 1 || (super::LIST_FUNC_GUARDS && m == 0);
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
fn shared_frame_outlives_its_ops(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let call_ip = bindings::ufg_test_call as *const () as usize;
    let call = |x: kernel::ffi::c_long| {
        // SAFETY: a plain C fixture; `unregister_inside` needs nothing but process context.
        unsafe { bindings::ufg_test_call(Some(unregister_inside), x) }
    };
    for gone in [[true, false], [false, true], [true, true]] {
        // `a` (lowest index: the hub calls it first) pushes the frame, `b` joins it on the hub,
        // `c` from its own ftrace_ops.
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
fn c_shared_filter(t: &mut Test) -> CaseResult {
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
fn task_vars_start_at_zero(t: &mut Test) -> CaseResult {
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

/// Forks on a kernel that forbids allocating in the fork probe (PREEMPT_RT; forced here on every
/// kernel): a fork takes its stack from the pool; with the pool empty, the task is deferred
/// (counted, no stack, no allocation, the refill work queued); the refill work fills the pool
/// again, and the next fork gets a zeroed stack from it. Before session 7 the fork probe
/// allocated with GFP_ATOMIC under a spinlock_t, both forbidden there on PREEMPT_RT.
fn forks_with_an_empty_pool(t: &mut Test) -> CaseResult {
    use crate::sys::task::TaskRef;
    core_is_idle(t)?;
    // A registered ops: every task has a stack, and the pool is full.
    let mut ops = ops_on(t, c_str!("ufg_test_add"), Rec::new(0, 0, false))?;
    t.check_ok(ops.register(), "register")?;
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    // Fake tasks, zeroed and as big as the fields looking a task up reads (`is_idle_task()`
    // reads `flags`): two words each, as before session 10, made those reads run past the
    // allocation, which KASAN reported now and then (the debug kernel's "flaky" failure).
    let fakes = t.check_ok(
        KBox::new([[0usize; 512]; 2], GFP_KERNEL).map_err(Error::from),
        "KBox::new",
    )?;
    let (fake1, fake2) = (
        TaskRef(fakes[0].as_ptr() as usize),
        TaskRef(fakes[1].as_ptr() as usize),
    );
    // The pool and the counters are the whole kernel's: a real fork or exit meanwhile (a kworker
    // starting, on the PREEMPT_RT debug kernel every fork takes from the pool) changes them, or
    // its refill fills the drained pool before the fake fork. Such a try is repeated; a defect
    // fails every try.
    let mut outcome = Ok(());
    for _ in 0..8 {
        outcome = fork_pool_try(g.tasks(), fake1, fake2);
        if !matches!(outcome, Err(Mismatch { hard: false, .. })) {
            break;
        }
    }
    drop(ops);
    // The stacks are freed after a grace period (kfree_rcu): wait before the fakes go.
    crate::sys::sync::synchronize_rcu();
    drop(fakes);
    if let Err(m) = outcome {
        return Err(t.fail(format_args!("{}: {} (expected {})", m.what, m.got, m.want)));
    }
    core_is_idle(t)
}

/// What one try of [`forks_with_an_empty_pool`] saw differ.
struct Mismatch {
    what: &'static str,
    got: u64,
    want: u64,
    /// Not explained by other tasks forking or exiting meanwhile.
    hard: bool,
}

fn fork_pool_try(
    tasks: &crate::fgraph::tasks::Tasks,
    fake1: crate::sys::task::TaskRef,
    fake2: crate::sys::task::TaskRef,
) -> Result<(), Mismatch> {
    use crate::fgraph::tasks::{AS_IF_RT, POOL};
    use crate::sys::sync::NoPreempt;
    let soft = |what, got, want| Mismatch {
        what,
        got,
        want,
        hard: false,
    };
    let has = |task| {
        tasks
            .of_task(task, &NoPreempt::new())
            .map(|s| s.depth() == 0 && s.top() == 0)
    };
    let deferred = tasks.stats.fork_deferred.load(Relaxed);
    let stacks = tasks.count();
    let taken = tasks.drain_for_test();
    let held = taken.len();

    AS_IF_RT.store(true, Relaxed);
    tasks.fork_for_test(fake1);
    AS_IF_RT.store(false, Relaxed);
    let (deferred1, stacks1, has1) = (
        tasks.stats.fork_deferred.load(Relaxed),
        tasks.count(),
        has(fake1),
    );
    // The deferred fork queued the refill: once it has run, the pool is full again.
    let pooled = tasks.refill_for_test(taken, fake1);

    AS_IF_RT.store(true, Relaxed);
    tasks.fork_for_test(fake2);
    AS_IF_RT.store(false, Relaxed);
    let (deferred2, stacks2, has2) = (
        tasks.stats.fork_deferred.load(Relaxed),
        tasks.count(),
        has(fake2),
    );
    let _ = tasks.refill_for_test(KVec::new(), fake2);
    let stacks3 = tasks.count();

    if has2 == Some(false) {
        // A pooled stack handed out dirty: no other task explains that.
        return Err(Mismatch {
            what: "the fork from the pool got a stack that is not empty",
            got: 1,
            want: 0,
            hard: true,
        });
    }
    let checks = [
        (
            held == 0 || held > POOL,
            "stacks the pool held",
            held as u64,
            POOL as u64,
        ),
        (
            deferred1 != deferred + 1,
            "fork_deferred after the fork on an empty pool",
            deferred1,
            deferred + 1,
        ),
        (
            has1.is_some(),
            "the fork on an empty pool got a stack",
            1,
            0,
        ),
        (
            stacks1 != stacks,
            "stacks after the deferred fork",
            stacks1 as u64,
            stacks as u64,
        ),
        (
            pooled != POOL,
            "pooled stacks after the refill",
            pooled as u64,
            POOL as u64,
        ),
        (
            deferred2 != deferred1,
            "fork_deferred after the fork on a full pool",
            deferred2,
            deferred1,
        ),
        (has2.is_none(), "the fork from the pool got no stack", 0, 1),
        (
            stacks2 != stacks + 1,
            "stacks after the fork from the pool",
            stacks2 as u64,
            stacks as u64 + 1,
        ),
        (
            stacks3 != stacks,
            "stacks once the fake task is gone",
            stacks3 as u64,
            stacks as u64,
        ),
    ];
    match checks.into_iter().find(|c| c.0) {
        Some((_, what, got, want)) => Err(soft(what, got, want)),
        None => Ok(()),
    }
}

/// What a [`Joiner`] does at an entry: set once its place in the hub's call order (lowest index
/// first) is known.
const J_KEEP: usize = 0;
/// Reserves 24 bytes of junk, then declines: the reservation must go with it.
const J_RESERVE_DECLINE: usize = 1;
/// Hooks the call being entered with the rethook API (which must be refused: the frame is
/// being built), then keeps it with data.
const J_HOOK: usize = 2;
/// Declines without reserving.
const J_DECLINE: usize = 3;

/// A hub (or own-ops) ops whose entry does what `mode` says, on `ufg_test_add`: keeping
/// callbacks store the expected return value (tagged) and check it at the return; entry and
/// return depths are recorded, and the data `peek` (an ops index) reserved in this frame must
/// be gone by the time this entry runs.
struct Joiner {
    mode: AtomicUsize,
    peek: AtomicUsize,
    tag: usize,
    entries: AtomicUsize,
    returns: AtomicUsize,
    bad: AtomicUsize,
    depth: AtomicUsize,
    ret_depth: AtomicUsize,
    hooked: AtomicUsize,
}

impl Joiner {
    fn new(tag: usize) -> Self {
        Self {
            mode: AtomicUsize::new(J_KEEP),
            peek: AtomicUsize::new(usize::MAX),
            tag,
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            bad: AtomicUsize::new(0),
            depth: AtomicUsize::new(0),
            ret_depth: AtomicUsize::new(0),
            hooked: AtomicUsize::new(0),
        }
    }
}

/// Counts the returns of [`JRH`] (none expected: every hook is refused).
static JRH_RETURNS: AtomicUsize = AtomicUsize::new(0);

/// A callback C calls.
///
/// # Safety
///
/// Called by the rethook shim only, for [`JRH`].
unsafe extern "C" fn jrh_ret(
    _rh: *mut bindings::ufgraph_rethook,
    _data: *mut core::ffi::c_void,
    _ret_addr: kernel::ffi::c_ulong,
    _fregs: *mut bindings::ftrace_regs,
) {
    JRH_RETURNS.fetch_add(1, Relaxed);
}

static mut JRH: bindings::ufgraph_rethook = bindings::ufgraph_rethook {
    handler: Some(jrh_ret),
    data_size: 8,
    nmissed: 0,
    ufgraph_private: core::ptr::null_mut(),
};

fn jrh() -> *mut bindings::ufgraph_rethook {
    core::ptr::addr_of_mut!(JRH)
}

impl GraphHandler for Joiner {
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        self.entries.fetch_add(1, Relaxed);
        self.depth.store(e.depth(), Relaxed);
        let peek = self.peek.load(Relaxed);
        if peek != usize::MAX {
            if let Some(g) = graph() {
                if g.retrieve_data(peek, 0).is_some() {
                    self.bad.fetch_add(1, Relaxed);
                }
            }
        }
        let sum = e.regs.arg(0).wrapping_add(e.regs.arg(1)) as u32 as usize;
        match self.mode.load(Relaxed) {
            J_RESERVE_DECLINE => {
                if let Some(w) = e.reserve(24) {
                    w.fill(usize::MAX);
                }
                false
            }
            J_DECLINE => false,
            m => {
                if m == J_HOOK {
                    // SAFETY: the entry registers of the call being entered, preemption
                    // disabled; JRH is registered while this mode is set.
                    let d = unsafe { crate::kretprobe::rethook_hook(jrh(), e.regs.as_ptr()) };
                    if !d.is_null() {
                        self.hooked.fetch_add(1, Relaxed);
                    }
                }
                match e.reserve(16) {
                    Some(w) => {
                        w[0] = sum ^ self.tag;
                        w[1] = !self.tag;
                    }
                    None => {
                        self.bad.fetch_add(1, Relaxed);
                    }
                }
                true
            }
        }
    }

    fn ret(&self, r: &mut Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
        self.ret_depth.store(r.depth(), Relaxed);
        let ok = matches!(r.data(), Some(w) if w.len() == 2
            && w[0] ^ self.tag == r.retval() as u32 as usize
            && w[1] == !self.tag);
        if !ok {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

/// Several hub ops on one call, the later ones joining the frame together (`join_all`), with
/// an own-ftrace_ops ops on the same call: a callback that reserves and declines loses its data
/// before the next one runs, one that declines without data changes nothing, a rethook made
/// from inside a joining callback for the same call is refused (the frame is being built from
/// the first joiner to the last), every keeper gets its own data back, every callback sees the
/// same depth at entry and return, and the own ops joins the same frame (same depth).
fn hub_join_all_callbacks(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let add_ip = bindings::ufg_test_add as *const () as usize;
    JRH_RETURNS.store(0, Relaxed);
    // SAFETY: JRH is a static, valid for ever; unregistered below (also on failure).
    let r = unsafe { crate::kretprobe::rethook_register(jrh()) };
    t.check_ok(r, "rethook_register")?;
    let _undo = kernel::types::ScopeGuard::new(|| crate::kretprobe::rethook_unregister(jrh()));
    let mut hub = KVec::new();
    for tag in 1..=5 {
        let mut o = t.check_ok(GraphOps::new(Joiner::new(tag)), "GraphOps::new")?;
        t.check_ok(o.set_filter_ips(&[add_ip], false, false), "set_filter_ips")?;
        t.check_ok(hub.push(o, GFP_KERNEL).map_err(Into::into), "push")?;
    }
    let mut own = t.check_ok(GraphOps::new(Joiner::new(6)), "GraphOps::new")?;
    t.check_ok(own.set_filter(c_str!("ufg_test_add")), "set_filter")?;
    for o in hub.iter_mut() {
        t.check_ok(o.register(), "register")?;
    }
    t.check_ok(own.register(), "register own")?;
    // The hub calls its ops lowest index first (indexes come in LRU order).
    let mut order = [0usize, 1, 2, 3, 4];
    order.sort_unstable_by_key(|&i| hub[i].idx());
    let modes = [J_KEEP, J_RESERVE_DECLINE, J_HOOK, J_DECLINE, J_KEEP];
    for (&i, &m) in order.iter().zip(modes.iter()) {
        hub[i].handler().mode.store(m, Relaxed);
    }
    // The last keeper looks for the data the reserving decliner left.
    let decliner = hub[order[1]].idx().unwrap_or(usize::MAX);
    hub[order[4]].handler().peek.store(decliner, Relaxed);
    const N: usize = 20;
    for i in 0..N as i32 {
        kcheck_eq!(t, add(i, 2 * i), 3 * i);
    }
    // SAFETY: JRH is registered.
    let jrh_missed = unsafe { (*jrh()).nmissed };
    let depth = hub[order[0]].handler().depth.load(Relaxed);
    for (n, o) in Iterator::chain(hub.iter(), core::iter::once(&own)).enumerate() {
        let h = o.handler();
        let keeps = !matches!(h.mode.load(Relaxed), J_RESERVE_DECLINE | J_DECLINE);
        let want_ret = if keeps { N } else { 0 };
        kcheck!(
            t,
            h.entries.load(Relaxed) == N
                && h.returns.load(Relaxed) == want_ret
                && h.bad.load(Relaxed) == 0
                && h.hooked.load(Relaxed) == 0
                && h.depth.load(Relaxed) == depth
                && (!keeps || h.ret_depth.load(Relaxed) == depth),
            "ops {} (mode {}): {} entries {} returns {} bad {} hooked, depth {} ret depth {}; want {} {} 0 0, depth {}",
            n,
            h.mode.load(Relaxed),
            h.entries.load(Relaxed),
            h.returns.load(Relaxed),
            h.bad.load(Relaxed),
            h.hooked.load(Relaxed),
            h.depth.load(Relaxed),
            h.ret_depth.load(Relaxed),
            N,
            want_ret,
            depth
        );
    }
    kcheck_eq!(t, depth, 1);
    // Every hook from inside the joining callback was refused and counted, none returned.
    kcheck_eq!(t, (jrh_missed, JRH_RETURNS.load(Relaxed)), (N, 0));
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.tasks().frames_now(), 0);
    for o in hub.iter_mut() {
        t.check_ok(o.unregister(), "unregister")?;
    }
    t.check_ok(own.unregister(), "unregister own")?;
    drop(_undo);
    core_is_idle(t)
}

kunit_suite!(
    FGRAPH_SUITE,
    "ufgraph_fgraph",
    [
        forks_with_an_empty_pool,
        task_vars_start_at_zero,
        return_values_and_counts,
        hub_shares_one_ftrace_ops,
        hub_refusals_leave_nothing,
        hub_filter_list_follows_the_ops,
        c_shared_filter,
        shared_frame_outlives_its_ops,
        hub_and_own_ops_in_every_order,
        hub_callback_recursion,
        hub_join_all_callbacks,
        call_times_only_when_wanted,
        multiple_storage,
        seventeenth_ops_is_enospc,
        lru_reuses_released_index_last,
        deep_recursion_counts_overrun,
        parent_data_and_task_var,
        unwinding_shows_the_real_caller,
        kernel_unwinder_sees_the_caller,
    ]
);
