// SPDX-License-Identifier: GPL-2.0

//! Allocating and freeing task stacks, and the fork pool: stacks allocated ahead in process
//! context for forks, whose probe cannot allocate on PREEMPT_RT (see the parent module's doc).

use super::*;

pub(super) fn alloc_stack(task: usize, gfp: Flags) -> Option<*mut TaskStack> {
    let b = KBox::<TaskStack>::new_uninit(gfp | flags::__GFP_ZERO | flags::__GFP_NOWARN).ok()?;
    // SAFETY: all-zero is a valid `TaskStack`: an empty stack with zeroed task variables, a null
    // rcu_head, task 0.
    let mut b = unsafe { b.assume_init() };
    b.task = task;
    Some(KBox::into_raw(b))
}

/// A stack allocated where the caller cannot sleep (a fork probe), if the kernel allows that:
/// not on PREEMPT_RT, whose slab locks sleep.
pub(super) fn alloc_in_atomic() -> Option<*mut TaskStack> {
    #[cfg(ufgraph_kunit)]
    if AS_IF_RT.load(Relaxed) {
        return None;
    }
    #[cfg(not(CONFIG_PREEMPT_RT))]
    return alloc_stack(0, flags::GFP_ATOMIC);
    #[cfg(CONFIG_PREEMPT_RT)]
    return None;
}

/// KUnit only: forks behave as on PREEMPT_RT (no allocation in the fork probe), so that the
/// deferred path is tested on every kernel.
#[cfg(ufgraph_kunit)]
pub static AS_IF_RT: AtomicBool = AtomicBool::new(false);

/// # Safety
///
/// `p` came from `alloc_stack` and no reader can reach it any more.
pub(super) unsafe fn free_stack_now(p: *mut TaskStack) {
    // SAFETY: per the function's contract.
    drop(unsafe { KBox::from_raw(p) });
}

/// How many stacks the fork pool holds when full (64 KiB): forks in a burst beyond it before
/// the refill work runs allocate atomically, or on PREEMPT_RT wait for the walk.
pub const POOL: usize = 16;

/// Stacks allocated ahead for forks (see the module's doc); under `Tasks::pool`.
pub(super) struct Pool {
    pub(super) p: [*mut TaskStack; POOL],
    pub(super) n: usize,
}

// SAFETY: the pointers are unpublished stacks that only the pool (under its lock) owns.
unsafe impl Send for Pool {}

impl Tasks {
    /// Allocates a stack for `task` and files it. Called from the fork probe (atomic) and the
    /// initial walk. A task that has one already keeps it.
    pub(super) fn add_forked(&self, task: TaskRef) {
        let p = match self.take_spare().or_else(alloc_in_atomic) {
            Some(p) => p,
            None => {
                // Left for the refill work's walk (see the module's doc).
                self.stats.fork_deferred.fetch_add(1, Relaxed);
                self.orphans.store(true, Relaxed);
                self.refill.schedule();
                return;
            }
        };
        // SAFETY: `p` is ours until filed.
        unsafe { (*p).task = task.0 };
        self.file(task, p);
    }

    /// A stack from the fork pool, if it has one; asks for a refill once it is half empty.
    pub(super) fn take_spare(&self) -> Option<*mut TaskStack> {
        let (p, left) = self.pool.with(|pool| match pool.n.checked_sub(1) {
            Some(n) => {
                pool.n = n;
                (Some(core::mem::replace(&mut pool.p[n], null_mut())), n)
            }
            None => (None, 0),
        });
        if left < POOL / 2 {
            self.refill.schedule();
        }
        p
    }

    /// Takes back an unpublished stack: into the pool if it has room, else freed. Any context
    /// (fork probes included): the free is `kfree_rcu`, which PREEMPT_RT allows there.
    pub(super) fn give_back(&self, p: *mut TaskStack) {
        // A pooled stack must be zeroed again: the task word is the only one a filing sets
        // (`Stack` is untouched until the task runs).
        // SAFETY: `p` is ours, unpublished.
        unsafe { (*p).task = 0 };
        let kept = self.pool.with(|pool| {
            if pool.n < POOL {
                pool.p[pool.n] = p;
                pool.n += 1;
                true
            } else {
                false
            }
        });
        if !kept {
            // SAFETY: `p` is kmalloc'd (`alloc_stack`), unpublished; `rcu` is in its first page.
            unsafe { crate::sys::sync::kvfree_rcu(p, core::ptr::addr_of_mut!((*p).rcu)) };
        }
    }

    /// Fills the fork pool. Process context.
    pub(super) fn fill_pool(&self) {
        while self.pool.with(|pool| pool.n) < POOL {
            let Some(p) = alloc_stack(0, GFP_KERNEL) else {
                return;
            };
            self.give_back(p);
        }
    }

    /// KUnit: what a fork of `task` does (the fork probe's body).
    #[cfg(ufgraph_kunit)]
    pub fn fork_for_test(&self, task: TaskRef) {
        self.add_forked(task)
    }

    /// KUnit: takes every stack out of the fork pool (freed when the vector is given back to
    /// [`Tasks::refill_for_test`]).
    #[cfg(ufgraph_kunit)]
    pub fn drain_for_test(&self) -> KVec<usize> {
        let mut v = KVec::new();
        // Without scheduling a refill: the test controls when the pool fills again.
        while let Some(p) = self.pool.with(|pool| {
            let n = pool.n.checked_sub(1)?;
            pool.n = n;
            Some(core::mem::replace(&mut pool.p[n], null_mut()))
        }) {
            if v.push(p as usize, GFP_KERNEL).is_err() {
                // SAFETY: pooled stacks were never published.
                unsafe { free_stack_now(p) };
            }
        }
        v
    }

    /// KUnit: gives back what `drain_for_test` took, waits for a refill work queued meanwhile,
    /// and forgets `task` (a fake one the test forked); how many stacks the pool then holds.
    #[cfg(ufgraph_kunit)]
    pub fn refill_for_test(&self, taken: KVec<usize>, task: TaskRef) -> usize {
        for &p in taken.iter() {
            self.give_back(p as *mut TaskStack);
        }
        self.refill.flush();
        self.remove(task);
        self.pool.with(|pool| pool.n)
    }

    /// Frees the fork pool's stacks (teardown, with no probe left to take one).
    pub(super) fn drain_pool(&self) {
        while let Some(p) = self.pool.with(|pool| {
            let n = pool.n.checked_sub(1)?;
            pool.n = n;
            Some(core::mem::replace(&mut pool.p[n], null_mut()))
        }) {
            // SAFETY: pooled stacks were never published.
            unsafe { free_stack_now(p) };
        }
    }
}
