// SPDX-License-Identifier: GPL-2.0

//! Synchronisation the 6.12 kernel crate lacks: an irq-safe raw spinlock, preemption guards, RCU
//! grace periods, and work items with a Rust callback.

use crate::bindings;
use core::cell::UnsafeCell;
use core::marker::{PhantomData, PhantomPinned};
use kernel::prelude::*;
use kernel::types::Opaque;

/// A raw spinlock taken with interrupts disabled (`raw_spin_lock_irqsave`), for data that
/// interrupt or softirq context (tracepoint probes run in both) also locks. Raw: tracepoint
/// probes run with preemption disabled, where PREEMPT_RT's `spinlock_t`, a sleeping lock, must
/// not be taken; so nothing that may sleep or allocate runs under it (not even `GFP_ATOMIC`,
/// which takes sleeping locks on PREEMPT_RT).
#[pin_data]
pub struct IrqSpinLock<T> {
    #[pin]
    lock: Opaque<bindings::raw_spinlock_t>,
    data: UnsafeCell<T>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: the data is only reached through the lock.
unsafe impl<T: Send> Send for IrqSpinLock<T> {}
// SAFETY: the lock serialises all access to the data.
unsafe impl<T: Send> Sync for IrqSpinLock<T> {}

impl<T> IrqSpinLock<T> {
    /// A pin-initialiser for a lock around `data`.
    pub fn new(data: T) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `spin_lock_init` initialises the spinlock in place; it stays pinned.
            lock <- Opaque::ffi_init(|slot| unsafe { bindings::ufg_raw_spin_lock_init(slot) }),
            data: UnsafeCell::new(data),
            _pin: PhantomPinned,
        })
    }

    /// Runs `f` with the lock held and local interrupts disabled.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the lock was initialised by `new` and is pinned.
        let flags = unsafe { bindings::ufg_raw_spin_lock_irqsave(self.lock.get()) };
        // SAFETY: the lock is held: nobody else accesses the data until we release it.
        let r = f(unsafe { &mut *self.data.get() });
        // SAFETY: we hold the lock, taken with these flags.
        unsafe { bindings::ufg_raw_spin_unlock_irqrestore(self.lock.get(), flags) };
        r
    }
}

/// Preemption disabled (without tracing) for the guard's lifetime: an RCU-sched read-side
/// critical section, which `synchronize_rcu()` waits for. Neither `Send` nor `Sync`: it is
/// about this task on this CPU, and its drop must run there.
pub struct NoPreempt(PhantomData<*mut ()>);

impl NoPreempt {
    /// Disables preemption.
    // No `Default`: making one has an effect (preemption off until it is dropped).
    #[allow(clippy::new_without_default)]
    #[inline(always)]
    pub fn new() -> Self {
        crate::sys::hot::preempt_disable();
        Self(PhantomData)
    }

    /// The proof for code that disabled preemption by other means (the recursion guard), as a
    /// reference to no memory: nothing of the caller's has its address taken for it, so what
    /// the caller keeps in registers stays there on the hot path.
    ///
    /// # Safety
    ///
    /// Preemption stays disabled for all of `'a`.
    #[inline(always)]
    unsafe fn assume<'a>() -> &'a NoPreempt {
        const _: () = assert!(core::mem::size_of::<NoPreempt>() == 0);
        // SAFETY: `NoPreempt` is zero-sized (checked above): any aligned, non-null pointer is a
        // valid reference to one; what it proves, the caller vouches for.
        unsafe { core::ptr::NonNull::<NoPreempt>::dangling().as_ref() }
    }
}

impl Drop for NoPreempt {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: balances `new`; the guard is gone, and with it the references it lent.
        unsafe { crate::sys::hot::preempt_enable() };
    }
}

