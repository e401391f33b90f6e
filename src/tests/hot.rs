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

/// The current task's `trace_recursion` word.
fn recursion_word() -> usize {
    let p = hot::current().wrapping_add(bindings::UFG_TASK_TRACE_RECURSION) as *const usize;
    // SAFETY: the current task's own word, read whole.
    unsafe { p.read_volatile() }
}

/// A guard's release puts the word back exactly as its `try_lock` found it (it stores the saved
/// word rather than clearing its bit), at every level of nesting, and in task context takes the
/// normal context's bit, the one ftrace's guard takes.
fn recursion_guard_restores_the_word(t: &mut Test) -> CaseResult {
    let start = bindings::UFG_TRACE_FTRACE_START;
    kcheck!(t, hot::in_task_context());
    kcheck_eq!(t, crate::sys::sync::context_level(), 0);
    // The words are read with the guards held and checked after (a failing check allocates).
    let w0 = recursion_word();
    let g = match Recursion::try_lock(0, 0) {
        Ok(g) => g,
        Err(e) => return Err(t.fail(format_args!("guard refused in a test task: {:?}", e))),
    };
    let w1 = recursion_word();
    // A nested one (the transition bit), released first: back to `w1`, then to `w0`.
    let inner = Recursion::try_lock(0, 0);
    let inner_ok = inner.is_ok();
    let w2 = recursion_word();
    drop(inner);
    let w3 = recursion_word();
    // ftrace's own guard inside ours, released inside it: ours still restores `w0`.
    // SAFETY: balanced just below.
    let b = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    if b >= 0 {
        // SAFETY: pairs with the trylock.
        unsafe { bindings::ufg_recursion_unlock(b) };
    }
    let w4 = recursion_word();
    drop(g);
    let w5 = recursion_word();
    kcheck_eq!(t, w1, w0 | 1 << (bindings::UFG_TRACE_CTX_NORMAL + start));
    kcheck!(t, inner_ok);
    kcheck_eq!(
        t,
        w2,
        w1 | 1 << (bindings::UFG_TRACE_CTX_TRANSITION + start)
    );
    kcheck_eq!(t, w3, w1);
    kcheck!(t, b >= 0);
    kcheck_eq!(t, w4, w1);
    kcheck_eq!(t, w5, w0);
    Ok(())
}

/// What [`in_hardirq_guard`] saw, in a fake hardirq.
#[derive(Default)]
struct IrqSeen {
    task_context: bool,
    level: usize,
    before: usize,
    taken: usize,
    ftrace_second: i32,
    ftrace_third: i32,
    ours_third: bool,
    after: usize,
}

/// A callback C calls, in a fake hardirq (`ufg_test_in_fake_hardirq`).
///
/// # Safety
///
/// `arg` is an `IrqSeen` of the caller's, alive for the call.
unsafe extern "C" fn in_hardirq_guard(arg: *mut core::ffi::c_void) -> core::ffi::c_int {
    // SAFETY: the caller's contract.
    let seen = unsafe { &mut *arg.cast::<IrqSeen>() };
    seen.task_context = hot::in_task_context();
    seen.level = crate::sys::sync::context_level();
    seen.before = recursion_word();
    let Ok(g) = Recursion::try_lock(0, 0) else {
        return -1;
    };
    seen.taken = recursion_word();
    // ftrace's guard in the same context gets the transition bit, a third level nobody.
    // SAFETY: balanced below (a refusal takes nothing).
    seen.ftrace_second = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    // SAFETY: as above.
    seen.ftrace_third = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    seen.ours_third = matches!(Recursion::try_lock(0, 0), Err(Refused::Recursion));
    if seen.ftrace_second >= 0 {
        // SAFETY: pairs with its trylock.
        unsafe { bindings::ufg_recursion_unlock(seen.ftrace_second) };
    }
    drop(g);
    seen.after = recursion_word();
    0
}

/// In a hardirq the guard takes the hardirq context's bit (not task context's), as ftrace's
/// does, and ftrace's guard then gets only the transition level.
fn recursion_guard_in_hardirq(t: &mut Test) -> CaseResult {
    let start = bindings::UFG_TRACE_FTRACE_START;
    let mut seen = IrqSeen::default();
    // SAFETY: `in_hardirq_guard` takes an `IrqSeen`, which outlives the call.
    let r = unsafe {
        bindings::ufg_test_in_fake_hardirq(
            Some(in_hardirq_guard),
            (&mut seen as *mut IrqSeen).cast(),
        )
    };
    kcheck!(t, r == 0, "the guard was refused in a hardirq");
    kcheck!(t, !seen.task_context);
    kcheck_eq!(t, seen.level, 2);
    // interrupt_context_level() 2: two below the normal context's bit.
    kcheck_eq!(
        t,
        seen.taken,
        seen.before | 1 << (bindings::UFG_TRACE_CTX_NORMAL - 2 + start)
    );
    kcheck!(t, seen.ftrace_second >= 0);
    kcheck_eq!(t, seen.ftrace_third, -1);
    kcheck!(t, seen.ours_third);
    kcheck_eq!(t, seen.after, seen.before);
    Ok(())
}

/// A per-CPU pointer: this CPU's copy is what was set here and nowhere else, every possible
/// CPU's copy is reached by `each`, and a copy cleared from there reads null here.
fn per_cpu_pointer(t: &mut Test) -> CaseResult {
    use core::sync::atomic::Ordering::Relaxed;
    let p = crate::sys::percpu::PerCpuPtr::<u64>::new()?;
    let mut x = 7u64;
    let xp: *mut u64 = &mut x;
    // Read under one preemption-disabled stretch, checked after it (a failing check allocates).
    let np = NoPreempt::new();
    let fresh = p.get(&np);
    p.set(xp, &np);
    let mine = p.get(&np);
    let (mut cpus, mut set) = (0, 0);
    p.each(|c| {
        cpus += 1;
        set += usize::from(!c.load(Relaxed).is_null());
    });
    p.each(|c| {
        let _ = c.compare_exchange(xp, core::ptr::null_mut(), Relaxed, Relaxed);
    });
    let cleared = p.get(&np);
    drop(np);
    kcheck!(t, fresh.is_null(), "per-CPU memory not zeroed");
    kcheck_eq!(t, mine, xp);
    let possible = (0..crate::sys::task::nr_cpu_ids())
        .filter(|&c| crate::sys::task::cpu_possible_bit(c))
        .count();
    kcheck_eq!(t, cpus, possible);
    kcheck!(t, set == 1, "{} copies set, not this CPU's alone", set);
    kcheck!(t, cleared.is_null());
    Ok(())
}

kunit_suite!(
    HOT_SUITE,
    "ufgraph_hot",
    [
        task_cpu_and_counts_match,
        recursion_guard_matches_ftrace,
        recursion_guard_restores_the_word,
        recursion_guard_in_hardirq,
        per_cpu_pointer,
    ]
);
