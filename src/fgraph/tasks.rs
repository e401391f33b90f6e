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
//!   |                        | rcu     | | rcu     |    then the shadow stack (fgraph::shadow)
//!   |                        | stack.. | | stack.. |
//!   |                        +---------+ +---------+
//!   +-- idle[cpu] ---------> one page per possible CPU, for its idle task
//!   +-- idle_owner[cpu] ---> that idle task, once it has looked itself up
//!   +-- cache (per-CPU) ---> on each CPU, the page of the task that last looked itself up there
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
//!   pointer per CPU to the page found last, valid if the page's key is `current`. It is a word
//!   of the module's static per-CPU area (`CpuCache`), so reading it is one load with nothing to
//!   find first (x86_64: `%gs`-relative; the hot paths look there before they look for the
//!   graph core, [`Tasks::cached`]). A task runs
//!   many hooked calls between context switches, so the table is probed about once per switch.
//!   A page leaves every cache before it is freed (`remove`; `detach` clears the caches once
//!   the lookups that could still fill one with an unpublished page are over,
//!   `Tasks::retire_cached`), and a dead task's page cannot match `current`: its address is
//!   reused only after the free hook has run.
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

use crate::fgraph::shadow::ShadowStack;
use crate::sys::global::Global;
use crate::sys::percpu::{per_cpu_vec, CpuCache};
use crate::sys::rcutable::table::{self, Counts, InsertError};
use crate::sys::sync::{synchronize_rcu, IrqSpinLock, NoPreempt, RcuHead, Work, WorkItem};
use crate::sys::task::{cpu_online, for_each_thread, this_cpu, Current, RawTask, TaskRef};
use crate::sys::tracepoint::{self, Probe};
use core::ffi::c_void;
use core::mem::{offset_of, size_of};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use kernel::alloc::{flags, Flags, KBox, KVVec, KVec};
use kernel::c_str;
use kernel::prelude::*;

mod lifecycle;
mod pool;

use lifecycle::*;
#[cfg(ufgraph_kunit)]
pub use pool::AS_IF_RT;
pub use pool::POOL;
use pool::*;

/// Words in a task's shadow stack: what is left of a page after the header.
pub const STACK_WORDS: usize = 506;
/// A task's shadow stack.
pub type Stack = ShadowStack<STACK_WORDS>;

