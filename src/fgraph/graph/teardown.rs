// SPDX-License-Identifier: GPL-2.0

//! Teardown: handing live frames' return addresses back to their tasks, and waiting for the ones
//! that cannot be (steps 2 to 4 of the protocol in the parent module's documentation).

use super::*;

/// Waits until no task can still be executing the trampoline's last instructions (after its
/// frame was popped). With preemption, a task may be preempted there: wait for every task to
/// switch voluntarily (RCU tasks). Without, nothing can schedule inside the trampoline and an
/// RCU grace period (every CPU through a context switch) suffices, and is much quicker.
pub(super) fn wait_trampoline_exits() {
    #[cfg(CONFIG_PREEMPTION)]
    synchronize_rcu_tasks();
    #[cfg(not(CONFIG_PREEMPTION))]
    synchronize_rcu();
}

/// A stack with frames teardown waits for (another hooker stacked over them).
pub(super) struct Wait {
    owner: Owner,
    page: *const TaskStack,
    done: bool,
}

/// What teardown did with the frames it found.
#[derive(Default)]
pub(super) struct Tally {
    handed: usize,
    /// Copies of our trampoline the kernel's hookers saved, rewritten.
    patched: usize,
    /// Frames of tasks that can no longer run (their stacks were left untouched).
    gone: usize,
    /// Frames whose calls were abandoned.
    never: usize,
}

/// The most frames of one return slot teardown plans for (tail calls and separate frames of
/// several ops for one call; a longer chain is waited for).
pub(super) const CHAIN: usize = 8;

/// Teardown's step 2 for one chain: the frames of `stack` that share a return slot, top first
/// (`too_long`: more than [`CHAIN`] of them). Plans with `fgraph::graph::handback::plan`: either every
/// trampoline address in the chain (in the slot, and in the copies the kernel's
/// function_graph or rethook saved) is replaced and the frames are marked handed back, or
/// nothing is written and they are marked pending. Returns whether any frame is pending.
/// Frames a previous round judged keep their verdict.
// Out of line: its plan (a few hundred bytes of writes) must not share a stack frame with the
// walk's chain buffer (the kernel stack is 16 KiB, and the build refuses frames of 2 KiB).
#[inline(never)]
pub(super) fn judge_chain(
    stack: &Stack,
    chain: &[Frame],
    too_long: bool,
    owner: Owner,
    view: Option<&crate::sys::task::StackView>,
    walk: &mut arch::TaskWalk,
    tally: &mut Tally,
) -> bool {
    let Some(top) = chain.first() else {
        return false;
    };
    if top.marks & (mark::HANDED | mark::GONE) != 0 {
        // Judged by an earlier pass, and nothing to wait for.
        return false;
    }
    let pend = || {
        for f in chain {
            stack.set_marks(f, mark::PENDING);
        }
        true
    };
    if too_long {
        // All of the run, not only the frames judged: the wait must cover every frame of the
        // slot that may still return through the trampoline.
        for f in stack
            .frames()
            .skip_while(|f| f.start != top.start)
            .take_while(|f| f.retp == top.retp)
        {
            stack.set_marks(&f, mark::PENDING);
        }
        return true;
    }
    if chain.iter().any(|f| f.marks & mark::PENDING != 0) {
        return pend();
    }
    // SAFETY: under stop_machine (the caller), with the owner alive and not running.
    let (addr, value) = match unsafe { arch::find_slot(top, owner.task(), view, walk) } {
        ArchSlot::Gone => {
            for f in chain {
                stack.set_marks(f, mark::GONE);
            }
            tally.never += chain.len();
            return false;
        }
        ArchSlot::Unknown => return pend(),
        ArchSlot::At { addr, value } => (addr, value),
    };
    let tramp = trampoline();
    let mut rets = [0usize; CHAIN];
    for (r, f) in rets.iter_mut().zip(chain) {
        *r = f.ret;
    }
    let task = owner.task();
    let plan = handback::plan::<{ CHAIN + 4 }>(
        &rets[..chain.len()],
        addr,
        value,
        tramp,
        crate::sys::ksym::hooker,
        |k, visited| {
            let t = task?;
            match k {
                // SAFETY: under stop_machine, the owner alive and not running (the caller).
                Hooker::Fgraph => unsafe { crate::sys::hookers::fgraph_next(t, top.retp, visited) },
                // SAFETY: as for function_graph, just above.
                Hooker::Rethook => unsafe {
                    crate::sys::hookers::rethook_next(t, top.retp, visited)
                },
                _ => None,
            }
        },
    );
    match plan {
        Plan::Pending => pend(),
        Plan::Hand { writes, n, frames } => {
            for &(at, v) in &writes[..n] {
                // Each address is the return slot `find_slot` found (a word of the quiet task's
                // stack or, on arm64, of its shadow call stack) or a saved copy the kernel's
                // hookers keep for this task (found and checked by `sys::hookers`): the task
                // takes its return address from them.
                // SAFETY: valid, aligned words that stay allocated while the task lives, and
                // that nothing else reads or writes during stop_machine.
                unsafe { (at as *mut usize).write_volatile(v) };
            }
            if writes[..n].iter().any(|&(at, _)| at == addr) {
                walk.handed(addr);
            }
            for f in &chain[..frames] {
                stack.set_marks(f, mark::HANDED);
            }
            for f in &chain[frames..] {
                stack.set_marks(f, mark::GONE);
            }
            tally.handed += frames;
            tally.patched += writes[..n].iter().filter(|&&(at, _)| at != addr).count();
            tally.never += chain.len() - frames;
            false
        }
    }
}