/// ftrace's recursion guard for one callback (`ftrace_test_recursion_trylock()`), as upstream's
/// fgraph and fprobe callbacks take it: one callback per context (task, softirq, irq, NMI) at a
/// time on this task, and one more level through ftrace's transition bit (an interrupt that
/// arrives before the preempt count says so looks like recursion), so a callback that calls a
/// hooked function (an event reading memory with `copy_from_kernel_nofault()`, say) is not
/// re-entered without bound. It also refuses to run where RCU is not watching or on a CPU going
/// offline, and disables preemption while held: it is the callback's [`NoPreempt`] too.
///
/// Guards of one task are released in the reverse order of taking (Rust's scopes do that; no
/// caller drops one early or forgets one): a release puts back the recursion word as it was
/// before its `try_lock`, which also releases any guard taken after it and not yet dropped.
pub struct Recursion {
    /// The task's `trace_recursion` before this guard set its bit: what the release writes back.
    /// Between the two, everything that changes the word on this task (a nested guard, ftrace's
    /// own guard in a callback, an interrupt's) has put it back as it found it, so this is the
    /// word with our bit cleared, as `trace_clear_recursion()` leaves it, in one store instead
    /// of a read, a mask and a write. One writer in 6.12 leaves a bit behind on purpose: the
    /// function_graph tracer's `ftrace_graph_addr()` (`set_graph_function`) sets or clears
    /// `TRACE_IRQ_BIT` on entering a matched function and never resets it. If that happens
    /// inside our window (a handler, or an interrupt, enters such a function) the release puts
    /// the bit back as it was. It is a hint `ftrace_graph_ignore_irqs()` reads, mostly after a
    /// function match that writes it again: at most, with several trace instances, which
    /// interrupt functions the function_graph tracer records may differ.
    before: usize,
    /// The task that took the guard (`current`, read to find its recursion word), for its
    /// lookups while it holds it ([`Recursion::current`]).
    task: crate::sys::task::Current,
}

impl Recursion {
    /// Takes the guard for a callback at `ip` (called from `parent_ip`): what
    /// `ftrace_test_recursion_trylock()` does (`ufg_recursion_trylock` in the glue, which the
    /// KUnit suite checks this against), inline, after the RCU and CPU-online checks.
    #[inline(always)]
    pub fn try_lock(ip: usize, parent_ip: usize) -> core::result::Result<Self, Refused> {
        let _ = (ip, parent_ip);
        use crate::bindings as b;
        use crate::sys::hot;
        // Where RCU does not watch, or on a CPU going offline (which RCU no longer waits for
        // once rcutree_report_cpu_dead() ran, though rcu_is_watching() still says yes there):
        // nothing. Preemption may be enabled here; the CPU may change under us, but only to
        // another that is online and watched (a task cannot migrate out of either state).
        if !hot::rcu_watching() || !hot::cpu_online(hot::cpu()) {
            return Err(Refused::Unsafe);
        }
        let me = hot::current();
        let bits = me.wrapping_add(b::UFG_TASK_TRACE_RECURSION) as *mut usize;
        // SAFETY: the current task's `trace_recursion`, which only the task itself (and
        // interrupts on its CPU, which restore it before they return) changes.
        let val = unsafe { bits.read_volatile() };
        let start = b::UFG_TRACE_FTRACE_START;
        // interrupt_context_level(): 0 normal, 1 softirq, 2 hardirq, 3 NMI. Task context, by
        // far the most common, is one test of the preempt count in memory, and then its bit is
        // a constant (each path takes the guard with its own copy of `take`).
        if hot::in_task_context() {
            // SAFETY: `bits` is the current task's `trace_recursion` (above), `val` its value.
            return unsafe { Self::take(me, bits, val, b::UFG_TRACE_CTX_NORMAL + start) };
        }
        core::hint::cold_path();
        // SAFETY: as above.
        unsafe {
            Self::take(
                me,
                bits,
                val,
                b::UFG_TRACE_CTX_NORMAL - context_level() + start,
            )
        }
    }

