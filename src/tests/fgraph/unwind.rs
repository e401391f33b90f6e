// SPDX-License-Identifier: GPL-2.0

//! Stack traces through the return trampoline: ufgraph's unwinder and the kernel's own.

use super::*;

/// Takes a stack trace in the return callback of the function at `only` (any, if 0): ufgraph's
/// unwinder, or with `kernel` the kernel's own `stack_trace_save()`, as an upstream client's
/// exit handler calls it.
struct Tracer {
    kernel: bool,
    only: usize,
    trace: [AtomicUsize; 16],
    n: AtomicUsize,
    /// ufgraph's unwinder only: 1 if a second trace with `skip` 1 was the first one less one
    /// frame, 2 if not.
    skip_ok: AtomicUsize,
}

impl Tracer {
    fn new(kernel: bool, only: usize) -> Self {
        Tracer {
            kernel,
            only,
            trace: [const { AtomicUsize::new(0) }; 16],
            n: AtomicUsize::new(0),
            skip_ok: AtomicUsize::new(0),
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
            let n = graph::stack_trace(&mut buf, 0);
            // The same walk from the same frame, skipping one, drops exactly one frame: the
            // first frame is the unwinder's caller inside `stack_trace` (the same for both
            // calls), the second the return into this function (from a different call site
            // each time), and from the third on they must be alike.
            let mut skipped = [0usize; 16];
            let m = graph::stack_trace(&mut skipped, 1);
            let same = n > 2 && m + 1 >= n && skipped[1..n - 1] == buf[2..n];
            self.skip_ok.store(if same { 1 } else { 2 }, Relaxed);
            n
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

pub(super) fn unwinding_shows_the_real_caller(t: &mut Test) -> CaseResult {
    core_is_idle(t)?;
    let mut ops = t.check_ok(GraphOps::new(Tracer::new(false, 0)), "GraphOps::new")?;
    t.check_ok(ops.set_filter(c_str!("ufg_test_add")), "filter")?;
    t.check_ok(ops.register(), "register")?;
    // SAFETY: a plain C fixture.
    kcheck_eq!(t, unsafe { bindings::ufg_test_caller(5) }, 7);
    let trace = ops.handler().trace();
    kcheck!(t, trace.len() > 3, "only {} frames", trace.len());
    kcheck_eq!(t, ops.handler().skip_ok.load(Relaxed), 1);
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
pub(super) fn kernel_unwinder_sees_the_caller(t: &mut Test) -> CaseResult {
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
