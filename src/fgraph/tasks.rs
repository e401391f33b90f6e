// SPDX-License-Identifier: GPL-2.0

//! Per-task shadow stacks without a field in `task_struct`.
//!
//! A module cannot add the `ret_stack` field upstream keeps in `task_struct`, so every task's
//! stack is found through a table keyed by the task's address:
//!
//! ```text
//!   Tasks
//!   +-- table ----(RCU)--> [ 0 | &A | TOMB | &B | ... ]    open addressing, key = task address
//!   |                             |           |
//!   |                             v           v
//!   |                        +---------+ +---------+    one page per task:
//!   |                        | task    | | task    |    the key, an rcu_head for deferred free,
//!   |                        | rcu     | | rcu     |    then the shadow stack (pure::shadow)
//!   |                        | stack.. | | stack.. |
//!   |                        +---------+ +---------+
//!   +-- idle[cpu] ---------> one page per possible CPU, for its idle task
//!   +-- idle_owner[cpu] ---> that idle task, once it has looked itself up
//!   +-- cache[cpu] --------> the page of the task that last looked itself up on that CPU
//!   +-- writer lock (raw, irqsave): fork, free and table rebuilds
//!   +-- pool (raw lock) -----> up to POOL zeroed pages for forks, refilled by a work item
//! ```
//!
//! * Lookup (every hooked entry and return) is lock-free and NMI-safe: one atomic load of the
//!   table pointer and a short probe, with preemption disabled (an RCU-sched reader).
//! * Stacks are allocated for every thread when the first graph ops registers, and from then on
//!   given to every new task (the `task_newtask` tracepoint). It fires in `copy_process()` once
//!   the task can no longer fail to be created and before it first runs, whoever creates it:
//!   `fork()`, `clone()`, kernel threads, and also io_uring workers (`create_io_thread()`) and
//!   vhost workers, which never pass `sched_process_fork`.
//! * A tracepoint probe runs with preemption disabled, where PREEMPT_RT allows no allocation at
//!   all (its slab locks sleep; even `GFP_ATOMIC`). So forks take a stack from a small pool of
//!   stacks allocated ahead (`POOL`), which a work item refills in process context. A fork that
//!   finds the pool empty allocates with `GFP_ATOMIC` where that is allowed (not on PREEMPT_RT);
//!   otherwise, or if that fails too, the task is left for the refill work, which then walks the
//!   task list and gives a stack to every task without one (`fork_deferred` in `stats`). Until
//!   then its hooked calls are counted as missed. The writer lock is a raw spinlock for the
//!   same reason, and nothing under it allocates or frees.
//! * The current task's lookup (every hooked entry and return) first tries its CPU's cache: one
//!   pointer per CPU to the page found last, valid if the page's key is `current`. A task runs
//!   many hooked calls between context switches, so the table is probed about once per switch.
//!   A page leaves every cache before it is freed (`remove`, `detach`), and a dead task's page
//!   cannot match `current`: its address is reused only after the free hook has run.
//! * Idle tasks are not on the task list: each possible CPU gets a stack up front, found by
//!   `is_idle_task(current)` when the table has no entry (idle tasks never migrate). The idle
//!   task of a CPU that goes offline never returns from the hooked calls it was in (it restarts
//!   from scratch when the CPU comes back): a CPU hotplug callback forgets those frames before
//!   the CPU is brought up again, as upstream's `init_idle()` resets the idle task's stack.
//! * A stack is freed from `sched_process_free`, which fires from the RCU callback that drops the
//!   task's last RCU reference: after its final context switch, when it can no longer run. Frames
//!   still on it (a task that died inside hooked functions, e.g. in `do_exit`) are counted as
//!   dead frames, and the page goes after a grace period (`kfree_rcu`), since a reader may still
//!   be probing the table.
//! * Nothing counts live frames on the hot path: whoever wants the number (debugfs, teardown)
//!   walks the stacks.
//! * The table is rebuilt bigger from a work item when half full; inserts refuse past three
//!   quarters, so a fork storm degrades to counted misses, never to a long probe.

use crate::pure::shadow::ShadowStack;
use crate::pure::tasktable::{self, Counts, InsertError};
use crate::sys::global::Global;
use crate::sys::percpu::per_cpu_vec;
use crate::sys::sync::{synchronize_rcu, IrqSpinLock, NoPreempt, RcuHead, Work, WorkItem};
use crate::sys::task::{cpu_online, for_each_thread, this_cpu, RawTask, TaskRef};
use crate::sys::tracepoint::{self, Probe};
use core::ffi::c_void;
use core::mem::{offset_of, size_of};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use kernel::alloc::{flags, Flags, KBox, KVVec, KVec};
use kernel::c_str;
use kernel::prelude::*;

