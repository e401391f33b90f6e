// SPDX-License-Identifier: GPL-2.0

//! Tasks and CPUs, seen as opaque keys: ufgraph never looks inside a `task_struct`.

use crate::bindings;
use core::ffi::c_void;

/// The C `struct task_struct`, as tracepoint probes receive it: its address is all ufgraph
/// uses (a [`TaskRef`]).
pub type RawTask = bindings::task_struct;

/// The task running this code, read once: what `current` says, for a lookup that must be of
/// the running task's own data (its shadow stack), handed on rather than read again. Only
/// [`Current::read`] and the recursion guard (which reads `current` anyway) make one, and it
/// stays on the task that read it (neither `Send` nor `Sync`): the running task is the same
/// wherever the code that holds it runs.
#[derive(Clone, Copy, Debug)]
pub struct Current(TaskRef, core::marker::PhantomData<*mut ()>);

impl Current {
    /// Reads `current`.
    #[inline(always)]
    pub fn read() -> Self {
        // SAFETY: `current`, just read.
        unsafe { Self::of(crate::sys::hot::current()) }
    }

    /// `task`, which its caller has just read from `current` (`sys::hot::current()`).
    ///
    /// # Safety
    ///
    /// `task` must be what `current` reads on the task running this code: lookups made with
    /// the result take its data (its shadow stack) for the running task's.
    #[inline(always)]
    pub(crate) unsafe fn of(task: usize) -> Self {
        Self(TaskRef(task), core::marker::PhantomData)
    }

    /// The task.
    #[inline(always)]
    pub fn task(self) -> TaskRef {
        self.0
    }
}

/// A task, by its `task_struct` address. Holding one does not keep the task alive: it is a key
/// for lookups, compared but never dereferenced by Rust code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRef(pub usize);

impl TaskRef {
    /// The task running this code.
    #[inline(always)]
    pub fn current() -> Self {
        Self(crate::sys::hot::current())
    }

    /// The raw pointer, for C calls.
    pub fn as_ptr(self) -> *mut bindings::task_struct {
        self.0 as *mut bindings::task_struct
    }

    /// Whether this is a CPU's idle task.
    ///
    /// # Safety
    ///
    /// The task must be alive (current, or pinned by the caller).
    pub unsafe fn is_idle(self) -> bool {
        // SAFETY: the caller guarantees the task_struct is valid.
        unsafe { bindings::ufg_is_idle_task(self.as_ptr()) }
    }

    /// The CPU the task last ran on.
    ///
    /// # Safety
    ///
    /// The task must be alive (current, or pinned by the caller).
    pub unsafe fn cpu(self) -> usize {
        // SAFETY: the caller guarantees the task_struct is valid.
        unsafe { bindings::ufg_task_cpu(self.as_ptr()) as usize }
    }
}

impl TaskRef {
    /// The task's pid (its thread id).
    ///
    /// # Safety
    ///
    /// The task must be alive (current, pinned, or seen in an RCU walk of the task list).
    pub unsafe fn pid(self) -> i32 {
        // SAFETY: the caller guarantees the task_struct is valid.
        unsafe { bindings::ufg_task_pid(self.as_ptr()) }
    }

    /// The task's command name.
    ///
    /// # Safety
    ///
    /// As for [`TaskRef::pid`].
    pub unsafe fn comm(self) -> [u8; 16] {
        let mut buf = [0u8; 16];
        // SAFETY: the task is valid (caller); `buf` has TASK_COMM_LEN (16) bytes.
        unsafe { bindings::ufg_task_comm(self.as_ptr(), buf.as_mut_ptr()) };
        buf
    }
}

/// Where a task's kernel stack is, as teardown sees it under `stop_machine`.
#[derive(Clone, Copy, Debug)]
pub struct StackView {
    /// The stack's lowest address.
    pub lo: usize,
    /// One past its highest address.
    pub hi: usize,
    /// The stack pointer the task saved when it was last switched out (stale while `running`).
    pub saved_sp: usize,
    /// Whether the task is on a CPU (a stopper, or the task calling).
    pub running: bool,
}

impl StackView {
    /// Whether the aligned word at `addr` lies on this stack.
    pub fn holds_word(&self, addr: usize) -> bool {
        addr.is_multiple_of(core::mem::size_of::<usize>()) && addr >= self.lo && addr < self.hi
    }
}

impl TaskRef {
    /// Whether the task has been switched out for the last time: it will never run again, and
    /// its kernel stack may already be freed.
    ///
    /// # Safety
    ///
    /// The task_struct must be alive (pinned, or filed in a table that its free hook empties,
    /// read inside a section the free waits for).
    pub unsafe fn is_dead(self) -> bool {
        // SAFETY: the caller guarantees the task_struct is valid.
        unsafe { bindings::ufg_task_dead(self.as_ptr()) }
    }

    /// The task's kernel stack, or `None` if it has none any more.
    ///
    /// # Safety
    ///
    /// As for [`TaskRef::is_dead`]; the answer only holds while the task cannot run or exit
    /// (under `stop_machine`).
    pub unsafe fn stack_view(self) -> Option<StackView> {
        let mut v = StackView {
            lo: 0,
            hi: 0,
            saved_sp: 0,
            running: false,
        };
        // SAFETY: the task is valid (caller); the glue writes the four fields.
        let ok = unsafe {
            bindings::ufg_task_stack_view(
                self.as_ptr(),
                &mut v.lo,
                &mut v.hi,
                &mut v.saved_sp,
                &mut v.running,
            )
        };
        ok.then_some(v)
    }

