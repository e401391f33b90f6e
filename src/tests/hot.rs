// SPDX-License-Identifier: GPL-2.0

//! The hot path's inline primitives (`arch::hot`, and the recursion guard built on them) against
//! what the kernel's own inline helpers say, through the C glue: they must agree exactly, or the
//! hot path reads the wrong task, CPU, preempt count or recursion bits.

use crate::bindings;
use crate::fgraph::arch::hot;
use crate::sys::ktest::{CaseResult, Test};
use crate::sys::sync::{NoPreempt, Recursion, Refused};
use crate::{kcheck, kcheck_eq, kunit_suite};

fn task_cpu_and_counts_match(t: &mut Test) -> CaseResult {
    // SAFETY: no preconditions.
    kcheck_eq!(t, hot::current(), unsafe { bindings::ufg_current() }
        as usize);
    let np = NoPreempt::new();
    // SAFETY: as above (preemption disabled: the CPU is stable).
    kcheck_eq!(t, hot::cpu(), unsafe { bindings::ufg_cpu() } as usize);
    // SAFETY: as above.
    kcheck_eq!(t, hot::preempt_count(), unsafe {
        bindings::ufg_preempt_count()
    });
    // SAFETY: as above.
    kcheck_eq!(t, hot::rcu_watching(), unsafe {
        bindings::rcu_is_watching()
    });
    drop(np);
    for cpu in 0..crate::sys::task::nr_cpu_ids() {
        // SAFETY: as above.
        kcheck_eq!(t, hot::cpu_online(cpu), unsafe {
            bindings::ufg_cpu_online(cpu as u32)
        });
    }
    // One preempt_disable() is one count, where the kernel counts (CONFIG_PREEMPT_COUNT).
    let before = hot::preempt_count();
    hot::preempt_disable();
    let during = hot::preempt_count();
    // SAFETY: balances the disable just above; nothing relies on it.
    unsafe { hot::preempt_enable() };
    kcheck_eq!(
        t,
        during - before,
        if cfg!(CONFIG_PREEMPT_COUNT) { 1 } else { 0 }
    );
    kcheck_eq!(t, hot::preempt_count(), before);
    Ok(())
}

fn recursion_guard_matches_ftrace(t: &mut Test) -> CaseResult {
    let g = match Recursion::try_lock(0, 0) {
        Ok(g) => g,
        Err(e) => return Err(t.fail(format_args!("guard refused in a test task: {:?}", e))),
    };
    // ftrace's own guard, in the same context, sees ours taken: it gets the transition bit...
    // SAFETY: balanced below.
    let b2 = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    kcheck!(t, b2 >= 0, "the transition level was refused");
    // ...and a third level is refused, by ftrace's guard and by ours.
    // SAFETY: as above (a refusal takes nothing).
    kcheck_eq!(t, unsafe { bindings::ufg_recursion_trylock(0, 0) }, -1);
    kcheck!(
        t,
        matches!(Recursion::try_lock(0, 0), Err(Refused::Recursion))
    );
    // SAFETY: pairs with the successful trylock.
    unsafe { bindings::ufg_recursion_unlock(b2) };
    drop(g);
    // Released: ftrace's guard takes its normal bit again, and ours after it.
    // SAFETY: as above.
    let b3 = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    kcheck!(t, b3 >= 0);
    let inner = Recursion::try_lock(0, 0);
    kcheck!(
        t,
        inner.is_ok(),
        "ours refused the transition level under ftrace's"
    );
    drop(inner);
    // SAFETY: pairs with the trylock above.
    unsafe { bindings::ufg_recursion_unlock(b3) };
    Ok(())
}

kunit_suite!(
    HOT_SUITE,
    "ufgraph_hot",
    [task_cpu_and_counts_match, recursion_guard_matches_ftrace,]
);