/// One page: a task's shadow stack and what it takes to find and free it. When and how long one
/// may be reached: [`Tasks`]'s invariants.
#[repr(C)]
pub struct TaskStack {
    /// The key, on the page's first cache line with the stack's `top`: a cache hit reads both
    /// (the cache holds the stack's address, and finds the key just before it).
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
    /// Each CPU's last page, as the address of its `stack` field (see [`Tasks::cached`]).
    cache: CpuCache<Stack>,
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

impl Tasks {
    /// An empty set: no table, no stacks, no probes, until [`Tasks::attach`].
    pub fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            table: AtomicPtr::new(null_mut()),
            writer <- IrqSpinLock::new(Counts::default()),
            idle: per_cpu_vec(GFP_KERNEL, || AtomicPtr::new(null_mut()))?,
            idle_owner: per_cpu_vec(GFP_KERNEL, || AtomicUsize::new(0))?,
            cache: CpuCache::take()?,
            // SAFETY: the fields at `Tasks`'s two `WorkItem` offsets, in its pin-initialiser.
            rebuild <- unsafe { Work::new() },
            pool <- IrqSpinLock::new(Pool { p: [null_mut(); POOL], n: 0 }),
            // SAFETY: as above.
            refill <- unsafe { Work::new() },
            orphans: AtomicBool::new(false),
            attached: AtomicBool::new(false),
            hotplug: AtomicI32::new(0),
            stats: TaskStats::default(),
        }? Error)
    }

    /// The stack of the current task, if it has one. The caller keeps preemption disabled while
    /// it uses the table, and may use the stack itself for as long as the current task lives.
    #[inline(always)]
    pub fn current<'a>(&'a self, np: &'a NoPreempt) -> Option<&'a Stack> {
        self.current_of(Current::read(), np)
    }

    /// [`Tasks::current`], told the current task (read already: the recursion guard's).
    #[inline(always)]
    pub fn current_of<'a>(&'a self, me: Current, np: &'a NoPreempt) -> Option<&'a Stack> {
        if let Some(s) = Self::cached(me, np) {
            return Some(s);
        }
        self.current_uncached(me, np)
    }

    /// [`Tasks::current_of`] once this CPU's cache was found not to hold the current task's
    /// stack ([`Tasks::cached`]): the table, which then fills the cache.
    #[inline(always)]
    pub fn current_uncached<'a>(&'a self, me: Current, np: &'a NoPreempt) -> Option<&'a Stack> {
        let me = me.task();
        let ts = self.lookup(me, true)?;
        // Idle pages are keyed 0 and never match: idle tasks take the slow path (they run few
        // hooked calls), and only table entries are cached, which `remove` knows to drop.
        if ts.task == me.0 {
            self.cache.set((&ts.stack as *const Stack).cast_mut(), np);
        }
        Some(&ts.stack)
    }

    /// The current task's stack if this CPU's cache holds it: what [`Tasks::current_of`] tries
    /// first, with no `Tasks` at hand (the cache is a static per-CPU word, `CpuCache`), so that
    /// a hot path finds its stack before it looks for anything else. `None` says nothing about
    /// the table.
    #[inline(always)]
    pub fn cached(me: Current, np: &NoPreempt) -> Option<&Stack> {
        // The cache holds the page's stack, which the hot paths use, rather than the page: then
        // they keep one pointer, and the key they check (at a negative offset from it) is on the
        // page's first cache line, with the stack's top.
        let p = CpuCache::<Stack>::peek(np);
        if p.is_null() {
            return None;
        }
        // Pages leave every cache before `remove` or `detach` frees them, a grace period
        // later, which this preemption-disabled reader (`np`) holds off; the word is null
        // whenever no `Tasks` owns it, and only `current_uncached` sets it, to a page's stack.
        // SAFETY: so a non-null cached word is the `stack` field of a live page: stepping back
        // by the field's offset stays inside it and gives the page.
        let ts = unsafe {
            &*p.byte_sub(core::mem::offset_of!(TaskStack, stack))
                .cast::<TaskStack>()
        };
        (ts.task == me.task().0).then_some(&ts.stack)
    }

    // Drops `p` from every CPU's cache; the caller frees it after a grace period.
    fn uncache(&self, p: *mut TaskStack) {
        // The cache holds pages' stacks (`Tasks::cached`).
        // SAFETY: only the field's address is made, nothing is read (`p` is a live page).
        let s = unsafe { core::ptr::addr_of_mut!((*p).stack) };
        self.cache.each(|c| {
            let _ = c.compare_exchange(s, null_mut(), Relaxed, Relaxed);
        });
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
        if let Some(e) = table::lookup(slots, task.0, key_of) {
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

    /// Calls `f` on every stack with its owner: a task of the table, or a CPU's idle task.
    /// Without locking: the caller holds preemption disabled (`np`: a published table and its
    /// entries are freed only after a grace period), and sees a quiet table only if no writer
    /// can race it (under `stop_machine`).
    pub fn for_each_owned_stack(&self, _np: &NoPreempt, mut f: impl FnMut(Owner, &TaskStack)) {
        let table = self.table.load(Acquire);
        if !table.is_null() {
            // SAFETY: the table is live until a grace period after it is replaced, which the
            // caller's preemption-disabled section holds off.
            table::for_each(unsafe { &(*table).slots }, |e| {
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
        // Cancelled by `detach` already: idle now, but the work's contract wants it here too.
        // First, as in `detach`: a refill may queue a rebuild.
        self.refill.cancel_sync();
        // The owner detached (it holds the probes); a rebuild may still be queued.
        self.rebuild.cancel_sync();
    }
}
