// SPDX-License-Identifier: GPL-2.0

//! Filing and removing stacks: the fork, free and CPU hotplug callbacks, the table's growth,
//! and attaching to (and detaching from) every task.

use super::*;

/// The `task_newtask` tracepoint probe.
///
/// # Safety
///
/// Called by the tracepoint only, with the `Tasks` it was registered with as `data`.
unsafe extern "C" fn on_newtask(
    data: *mut c_void,
    task: *mut RawTask,
    _clone_flags: core::ffi::c_ulong,
) {
    // SAFETY: `data` is the pinned `Tasks` this probe was attached with; it detaches its probes
    // and waits for them before it goes away.
    let tasks = unsafe { &*data.cast::<Tasks>() };
    tasks.add_forked(TaskRef(task as usize));
}

// The `Tasks` whose idle stacks the CPU hotplug callback resets (CPU hotplug callbacks carry no
// data pointer). One graph core, so one `Tasks`, per module.
static HOTPLUG_TASKS: Global<Tasks> = Global::new();

/// The CPU hotplug prepare callback: resets the idle task's stack of a CPU coming up.
///
/// # Safety
///
/// Called by CPU hotplug only, while the state is registered.
unsafe extern "C" fn on_cpu_prepare(cpu: core::ffi::c_uint) -> core::ffi::c_int {
    if let Some(t) = HOTPLUG_TASKS.get() {
        t.reset_idle(cpu as usize);
    }
    0
}

/// The `sched_process_free` tracepoint probe.
///
/// # Safety
///
/// As for [`on_newtask`].
unsafe extern "C" fn on_free(data: *mut c_void, task: *mut RawTask) {
    // SAFETY: as for `on_fork`.
    let tasks = unsafe { &*data.cast::<Tasks>() };
    tasks.remove(TaskRef(task as usize));
}

/// `Tasks::rebuild`'s [`WorkItem`] id.
pub(super) const REBUILD: u64 = 0;
/// `Tasks::refill`'s [`WorkItem`] id.
pub(super) const REFILL: u64 = 1;

// SAFETY: `rebuild` is a `Work<Tasks, REBUILD>` field of `Tasks`, initialised only by `Tasks::new`
// (a pin-initialiser: pinned), and `Tasks` cancels the work in its drop.
unsafe impl WorkItem<REBUILD> for Tasks {
    const OFFSET: usize = offset_of!(Tasks, rebuild);

    /// The work that grows the task table.
    fn run(&self) {
        if let Err(e) = self.grow(0) {
            pr_warn!("cannot grow the task table: {:?}\n", e);
        }
    }
}

// SAFETY: as above, for `refill` (cancelled by `detach` and by the drop).
unsafe impl WorkItem<REFILL> for Tasks {
    const OFFSET: usize = offset_of!(Tasks, refill);

    /// The work that refills the fork pool.
    fn run(&self) {
        self.fill_pool();
        if self.attached.load(Relaxed) && self.orphans.swap(false, Relaxed) {
            if let Err(e) = self.cover_all() {
                // Tried again at the next fork that finds no stack.
                self.orphans.store(true, Relaxed);
                pr_warn!("cannot give every task a shadow stack: {:?}\n", e);
            }
        }
    }
}

// Stacks allocated ahead of the task walk (which cannot sleep); the unused ones are freed.
struct Spare<const N: usize> {
    p: [*mut TaskStack; N],
    n: usize,
}

impl<const N: usize> Spare<N> {
    fn pop(&mut self) -> Option<*mut TaskStack> {
        self.n = self.n.checked_sub(1)?;
        Some(self.p[self.n])
    }
}

impl<const N: usize> Drop for Spare<N> {
    fn drop(&mut self) {
        while let Some(p) = self.pop() {
            // SAFETY: spare stacks were never published.
            unsafe { free_stack_now(p) };
        }
    }
}