/// One kernel log line about a frame teardown is waiting for: who, and in which function.
pub(super) fn report_pending(owner: Owner, func: usize, first: bool) {
    let (pid, comm) = match owner.task() {
        // SAFETY: the owner is pinned (a table task) or an idle task, alive either way.
        Some(t) => unsafe { (t.pid(), t.comm()) },
        None => (0, [0u8; 16]),
    };
    let len = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
    let comm = core::str::from_utf8(&comm[..len]).unwrap_or("?");
    let mut buf: crate::sys::ksym::SymbolBuf = [0; _];
    let sym = crate::sys::ksym::symbol_name(func, &mut buf);
    if first {
        pr_warn!("rmmod waits for returns it cannot hand back (another hooker stacked over ufgraph's, or arm64 without a rewritable slot):\n");
    }
    pr_warn!("  pid {} ({}) in {}\n", pid, comm, sym);
}

impl Graph {
    // Step 2 of teardown (see the module documentation), on one CPU while the others spin with
    // interrupts off. Judges and marks every frame; pins the owners of stacks with pending frames
    // into `waits` (room for `cap`). Returns false, having pinned nothing more, if `waits` is
    // full: the caller makes room and calls again (marked frames keep their verdict).
    pub(super) fn hand_back(&self, waits: &mut KVec<Wait>, cap: usize, tally: &mut Tally) -> bool {
        let mut full = false;
        // On one CPU while every other spins with interrupts off: no task runs or exits.
        crate::sys::sync::stop_machine(|| {
            // Interrupts are off under stop_machine: preemption too.
            let np = NoPreempt::new();
            self.tasks.for_each_owned_stack(&np, |owner, ts| {
                if full {
                    return;
                }
                let stack = &ts.stack;
                if stack.depth() == 0 && stack.top() == 0 {
                    return;
                }
                // SAFETY: a table entry's task is alive until its free hook, which cannot run
                // now (RCU callbacks wait for stop_machine); idle tasks never go.
                if unsafe { owner.gone() } {
                    // Never runs again: its frames can never return, and its kernel stack may be
                    // freed already (a zombie's is, before it is reaped): touch nothing.
                    tally.gone += stack.frames().count();
                    return;
                }
                // SAFETY: as above; nothing runs or exits during stop_machine.
                let view = owner.task().and_then(|t| unsafe { t.stack_view() });
                let mut pending = false;
                // What the architecture learns about this task's stack as its frames are handed
                // back, innermost first (arm64: the shadow call stack entries rewritten).
                let mut walk = arch::TaskWalk::new();
                // Frames sharing a return slot are adjacent: judge them together (a chain).
                let mut chain: [Frame; CHAIN] = [Frame::default(); CHAIN];
                let mut n = 0;
                let mut frames = stack.frames().peekable();
                while let Some(f) = frames.next() {
                    if n < CHAIN {
                        chain[n] = f;
                    }
                    n += 1;
                    if frames.peek().is_some_and(|g| g.retp == f.retp) {
                        continue;
                    }
                    pending |= judge_chain(
                        stack,
                        &chain[..n.min(CHAIN)],
                        n > CHAIN,
                        owner,
                        view.as_ref(),
                        &mut walk,
                        tally,
                    );
                    n = 0;
                }
                if !pending {
                    return;
                }
                if waits.len() >= cap {
                    full = true;
                    return;
                }
                let w = match owner {
                    Owner::Task(t) => {
                        // SAFETY: alive (above); unpinned once teardown stops waiting for it.
                        unsafe { t.pin() };
                        Wait {
                            owner,
                            page: ts as *const TaskStack,
                            done: false,
                        }
                    }
                    Owner::Idle { .. } => Wait {
                        owner,
                        page: ts as *const TaskStack,
                        done: false,
                    },
                };
                // Within the capacity reserved by the caller: does not allocate.
                let _ = waits.push(w, GFP_ATOMIC);
            });
        });
        !full
    }