    /// Runs `body` under the guard for a callback at `ip` (called from `parent_ip`), as
    /// [`Recursion::try_lock`] then a drop would, with the current task and the guard's proof
    /// that preemption is disabled; `Err` and nothing run where the guard refuses. The common
    /// case, task context with its bit free, takes the bit as a constant: set and cleared again
    /// with one instruction each (`trace_test_and_set_recursion()` and
    /// `trace_clear_recursion()`, as the kernel inlines them), nothing of the guard kept in a
    /// register across `body`, so that the callback it runs saves one register fewer and
    /// carries no word to write back. Every other context, and a bit already taken, goes to
    /// `other` (given the same) under a guard of [`Recursion::try_lock`]: the caller makes it
    /// a call out of line, so that `body` is the only copy inlined.
    ///
    /// The common case clears its bit where the other cases write back the word as they found
    /// it (see `before`): the same on every word but one that an interrupt, or `body`, left a
    /// bit set in, which only the function_graph tracer's `TRACE_IRQ_BIT` does (it is a hint);
    /// clearing is what the kernel's own guard does.
    #[inline(always)]
    pub fn run<R>(
        ip: usize,
        parent_ip: usize,
        body: impl FnOnce(crate::sys::task::Current, &NoPreempt) -> R,
        other: impl FnOnce(crate::sys::task::Current, &NoPreempt) -> R,
    ) -> core::result::Result<R, Refused> {
        use crate::bindings as b;
        use crate::sys::hot;
        const BIT: usize = 1 << (b::UFG_TRACE_CTX_NORMAL + b::UFG_TRACE_FTRACE_START);
        // As in `try_lock`: nothing where RCU does not watch or on a CPU going offline.
        if !hot::rcu_watching() || !hot::cpu_online(hot::cpu()) {
            return Err(Refused::Unsafe);
        }
        let me = hot::current();
        let bits = me.wrapping_add(b::UFG_TASK_TRACE_RECURSION) as *mut usize;
        // SAFETY: the current task's `trace_recursion` (see `try_lock`); plain accesses between
        // compiler fences, as the kernel's `current->trace_recursion` ones.
        if hot::in_task_context() && unsafe { *bits } & BIT == 0 {
            // SAFETY: as above; only this task writes its own word, and interrupts on its CPU
            // put it back as they found it before they return.
            unsafe { *bits |= BIT };
            core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
            hot::preempt_disable();
            // SAFETY: preemption is disabled (just above) until after `body` returns (below),
            // and `np` is only lent to `body`, so no borrow of it outlives that.
            let np = unsafe { NoPreempt::assume() };
            // SAFETY: `me` is `current`, read above on this task.
            let r = body(unsafe { crate::sys::task::Current::of(me) }, np);
            // ftrace_test_recursion_unlock(): preemption first, then the bit.
            // SAFETY: balances the disable above; `body`, and with it every borrow of the proof,
            // is done.
            unsafe { hot::preempt_enable() };
            core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
            let bits = hot::current().wrapping_add(b::UFG_TASK_TRACE_RECURSION) as *mut usize;
            // SAFETY: the current task's word (the same task: it ran `body` with preemption
            // disabled); everything that set a bit in it since has cleared it again.
            unsafe { *bits &= !BIT };
            return Ok(r);
        }
        let g = Self::try_lock(ip, parent_ip)?;
        let r = other(g.current(), g.no_preempt());
        drop(g);
        Ok(r)
    }

    /// The guard with `bit` (this context's), or the transition bit if `bit` is taken.
    ///
    /// # Safety
    ///
    /// `me` is the current task, `bits` its `trace_recursion`, and `val` what it holds.
    #[inline(always)]
    unsafe fn take(
        me: usize,
        bits: *mut usize,
        val: usize,
        mut bit: usize,
    ) -> core::result::Result<Self, Refused> {
        if val & (1 << bit) != 0 {
            // One more level may pass through the transition bit (an interrupt that arrived
            // before the preempt count said so looks like recursion).
            core::hint::cold_path();
            bit =
                crate::bindings::UFG_TRACE_CTX_TRANSITION + crate::bindings::UFG_TRACE_FTRACE_START;
            if val & (1 << bit) != 0 {
                return Err(Refused::Recursion);
            }
            // SAFETY: the caller's contract; only this task writes its own word, and interrupts
            // put it back as they found it.
            unsafe { bits.write_volatile(val | 1 << bit) };
        } else {
            // The same store, apart so that the common path's bit stays a constant.
            // SAFETY: as above.
            unsafe { bits.write_volatile(val | 1 << bit) };
        }
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        crate::sys::hot::preempt_disable();
        // Preemption is disabled until `drop` enables it, after every borrow of the guard (and so
        // of the proof `no_preempt` hands out).
        Ok(Self {
            before: val,
            // SAFETY: `me` is the current task (the caller's contract).
            task: unsafe { crate::sys::task::Current::of(me) },
        })
    }

    /// The task that holds the guard: the running task (read once, when it was taken).
    #[inline(always)]
    pub fn current(&self) -> crate::sys::task::Current {
        self.task
    }

    /// Proof that preemption is disabled while the guard is held.
    #[inline(always)]
    pub fn no_preempt(&self) -> &NoPreempt {
        // Not a reference into the guard: that would take its address, and a guard whose
        // address is taken lives in memory (its bit stored and reloaded on every hooked call)
        // rather than in a register. The borrow of `self` still bounds the proof's lifetime.
        // SAFETY: preemption is disabled while `self` is borrowed: `try_lock` disabled it, and
        // only `drop` enables it.
        unsafe { NoPreempt::assume() }
    }
}

/// The context this code runs in, as `interrupt_context_level()` numbers it: 0 task, 1 softirq,
/// 2 hardirq, 3 NMI.
pub fn context_level() -> usize {
    use crate::bindings as b;
    let pc = crate::sys::hot::preempt_count_word();
    (pc & b::UFG_NMI_MASK != 0) as usize
        + (pc & (b::UFG_NMI_MASK | b::UFG_HARDIRQ_MASK) != 0) as usize
        + (pc & (b::UFG_NMI_MASK | b::UFG_HARDIRQ_MASK | b::UFG_SOFTIRQ_OFFSET) != 0) as usize
}