    /// Takes a reference that keeps the task_struct allocated (`get_task_struct`).
    ///
    /// # Safety
    ///
    /// As for [`TaskRef::is_dead`]. Balanced by exactly one [`TaskRef::unpin`].
    pub unsafe fn pin(self) {
        // SAFETY: the task is valid (caller).
        unsafe { bindings::ufg_get_task(self.as_ptr()) }
    }

    /// Drops a reference [`TaskRef::pin`] took. May free the task_struct.
    ///
    /// # Safety
    ///
    /// The caller owns such a reference and does not use the task afterwards unless it holds
    /// another.
    pub unsafe fn unpin(self) {
        // SAFETY: the caller gives up its reference.
        unsafe { bindings::ufg_put_task(self.as_ptr()) }
    }
}

/// The address of the current task's command name (`current->comm`).
#[inline(always)]
pub fn current_comm_addr() -> usize {
    // SAFETY: `current` is valid in any context code runs in.
    unsafe { bindings::ufg_current_comm() as usize }
}

/// Whether `cpu` is online.
pub fn cpu_online(cpu: usize) -> bool {
    cpu < nr_cpu_ids() && cpu_online_bit(cpu)
}

/// Words in a bitmap of NR_CPUS bits.
const CPU_MASK_WORDS: usize = crate::bindings::UFG_NR_CPUS.div_ceil(usize::BITS as usize);

extern "C" {
    // The online CPUs: a bitmap of NR_CPUS bits (the same symbol on every architecture),
    // declared at its full size, so that reading any of its words stays inside the object Rust
    // is told of.
    pub(crate) static __cpu_online_mask: [usize; CPU_MASK_WORDS];
    // The possible CPUs, likewise.
    static __cpu_possible_mask: [usize; CPU_MASK_WORDS];
}

/// Bit `cpu` of a CPU mask (a bitmap of NR_CPUS bits, which the kernel may be changing): a
/// plain racy read of its word, as `cpumask_test_cpu()` does.
///
/// # Safety
///
/// `mask` points to such a bitmap, alive, and `cpu` is below `nr_cpu_ids` (<= NR_CPUS).
#[inline(always)]
unsafe fn mask_bit(mask: *const [usize; CPU_MASK_WORDS], cpu: usize) -> bool {
    let bits = usize::BITS as usize;
    // SAFETY: the caller's contract puts the word inside the bitmap; read through a raw pointer
    // and volatile, never as a reference, since the kernel writes it meanwhile (hotplug).
    let w = unsafe { mask.cast::<usize>().add(cpu / bits).read_volatile() };
    w & (1 << (cpu % bits)) != 0
}

/// `cpu_possible(cpu)`, for a `cpu` below `nr_cpu_ids`.
pub fn cpu_possible_bit(cpu: usize) -> bool {
    // SAFETY: `__cpu_possible_mask` is such a bitmap, set at boot and never freed; `cpu` as the
    // caller gives it.
    unsafe { mask_bit(core::ptr::addr_of!(__cpu_possible_mask), cpu) }
}

/// `cpu_online(cpu)`, inline (arm64's hot path's guard asks it on every hooked call, as
/// `sys::hot::cpu_online`; x86_64's has a one-instruction test), for a `cpu` below `nr_cpu_ids`.
#[inline(always)]
pub fn cpu_online_bit(cpu: usize) -> bool {
    // SAFETY: `__cpu_online_mask` is such a bitmap, never freed; `cpu` as the caller gives it.
    unsafe { mask_bit(core::ptr::addr_of!(__cpu_online_mask), cpu) }
}

/// The CPU this code runs on. Stable only with preemption disabled.
#[inline(always)]
pub fn this_cpu() -> usize {
    crate::sys::hot::cpu()
}

/// One more than the highest possible CPU number.
pub fn nr_cpu_ids() -> usize {
    // SAFETY: no preconditions.
    unsafe { bindings::ufg_nr_cpu_ids() as usize }
}

/// Calls `f` for every thread of every process (idle tasks excluded), under `rcu_read_lock()`:
/// `f` must not sleep. Threads created or freed meanwhile may or may not be seen.
pub fn for_each_thread<F: FnMut(TaskRef)>(mut f: F) {
    /// A callback C calls.
    ///
    /// # Safety
    ///
    /// `data` must be the `F` of the call below.
    unsafe extern "C" fn tramp<F: FnMut(TaskRef)>(
        t: *mut bindings::task_struct,
        data: *mut c_void,
    ) {
        // SAFETY: `data` is the `&mut F` passed below, alive for the whole walk.
        let f = unsafe { &mut *data.cast::<F>() };
        f(TaskRef(t as usize));
    }
    // SAFETY: `tramp::<F>` matches the callback type and `data` points to `f`, which outlives
    // the call; the walk calls back synchronously only.
    unsafe { bindings::ufg_for_each_thread(Some(tramp::<F>), (&mut f as *mut F).cast::<c_void>()) };
}