impl Tasks {
    // Files a preallocated stack; frees it if the task has one already or the table is full.
    pub(super) fn file(&self, task: TaskRef, p: *mut TaskStack) -> bool {
        let r = self.writer.with(|counts| {
            let table = self.table.load(Relaxed);
            if table.is_null() {
                return (Err(InsertError::Full), false);
            }
            // SAFETY: writers hold the lock; the table is only replaced under it.
            let slots = unsafe { &(*table).slots };
            let r = table::insert(slots, counts, task.0, p as usize, key_of);
            (r, table::wants_rebuild(counts, slots.len()))
        });
        match r {
            (Ok(()), grow) => {
                self.stats.stacks.fetch_add(1, Relaxed);
                if grow {
                    self.rebuild.schedule();
                }
                true
            }
            (Err(InsertError::Exists(_)), _) => {
                self.give_back(p);
                true
            }
            (Err(InsertError::Full), _) => {
                self.give_back(p);
                self.stats.fork_failed.fetch_add(1, Relaxed);
                // The refill work's walk files it once the table has grown.
                self.orphans.store(true, Relaxed);
                self.rebuild.schedule();
                self.refill.schedule();
                false
            }
        }
    }

    /// Unfiles and frees the stack of a task that can no longer run.
    pub(super) fn remove(&self, task: TaskRef) {
        let e = self.writer.with(|counts| {
            let table = self.table.load(Relaxed);
            if table.is_null() {
                return None;
            }
            // SAFETY: writers hold the lock.
            let slots = unsafe { &(*table).slots };
            table::remove(slots, counts, task.0, key_of)
        });
        let Some(e) = e else { return };
        let ts = e as *mut TaskStack;
        self.uncache(ts);
        // SAFETY: the stack is unfiled but not freed; its task is dead, so nothing writes it.
        let dead = unsafe { (*ts).stack.frames().count() };
        if dead > 0 {
            self.stats.dead_frames.fetch_add(dead as u64, Relaxed);
        }
        self.stats.stacks.fetch_sub(1, Relaxed);
        // Readers that found it before the removal are RCU-sched readers: free after a GP.
        // SAFETY: `ts` is kmalloc'd (`alloc_stack`), unfiled; `rcu` is in its first page.
        unsafe { crate::sys::sync::kvfree_rcu(ts, core::ptr::addr_of_mut!((*ts).rcu)) };
    }

    /// Rebuilds the table with room for at least `want` entries (and for the current ones).
    /// Process context.
    pub(super) fn grow(&self, want: usize) -> Result {
        loop {
            let used = self.writer.with(|c| c.used);
            let cap = table::capacity_for(used.max(want));
            let new = KBox::into_raw(Table::new(cap)?);
            let old = self.writer.with(|counts| {
                let old = self.table.load(Relaxed);
                // SAFETY: `new` is ours until published.
                let new_slots = unsafe { &(*new).slots };
                let rebuilt = if old.is_null() {
                    Ok(Counts::default())
                } else {
                    // SAFETY: writers hold the lock; `old` is the live table.
                    table::rebuild(unsafe { &(*old).slots }, new_slots, key_of)
                };
                match rebuilt {
                    Ok(c) => {
                        *counts = c;
                        self.table.store(new, Release);
                        Ok(old)
                    }
                    // Forks filled it meanwhile: try again, bigger.
                    Err(_) => Err(()),
                }
            });
            match old {
                Ok(old) => {
                    self.stats.rebuilds.fetch_add(1, Relaxed);
                    if !old.is_null() {
                        synchronize_rcu();
                        // SAFETY: unpublished, and every reader that could see it has finished.
                        drop(unsafe { KBox::from_raw(old) });
                    }
                    return Ok(());
                }
                // SAFETY: never published.
                Err(()) => drop(unsafe { KBox::from_raw(new) }),
            }
        }
    }