/// Why [`Recursion::try_lock`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// This context is already inside a callback: the caller counts a miss.
    Recursion,
    /// RCU is not watching, or the CPU is going offline: the caller must not look anything up
    /// (not even to count a miss); nothing it reads is protected there.
    Unsafe,
}

impl Drop for Recursion {
    #[inline(always)]
    fn drop(&mut self) {
        // ftrace_test_recursion_unlock(): preemption first, then the bit.
        // SAFETY: balances `try_lock`'s disable; the guard, the `NoPreempt` it lends, is gone.
        unsafe { crate::sys::hot::preempt_enable() };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        let bits = crate::sys::hot::current()
            .wrapping_add(crate::bindings::UFG_TASK_TRACE_RECURSION)
            as *mut usize;
        // The word as `try_lock` found it: our bit clear, every other as it is now (see
        // `before`).
        // SAFETY: the current task's `trace_recursion` (see `try_lock`).
        unsafe { bits.write_volatile(self.before) };
    }
}

/// Waits for every preemption-disabled region and RCU reader that started before the call.
pub fn synchronize_rcu() {
    // SAFETY: may sleep; callers are in process context.
    unsafe { bindings::synchronize_rcu() };
}

/// Waits until every task has passed a voluntary context switch: no task is still executing
/// code it was preempted in before the call (our trampoline, say).
#[allow(dead_code)]
pub fn synchronize_rcu_tasks() {
    // SAFETY: may sleep; callers are in process context.
    unsafe { bindings::ufg_synchronize_rcu_tasks() };
}

/// Sleeps for `ms` milliseconds.
pub fn msleep(ms: u32) {
    // SAFETY: may sleep; callers are in process context.
    unsafe { bindings::msleep(ms) };
}

/// What a [`Work`] field of `Self` does: the `ID`-th work item of `Self` (a type may embed
/// several, told apart by `ID`).
///
/// # Safety
///
/// `OFFSET` must be the offset of a `Work<Self, ID>` field of `Self` (which [`Work::new`]'s
/// callers, `Self`'s constructors, initialise); every `Self` whose work is initialised must be
/// pinned, and must cancel the work ([`Work::cancel_sync`], which waits for a running callback)
/// before it goes away. Then the callback may hand [`WorkItem::run`] a reference to the `Self`
/// around the work.
pub unsafe trait WorkItem<const ID: u64>: Sync + Sized {
    /// `core::mem::offset_of!(Self, the_field)`.
    const OFFSET: usize;

    /// Runs on the system workqueue, in process context.
    fn run(&self);
}

/// A `work_struct` that is the `ID`-th work item of a pinned `T`, whose callback is
/// [`WorkItem::run`] on that `T`.
///
/// # Invariants
///
/// Once initialised, the work is the field at `T::OFFSET` of a pinned `T`, which cancels it
/// before it goes away (the [`WorkItem`] contract).
#[repr(transparent)]
pub struct Work<T: WorkItem<ID>, const ID: u64>(Opaque<bindings::work_struct>, PhantomData<T>);

// SAFETY: the workqueue API may be called on a work item from any task, concurrently; the
// callback hands out `&T` on another task, and `T: Sync` (`WorkItem`).
unsafe impl<T: WorkItem<ID>, const ID: u64> Send for Work<T, ID> {}
// SAFETY: as above.
unsafe impl<T: WorkItem<ID>, const ID: u64> Sync for Work<T, ID> {}

impl<T: WorkItem<ID>, const ID: u64> Work<T, ID> {
    /// A pin-initialiser for the work item.
    ///
    /// # Safety
    ///
    /// Only as the field at `T::OFFSET` of a `T` being pin-initialised (the [`WorkItem`]
    /// contract): the callback finds its `T` at that offset, and [`Work::schedule`] may be
    /// called on any initialised work, so a `Work` anywhere else would hand the callback memory
    /// that is no `T` (or is freed).
    pub unsafe fn new() -> impl PinInit<Self> {
        const {
            assert!(T::OFFSET + core::mem::size_of::<Self>() <= core::mem::size_of::<T>());
        }
        // SAFETY: INIT_WORK initialises the work_struct in place; `Work` is transparent.
        unsafe {
            kernel::init::pin_init_from_closure(move |slot: *mut Self| {
                // INVARIANT: the `WorkItem` contract places the work in a pinned `T`.
                bindings::ufg_init_work(slot.cast(), Some(Self::callback));
                Ok(())
            })
        }
    }