    // Teardown: steps 2 to 4 of the module documentation. Every ops is unregistered.
    pub(super) fn release_frames(&self) {
        let mut tally = Tally::default();
        let mut waits: KVec<Wait> = KVec::new();
        // Stacks with frames can only become fewer now (no ops, so no pushes): this many slots
        // are enough, unless the allocation fails; then fewer, and the rest in later rounds.
        let mut want = self.tasks.count().max(1);
        loop {
            if waits.capacity() < want && waits.reserve(want - waits.len(), GFP_KERNEL).is_err() {
                want = waits.capacity().max(waits.len() + 1);
                if waits.reserve(1, GFP_KERNEL).is_err() {
                    // Not even one more slot: wait for what is pinned, then look again.
                    self.wait_pending(&mut waits);
                    msleep(100);
                    continue;
                }
            }
            let cap = waits.capacity();
            if self.hand_back(&mut waits, cap, &mut tally) {
                break;
            }
            want = cap * 2;
        }
        if tally.handed > 0 {
            pr_info!("handed {} pending return addresses back to their tasks ({} through copies the kernel's function_graph or rethook saved)\n",
                tally.handed, tally.patched);
        }
        if tally.gone + tally.never > 0 {
            pr_info!(
                "left {} frames of tasks that can no longer run alone, and {} of abandoned calls\n",
                tally.gone,
                tally.never
            );
        }
        // Tasks that entered the trampoline before the hand-back are still finishing it.
        wait_trampoline_exits();
        if !waits.is_empty() {
            self.wait_pending(&mut waits);
            // The pending frames' tasks have just been through the trampoline.
            wait_trampoline_exits();
        }
    }

    // Step 4: waits until no stack in `waits` holds a pending frame, or its owner can no longer
    // run; unpins the tasks and empties `waits`.
    pub(super) fn wait_pending(&self, waits: &mut KVec<Wait>) {
        let mut rounds = 0u32;
        loop {
            let mut left = 0;
            let mut named = 0;
            let report = rounds % 50 == 0;
            for w in waits.iter_mut() {
                if w.done {
                    continue;
                }
                let np = NoPreempt::new();
                // SAFETY: a task owner is pinned until `w` is done.
                if unsafe { w.owner.gone() } {
                    w.done = true;
                    continue;
                }
                // The owner is not dead, so its free hook has not run: the page is its stack
                // until at least the end of `np` (a later free goes through a grace period).
                // SAFETY: as just said.
                let stack = unsafe { &(*w.page).stack };
                let Some(f) = stack.frames().find(|f| f.marks & mark::PENDING != 0) else {
                    w.done = true;
                    continue;
                };
                left += 1;
                if report && named < 8 {
                    named += 1;
                    report_pending(w.owner, f.func, left == 1);
                    if rounds == 0 && w.owner.task() == Some(crate::sys::task::TaskRef::current()) {
                        // This task's own call, stacked over by a hooker whose copy of the
                        // trampoline ufgraph cannot reach (not the kernel's function_graph or
                        // rethook): it returns only after rmmod does, so this wait never ends.
                        // Still better than freeing text it will return into.
                        pr_err!("rmmod itself is inside that call: it cannot finish until the call returns, which it cannot do first\n");
                    }
                }
                drop(np);
            }
            if left == 0 {
                break;
            }
            msleep(100);
            rounds += 1;
        }
        for w in waits.iter() {
            if let Owner::Task(t) = w.owner {
                // SAFETY: pinned by `hand_back`, used no more.
                unsafe { t.unpin() };
            }
        }
        *waits = KVec::new();
    }
}