/// Words in a task's shadow stack: what is left of a page after the header.
pub const STACK_WORDS: usize = 506;
/// A task's shadow stack.
pub type Stack = ShadowStack<STACK_WORDS>;

/// One page: a task's shadow stack and what it takes to find and free it. When and how long one
/// may be reached: [`Tasks`]'s invariants.
#[repr(C)]
pub struct TaskStack {
    task: usize,
    rcu: RcuHead,
    /// The shadow stack.
    pub stack: Stack,
}

const _: () = assert!(size_of::<TaskStack>() == 4096);

fn key_of(e: usize) -> usize {
    // SAFETY: table entries are live `TaskStack`s (`Tasks`'s invariants): every caller reads them
    // inside a reader section or under the writer lock.
    unsafe { (*(e as *const TaskStack)).task }
}

fn alloc_stack(task: usize, gfp: Flags) -> Option<*mut TaskStack> {
    let b = KBox::<TaskStack>::new_uninit(gfp | flags::__GFP_ZERO | flags::__GFP_NOWARN).ok()?;
    // SAFETY: all-zero is a valid `TaskStack`: an empty stack with zeroed task variables, a null
    // rcu_head, task 0.
    let mut b = unsafe { b.assume_init() };
    b.task = task;
    Some(KBox::into_raw(b))
}