    /// Gives every task a stack: attaches the fork and free probes (into `probes`), sizes the
    /// table, allocates idle stacks and walks the task list. Process context. Callers serialise
    /// `attach` and `detach` (the graph's registration mutex) and keep `self` pinned. On failure
    /// everything is undone.
    pub fn attach(&self, probes: &mut KVec<Probe>) -> Result {
        if self.attached.load(Relaxed) {
            return Ok(());
        }
        let r = self.attach_inner(probes);
        match r {
            Ok(()) => self.attached.store(true, Relaxed),
            Err(_) => self.detach(probes),
        }
        r
    }

    pub(super) fn attach_inner(&self, probes: &mut KVec<Probe>) -> Result {
        let data = (self as *const Self).cast_mut().cast::<c_void>();
        // Probes first: a task forked during the walk is then covered by one or the other.
        // `self` is pinned, and the caller detaches the probes (`detach`) before it goes away.
        // SAFETY: the signatures match task_newtask(task, clone_flags) and sched_process_free(task).
        unsafe {
            probes.push(
                Probe::attach(c_str!("task_newtask"), on_newtask as *mut c_void, data)?,
                GFP_KERNEL,
            )?;
            probes.push(
                Probe::attach(c_str!("sched_process_free"), on_free as *mut c_void, data)?,
                GFP_KERNEL,
            )?;
        }

        let mut n = 0;
        for_each_thread(|_| n += 1);
        self.grow(n + 64)?;

        for slot in self.idle.iter() {
            let p = alloc_stack(0, GFP_KERNEL).ok_or(ENOMEM)?;
            self.stats.stacks.fetch_add(1, Relaxed);
            slot.store(p, Release);
        }
        // SAFETY: the caller keeps `self` pinned, and detaches (`detach` withdraws it, after
        // removing the hotplug state, which waits for a running callback) before it goes.
        unsafe { HOTPLUG_TASKS.publish(self) }?;
        // SAFETY: `on_cpu_prepare` matches the callback type; it only reaches `self` through
        // HOTPLUG_TASKS, which `detach` clears after removing the state.
        let hp = unsafe { crate::sys::sync::cpuhp_add(on_cpu_prepare) }.inspect_err(|e| {
            pr_err!("cannot add a CPU hotplug state ({:?})\n", e);
        })?;
        self.hotplug.store(hp, Relaxed);

        // The walk first: it must give every task a stack, or the registration fails; the pool
        // only spares forks an allocation, so a failure to fill it is no error.
        self.cover_all()?;
        self.fill_pool();
        Ok(())
    }

    /// Gives every task without a stack one. Process context.
    pub(super) fn cover_all(&self) -> Result {
        // The walk runs under rcu_read_lock(): allocate outside it, in batches, and repeat until
        // a walk finds every task covered.
        const BATCH: usize = 64;
        let mut spare = Spare {
            p: [null_mut(); BATCH],
            n: 0,
        };
        let result = loop {
            while spare.n < BATCH {
                match alloc_stack(0, GFP_KERNEL) {
                    Some(p) => {
                        spare.p[spare.n] = p;
                        spare.n += 1;
                    }
                    None => break,
                }
            }
            if spare.n == 0 {
                break Err(ENOMEM);
            }
            let mut wanted = false;
            for_each_thread(|t| {
                let _np = NoPreempt::new();
                if self.of(t, false).is_some() {
                    return;
                }
                match spare.pop() {
                    Some(p) => {
                        // SAFETY: `p` is ours until filed.
                        unsafe { (*p).task = t.0 };
                        if !self.file(t, p) {
                            wanted = true;
                        }
                    }
                    None => wanted = true,
                }
            });
            if !wanted {
                break Ok(());
            }
            self.grow(0)?;
        };
        drop(spare);
        result
    }

