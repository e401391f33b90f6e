// SPDX-License-Identifier: GPL-2.0

//! The hot path's inline primitives (`arch::hot`, and the recursion guard built on them) against
//! what the kernel's own inline helpers say, through the C glue: they must agree exactly, or the
//! hot path reads the wrong task, CPU, preempt count or recursion bits.

use crate::bindings;
use crate::fgraph::arch::hot;
use crate::sys::ktest::{CaseResult, Test};
use crate::sys::sync::{NoPreempt, Recursion, Refused};
use crate::{kcheck, kcheck_eq, kunit_suite};
use kernel::prelude::*;

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

/// Which way [`Recursion::run`] took at each of three nested levels, and the recursion word in
/// each body and after each level, for [`recursion_run_nests_as_the_guard`].
#[derive(Default)]
struct RunSeen {
    ways: [core::cell::Cell<u8>; 3],
    words: [core::cell::Cell<usize>; 3],
    after: [core::cell::Cell<usize>; 3],
    third_refused: core::cell::Cell<bool>,
    preempt_in_body: core::cell::Cell<u32>,
    current_ok: core::cell::Cell<bool>,
}

/// Level `level` of [`recursion_run_nests_as_the_guard`]: `Recursion::run`, the body at each
/// level going one level deeper. Way 1: the common (inlined) case; 2: the other one.
fn run_level(seen: &RunSeen, level: usize) {
    let body = |way: u8, me: crate::sys::task::Current| {
        seen.ways[level].set(way);
        seen.words[level].set(recursion_word());
        if level == 0 {
            seen.preempt_in_body.set(hot::preempt_count());
            seen.current_ok.set(me.task().0 == hot::current());
        }
        if level < 2 {
            run_level(seen, level + 1);
        }
    };
    let r = Recursion::run(0, 0, |me, _| body(1, me), |me, _| body(2, me));
    if level == 2 {
        seen.third_refused.set(matches!(r, Err(Refused::Recursion)));
    }
    seen.after[level].set(recursion_word());
}