/// A stack allocated where the caller cannot sleep (a fork probe), if the kernel allows that:
/// not on PREEMPT_RT, whose slab locks sleep.
fn alloc_in_atomic() -> Option<*mut TaskStack> {
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
unsafe fn free_stack_now(p: *mut TaskStack) {
    // SAFETY: per the function's contract.
    drop(unsafe { KBox::from_raw(p) });
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

/// How many stacks the fork pool holds when full (64 KiB): forks in a burst beyond it before
/// the refill work runs allocate atomically, or on PREEMPT_RT wait for the walk.
pub const POOL: usize = 16;

/// Stacks allocated ahead for forks (see the module's doc); under `Tasks::pool`.
struct Pool {
    p: [*mut TaskStack; POOL],
    n: usize,
}

// SAFETY: the pointers are unpublished stacks that only the pool (under its lock) owns.
unsafe impl Send for Pool {}

struct Table {
    slots: KVVec<AtomicUsize>,
}

impl Table {
    fn new(cap: usize) -> Result<KBox<Self>> {
        Ok(KBox::new(
            Self {
                slots: crate::sys::rcutable::alloc_slots(cap)?,
            },
            GFP_KERNEL,
        )?)
    }
}

/// Counters shown in debugfs.
#[derive(Default)]
pub struct TaskStats {
    /// Stacks allocated now (idle stacks included).
    pub stacks: AtomicUsize,
    /// Forked tasks that got no stack (allocation failed or table full).
    pub fork_failed: AtomicU64,
    /// Forked tasks that found the fork pool empty and could not allocate where they were
    /// (PREEMPT_RT): the refill work's walk gave them their stack.
    pub fork_deferred: AtomicU64,
    /// Frames found on stacks of tasks that died inside hooked functions.
    pub dead_frames: AtomicU64,
    /// Table rebuilds.
    pub rebuilds: AtomicU64,
}

/// Every task's shadow stack. Lives in a pinned box: the tracepoint probes and the rebuild work
/// hold its address.
///
/// # Invariants
///
/// - `table` is null or a published `Table`, replaced or cleared only under `writer`, and freed
///   only an RCU grace period after it was unpublished.
/// - Every slot of a published table is empty, a tombstone or a `TaskStack` whose `task` is its
///   key; a `TaskStack` that is in a table or a CPU's `cache` line is freed only after it left
///   both and a grace period has passed (`remove`, `detach`), so it is valid for a reader that
///   keeps preemption disabled, and, while its task is alive, for as long as it stays filed
///   (only the task's free or `detach` unfiles it).
/// - `TaskStack::task` is written only while the stack is unpublished (spare, pooled, or being
///   filed).
/// - A non-null `idle` entry is that CPU's idle task's stack, never in the table, freed only by
///   `detach`, which runs once no ops is registered, nothing looks stacks up any more and the
///   CPU hotplug callback is removed.
#[pin_data(PinnedDrop)]
pub struct Tasks {
    table: AtomicPtr<Table>,
    #[pin]
    writer: IrqSpinLock<Counts>,
    idle: KVVec<AtomicPtr<TaskStack>>,
    idle_owner: KVVec<AtomicUsize>,
    cache: KVVec<CacheLine>,
    #[pin]
    rebuild: Work<Tasks, REBUILD>,
    #[pin]
    pool: IrqSpinLock<Pool>,
    /// Refills `pool`, and walks the task list when `orphans` says a fork got no stack.
    #[pin]
    refill: Work<Tasks, REFILL>,
    orphans: AtomicBool,
    attached: AtomicBool,
    /// The CPU hotplug state that resets idle stacks (0: none).
    hotplug: AtomicI32,
    /// Counters.
    pub stats: TaskStats,
}

/// One CPU's cached page, alone in its cache line: only that CPU writes it but for `remove`.
#[repr(C, align(64))]
struct CacheLine(AtomicPtr<TaskStack>);

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
const REBUILD: u64 = 0;
/// `Tasks::refill`'s [`WorkItem`] id.
const REFILL: u64 = 1;

// SAFETY: `rebuild` is a `Work<Tasks, REBUILD>` field of `Tasks`, which is pinned (`Tasks::new`
// is a pin-initialiser) and cancels the work in its drop.
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

impl Tasks {
    /// An empty set: no table, no stacks, no probes, until [`Tasks::attach`].
    pub fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            table: AtomicPtr::new(null_mut()),
            writer <- IrqSpinLock::new(Counts::default()),
            idle: per_cpu_vec(GFP_KERNEL, || AtomicPtr::new(null_mut()))?,
            idle_owner: per_cpu_vec(GFP_KERNEL, || AtomicUsize::new(0))?,
            cache: per_cpu_vec(GFP_KERNEL, || CacheLine(AtomicPtr::new(null_mut())))?,
            rebuild <- Work::new(),
            pool <- IrqSpinLock::new(Pool { p: [null_mut(); POOL], n: 0 }),
            refill <- Work::new(),
            orphans: AtomicBool::new(false),
            attached: AtomicBool::new(false),
            hotplug: AtomicI32::new(0),
            stats: TaskStats::default(),
        }? Error)
    }

    /// The stack of the current task, if it has one. The caller keeps preemption disabled while
    /// it uses the table, and may use the stack itself for as long as the current task lives.
    #[inline(always)]
    pub fn current(&self, _np: &NoPreempt) -> Option<&Stack> {
        let me = TaskRef::current();
        let line = self.cache.get(this_cpu())?;
        let p = line.0.load(Relaxed);
        if !p.is_null() {
            // Pages leave every cache before `remove` or `detach` frees them, a grace period
            // later, which this preemption-disabled reader (`_np`) holds off.
            // SAFETY: so a non-null cached page is live (`Tasks`'s invariants).
            let ts = unsafe { &*p };
            if ts.task == me.0 {
                return Some(&ts.stack);
            }
        }
        let ts = self.lookup(me, true)?;
        // Idle pages are keyed 0 and never match: idle tasks take the slow path (they run few
        // hooked calls), and only table entries are cached, which `remove` knows to drop.
        if ts.task == me.0 {
            line.0.store((ts as *const TaskStack).cast_mut(), Relaxed);
        }
        Some(&ts.stack)
    }

    // Drops `p` from every CPU's cache; the caller frees it after a grace period.
    fn uncache(&self, p: *mut TaskStack) {
        for line in self.cache.iter() {
            let _ = line.0.compare_exchange(p, null_mut(), Relaxed, Relaxed);
        }
    }

    /// The stack of `task`, which must be alive (current, or pinned by the caller), with
    /// preemption disabled.
    pub fn of_task(&self, task: TaskRef, _np: &NoPreempt) -> Option<&Stack> {
        self.of(task, false)
    }

    fn of(&self, task: TaskRef, is_current: bool) -> Option<&Stack> {
        self.lookup(task, is_current).map(|ts| &ts.stack)
    }

    fn lookup(&self, task: TaskRef, is_current: bool) -> Option<&TaskStack> {
        // The current idle task first: it is never in the table, and a CPU going offline runs
        // its idle task where RCU no longer protects a probe of the table.
        // SAFETY: the current task is alive.
        if is_current && unsafe { task.is_idle() } {
            let cpu = this_cpu();
            if let Some(o) = self.idle_owner.get(cpu) {
                // Teardown needs the idle task to find its kernel stack; it is the same task for
                // the CPU's whole life (hotplug restarts it, never replaces it).
                o.store(task.0, Relaxed);
            }
            return self.idle_page(cpu);
        }
        let table = self.table.load(Acquire);
        if table.is_null() {
            return None;
        }
        // SAFETY: a published table is freed only after an RCU grace period, and callers hold
        // preemption disabled (an RCU-sched reader).
        let slots = unsafe { &(*table).slots };
        if let Some(e) = tasktable::lookup(slots, task.0, key_of) {
            // SAFETY: the entry is a live `TaskStack` that belongs to `task`, which is alive, so
            // it stays filed, and valid, while the caller uses it (`Tasks`'s invariants).
            return Some(unsafe { &*(e as *const TaskStack) });
        }
        // SAFETY: `task` is alive (caller's contract).
        if !is_current && unsafe { task.is_idle() } {
            // SAFETY: as above.
            return self.idle_page(unsafe { task.cpu() });
        }
        None
    }

    fn idle_page(&self, cpu: usize) -> Option<&TaskStack> {
        let p = self.idle.get(cpu)?.load(Acquire);
        // SAFETY: idle stacks live until `detach`, which runs only when nothing looks up stacks
        // any more (`Tasks`'s invariants).
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Allocates a stack for `task` and files it. Called from the fork probe (atomic) and the
    /// initial walk. A task that has one already keeps it.
    fn add_forked(&self, task: TaskRef) {
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
    fn take_spare(&self) -> Option<*mut TaskStack> {
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
    fn give_back(&self, p: *mut TaskStack) {
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
    fn fill_pool(&self) {
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
    fn drain_pool(&self) {
        while let Some(p) = self.pool.with(|pool| {
            let n = pool.n.checked_sub(1)?;
            pool.n = n;
            Some(core::mem::replace(&mut pool.p[n], null_mut()))
        }) {
            // SAFETY: pooled stacks were never published.
            unsafe { free_stack_now(p) };
        }
    }

    // Files a preallocated stack; frees it if the task has one already or the table is full.
    fn file(&self, task: TaskRef, p: *mut TaskStack) -> bool {
        let r = self.writer.with(|counts| {
            let table = self.table.load(Relaxed);
            if table.is_null() {
                return (Err(InsertError::Full), false);
            }
            // SAFETY: writers hold the lock; the table is only replaced under it.
            let slots = unsafe { &(*table).slots };
            let r = tasktable::insert(slots, counts, task.0, p as usize, key_of);
            (r, tasktable::wants_rebuild(counts, slots.len()))
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
    fn remove(&self, task: TaskRef) {
        let e = self.writer.with(|counts| {
            let table = self.table.load(Relaxed);
            if table.is_null() {
                return None;
            }
            // SAFETY: writers hold the lock.
            let slots = unsafe { &(*table).slots };
            tasktable::remove(slots, counts, task.0, key_of)
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
    fn grow(&self, want: usize) -> Result {
        loop {
            let used = self.writer.with(|c| c.used);
            let cap = tasktable::capacity_for(used.max(want));
            let new = KBox::into_raw(Table::new(cap)?);
            let old = self.writer.with(|counts| {
                let old = self.table.load(Relaxed);
                // SAFETY: `new` is ours until published.
                let new_slots = unsafe { &(*new).slots };
                let rebuilt = if old.is_null() {
                    Ok(Counts::default())
                } else {
                    // SAFETY: writers hold the lock; `old` is the live table.
                    tasktable::rebuild(unsafe { &(*old).slots }, new_slots, key_of)
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

    fn attach_inner(&self, probes: &mut KVec<Probe>) -> Result {
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
    fn cover_all(&self) -> Result {
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
        self.rebuild.cancel_sync();
        self.refill.cancel_sync();
        self.drain_pool();
        self.orphans.store(false, Relaxed);
        let table = self.writer.with(|counts| {
            *counts = Counts::default();
            self.table.swap(null_mut(), AcqRel)
        });
        if !table.is_null() {
            for line in self.cache.iter() {
                line.0.store(null_mut(), Relaxed);
            }
            synchronize_rcu();
            // SAFETY: unpublished, readers gone; entries are freed once, here.
            let table = unsafe { KBox::from_raw(table) };
            tasktable::for_each(&table.slots, |e| {
                // SAFETY: entries are live stacks nobody else references now.
                unsafe { free_stack_now(e as *mut TaskStack) };
                self.stats.stacks.fetch_sub(1, Relaxed);
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

    /// Forgets the frames on `cpu`'s idle stack: the CPU is offline and about to be brought up,
    /// its idle task restarting from scratch, so they can never return.
    fn reset_idle(&self, cpu: usize) {
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

    /// Calls `f` on every stack with its owner: a task of the table, or a CPU's idle task.
    /// Without locking: the caller holds preemption disabled (`np`: a published table and its
    /// entries are freed only after a grace period), and sees a quiet table only if no writer
    /// can race it (under `stop_machine`).
    pub fn for_each_owned_stack(&self, _np: &NoPreempt, mut f: impl FnMut(Owner, &TaskStack)) {
        let table = self.table.load(Acquire);
        if !table.is_null() {
            // SAFETY: the table is live until a grace period after it is replaced, which the
            // caller's preemption-disabled section holds off.
            tasktable::for_each(unsafe { &(*table).slots }, |e| {
                // SAFETY: entries are live stacks (`Tasks`'s invariants: the caller's
                // preemption-disabled section holds the grace period off).
                let ts = unsafe { &*(e as *const TaskStack) };
                f(Owner::Task(TaskRef(ts.task)), ts)
            });
        }
        for (cpu, slot) in self.idle.iter().enumerate() {
            let p = slot.load(Acquire);
            if !p.is_null() {
                let task = self.idle_owner.get(cpu).map_or(0, |o| o.load(Relaxed));
                // SAFETY: `p` is this CPU's idle stack, non-null (checked above); idle stacks
                // are freed only by `detach`, after every walk of them has ended.
                let stack = unsafe { &*p };
                f(
                    Owner::Idle {
                        cpu,
                        task: (task != 0).then_some(TaskRef(task)),
                    },
                    stack,
                );
            }
        }
    }

    /// Zeroes ops `idx`'s variable in every task that has a stack (a stack given later starts
    /// zeroed): from a registration that took index `idx`, before the ops can run, so that it
    /// finds 0 there (the API's promise, upstream's `init_task_vars()`), not what the index's
    /// previous owner left. Nothing else writes those words then: the previous owner is
    /// unregistered, and returns of its frames skip it.
    pub fn clear_task_vars(&self, idx: usize) {
        let np = NoPreempt::new();
        self.for_each_owned_stack(&np, |_, ts| ts.stack.task_var(idx).store(0, Relaxed));
    }

    /// Calls `f` with each CPU's idle stack.
    pub fn for_each_idle_stack(&self, mut f: impl FnMut(usize, &Stack)) {
        for (cpu, slot) in self.idle.iter().enumerate() {
            let p = slot.load(Acquire);
            if !p.is_null() {
                // SAFETY: idle stacks live until `detach`, which runs only once the graph core
                // (and everything that can call this) is going away.
                f(cpu, unsafe { &(*p).stack });
            }
        }
    }

    /// Hooked frames on all stacks right now (a walk: nothing counts them on the hot path).
    pub fn frames_now(&self) -> usize {
        let mut n = 0;
        self.for_each_owned_stack(&NoPreempt::new(), |_, ts| n += ts.stack.depth());
        n
    }

    /// How many tasks (idle tasks included) have a stack.
    pub fn count(&self) -> usize {
        self.stats.stacks.load(Relaxed)
    }

    /// Whether stacks have been handed out.
    pub fn is_attached(&self) -> bool {
        self.attached.load(Relaxed)
    }
}

/// Whose stack a page is.
#[derive(Clone, Copy, Debug)]
pub enum Owner {
    /// A task of the table (alive until its free hook runs).
    Task(TaskRef),
    /// The idle task of `cpu`, if it ever looked itself up (it has no frames otherwise).
    Idle {
        /// The CPU.
        cpu: usize,
        /// Its idle task.
        task: Option<TaskRef>,
    },
}

impl Owner {
    /// Whether the owner can never run on this stack again: a task switched out for the last
    /// time, or the idle task of an offline CPU (which restarts from scratch when the CPU
    /// comes back).
    ///
    /// # Safety
    ///
    /// A task owner must be alive: pinned, or seen in the table inside a section its free hook
    /// waits for.
    pub unsafe fn gone(&self) -> bool {
        match *self {
            // SAFETY: alive (caller).
            Owner::Task(t) => unsafe { t.is_dead() },
            Owner::Idle { cpu, .. } => !cpu_online(cpu),
        }
    }

    /// The task, if known.
    pub fn task(&self) -> Option<TaskRef> {
        match *self {
            Owner::Task(t) => Some(t),
            Owner::Idle { task, .. } => task,
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Tasks {
    fn drop(self: Pin<&mut Self>) {
        // The owner detached (it holds the probes); a rebuild may still be queued.
        self.rebuild.cancel_sync();
        // Cancelled by `detach` already: idle now, but the work's contract wants it here too.
        self.refill.cancel_sync();
    }
}