    /// Undoes `attach`: detaches the probes and frees every stack. The caller guarantees nobody
    /// uses the stacks any more (no graph ops registered, no frames live) and serialises this
    /// with `attach`.
    pub fn detach(&self, probes: &mut KVec<Probe>) {
        if !probes.is_empty() {
            *probes = KVec::new();
            tracepoint::synchronize_unregister();
        }
        let hp = self.hotplug.swap(0, Relaxed);
        if hp > 0 {
            // SAFETY: the state `attach` added; removing it waits for a running callback.
            unsafe { crate::sys::sync::cpuhp_remove(hp) };
        }
        HOTPLUG_TASKS.withdraw(self);
        self.attached.store(false, Relaxed);
        // Refill first: a refill running `cover_all` may queue a rebuild (never the reverse), and
        // `cancel_sync` covers only what was queued before it.
        self.refill.cancel_sync();
        self.rebuild.cancel_sync();
        self.drain_pool();
        self.orphans.store(false, Relaxed);
        let table = self.writer.with(|counts| {
            *counts = Counts::default();
            self.table.swap(null_mut(), AcqRel)
        });
        if !table.is_null() {
            self.retire_cached(synchronize_rcu, || {
                // SAFETY: unpublished, readers gone, no CPU's cache holds an entry; entries are
                // freed once, here.
                let table = unsafe { KBox::from_raw(table) };
                table::for_each(&table.slots, |e| {
                    // SAFETY: entries are live stacks nobody else references now.
                    unsafe { free_stack_now(e as *mut TaskStack) };
                    self.stats.stacks.fetch_sub(1, Relaxed);
                });
            });
        }
        for slot in self.idle.iter() {
            let p = slot.swap(null_mut(), AcqRel);
            if !p.is_null() {
                // SAFETY: as above.
                unsafe { free_stack_now(p) };
                self.stats.stacks.fetch_sub(1, Relaxed);
            }
        }
    }

    /// Runs `free`, which frees pages of a table the caller unpublished, once no CPU's cache
    /// holds one of them or is using one: `grace` waits a grace period (`synchronize_rcu`;
    /// a KUnit case passes a model of one).
    ///
    /// Clearing the caches before waiting would not do. A lookup that found its page in the
    /// table just before it was unpublished still puts it in its CPU's cache when it returns
    /// (`Tasks::current_uncached`), which can come after such a clear:
    ///
    /// ```text
    ///   reader (preemption off)            detach
    ///   table -> page P
    ///                                      table = null; caches = null
    ///   cache = P                                                        <- undoes the clear
    ///   (read section ends)                grace period; free P         <- the cache holds P
    /// ```
    ///
    /// After a first grace period no lookup can still find an unpublished page (only lookups
    /// of the table fill a cache, and the table is gone), so a clear then stays; the second
    /// waits for the readers that took a page from a cache before it was cleared.
    pub(super) fn retire_cached(&self, mut grace: impl FnMut(), free: impl FnOnce()) {
        grace();
        self.cache.each(|c| c.store(null_mut(), Relaxed));
        grace();
        free();
    }

    /// Tests only: [`Tasks::retire_cached`] with `grace` for the grace periods and `free` for
    /// the pages' freeing (nothing is freed), and how many CPUs' caches hold `page` when
    /// `free` would run.
    #[cfg(ufgraph_kunit)]
    pub fn test_retire_cached(&self, grace: impl FnMut(), page: impl FnOnce() -> usize) -> usize {
        let mut held = 0;
        self.retire_cached(grace, || {
            let p = page();
            self.cache
                .each(|c| held += usize::from(c.load(Relaxed) as usize == p));
        });
        held
    }

    /// Forgets the frames on `cpu`'s idle stack: the CPU is offline and about to be brought up,
    /// its idle task restarting from scratch, so they can never return.
    pub(super) fn reset_idle(&self, cpu: usize) {
        let Some(slot) = self.idle.get(cpu) else {
            return;
        };
        let p = slot.load(Acquire);
        if !p.is_null() {
            // SAFETY: idle stacks live until `detach`, which removes this callback first; the
            // CPU is offline, so its idle task does not run on the stack.
            let stack = unsafe { &(*p).stack };
            let n = stack.frames().count();
            if n > 0 {
                self.stats.dead_frames.fetch_add(n as u64, Relaxed);
                stack.clear_frames();
            }
        }
    }
}