/// `Recursion::run` nests as the guard does: in task context the first level takes the common
/// way with the normal context's bit (what ftrace's guard takes), preemption disabled and the
/// task it hands on `current`; a nested level finds the bit taken and goes the other way, under
/// the transition bit; a third is refused; each release leaves the word as that level found it.
fn recursion_run_nests_as_the_guard(t: &mut Test) -> CaseResult {
    let start = bindings::UFG_TRACE_FTRACE_START;
    kcheck!(t, hot::in_task_context());
    let w0 = recursion_word();
    let p0 = hot::preempt_count();
    let seen = RunSeen::default();
    run_level(&seen, 0);
    let normal = 1 << (bindings::UFG_TRACE_CTX_NORMAL + start);
    let transition = 1 << (bindings::UFG_TRACE_CTX_TRANSITION + start);
    kcheck_eq!(t, seen.ways.each_ref().map(|c| c.get()), [1, 2, 0]);
    kcheck_eq!(t, seen.words[0].get(), w0 | normal);
    kcheck_eq!(t, seen.words[1].get(), w0 | normal | transition);
    kcheck!(t, seen.third_refused.get(), "a third level ran");
    kcheck_eq!(
        t,
        seen.after.each_ref().map(|c| c.get()),
        [w0, w0 | normal, w0 | normal | transition]
    );
    kcheck_eq!(t, seen.preempt_in_body.get(), p0 + 1);
    kcheck!(
        t,
        seen.current_ok.get(),
        "the body was handed another task than current"
    );
    kcheck_eq!(t, hot::preempt_count(), p0);
    // ftrace's guard held around it: ours goes the other way (the transition bit), and leaves
    // ftrace's bit as it found it.
    // SAFETY: balanced just below.
    let b = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    kcheck!(t, b >= 0);
    let way = Recursion::run(0, 0, |_, _| 1, |_, _| 2);
    let w_in = recursion_word();
    // SAFETY: pairs with the trylock.
    unsafe { bindings::ufg_recursion_unlock(b) };
    kcheck!(t, matches!(way, Ok(2)), "{:?}", way);
    kcheck_eq!(t, w_in, w0 | normal);
    kcheck_eq!(t, recursion_word(), w0);
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

/// A callback C calls, in a fake hardirq (`ufg_test_in_fake_context`).
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

/// The lowest set bit of `m`: a preempt-count field's unit (`HARDIRQ_OFFSET` of `HARDIRQ_MASK`).
fn lowest_bit(m: usize) -> usize {
    m & m.wrapping_neg()
}

/// `HARDIRQ_OFFSET`: what `__irq_enter_raw()` adds to the preempt count.
fn hardirq_offset() -> usize {
    lowest_bit(bindings::UFG_HARDIRQ_MASK)
}

/// In a hardirq the guard takes the hardirq context's bit (not task context's), as ftrace's
/// does, and ftrace's guard then gets only the transition level.
fn recursion_guard_in_hardirq(t: &mut Test) -> CaseResult {
    let start = bindings::UFG_TRACE_FTRACE_START;
    let mut seen = IrqSeen::default();
    // SAFETY: `in_hardirq_guard` takes an `IrqSeen`, which outlives the call.
    let r = unsafe {
        bindings::ufg_test_in_fake_context(
            hardirq_offset() as u32,
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

/// The task-stack cache is one static per-CPU word per module, owned by the task table: a
/// second owner is refused while the graph core holds it, and after the current task looks
/// itself up the cache read alone (`Tasks::cached`, what the hot paths try first) finds the same
/// stack on this CPU.
fn stack_cache_has_one_owner(t: &mut Test) -> CaseResult {
    use crate::fgraph::tasks::Tasks;
    let second = crate::sys::percpu::CpuCache::<u64>::take();
    kcheck!(
        t,
        matches!(second, Err(e) if e == EBUSY),
        "a second owner of the cache word"
    );
    drop(second);
    let Some(g) = crate::fgraph::graph::graph() else {
        return Err(t.fail(format_args!("no graph core")));
    };
    let np = NoPreempt::new();
    let looked = g.tasks().current(&np).map(|s| s as *const _);
    let cached = Tasks::cached(crate::sys::task::Current::read(), &np).map(|s| s as *const _);
    drop(np);
    kcheck_eq!(t, looked, cached);
    Ok(())
}

/// Detaching the tasks frees their pages only once no CPU's cache holds one (attack review
/// of #15): a lookup that found its page in the table just before detach unpublished it puts
/// the page in its CPU's cache as it returns, which may be after detach started. The first
/// modelled grace period is such a straggler (this task's own lookup, which fills the cache),
/// and no cache may hold its page when the pages would be freed. Clearing the caches before
/// the first grace period, as detach first did, fails this.
fn retired_pages_leave_the_cache(t: &mut Test) -> CaseResult {
    use crate::sys::task::Current;
    let Some(g) = crate::fgraph::graph::graph() else {
        return Err(t.fail(format_args!("no graph core")));
    };
    g.need_stacks()?;
    let tasks = g.tasks();
    let page = core::cell::Cell::new(0usize);
    let mut graces = 0;
    let held = tasks.test_retire_cached(
        || {
            graces += 1;
            if graces == 1 {
                let np = NoPreempt::new();
                let s = tasks.current_uncached(Current::read(), &np);
                page.set(s.map_or(0, |s| s as *const _ as usize));
            }
        },
        || page.get(),
    );
    kcheck!(t, page.get() != 0, "the current task has no stack");
    kcheck_eq!(t, graces, 2);
    kcheck_eq!(t, held, 0);
    // The cache is a cache: the next lookup fills it again.
    let np = NoPreempt::new();
    let again = tasks.current(&np).map(|s| s as *const _ as usize);
    let cached =
        crate::fgraph::tasks::Tasks::cached(Current::read(), &np).map(|s| s as *const _ as usize);
    drop(np);
    kcheck_eq!(t, again, Some(page.get()));
    kcheck_eq!(t, cached, again);
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

/// What [`bits_in_context`] saw, in one faked context.
#[derive(Default)]
struct CtxBits {
    level: usize,
    ftrace_bit: i32,
    ours: Option<usize>,
    after: usize,
    before: usize,
}

/// Takes ftrace's guard alone and then ours alone, in the context C faked: the bit each set.
///
/// # Safety
///
/// `arg` is a `CtxBits` of the caller's, alive for the call.
unsafe extern "C" fn bits_in_context(arg: *mut core::ffi::c_void) -> core::ffi::c_int {
    // SAFETY: the caller's contract.
    let seen = unsafe { &mut *arg.cast::<CtxBits>() };
    seen.level = crate::sys::sync::context_level();
    seen.before = recursion_word();
    // SAFETY: balanced just below.
    let b = unsafe { bindings::ufg_recursion_trylock(0, 0) };
    seen.ftrace_bit = b;
    if b >= 0 {
        // SAFETY: pairs with the trylock.
        unsafe { bindings::ufg_recursion_unlock(b) };
    }
    if let Ok(g) = Recursion::try_lock(0, 0) {
        let w = recursion_word();
        seen.ours = Some((w ^ seen.before).trailing_zeros() as usize);
        drop(g);
    }
    seen.after = recursion_word();
    0
}

/// In a (faked) softirq, hardirq and NMI, our guard takes the very bit ftrace's own guard takes
/// there (`trace_test_and_set_recursion()`, compared, not recomputed), and puts the word back.
fn recursion_guard_bit_in_every_context(t: &mut Test) -> CaseResult {
    let softirq = bindings::UFG_SOFTIRQ_OFFSET;
    let hardirq = hardirq_offset();
    let nmi = lowest_bit(bindings::UFG_NMI_MASK) + hardirq;
    for (offset, level) in [(softirq, 1), (hardirq, 2), (nmi, 3)] {
        let mut seen = CtxBits::default();
        // SAFETY: `bits_in_context` takes a `CtxBits`, which outlives the call.
        let r = unsafe {
            bindings::ufg_test_in_fake_context(
                offset as u32,
                Some(bits_in_context),
                (&mut seen as *mut CtxBits).cast(),
            )
        };
        kcheck_eq!(t, r, 0);
        kcheck_eq!(t, seen.level, level);
        kcheck!(
            t,
            seen.ftrace_bit >= 0,
            "ftrace's guard refused at level {}",
            level
        );
        kcheck_eq!(t, seen.ours, Some(seen.ftrace_bit as usize));
        kcheck_eq!(t, seen.after, seen.before);
    }
    Ok(())
}

/// What [`set_on_cpu`] and [`get_on_cpu`] work on, on another CPU.
struct OnCpu {
    p: *const crate::sys::percpu::PerCpuPtr<u64>,
    v: *mut u64,
    cpu: usize,
}

/// Sets the running CPU's copy of a per-CPU pointer (C calls it on a chosen CPU).
///
/// # Safety
///
/// `arg` is an `OnCpu` of the caller's whose `p` is live, both alive for the call.
unsafe extern "C" fn set_on_cpu(arg: *mut core::ffi::c_void) {
    // SAFETY: the caller's contract.
    let a = unsafe { &mut *arg.cast::<OnCpu>() };
    let np = NoPreempt::new();
    // SAFETY: as above.
    unsafe { &*a.p }.set(a.v, &np);
    a.cpu = hot::cpu();
}

/// Reads the running CPU's copy of a per-CPU pointer (C calls it on a chosen CPU).
///
/// # Safety
///
/// As for [`set_on_cpu`].
unsafe extern "C" fn get_on_cpu(arg: *mut core::ffi::c_void) {
    // SAFETY: the caller's contract.
    let a = unsafe { &mut *arg.cast::<OnCpu>() };
    let np = NoPreempt::new();
    // SAFETY: as above.
    a.v = unsafe { &*a.p }.get(&np);
    a.cpu = hot::cpu();
}

/// Runs `f` (`set_on_cpu` or `get_on_cpu`) on `cpu` with `p` and `v`, and waits for it: what
/// `smp_call_function_single()` returned, and the `OnCpu` as `f` left it.
fn on_cpu(
    cpu: usize,
    f: unsafe extern "C" fn(*mut core::ffi::c_void),
    p: &crate::sys::percpu::PerCpuPtr<u64>,
    v: *mut u64,
) -> (core::ffi::c_int, OnCpu) {
    let mut a = OnCpu {
        p,
        v,
        cpu: usize::MAX,
    };
    // SAFETY: `f` takes an `OnCpu` whose `p` is live, and both outlive the (waited for) call.
    let r =
        unsafe { bindings::ufg_test_on_cpu(cpu as u32, Some(f), (&mut a as *mut OnCpu).cast()) };
    (r, a)
}

/// A CPU taken offline: the inline `cpu_online` (one `bt` on the mask) says so, as the kernel's
/// does, and a per-CPU pointer that CPU set while online is still reached by `each` (as
/// `Tasks::uncache` needs: a page leaves offline CPUs' caches too), so that the CPU comes back
/// with its copy cleared.
fn offline_cpu_online_and_per_cpu(t: &mut Test) -> CaseResult {
    use core::sync::atomic::Ordering::Relaxed;
    let n = crate::sys::task::nr_cpu_ids();
    if n < 2 {
        t.skip(kernel::c_str!("one CPU: none to take offline"));
        return Ok(());
    }
    let cpu = n - 1;
    let p = crate::sys::percpu::PerCpuPtr::<u64>::new()?;
    let mut x = 7u64;
    let xp: *mut u64 = &mut x;
    let (set, a) = on_cpu(cpu, set_on_cpu, &p, xp);
    kcheck_eq!(t, set, 0);
    kcheck_eq!(t, a.cpu, cpu);
    // SAFETY: no preconditions but process context.
    let down = unsafe { bindings::ufg_test_cpu_down(cpu as u32) };
    if down != 0 {
        t.skip(kernel::c_str!("the CPU would not go offline"));
        return Ok(());
    }
    let ours = hot::cpu_online(cpu);
    // SAFETY: `cpu` is below nr_cpu_ids.
    let kernels = unsafe { bindings::ufg_cpu_online(cpu as u32) };
    let (mut found, mut cleared) = (0, 0);
    p.each(|c| {
        if c.load(Relaxed) == xp {
            found += 1;
            cleared += usize::from(
                c.compare_exchange(xp, core::ptr::null_mut(), Relaxed, Relaxed)
                    .is_ok(),
            );
        }
    });
    // Back online before any check can return.
    // SAFETY: no preconditions but process context.
    let up = unsafe { bindings::ufg_test_cpu_up(cpu as u32) };
    let (got, b) = on_cpu(cpu, get_on_cpu, &p, xp);
    kcheck_eq!(t, up, 0);
    kcheck!(t, !kernels, "the kernel says the CPU is online");
    kcheck_eq!(t, ours, kernels);
    kcheck_eq!(t, found, 1);
    kcheck_eq!(t, cleared, 1);
    kcheck_eq!(t, got, 0);
    kcheck_eq!(t, b.cpu, cpu);
    kcheck!(t, b.v.is_null(), "the offline CPU's copy was not cleared");
    kcheck!(t, hot::cpu_online(cpu));
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
        recursion_run_nests_as_the_guard,
        stack_cache_has_one_owner,
        retired_pages_leave_the_cache,
        per_cpu_pointer,
        offline_cpu_online_and_per_cpu,
        recursion_guard_bit_in_every_context,
    ]
);
