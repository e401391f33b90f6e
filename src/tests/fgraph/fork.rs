// SPDX-License-Identifier: GPL-2.0

//! Forks when the fork probe may not allocate: the pool of stacks and its refill.

use super::*;

/// Forks on a kernel that forbids allocating in the fork probe (PREEMPT_RT; forced here on every
/// kernel): a fork takes its stack from the pool; with the pool empty, the task is deferred
/// (counted, no stack, no allocation, the refill work queued); the refill work fills the pool
/// again, and the next fork gets a zeroed stack from it. Before session 7 the fork probe
/// allocated with GFP_ATOMIC under a spinlock_t, both forbidden there on PREEMPT_RT.
pub(super) fn forks_with_an_empty_pool(t: &mut Test) -> CaseResult {
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