    /// The work's callback.
    ///
    /// # Safety
    ///
    /// Called by the workqueue only, with the `work_struct` of an initialised `Work<T, ID>`.
    unsafe extern "C" fn callback(w: *mut bindings::work_struct) {
        // SAFETY: by the type invariant the work is the field at `T::OFFSET` of a pinned `T`,
        // which cancels the work, waiting for this callback, before it goes away.
        let owner = unsafe { &*w.cast::<u8>().sub(T::OFFSET).cast::<T>() };
        owner.run();
    }

    /// Queues the work on the system workqueue, unless it is queued already.
    pub fn schedule(&self) -> bool {
        // SAFETY: the work_struct was initialised by `new` and is pinned with its owner.
        unsafe { bindings::ufg_schedule_work(self.0.get()) }
    }

    /// Cancels the work and waits for a running instance to finish.
    pub fn cancel_sync(&self) {
        // SAFETY: as for `schedule`; may sleep.
        unsafe { bindings::cancel_work_sync(self.0.get()) };
    }

    /// Waits for the work's last queueing to have run.
    #[allow(dead_code)]
    pub fn flush(&self) {
        // SAFETY: as for `schedule`; may sleep.
        unsafe { bindings::flush_work(self.0.get()) };
    }
}

/// Runs `f` on one CPU while every other online CPU spins with interrupts off
/// (`stop_machine()`): no task runs meanwhile. `f` runs with interrupts disabled and must not
/// sleep.
pub fn stop_machine<F: FnMut()>(mut f: F) {
    /// The stopper's callback.
    ///
    /// # Safety
    ///
    /// `data` must be the `F` of the call below, alive for it.
    unsafe extern "C" fn run<F: FnMut()>(data: *mut core::ffi::c_void) -> core::ffi::c_int {
        // SAFETY: the caller's `F`, alive for the synchronous call, used by this CPU alone.
        unsafe { (*data.cast::<F>())() };
        0
    }
    // SAFETY: `run::<F>` matches cpu_stop_fn_t and only calls `f`; a NULL cpumask runs it on
    // one CPU while all others are stopped; stop_machine returns after it ran.
    unsafe { bindings::stop_machine(Some(run::<F>), (&mut f as *mut F).cast(), core::ptr::null()) };
}

/// An `rcu_head` (`struct callback_head`) to embed in an object that [`kvfree_rcu`] frees. All
/// zeroes is a valid unused head.
#[repr(transparent)]
pub struct RcuHead(Opaque<bindings::callback_head>);

/// Frees `obj` (a kmalloc'd or kvmalloc'd object) after an RCU grace period, using `head`, an
/// `rcu_head` inside it (`kvfree_rcu()`); never sleeps.
///
/// # Safety
///
/// `obj` must come from the kernel's allocator and no longer be reachable by new readers;
/// `head` must lie inside its first page (kvfree_rcu finds the object from it).
pub unsafe fn kvfree_rcu<T>(obj: *mut T, head: *mut RcuHead) {
    // SAFETY: per the function's contract; `RcuHead` is a transparent `callback_head`.
    unsafe { bindings::ufg_kfree_rcu(head.cast(), obj.cast()) };
}

/// Adds a CPU hotplug state (CPUHP_BP_PREPARE_DYN) whose startup callback, `prepare`, runs
/// before a CPU comes up (not for the CPUs already up). Returns the state, for
/// [`cpuhp_remove`].
///
/// # Safety
///
/// `prepare` may be called from now until [`cpuhp_remove`] returns, on any CPU being brought up.
pub unsafe fn cpuhp_add(
    prepare: unsafe extern "C" fn(core::ffi::c_uint) -> core::ffi::c_int,
) -> Result<core::ffi::c_int> {
    // SAFETY: `prepare` matches the callback type (the caller vouches for what it does).
    match unsafe { bindings::ufg_cpuhp_add(Some(prepare)) } {
        n if n > 0 => Ok(n),
        0 => Err(EINVAL),
        e => Err(Error::from_errno(e)),
    }
}

/// Removes a state [`cpuhp_add`] added, waiting for a running callback.
///
/// # Safety
///
/// `state` must come from [`cpuhp_add`] and be removed once.
pub unsafe fn cpuhp_remove(state: core::ffi::c_int) {
    // SAFETY: per the function's contract.
    unsafe { bindings::ufg_cpuhp_remove(state) };
}
