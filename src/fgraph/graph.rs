// SPDX-License-Identifier: GPL-2.0

//! The multi-user function-graph core: up to 16 graph ops share each task's shadow stack.
//!
//! Each registered ops owns an `ftrace_ops` (its own filter) whose callback is [`graph_entry`].
//! At a hooked function's entry, the first ops to see the call pushes a frame on the task's
//! shadow stack and swaps the return address for our trampoline; the other ops hooking the same
//! call join that frame, each adding its bit to the frame's bitmap (and its data above it) if its
//! entry callback wants the return. On return the trampoline calls [`ufgraph_return_handler`],
//! which runs the return callbacks of the ops in the bitmap and hands back the real address.
//!
//! ```text
//!   hooked fn entry --ftrace--> graph_entry(ops A) --push frame, *retp = trampoline
//!                   --ftrace--> graph_entry(ops B) --join frame (same call), bit B
//!   hooked fn `ret` ----------> ufgraph_return_trampoline (asm) --> ufgraph_return_handler
//!                                   ret callbacks of A, B; pop; --> real return address
//! ```
//!
//! With one ops on a function, ftrace calls its callback directly (no list walk) and the return
//! path runs a single bit: that is the single-user fast path.
//!
//! Module lifetime: a live frame's return lands in this module's trampoline, so the module's text
//! must not go while one can still get there. Rather than refuse `rmmod` (the kernel checks the
//! module's reference count before calling us, and with broad filters `rmmod` itself runs hooked
//! functions), the core *hands the return addresses back* when it is torn down, and tracks, frame
//! by frame, the ones it cannot hand back (see [`Graph::release_frames`]):
//!
//! 1. every graph ops is unregistered first: no new frame can appear;
//! 2. under `stop_machine()` (no task runs), every frame of every stack is judged, and marked on
//!    the shadow stack itself (`pure::shadow::mark`); frames sharing a return slot (a chain: tail
//!    calls, several ops' frames for one call) are judged together (`pure::handback`):
//!    - its task can never run again (switched out for the last time: a zombie, whose kernel
//!      stack may be freed already; or the idle task of an offline CPU): left alone, untouched;
//!    - every copy of our trampoline in the chain can be reached (the return slot, and the copies
//!      the kernel's function_graph and rethook saved when they stacked over our frames): each is
//!      replaced by the real return address, the frames are *handed back*; those tasks will
//!      return without passing through us;
//!    - a copy cannot be reached (another hooker saved it, or the slot cannot be rewritten):
//!      *pending*, the whole chain, nothing written. The task is pinned (`get_task_struct`);
//!    - anything else (the slot was reused, below the stack pointer...): the call was abandoned
//!      and can never return through us;
//! 3. a grace period lets tasks that had already entered the trampoline finish it;
//! 4. teardown waits until every pending frame has returned (it is no longer on its stack) or its
//!    task can no longer run, naming the tasks and functions in the kernel log every 5 seconds;
//!    then a grace period again, for the pending frames' last trampoline instructions.
//!
//! No count is involved: a frame handed back and later dropped by a return below it, a task that
//! exits with frames, an idle task whose CPU went offline, a task preempted inside the trampoline,
//! none of them can make teardown end early or wait for ever.

use super::hub::{Hub, HubState};
use super::tasks::{Owner, Stack, TaskStack, Tasks};
use crate::arch::Slot as ArchSlot;
use crate::bindings;
use crate::pure::handback::{self, Hooker, Plan};
use crate::pure::lru::Lru;
use crate::pure::shadow::{mark, DataRef, Frame, ARRAY_SIZE, FRAME_WORDS};
use crate::sys::ftrace::{RawOps, Regs};
#[cfg(CONFIG_PREEMPTION)]
use crate::sys::sync::synchronize_rcu_tasks;
use crate::sys::sync::{msleep, synchronize_rcu, NoPreempt, Recursion, Refused};
use crate::sys::tracepoint::Probe;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use kernel::alloc::KVec;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Mutex;

/// Where an entry callback is called from.
pub struct Entry<'a> {
    /// The hooked function (ftrace's ip).
    pub func: usize,
    /// Where the function will return to (its caller).
    pub ret_ip: usize,
    /// How many hooked frames the task has below this one, plus one.
    pub depth: usize,
    /// Arguments, stack pointer.
    pub regs: &'a Regs,
    /// What the hooking code passed (the rethook API: its `ufgraph_rethook`); from the
    /// handler's own `ftrace_ops`, what its [`GraphHandler::pre_entry`] returned; 0 on the hub.
    pub cookie: usize,
    stack: &'a Stack,
    idx: usize,
    np: &'a NoPreempt,
    frame: EntryFrame,
}

/// The frame of the call an entry callback runs for.
#[derive(Clone, Copy)]
enum EntryFrame {
    /// On the stack; its bitmap word is at this index.
    Pushed(usize),
    /// Not pushed yet (the one-step path, [`GraphHandler::RESERVES_FIRST`]): the first
    /// reservation pushes it with its data, or the core pushes it bare if the callback wants the
    /// return without data. `ret` and `retp` are the call's.
    Lazy {
        ret: usize,
        retp: usize,
        calltime: u64,
    },
}

/// Counts a refused data reservation that was not the caller's mistake (see `Stats`).
fn reserve_failed(bytes: usize) {
    if bytes == 0 || bytes > crate::pure::shadow::MAX_DATA_BYTES {
        return;
    }
    // SAFETY: callbacks run only while the graph core exists.
    if let Some(g) = unsafe { graph() } {
        g.stats.reserve_failed.fetch_add(1, Relaxed);
    }
}

/// Counts a call whose frame did not fit, on the one-step path ([`EntryFrame::Lazy`]), in its
/// ops' `missed_overrun` (the handler reports the miss to its users itself).
#[cold]
fn lazy_overrun(idx: usize) {
    // SAFETY: callbacks run only while the graph core exists.
    let Some(g) = (unsafe { graph() }) else {
        return;
    };
    let Some(p) = g
        .array
        .get(idx)
        .map(|a| a.load(Acquire))
        .filter(|p| !p.is_null())
    else {
        return;
    };
    // SAFETY: a slot in the array stays valid until a grace period after it is removed, and the
    // entry callback runs with preemption disabled.
    unsafe { &*p }.missed_overrun.fetch_add(1, Relaxed);
}

impl<'a> Entry<'a> {
    /// Reserves `bytes` (1..=256) on the shadow stack for this ops' return callback, once per
    /// entry. `None` if out of range, already reserved, or the stack is full.
    #[inline(always)]
    pub fn reserve(&mut self, bytes: usize) -> Option<&'a mut [usize]> {
        let d = match self.frame {
            EntryFrame::Lazy {
                ret,
                retp,
                calltime,
            } if (1..=crate::pure::shadow::MAX_DATA_BYTES).contains(&bytes) => {
                let words = bytes.div_ceil(core::mem::size_of::<usize>());
                // The frame and the data in one step (one move of the stack top).
                match self
                    .stack
                    .push_with_data(ret, self.func, calltime, retp, self.idx, words)
                {
                    Ok((bm, d)) => {
                        self.frame = EntryFrame::Pushed(bm);
                        Some(d)
                    }
                    Err(_) => {
                        // No frame for this call: an overrun of this ops, as when the frame is
                        // pushed first (not a refused reservation on a pushed frame).
                        lazy_overrun(self.idx);
                        return None;
                    }
                }
            }
            EntryFrame::Lazy { .. } => None,
            EntryFrame::Pushed(_) => self.stack.reserve_data(self.idx, bytes),
        };
        let Some(d) = d else {
            reserve_failed(bytes);
            return None;
        };
        // SAFETY: the words were just reserved for this ops on the current task's stack; nothing
        // else touches them until the frame pops (interrupts push above them).
        Some(unsafe { core::slice::from_raw_parts_mut(self.stack.word_ptr(d.start), d.words) })
    }

    /// This ops' variable in the current task.
    pub fn task_var(&self) -> &'a AtomicUsize {
        self.stack.task_var(self.idx)
    }

    /// Proof that preemption is disabled for the whole callback (an RCU-sched reader), for
    /// lookups that need one, without disabling it again.
    pub fn no_preempt(&self) -> &'a NoPreempt {
        self.np
    }

    /// Data this ops reserved in the frame `depth` levels up the call chain (1: the caller's
    /// hooked frame).
    pub fn parent_data(&self, depth: usize) -> Option<&'a [usize]> {
        // Before a lazy frame is pushed, the caller's frame is the top one.
        let depth = match self.frame {
            EntryFrame::Pushed(_) => depth,
            EntryFrame::Lazy { .. } => depth.checked_sub(1)?,
        };
        data_slice(self.stack, self.stack.retrieve_data(self.idx, depth)?)
    }
}

/// Where a return callback is called from.
pub struct Return<'a> {
    /// The hooked function.
    pub func: usize,
    /// Where the function returns to.
    pub ret_ip: usize,
    /// As in [`Entry::depth`].
    pub depth: usize,
    /// When the function was entered (`trace_clock_local`); 0 for handlers that do not want
    /// times (`GraphHandler::WANTS_TIMES`).
    pub calltime: u64,
    /// When it returned.
    pub rettime: u64,
    /// The return value registers and the stack pointer as the function left them.
    pub regs: &'a Regs,
    stack: &'a Stack,
    idx: usize,
    np: &'a NoPreempt,
}

impl<'a> Return<'a> {
    /// As [`Entry::no_preempt`].
    pub fn no_preempt(&self) -> &'a NoPreempt {
        self.np
    }

    /// The return value.
    pub fn retval(&self) -> usize {
        self.regs.retval()
    }

    /// What this ops' entry callback reserved for this frame.
    #[inline(always)]
    pub fn data(&self) -> Option<&'a [usize]> {
        // The frame being returned from is the top one: its last reservation is on top.
        match self.stack.data_on_top(self.idx) {
            Some(d) => data_slice(self.stack, d),
            None => self.parent_data(0),
        }
    }

    /// What this ops reserved `depth` frames up (0: this frame).
    pub fn parent_data(&self, depth: usize) -> Option<&'a [usize]> {
        data_slice(self.stack, self.stack.retrieve_data(self.idx, depth)?)
    }

    /// This ops' variable in the current task.
    pub fn task_var(&self) -> &'a AtomicUsize {
        self.stack.task_var(self.idx)
    }
}

fn data_slice(stack: &Stack, d: DataRef) -> Option<&[usize]> {
    // SAFETY: `d` names words below the stack top that belong to a live frame of the current
    // task; they are not rewritten while the frame lives.
    Some(unsafe { core::slice::from_raw_parts(stack.word_ptr(d.start), d.words) })
}

/// A user of the graph core, in Rust.
pub trait GraphHandler: Send + Sync + 'static {
    /// At a hooked function's entry: return `true` to have [`GraphHandler::ret`] called on its
    /// return. Runs with preemption disabled, possibly in NMI: must not sleep.
    fn entry(&self, e: &mut Entry<'_>) -> bool;
    /// At the return of a function whose entry returned `true`.
    fn ret(&self, r: &mut Return<'_>);
    /// A call of `func` could not be hooked (no shadow stack, or a full one).
    fn missed(&self, _func: usize) {}
    /// The handler's index in the graph array, told at registration *before* its hooks go live
    /// (and `None` when registration failed or it was unregistered): a handler whose callbacks
    /// read their index from elsewhere (the C API's `gops->idx`) must have it in place before
    /// the first entry, or that entry reserves its data under another index.
    fn set_index(&self, _idx: Option<usize>) {}
    /// Whether [`Return::calltime`] and [`Return::rettime`] matter to this handler. While no
    /// registered handler wants them, hooked calls do not read the clock (twice per call); a
    /// handler that does not want them sees 0.
    const WANTS_TIMES: bool = true;
    /// Whether [`GraphHandler::entry`] makes its one reservation ([`Entry::reserve`]) before it
    /// runs anything that could hook the function being entered itself (a C callback that
    /// calls `ufgraph_rethook_hook()`). Then, for a call no other ops hooked yet (the common
    /// case), the core pushes the frame with the reservation in one step, not before the entry
    /// callback, and pushes nothing for a call the callback declines. A handler that cannot
    /// promise it keeps `false`: its frame is pushed first, so that such a nested hook finds it
    /// being built and is refused.
    const RESERVES_FIRST: bool = false;
    /// Whether a [`GraphOps`](super::GraphOps) of this handler keeps an `ftrace_ops` of its own
    /// even when its filter is a list of functions (which would put it on the shared hub):
    /// fprobe's ops, itself one ops for every fprobe, whose entry callback is then a direct
    /// call.
    const OWN_FTRACE_OPS: bool = false;
    /// Whether registering an ops of this handler may leave the tasks without shadow stacks,
    /// the handler asking for them ([`Graph::need_stacks`]) before a call can go on to the
    /// shadow-stack path. fprobe's ops, which serves entry-only probes (that never push a
    /// frame) too: a user of entry-only probes alone then costs no shadow stack per task.
    const STACKS_ON_DEMAND: bool = false;
    /// For a call from the handler's own `ftrace_ops`, under the recursion guard and before the
    /// task's shadow stack is looked for: work that needs no frame (fprobe's entry-only
    /// probes, which share fprobe's one `ftrace_ops` with its exit probes). Calling
    /// `enter(ip, regs, np, c)` with the arguments it was given (at most once, last) goes on to
    /// the shadow stack and [`GraphHandler::entry`], whose [`Entry::cookie`] is then `c` (fprobe
    /// hands over the probes it found); not calling it ends the call with nothing pushed. A
    /// continuation that is handed the call back, rather than a return value: nothing of the
    /// caller then stays live across the handler's own calls, so a call that ends here runs in
    /// a small frame (an entry-only fprobe: 20 instructions fewer). Called only while
    /// [`GraphHandler::wants_pre_entry`] says so; not on the hub, nor for hooks made through
    /// [`Graph::enter`].
    #[inline(always)]
    fn pre_entry(
        &self,
        ip: usize,
        _parent_ip: usize,
        regs: &Regs,
        np: &NoPreempt,
        enter: impl FnOnce(usize, &Regs, &NoPreempt, usize),
    ) {
        enter(ip, regs, np, 0)
    }
    /// Whether calls from the handler's own `ftrace_ops` go through
    /// [`GraphHandler::pre_entry`] now: read before the recursion guard is taken, so it must be
    /// a plain read of the handler's state (fprobe: whether entry-only probes are registered).
    /// When it says no, the ftrace callback goes straight (a jump) to the shadow-stack path,
    /// with a cookie of 0.
    #[inline(always)]
    fn wants_pre_entry() -> bool {
        false
    }
    /// The recursion guard refused a call from the handler's own `ftrace_ops`: nothing of it
    /// ran, [`GraphHandler::pre_entry`]'s work included. Other misses (no stack, a full one)
    /// come after `pre_entry` and go to [`GraphHandler::missed`].
    fn missed_recursion(&self, func: usize) {
        self.missed(func)
    }
}

/// A slot's return callback for handler type `H` (`Slot::ret`), at module level so that
/// [`return_handler`] can tell a slot of its own handler type by this function's address.
///
/// # Safety
///
/// `this` must be the `H` the slot was made for, alive.
unsafe fn slot_ret<H: GraphHandler>(this: *const (), r: &mut Return<'_>) {
    // SAFETY: the caller's contract.
    unsafe { &*this.cast::<H>() }.ret(r)
}

/// A slot's entry callback for handler type `H` (`Slot::entry`), at module level so that the
/// hub can tell a slot of a known handler type by this function's address (see
/// [`Slot::call_entry_as`]).
///
/// # Safety
///
/// `this` must be the `H` the slot was made for, alive.
unsafe fn slot_entry<H: GraphHandler>(this: *const (), e: &mut Entry<'_>) -> bool {
    // SAFETY: the caller's contract.
    unsafe { &*this.cast::<H>() }.entry(e)
}

/// What the core knows of a registered ops. Type-erased: Rust handlers and C `ufgraph_ops` both
/// sit behind it.
pub struct Slot {
    idx: AtomicUsize,
    ftrace: RawOps,
    this: *const (),
    entry: unsafe fn(*const (), &mut Entry<'_>) -> bool,
    ret: unsafe fn(*const (), &mut Return<'_>),
    /// The ftrace callback for this slot's handler type: `graph_entry::<H>`, in which the
    /// handler's entry callback is a direct (inlined) call.
    ftrace_func:
        unsafe extern "C" fn(usize, usize, *mut bindings::ftrace_ops, *mut bindings::ftrace_regs),
    missed: unsafe fn(*const (), usize),
    set_index: unsafe fn(*const (), Option<usize>),
    wants_times: bool,
    /// [`GraphHandler::STACKS_ON_DEMAND`].
    stacks_on_demand: bool,
    /// While the slot is registered on the hub: the functions it selects, sorted (the graph's
    /// registration lock guards it: only `Graph` methods holding it touch it).
    hub_ips: core::cell::UnsafeCell<KVec<usize>>,
    /// Whether the slot is registered on the hub rather than on its own `ftrace_ops`.
    on_hub: core::sync::atomic::AtomicBool,
    /// Entries that found no shadow stack (a task whose fork allocation failed).
    pub missed_nostack: AtomicU64,
    /// Entries that found the shadow stack full (deep recursion).
    pub missed_overrun: AtomicU64,
    /// Entries (and returns) whose callbacks were skipped because ftrace's recursion guard was
    /// taken already in this context (a callback calling a hooked function), or RCU was not
    /// watching.
    pub missed_recursion: AtomicU64,
}

// SAFETY: `this` points to a Send + Sync handler (or a C ops the C caller keeps alive), reached
// only through the `entry`/`ret` functions built for its type.
unsafe impl Send for Slot {}
// SAFETY: as above.
unsafe impl Sync for Slot {}

impl Slot {
    /// A slot for `handler`, whose hooks go through `ftrace`.
    ///
    /// # Safety
    ///
    /// `handler` must stay valid, and `ftrace` (see [`RawOps::from_raw`]) too, until the slot is
    /// unregistered.
    pub unsafe fn new<H: GraphHandler>(handler: *const H, ftrace: RawOps) -> Self {
        unsafe fn missed<H: GraphHandler>(this: *const (), func: usize) {
            // SAFETY: as above.
            unsafe { &*this.cast::<H>() }.missed(func)
        }
        unsafe fn set_index<H: GraphHandler>(this: *const (), idx: Option<usize>) {
            // SAFETY: as above.
            unsafe { &*this.cast::<H>() }.set_index(idx)
        }
        Self {
            idx: AtomicUsize::new(usize::MAX),
            ftrace,
            this: handler.cast(),
            entry: slot_entry::<H>,
            ret: slot_ret::<H>,
            ftrace_func: graph_entry::<H>,
            missed: missed::<H>,
            set_index: set_index::<H>,
            wants_times: H::WANTS_TIMES,
            stacks_on_demand: H::STACKS_ON_DEMAND,
            hub_ips: core::cell::UnsafeCell::new(KVec::new()),
            on_hub: core::sync::atomic::AtomicBool::new(false),
            missed_nostack: AtomicU64::new(0),
            missed_overrun: AtomicU64::new(0),
            missed_recursion: AtomicU64::new(0),
        }
    }

    /// The ops' index in the graph array (valid while registered).
    pub fn idx(&self) -> usize {
        self.idx.load(Relaxed)
    }

    // Records the slot's index and tells its handler, before anything can call it; counts the
    // handlers that want call times.
    fn assign(&self, g: &Graph, idx: Option<usize>) {
        if self.wants_times {
            match idx {
                Some(_) => g.timed.fetch_add(1, Relaxed),
                None => g.timed.fetch_sub(1, Relaxed),
            };
        }
        self.idx.store(idx.unwrap_or(usize::MAX), Relaxed);
        // SAFETY: the handler is alive while the slot is being registered or unregistered
        // (`Slot::new`'s contract).
        unsafe { (self.set_index)(self.this, idx) };
    }

    /// Counts a call of `ip` this slot missed, on the counter `which` picks, and tells the
    /// handler.
    pub(super) fn note_missed(&self, ip: usize, which: impl FnOnce(&Self) -> &AtomicU64) {
        which(self).fetch_add(1, Relaxed);
        // SAFETY: the slot's handler is alive while the slot is registered.
        unsafe { (self.missed)(self.this, ip) };
    }

    /// The handler's entry callback, through the slot.
    pub(super) fn call_entry(&self, e: &mut Entry<'_>) -> bool {
        // SAFETY: the slot's handler is alive while the slot is registered.
        unsafe { (self.entry)(self.this, e) }
    }

    /// [`Slot::call_entry`] with the `Entry` `make` builds, inlined for a slot made for a `Q`
    /// (told by its entry function's address, as [`return_handler`] tells its own type): the
    /// hub's common users, the C API's ops, then need no call through a pointer and no `Entry`
    /// in memory (one `Entry` per branch: the one handed to the pointer has to be in memory).
    #[inline(always)]
    pub(super) fn call_entry_built<'a, Q: GraphHandler>(
        &self,
        make: impl Fn() -> Entry<'a>,
    ) -> bool {
        if core::ptr::fn_addr_eq(
            self.entry,
            slot_entry::<Q> as unsafe fn(*const (), &mut Entry<'_>) -> bool,
        ) {
            // SAFETY: the slot was made for a `Q` (above), alive while it is registered.
            unsafe { &*self.this.cast::<Q>() }.entry(&mut make())
        } else {
            self.call_entry(&mut make())
        }
    }

    /// [`Slot::call_entry_built`] for an `Entry` its caller built already.
    #[inline(always)]
    pub(super) fn call_entry_as<Q: GraphHandler>(&self, e: &mut Entry<'_>) -> bool {
        if core::ptr::fn_addr_eq(
            self.entry,
            slot_entry::<Q> as unsafe fn(*const (), &mut Entry<'_>) -> bool,
        ) {
            // SAFETY: the slot was made for a `Q` (above), alive while it is registered.
            unsafe { &*self.this.cast::<Q>() }.entry(e)
        } else {
            self.call_entry(e)
        }
    }

    /// Whether the slot is registered on the hub.
    pub fn on_hub(&self) -> bool {
        self.on_hub.load(Relaxed)
    }

    /// The ftrace_ops carrying this slot's filter.
    pub fn ftrace(&self) -> RawOps {
        self.ftrace
    }
}

struct RegState {
    lru: Lru<ARRAY_SIZE>,
    count: usize,
    probes: KVec<Probe>,
    hub: HubState,
}

/// Waits until no task can still be executing the trampoline's last instructions (after its
/// frame was popped). With preemption, a task may be preempted there: wait for every task to
/// switch voluntarily (RCU tasks). Without, nothing can schedule inside the trampoline and an
/// RCU grace period (every CPU through a context switch) suffices, and is much quicker.
fn wait_trampoline_exits() {
    #[cfg(CONFIG_PREEMPTION)]
    synchronize_rcu_tasks();
    #[cfg(not(CONFIG_PREEMPTION))]
    synchronize_rcu();
}

/// A stack with frames teardown waits for (another hooker stacked over them).
struct Wait {
    owner: Owner,
    page: *const TaskStack,
    done: bool,
}

/// What teardown did with the frames it found.
#[derive(Default)]
struct Tally {
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
const CHAIN: usize = 8;

/// Teardown's step 2 for one chain: the frames of `stack` that share a return slot, top first
/// (`too_long`: more than [`CHAIN`] of them). Plans with `pure::handback::plan`: either every
/// trampoline address in the chain (in the slot, and in the copies the kernel's
/// function_graph or rethook saved) is replaced and the frames are marked handed back, or
/// nothing is written and they are marked pending. Returns whether any frame is pending.
/// Frames a previous round judged keep their verdict.
// Out of line: its plan (a few hundred bytes of writes) must not share a stack frame with the
// walk's chain buffer (the kernel stack is 16 KiB, and the build refuses frames of 2 KiB).
#[inline(never)]
fn judge_chain(
    stack: &Stack,
    chain: &[Frame],
    too_long: bool,
    owner: Owner,
    view: Option<&crate::sys::task::StackView>,
    walk: &mut crate::arch::TaskWalk,
    tally: &mut Tally,
) -> bool {
    let Some(top) = chain.first() else {
        return false;
    };
    if top.marks & mark::HANDED != 0 {
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
    let (addr, value) = match unsafe { crate::arch::find_slot(top, owner.task(), view, walk) } {
        ArchSlot::Gone => {
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
                // stack or, on arm64, of its shadow call stack) or a saved copy the kernel's hookers keep for this task (found and
                // checked by `sys::hookers`): the task takes its return address from them.
                // SAFETY: valid, aligned words that stay allocated while the task lives, and
                // that nothing else reads or writes during stop_machine.
                unsafe { (at as *mut usize).write_volatile(v) };
            }
            walk.handed(addr);
            for f in &chain[..frames] {
                stack.set_marks(f, mark::HANDED);
            }
            tally.handed += frames;
            tally.patched += writes[..n].iter().filter(|&&(at, _)| at != addr).count();
            tally.never += chain.len() - frames;
            false
        }
    }
}

/// One kernel log line about a frame teardown is waiting for: who, and in which function.
fn report_pending(owner: Owner, func: usize, first: bool) {
    let (pid, comm) = match owner.task() {
        // SAFETY: the owner is pinned (a table task) or an idle task, alive either way.
        Some(t) => unsafe { (t.pid(), t.comm()) },
        None => (0, [0u8; 16]),
    };
    let len = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
    let comm = core::str::from_utf8(&comm[..len]).unwrap_or("?");
    let mut sym = [0u8; bindings::UFG_KSYM_SYMBOL_LEN as usize];
    // SAFETY: `sym` has the KSYM_SYMBOL_LEN bytes sprint_symbol_no_offset may write.
    let n = unsafe { bindings::sprint_symbol_no_offset(sym.as_mut_ptr().cast(), func as _) };
    let sym = core::str::from_utf8(&sym[..n.max(0) as usize]).unwrap_or("?");
    if first {
        pr_warn!("rmmod waits for returns it cannot hand back (another hooker stacked over ufgraph's, or arm64 without a rewritable slot):\n");
    }
    pr_warn!("  pid {} ({}) in {}\n", pid, comm, sym);
}

/// Counters shown in debugfs.
pub struct GraphStats {
    /// Returns that did not find their frame on top and had to skip frames above it.
    pub skipped_frames: AtomicU64,
    /// Data reservations refused because the shadow stack was full: the ops' return callback
    /// then finds no data (`ufgraph_retrieve_data()` returns NULL).
    pub reserve_failed: AtomicU64,
}

/// The graph core: one per module instance.
#[pin_data(PinnedDrop)]
pub struct Graph {
    array: [AtomicPtr<Slot>; ARRAY_SIZE],
    #[pin]
    reg: Mutex<RegState>,
    #[pin]
    tasks: Tasks,
    module: &'static ThisModule,
    /// Registered handlers that want call times (`GraphHandler::WANTS_TIMES`).
    timed: AtomicUsize,
    /// The shared `ftrace_ops` of the ops whose functions the core knows.
    pub(super) hub: Hub,
    /// Counters.
    pub stats: GraphStats,
}

// The one instance the trampoline and the ftrace callbacks reach.
static GRAPH: AtomicPtr<Graph> = AtomicPtr::new(core::ptr::null_mut());

/// The graph core of this module.
///
/// # Safety
///
/// Only from code that runs while the core exists: callbacks of registered ops, the return
/// path of live frames, and API calls made while the module is loaded.
pub unsafe fn graph<'a>() -> Option<&'a Graph> {
    let g = GRAPH.load(Acquire);
    // SAFETY: published by `Graph::publish`, cleared before it is dropped, and (per the contract)
    // used only while it exists.
    (!g.is_null()).then(|| unsafe { &*g })
}

/// The address of the return trampoline.
pub fn trampoline() -> usize {
    bindings::ufgraph_return_trampoline as *const () as usize
}

impl Graph {
    /// A graph core with nothing registered.
    pub fn new(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            array: [const { AtomicPtr::new(core::ptr::null_mut()) }; ARRAY_SIZE],
            reg <- new_mutex!(RegState {
                lru: Lru::new(),
                count: 0,
                probes: KVec::new(),
                hub: HubState::default(),
            }),
            hub: Hub::new(),
            tasks <- Tasks::new(),
            module,
            timed: AtomicUsize::new(0),
            stats: GraphStats {
                skipped_frames: AtomicU64::new(0),
                reserve_failed: AtomicU64::new(0),
            },
        }? Error)
    }

    /// Makes this the instance the trampoline and callbacks use.
    pub fn publish(self: Pin<&Self>) {
        GRAPH.store(self.get_ref() as *const Self as *mut Self, Release);
    }

    /// Calls `f` on every registered slot with its index (under the registration lock).
    pub fn for_each_slot<E>(
        &self,
        mut f: impl FnMut(usize, &Slot) -> core::result::Result<(), E>,
    ) -> core::result::Result<(), E> {
        let _reg = self.reg.lock();
        for (i, a) in self.array.iter().enumerate() {
            let p = a.load(Acquire);
            if !p.is_null() {
                // SAFETY: slots in the array are valid while registered; the lock keeps them so.
                f(i, unsafe { &*p })?;
            }
        }
        Ok(())
    }

    /// The per-task stacks.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Functions on the hub's ftrace filter (0 when it is not registered).
    pub fn hub_functions(&self) -> usize {
        self.reg.lock().hub.filtered()
    }

    /// The slot registered at `idx`, if any. With preemption disabled (a callback): a slot stays
    /// valid until a grace period after it leaves the array.
    #[inline(always)]
    pub(super) fn slot_at(&self, idx: usize) -> Option<&Slot> {
        let p = self.array.get(idx)?.load(Acquire);
        // SAFETY: see above; the callers are callbacks, which hold preemption disabled.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// How many ops are registered.
    pub fn registered(&self) -> usize {
        self.reg.lock().count
    }

    // Step 2 of teardown (see the module documentation), on one CPU while the others spin with
    // interrupts off. Judges and marks every frame; pins the owners of stacks with pending frames
    // into `waits` (room for `cap`). Returns false, having pinned nothing more, if `waits` is
    // full: the caller makes room and calls again (marked frames keep their verdict).
    fn hand_back(&self, waits: &mut KVec<Wait>, cap: usize, tally: &mut Tally) -> bool {
        struct Ctx<'a> {
            g: &'a Graph,
            waits: &'a mut KVec<Wait>,
            cap: usize,
            tally: &'a mut Tally,
            full: bool,
        }
        unsafe extern "C" fn run(data: *mut c_void) -> c_int {
            // SAFETY: `data` is the `Ctx` below, alive for the synchronous stop_machine call.
            let c = unsafe { &mut *data.cast::<Ctx<'_>>() };
            // Interrupts are off under stop_machine: preemption too.
            let np = NoPreempt::new();
            c.g.tasks.for_each_owned_stack(&np, |owner, ts| {
                if c.full {
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
                    c.tally.gone += stack.frames().count();
                    return;
                }
                // SAFETY: as above; nothing runs or exits during stop_machine.
                let view = owner.task().and_then(|t| unsafe { t.stack_view() });
                let mut pending = false;
                // What the architecture learns about this task's stack as its frames are handed
                // back, innermost first (arm64: the shadow call stack entries rewritten).
                let mut walk = crate::arch::TaskWalk::default();
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
                        c.tally,
                    );
                    n = 0;
                }
                if !pending {
                    return;
                }
                if c.waits.len() >= c.cap {
                    c.full = true;
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
                let _ = c.waits.push(w, GFP_ATOMIC);
            });
            0
        }
        let mut c = Ctx {
            g: self,
            waits,
            cap,
            tally,
            full: false,
        };
        // SAFETY: `run` matches cpu_stop_fn_t and only touches `c` and the stacks; a NULL cpumask
        // runs it on one CPU while all others are stopped.
        unsafe {
            bindings::stop_machine(
                Some(run),
                (&mut c as *mut Ctx<'_>).cast(),
                core::ptr::null(),
            )
        };
        !c.full
    }

    // Teardown: steps 2 to 4 of the module documentation. Every ops is unregistered.
    fn release_frames(&self) {
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
    fn wait_pending(&self, waits: &mut KVec<Wait>) {
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

    /// Registers `slot`: allocates its index (least recently used first), gives every task a
    /// shadow stack on first use, and starts its ftrace_ops. `ENOSPC` when 16 ops are registered.
    /// On failure nothing is left behind.
    ///
    /// # Safety
    ///
    /// `slot` must stay valid and unmoved until [`Graph::unregister`] returns.
    pub unsafe fn register(&self, slot: &Slot) -> Result {
        let mut reg = self.reg.lock();
        let RegState { lru, probes, .. } = &mut *reg;
        if !slot.stacks_on_demand {
            self.tasks.attach(probes)?;
        }
        let Some(idx) = lru.alloc() else {
            return Err(ENOSPC);
        };
        // The index's task variables start at 0 again, whatever its previous owner left there.
        self.tasks.clear_task_vars(idx);
        // Before the ops goes live: its first entry may run on another CPU at once.
        slot.assign(self, Some(idx));
        let slot_ptr = (slot as *const Slot).cast_mut();
        // SAFETY: we are the only writer of `private`/`func` before registration; the callback
        // only uses `private` (the slot), which the caller keeps alive while registered.
        unsafe {
            let op = slot.ftrace.as_ptr();
            (*op).func = Some(slot.ftrace_func);
            (*op).private = slot_ptr.cast();
        }
        self.array[idx].store(slot_ptr, Release);
        // SAFETY: func and private are set; the slot outlives the registration.
        if let Err(e) = unsafe { slot.ftrace.register() } {
            self.array[idx].store(core::ptr::null_mut(), Release);
            let _ = reg.lru.release(idx);
            slot.assign(self, None);
            return Err(e);
        }
        reg.count += 1;
        Ok(())
    }

    /// Gives every task a shadow stack, now and at fork, if that is not done yet (it stays done
    /// until the core is torn down): for a handler with [`GraphHandler::STACKS_ON_DEMAND`],
    /// before its first call can need one.
    pub fn need_stacks(&self) -> Result {
        let mut reg = self.reg.lock();
        self.tasks.attach(&mut reg.probes)
    }

    /// Registers `slot` on the hub, for the functions at `ips` (not empty; start addresses or
    /// ftrace locations): no `ftrace_ops` of its own. `ENOSPC` when 16 ops are registered,
    /// `EINVAL` for an address that is not a traceable function; on failure nothing is left
    /// behind.
    ///
    /// # Safety
    ///
    /// As for [`Graph::register`] (the slot's own `ftrace_ops` is not used).
    pub unsafe fn register_hub(&self, slot: &Slot, ips: &[usize]) -> Result {
        if ips.is_empty() {
            return Err(EINVAL);
        }
        let mut want = sorted(&crate::sys::ksym::locations(ips)?)?;
        let mut reg = self.reg.lock();
        let RegState { lru, probes, .. } = &mut *reg;
        self.tasks.attach(probes)?;
        let Some(idx) = lru.alloc() else {
            return Err(ENOSPC);
        };
        // As in `register`.
        self.tasks.clear_task_vars(idx);
        slot.assign(self, Some(idx));
        self.array[idx].store((slot as *const Slot).cast_mut(), Release);
        let mut dead = KVec::new();
        if let Err(e) = self.hub.add(&mut reg.hub, idx, &want, &mut dead) {
            self.array[idx].store(core::ptr::null_mut(), Release);
            synchronize_rcu();
            Hub::free_dead(&mut dead);
            let _ = reg.lru.release(idx);
            slot.assign(self, None);
            return Err(e);
        }
        // SAFETY: the registration lock is held (the `hub_ips` invariant).
        core::mem::swap(unsafe { &mut *slot.hub_ips.get() }, &mut want);
        slot.on_hub.store(true, Relaxed);
        reg.count += 1;
        Ok(())
    }

    /// Adds (or with `remove`, removes) functions of a slot registered on the hub. Removing
    /// the last one is refused (`EINVAL`): unregister instead.
    pub fn hub_filter(&self, slot: &Slot, ips: &[usize], remove: bool) -> Result {
        let change = sorted(&crate::sys::ksym::locations(ips)?)?;
        let mut reg = self.reg.lock();
        let idx = slot.idx();
        if !slot.on_hub()
            || idx >= ARRAY_SIZE
            || self.array[idx].load(Relaxed) != (slot as *const Slot).cast_mut()
        {
            return Err(ENOENT);
        }
        // SAFETY: the registration lock is held (the `hub_ips` invariant).
        let cur = unsafe { &mut *slot.hub_ips.get() };
        // Entries the hub took out of its table, on success or (an add that failed half way)
        // not: freed a grace period later either way.
        let mut dead = KVec::new();
        let r = (|| {
            if remove {
                let mut keep = KVec::with_capacity(cur.len(), GFP_KERNEL)?;
                for &ip in cur.iter() {
                    if change.binary_search(&ip).is_err() {
                        keep.push(ip, GFP_KERNEL)?;
                    }
                }
                if keep.is_empty() {
                    return Err(EINVAL);
                }
                self.hub.remove(&mut reg.hub, idx, &change, &mut dead);
                *cur = keep;
            } else {
                let mut new = KVec::with_capacity(change.len(), GFP_KERNEL)?;
                for &ip in change.iter() {
                    if cur.binary_search(&ip).is_err() {
                        new.push(ip, GFP_KERNEL)?;
                    }
                }
                let mut all = KVec::with_capacity(cur.len() + new.len(), GFP_KERNEL)?;
                all.extend_from_slice(cur, GFP_KERNEL)?;
                all.extend_from_slice(&new, GFP_KERNEL)?;
                crate::pure::slice::sort(&mut all);
                self.hub.add(&mut reg.hub, idx, &new, &mut dead)?;
                *cur = all;
            }
            Ok(())
        })();
        if !dead.is_empty() {
            synchronize_rcu();
            Hub::free_dead(&mut dead);
        }
        r
    }

    /// Takes the functions `within` selects (a going module's) off every ops on the hub: out of
    /// the hub's table and ftrace filter, and out of the ops' lists of functions (which their
    /// users get back when they unregister). Left there, they would keep the hub's filter
    /// naming addresses that the next module loaded may reuse for other functions (ftrace
    /// keeps stale addresses in the filters of its users), and ftrace would refuse any later
    /// removal from the filter that names them. From the module notifier, while the module's
    /// ftrace records are still there (ftrace drops them after the notifier has run).
    pub fn drop_module(&self, within: impl Fn(usize) -> bool) {
        let mut reg = self.reg.lock();
        let mut dead = KVec::new();
        let mut dropped = 0;
        for (idx, a) in self.array.iter().enumerate() {
            let p = a.load(Relaxed);
            if p.is_null() {
                continue;
            }
            // SAFETY: slots in the array are valid while registered; the lock keeps them so.
            let slot = unsafe { &*p };
            if !slot.on_hub() {
                continue;
            }
            // SAFETY: the registration lock is held (the `hub_ips` invariant).
            let cur = unsafe { &mut *slot.hub_ips.get() };
            if !cur.iter().any(|&ip| within(ip)) {
                continue;
            }
            let (mut keep, mut gone) = (KVec::new(), KVec::new());
            let mut ok = true;
            for &ip in cur.iter() {
                ok &= if within(ip) {
                    gone.push(ip, GFP_KERNEL)
                } else {
                    keep.push(ip, GFP_KERNEL)
                }
                .is_ok();
            }
            if !ok {
                pr_err!(
                    "hub: out of memory: ops {} keeps functions of a going module\n",
                    idx
                );
                continue;
            }
            self.hub.remove(&mut reg.hub, idx, &gone, &mut dead);
            dropped += gone.len();
            // Possibly empty: the ops stays registered, hooking nothing, until its user adds
            // functions or unregisters.
            *cur = keep;
        }
        drop(reg);
        if dropped > 0 {
            synchronize_rcu();
            Hub::free_dead(&mut dead);
            pr_info!(
                "hub: dropped {} functions of a module going away\n",
                dropped
            );
        }
    }

    /// Unregisters `slot`. When this returns no callback of it runs any more, and it may be freed.
    /// Frames it hooked may still be live: their returns skip it (or, if its index was reused
    /// meanwhile, call the new owner: hence the LRU order). Returns the functions the slot had
    /// on the hub (ftrace locations, sorted; empty for a slot with its own `ftrace_ops`): its
    /// filter as changed while registered, for its user to keep.
    pub fn unregister(&self, slot: &Slot) -> Result<KVec<usize>> {
        let mut reg = self.reg.lock();
        let idx = slot.idx();
        if idx >= ARRAY_SIZE || self.array[idx].load(Relaxed) != (slot as *const Slot).cast_mut() {
            return Err(ENOENT);
        }
        self.array[idx].store(core::ptr::null_mut(), Release);
        let mut dead = KVec::new();
        let mut ips = KVec::new();
        let r = if slot.on_hub() {
            // SAFETY: the registration lock is held (the `hub_ips` invariant).
            ips = core::mem::replace(unsafe { &mut *slot.hub_ips.get() }, KVec::new());
            self.hub.remove(&mut reg.hub, idx, &ips, &mut dead);
            slot.on_hub.store(false, Relaxed);
            Ok(())
        } else {
            slot.ftrace.unregister()
        };
        // Return paths (and hub callbacks) that loaded the slot did so with preemption disabled.
        synchronize_rcu();
        Hub::free_dead(&mut dead);
        let _ = reg.lru.release(idx);
        slot.assign(self, None);
        reg.count -= 1;
        r.map(|()| ips)
    }

    /// Reserves data for ops `idx` in the frame being built by the current task (C API).
    pub fn reserve_data(&self, idx: usize, bytes: usize) -> Option<*mut usize> {
        let np = NoPreempt::new();
        let stack = self.tasks.current(&np)?;
        let Some(d) = stack.reserve_data(idx, bytes) else {
            reserve_failed(bytes);
            return None;
        };
        Some(stack.word_ptr(d.start))
    }

    /// The data ops `idx` reserved `depth` frames down the current task's stack (C API).
    pub fn retrieve_data(&self, idx: usize, depth: usize) -> Option<(*mut usize, usize)> {
        let np = NoPreempt::new();
        let stack = self.tasks.current(&np)?;
        let d = stack.retrieve_data(idx, depth)?;
        Some((stack.word_ptr(d.start), d.words))
    }

    /// Ops `idx`'s variable in the current task (C API).
    pub fn task_var(&self, idx: usize) -> Option<*mut usize> {
        if idx >= ARRAY_SIZE {
            return None;
        }
        let np = NoPreempt::new();
        Some(self.tasks.current(&np)?.task_var(idx).as_ptr())
    }
}

#[pinned_drop]
impl PinnedDrop for Graph {
    fn drop(self: Pin<&mut Self>) {
        let mut reg = self.reg.lock();
        // The module's own users unregistered before us; other modules' users keep this module
        // loaded (they link against it).
        if reg.count != 0 {
            pr_err!("graph core torn down with {} ops registered\n", reg.count);
        }
        self.hub.teardown(&mut reg.hub);
        self.release_frames();
        self.tasks.detach(&mut reg.probes);
        drop(reg);
        GRAPH.store(core::ptr::null_mut(), Release);
    }
}

/// Edits the list of functions a hub user keeps while unregistered (the filter it registers
/// with; [`Graph::unregister`] hands back the one it had while registered): adds the functions
/// at `ips`, or with `remove` takes them out; `reset` empties the list first. Functions are
/// kept as their ftrace locations, so that either address names them (what registration will
/// hook); an address that is no traceable function is kept as it is, for registration to
/// refuse, and removed as it is. The list stays sorted, without duplicates; on error (out of
/// memory) it is unchanged.
pub fn edit_hub_list(list: &mut KVec<usize>, ips: &[usize], remove: bool, reset: bool) -> Result {
    let locs = crate::sys::ksym::try_locations(ips)?;
    let mut new = KVec::new();
    if !reset {
        new.extend_from_slice(list, GFP_KERNEL)?;
    }
    if remove {
        let mut keep = KVec::with_capacity(new.len(), GFP_KERNEL)?;
        for &ip in new.iter() {
            if !ips.contains(&ip) && !locs.contains(&Some(ip)) {
                keep.push(ip, GFP_KERNEL)?;
            }
        }
        new = keep;
    } else {
        for (&ip, &loc) in ips.iter().zip(locs.iter()) {
            new.push(loc.unwrap_or(ip), GFP_KERNEL)?;
        }
    }
    *list = sorted(&new)?;
    Ok(())
}

/// `ips` sorted, without duplicates.
fn sorted(ips: &[usize]) -> Result<KVec<usize>> {
    let mut all = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
    all.extend_from_slice(ips, GFP_KERNEL)?;
    crate::pure::slice::sort(&mut all);
    let mut v = KVec::with_capacity(all.len(), GFP_KERNEL)?;
    for (i, &ip) in all.iter().enumerate() {
        if i == 0 || all[i - 1] != ip {
            v.push(ip, GFP_KERNEL)?;
        }
    }
    Ok(v)
}

/// The ftrace callback of a graph ops whose handler is an `H`: one instance per handler type,
/// so that the handler's entry callback is called directly (and inlined) rather than through
/// the slot's function pointer.
unsafe extern "C" fn graph_entry<H: GraphHandler>(
    ip: usize,
    parent_ip: usize,
    op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // Both paths are tail calls with this callback's own arguments: it makes no frame and moves
    // no register.
    // SAFETY: ftrace's callback arguments, passed on.
    unsafe {
        if H::wants_pre_entry() {
            graph_entry_pre::<H>(ip, parent_ip, op, fregs)
        } else {
            graph_entry_direct::<H>(ip, parent_ip, op, fregs)
        }
    }
}

/// The slot of `op`, a registered graph ops' `ftrace_ops`.
///
/// # Safety
///
/// `op` must be the `ftrace_ops` ftrace called a [`graph_entry`] with.
#[inline(always)]
unsafe fn op_slot<'a>(op: *mut bindings::ftrace_ops) -> &'a Slot {
    // SAFETY: `private` is the slot set by `Graph::register`, alive while the ops is registered,
    // and ftrace does not call us after unregistering.
    unsafe { &*(*op).private.cast::<Slot>() }
}

/// [`graph_entry`] for a handler that wants its [`GraphHandler::pre_entry`].
///
/// # Safety
///
/// As for [`graph_entry`]: ftrace's callback arguments for a graph ops made for an `H`.
#[inline(never)]
unsafe fn graph_entry_pre<H: GraphHandler>(
    ip: usize,
    parent_ip: usize,
    op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // Never null: the module builds only for kernels with DYNAMIC_FTRACE_WITH_ARGS (glue.c),
    // whose ftrace always passes its registers.
    debug_assert!(!fregs.is_null());
    // SAFETY: the caller's contract.
    let slot = unsafe { op_slot(op) };
    // SAFETY: the slot was made for an `H` (`Slot::new::<H>` set this callback), alive while
    // the slot is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    // As in `Graph::enter_with`, with the handler's own recursion miss and its `pre_entry`.
    let guard = match Recursion::try_lock(ip, parent_ip) {
        Ok(g) => g,
        Err(Refused::Recursion) => {
            slot.missed_recursion.fetch_add(1, Relaxed);
            h.missed_recursion(ip);
            return;
        }
        Err(Refused::Unsafe) => return,
    };
    let np = guard.no_preempt();
    // SAFETY: ftrace passes valid registers for the duration of the callback.
    let regs = unsafe { Regs::from_raw(fregs) };
    // The continuation takes `op`, not the slot: a call that ends in `pre_entry` then does not
    // load it.
    h.pre_entry(ip, parent_ip, regs, np, move |ip, regs, np, cookie| {
        // SAFETY: as above: this call's ops and registers, the guard held.
        unsafe { graph_enter::<H>(op_slot(op), ip, regs.as_ptr(), cookie, np) }
    });
    drop(guard);
}

/// [`graph_entry`] for a handler that wants no [`GraphHandler::pre_entry`] now: the guard, the
/// stack, the entry callback, in one frame. Reached by a tail call, so that the ftrace callback
/// adds no frame of its own.
///
/// # Safety
///
/// As for [`graph_entry_pre`].
#[inline(never)]
unsafe fn graph_entry_direct<H: GraphHandler>(
    ip: usize,
    parent_ip: usize,
    op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // Never null: the module builds only for kernels with DYNAMIC_FTRACE_WITH_ARGS (glue.c),
    // whose ftrace always passes its registers.
    debug_assert!(!fregs.is_null());
    // SAFETY: the caller's contract.
    let slot = unsafe { op_slot(op) };
    // SAFETY: registered ops exist only while the graph core does.
    let Some(g) = (unsafe { graph() }) else {
        return;
    };
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    let guard = match Recursion::try_lock(ip, parent_ip) {
        Ok(g) => g,
        Err(Refused::Recursion) => {
            slot.missed_recursion.fetch_add(1, Relaxed);
            h.missed_recursion(ip);
            return;
        }
        Err(Refused::Unsafe) => return,
    };
    // SAFETY: the caller's contract; the guard is held.
    unsafe {
        g.enter_guarded(
            slot,
            ip,
            fregs,
            0,
            guard.no_preempt(),
            H::RESERVES_FIRST,
            |e| h.entry(e),
        )
    };
    drop(guard);
}

/// The shadow-stack part of [`graph_entry`] after a [`GraphHandler::pre_entry`]. Out of line: a call `pre_entry` finishes (an
/// entry-only fprobe) then runs in a small frame that saves few registers, and only a call that
/// goes on pays for the registers this part needs.
///
/// # Safety
///
/// As for [`Graph::enter_guarded`], with `slot` made for an `H`.
#[inline(never)]
unsafe fn graph_enter<H: GraphHandler>(
    slot: &Slot,
    ip: usize,
    fregs: *mut bindings::ftrace_regs,
    cookie: usize,
    np: &NoPreempt,
) {
    // SAFETY: registered ops exist only while the graph core does.
    let Some(g) = (unsafe { graph() }) else {
        return;
    };
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    // SAFETY: the caller's contract.
    unsafe {
        g.enter_guarded(slot, ip, fregs, cookie, np, H::RESERVES_FIRST, |e| {
            h.entry(e)
        })
    };
}

impl Graph {
    /// The entry of a hooked call of `ip`, for `slot`: pushes (or joins) the call's frame, runs
    /// the slot's entry callback and, if it wants the return, puts the trampoline in place.
    /// Returns whether the return is hooked for `slot`.
    ///
    /// # Safety
    ///
    /// `fregs` must be the valid registers of the entry of `ip` (called from `parent_ip`) on the
    /// current task, `slot` a slot in this graph's array, and the caller in a non-preemptible
    /// context or an ftrace callback.
    pub unsafe fn enter(
        &self,
        slot: &Slot,
        ip: usize,
        parent_ip: usize,
        fregs: *mut bindings::ftrace_regs,
        cookie: usize,
    ) -> bool {
        // SAFETY: the caller's contract; `this` is the handler this slot was made for, alive
        // while registered.
        unsafe {
            self.enter_with(slot, ip, parent_ip, fregs, cookie, false, |e| {
                (slot.entry)(slot.this, e)
            })
        }
    }

    /// [`Graph::enter`], with the slot's entry callback given as `entry` (a direct call when the
    /// handler's type is known). `lazy`: the handler is [`GraphHandler::RESERVES_FIRST`] and
    /// this is an ftrace callback (see the one-step path below).
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter`]; `entry` must be the slot's handler's entry callback.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn enter_with(
        &self,
        slot: &Slot,
        ip: usize,
        parent_ip: usize,
        fregs: *mut bindings::ftrace_regs,
        cookie: usize,
        lazy: bool,
        entry: impl FnOnce(&mut Entry<'_>) -> bool,
    ) -> bool {
        // One callback per context at a time: an entry callback that calls a hooked function
        // (or, for the rethook API, a hook that runs inside another callback of ours) does not
        // enter again. The guard is also the callback's preemption guard.
        let guard = match Recursion::try_lock(ip, parent_ip) {
            Ok(g) => g,
            Err(Refused::Recursion) => {
                slot.missed_recursion.fetch_add(1, Relaxed);
                // SAFETY: the slot's handler is alive while it is registered.
                unsafe { (slot.missed)(slot.this, ip) };
                return false;
            }
            Err(Refused::Unsafe) => return false,
        };
        // SAFETY: the caller's contract, and the guard is held.
        let wanted =
            unsafe { self.enter_guarded(slot, ip, fregs, cookie, guard.no_preempt(), lazy, entry) };
        drop(guard);
        wanted
    }

    /// [`Graph::enter_with`] once the recursion guard is held (`np` is its): finds the task's
    /// stack and enters the call.
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter_with`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn enter_guarded(
        &self,
        slot: &Slot,
        ip: usize,
        fregs: *mut bindings::ftrace_regs,
        cookie: usize,
        np: &NoPreempt,
        lazy: bool,
        entry: impl FnOnce(&mut Entry<'_>) -> bool,
    ) -> bool {
        let Some(stack) = self.tasks.current(np) else {
            slot.missed_nostack.fetch_add(1, Relaxed);
            // SAFETY: the slot's handler is alive while it is registered.
            unsafe { (slot.missed)(slot.this, ip) };
            return false;
        };
        // SAFETY: the caller's contract, and the guard is held (preemption disabled).
        unsafe { self.enter_locked(slot, ip, fregs, cookie, stack, np, lazy, &mut None, entry) }
    }

    /// [`Graph::enter_with`] once the recursion guard is held and the task's stack found:
    /// pushes (or joins) the call's frame for `slot` and runs its entry callback. Several
    /// slots may enter the same call one after the other under one guard (the hub).
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter_with`]; `stack` is the current task's and `np` the held guard's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn enter_locked<'a>(
        &self,
        slot: &Slot,
        ip: usize,
        fregs: *mut bindings::ftrace_regs,
        cookie: usize,
        stack: &'a Stack,
        np: &'a NoPreempt,
        lazy: bool,
        frame_out: &mut Option<(usize, usize, bool)>,
        entry: impl FnOnce(&mut Entry<'_>) -> bool,
    ) -> bool {
        // SAFETY: valid for the call (caller).
        let regs = unsafe { Regs::from_raw(fregs) };
        // Below 16 while the slot is registered (its callbacks run only then); the remainder
        // tells the compiler, which then needs no check for the shifts.
        let idx = slot.idx() % ARRAY_SIZE;
        // SAFETY: the return-address location of this call (caller: entry registers).
        let retp = unsafe { crate::arch::hot::fregs::retp(fregs) };
        // SAFETY: `retp` is a valid, aligned word (the stack slot or the saved link register).
        let old_ret = unsafe { retp.read() };
        let tramp = trampoline();

        // The one-step path: no frame of ours is on this call yet (its return address is not
        // our trampoline), so there is nothing to join, and the handler reserves before it
        // runs anything foreign, so nothing can hook this call under it while it runs. No
        // frame is pushed until the handler reserves (frame and data in one step) or wants the
        // return. Only from ftrace: a hook made from inside a callback of ours (the rethook
        // API) goes through `Graph::enter`, which checks for a frame being built on the same
        // slot; an ftrace callback for this call cannot run inside one of ours for the same
        // call (ftrace calls the ops on a function one after the other, and a call the
        // handler makes has its own return slot).
        if lazy && old_ret != tramp {
            let calltime = if slot.wants_times { self.now() } else { 0 };
            let mut e = Entry {
                func: ip,
                ret_ip: old_ret,
                depth: stack.depth().wrapping_add(1),
                regs,
                cookie,
                stack,
                idx,
                np,
                frame: EntryFrame::Lazy {
                    ret: old_ret,
                    retp: retp as usize,
                    calltime,
                },
            };
            let wanted = entry(&mut e);
            let bm = match (e.frame, wanted) {
                (EntryFrame::Pushed(bm), true) => bm,
                (EntryFrame::Pushed(bm), false) => {
                    stack.unpush(bm);
                    return false;
                }
                (EntryFrame::Lazy { .. }, false) => return false,
                (EntryFrame::Lazy { .. }, true) => {
                    match stack.push(old_ret, ip, calltime, retp as usize) {
                        Ok(bm) => {
                            stack.mark_seen(bm, idx);
                            bm
                        }
                        Err(_) => {
                            slot.missed_overrun.fetch_add(1, Relaxed);
                            // SAFETY: the slot's handler is alive while it is registered.
                            unsafe { (slot.missed)(slot.this, ip) };
                            return false;
                        }
                    }
                }
            };
            stack.set_bitmap(bm, 1 << idx);
            *frame_out = Some((bm, old_ret, calltime != 0));
            // SAFETY: the return-address location of this call (see `retp` above).
            unsafe { retp.write(tramp) };
            return true;
        }

        // Another ops hooking this same call pushed the frame already: join it. The frame's
        // "seen" mask tells this call apart from a tail-recursive one at the same stack slot.
        let mut fresh = false;
        let top = stack.top_frame();
        if let Some(f) = top.filter(|f| f.building && f.retp == retp as usize) {
            // An entry of ours is still building the frame of this very call: this is a hook
            // made from inside its callbacks (`ufgraph_rethook_hook()` in an fprobe's entry
            // handler, for the function being entered). Pushing a second frame on the same slot
            // under it would be popped in its place. Refused, counted.
            let _ = f;
            slot.missed_recursion.fetch_add(1, Relaxed);
            // SAFETY: as above.
            unsafe { (slot.missed)(slot.this, ip) };
            return false;
        }
        // Whether the frame has its call time (for the hub's next ops: see `join_locked`).
        let mut has_time;
        let bm = match top {
            Some(f)
                if old_ret == tramp
                    && f.retp == retp as usize
                    && f.func == ip
                    && f.seen & (1 << idx) == 0 =>
            {
                has_time = f.calltime != 0;
                // The ops that pushed the frame may not have wanted the time, this one does.
                if slot.wants_times && f.calltime == 0 {
                    stack.set_calltime(&f, self.now());
                    has_time = true;
                }
                f.start + FRAME_WORDS
            }
            _ => {
                let t = self.now();
                has_time = t != 0;
                match stack.push(old_ret, ip, t, retp as usize) {
                    Ok(bm) => {
                        fresh = true;
                        bm
                    }
                    Err(_) => {
                        slot.missed_overrun.fetch_add(1, Relaxed);
                        // SAFETY: as above.
                        unsafe { (slot.missed)(slot.this, ip) };
                        return false;
                    }
                }
            }
        };
        stack.mark_seen(bm, idx);
        // While this entry callback runs the frame is being built again, joined or not: a hook
        // made from inside it for this call (the rethook API from an fprobe's entry handler)
        // finds it so and is refused, as on a frame this entry pushed. Joined, it would put its
        // data above ours and its bit in the bitmap, and a declining callback would then drop
        // the data and leave the bit: a hook reported made whose handler never runs.
        let bits = stack.bitmap(bm);
        stack.set_building(bm);

        // The real return address: what the slot held, unless it is our trampoline (a frame
        // joined, or a tail call), in which case the frame below knows it.
        let ret_ip = if old_ret == tramp {
            stack
                .frames()
                .find(|f| f.ret != tramp)
                .map_or(old_ret, |f| f.ret)
        } else {
            old_ret
        };
        let save = stack.top();
        let mut e = Entry {
            func: ip,
            ret_ip,
            depth: stack.depth(),
            regs,
            cookie,
            stack,
            idx,
            np,
            frame: EntryFrame::Pushed(bm),
        };
        // A lazy handler's entry is inlined once, in the one-step path above; here (a frame
        // joined, a tail call) it is called through the slot.
        let wanted = if lazy {
            // SAFETY: the slot's handler is alive while it is registered.
            unsafe { (slot.entry)(slot.this, &mut e) }
        } else {
            entry(&mut e)
        };
        let bits = if wanted { bits | (1 << idx) } else { bits };
        if wanted {
            *frame_out = Some((bm, ret_ip, has_time));
        } else {
            stack.truncate(save);
        }
        stack.set_bitmap(bm, bits);

        if fresh {
            if bits == 0 {
                if let Some(f) = stack.top_frame() {
                    stack.pop(&f);
                }
            } else {
                // SAFETY: as above: the return-address location of this call.
                unsafe { retp.write(tramp) };
            }
        }
        wanted
    }

    /// Another ops on a call whose frame (bitmap word at `bm`, returning to `ret_ip`, its call
    /// time taken if `*timed`) an ops before it in the same hub callback has just pushed or
    /// joined, and kept: the frame is known, nothing is looked for. Returns whether the return
    /// is hooked for `slot`.
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter_locked`]; `bm` is the bitmap word of the current task's top frame
    /// (what `enter_locked` reported), for this call.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn join_locked<Q: GraphHandler>(
        &self,
        slot: &Slot,
        ip: usize,
        fregs: *mut bindings::ftrace_regs,
        stack: &Stack,
        np: &NoPreempt,
        bm: usize,
        ret_ip: usize,
        timed: &mut bool,
    ) -> bool {
        // Below 16 while the slot is registered (its callbacks run only then); the remainder
        // tells the compiler, which then needs no check for the shifts.
        let idx = slot.idx() % ARRAY_SIZE;
        if slot.wants_times && !*timed {
            stack.set_calltime_at(bm, self.now());
            *timed = true;
        }
        stack.mark_seen(bm, idx);
        // Being built while this entry callback runs, as in `enter_locked`.
        let bits = stack.bitmap(bm);
        stack.set_building(bm);
        let save = stack.top();
        // SAFETY: valid for the call (caller).
        let regs = unsafe { Regs::from_raw(fregs) };
        let depth = stack.depth();
        let wanted = slot.call_entry_built::<Q>(|| Entry {
            func: ip,
            ret_ip,
            depth,
            regs,
            cookie: 0,
            stack,
            idx,
            np,
            frame: EntryFrame::Pushed(bm),
        });
        if !wanted {
            stack.truncate(save);
        }
        stack.set_bitmap(bm, if wanted { bits | (1 << idx) } else { bits });
        wanted
    }

    /// `trace_clock_local()` if a registered handler wants call times, else 0 (no clock read).
    #[inline(always)]
    fn now(&self) -> u64 {
        if self.timed.load(Relaxed) == 0 {
            return 0;
        }
        // SAFETY: no preconditions.
        unsafe { bindings::trace_clock_local() }
    }

    /// Gives `slot` an index without an ftrace filter: its frames are pushed by
    /// [`Graph::enter`] from its user's own entry hooks (the rethook API). `ENOSPC` when 16
    /// ops are registered.
    ///
    /// # Safety
    ///
    /// As for [`Graph::register`].
    pub unsafe fn register_manual(&self, slot: &Slot) -> Result {
        let mut reg = self.reg.lock();
        let RegState { lru, probes, .. } = &mut *reg;
        self.tasks.attach(probes)?;
        let idx = lru.alloc().ok_or(ENOSPC)?;
        self.tasks.clear_task_vars(idx);
        slot.assign(self, Some(idx));
        self.array[idx].store((slot as *const Slot).cast_mut(), Release);
        reg.count += 1;
        Ok(())
    }

    /// Undoes [`Graph::register_manual`].
    pub fn unregister_manual(&self, slot: &Slot) {
        let mut reg = self.reg.lock();
        let idx = slot.idx();
        if idx >= ARRAY_SIZE || self.array[idx].load(Relaxed) != (slot as *const Slot).cast_mut() {
            return;
        }
        self.array[idx].store(core::ptr::null_mut(), Release);
        synchronize_rcu();
        let _ = reg.lru.release(idx);
        slot.assign(self, None);
        reg.count -= 1;
    }
}

/// What the return trampoline calls (`ufgraph_return_handler`, instantiated where the handler
/// types `P` and `Q` are known: see `fprobe`) with the registers the hooked function returned
/// with; returns the real return address. Return callbacks of handlers of type `P` (fprobe) and
/// `Q` (the C API's ops) are called directly (inlined); others through their slot.
///
/// # Safety
///
/// Only from the trampoline, which only runs as the return of a function whose entry installed
/// it on the current task's stack.
#[inline(always)]
pub unsafe fn return_handler<P: GraphHandler, Q: GraphHandler>(
    fregs: *mut bindings::ftrace_regs,
) -> usize {
    // The frame is popped whatever happens; only the callbacks need the recursion guard (a
    // return callback that calls a hooked function, whose own return would re-enter here).
    // Either way preemption is disabled once.
    let guard = Recursion::try_lock(trampoline(), 0);
    let bare;
    let np: &NoPreempt = match &guard {
        Ok(g) => g.no_preempt(),
        Err(_) => {
            bare = NoPreempt::new();
            &bare
        }
    };
    // SAFETY: frames return through us only while the graph core exists (teardown hands the
    // others back and waits for the rest).
    let g = unsafe { graph() }.expect("ufgraph: return trampoline without a graph core");
    // SAFETY: the trampoline passes the registers it saved.
    let regs = unsafe { Regs::from_raw(fregs) };
    let Some(stack) = g.tasks.current(np) else {
        panic!("ufgraph: return trampoline on a task without a shadow stack");
    };
    let Some(mut f) = stack.top_frame() else {
        panic!("ufgraph: return trampoline with an empty shadow stack");
    };
    // The frame must be this return's. If it is not, returns were skipped above it (a frame of
    // a call that never returned normally): find ours further down and drop the others.
    if !crate::arch::frame_matches(&f, regs) {
        let Some(c) = stack.frames().find(|c| crate::arch::frame_matches(c, regs)) else {
            panic!("ufgraph: no shadow-stack frame for this return");
        };
        // Everything above `c` belongs to calls that will never return through us.
        let mut skipped = 0;
        let mut c_top = stack.top();
        for x in stack.frames().take_while(|x| x.start != c.start) {
            skipped += 1;
            c_top = x.start;
        }
        g.stats.skipped_frames.fetch_add(skipped, Relaxed);
        stack.drop_frames(c_top, skipped as usize);
        f = c;
    }

    // Before the callbacks: put the real return address where the trampoline's frame keeps the
    // function's (x86_64: the return slot it reclaimed; arm64: its frame record's lr). Only
    // unwinders read that word, and now the kernel's own (`stack_trace_save()` in a return
    // callback, perf callchains, an interrupt's trace) goes on from the trampoline to the real
    // caller instead of stopping at our address. Preemption is disabled from here to the pop,
    // so teardown never sees a settled slot with its frame still on the stack.
    crate::arch::settle_slot(&f, regs);
    let rettime = g.now();
    // Where the call returns to: a tail call's inner frame saved our own trampoline, and the
    // frame below knows the real address (as at the entry).
    let ret_ip = if f.ret == trampoline() {
        stack
            .frames()
            .find(|x| x.ret != f.ret)
            .map_or(f.ret, |x| x.ret)
    } else {
        f.ret
    };
    let mut bits = f.bitmap;
    while bits != 0 {
        let idx = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let sp = g.array[idx].load(Acquire);
        if sp.is_null() {
            continue;
        }
        // SAFETY: a slot in the array stays valid until an RCU-sched grace period after it is
        // removed, and we hold preemption disabled.
        let slot = unsafe { &*sp };
        match guard {
            Ok(_) => {}
            Err(Refused::Recursion) => {
                slot.missed_recursion.fetch_add(1, Relaxed);
                // SAFETY: the slot's handler is alive while the slot is.
                unsafe { (slot.missed)(slot.this, f.func) };
                continue;
            }
            // Nothing but the pop where RCU does not protect what callbacks would read.
            Err(Refused::Unsafe) => continue,
        }
        // One `Return` per branch: the one handed to the slot's function pointer has to be in
        // memory, the direct call's need not be.
        let r = || Return {
            func: f.func,
            ret_ip,
            depth: stack.depth(),
            calltime: f.calltime,
            rettime,
            regs,
            stack,
            idx,
            np,
        };
        // A slot whose return callback is `slot_ret::<P>` was made for a `P` (one instance of it
        // in the module: the kernel builds Rust as one codegen unit; were two identical
        // instances merged, calling one for the other would do the same), so its callback is
        // inlined here. Any other goes through the slot.
        if core::ptr::fn_addr_eq(
            slot.ret,
            slot_ret::<P> as unsafe fn(*const (), &mut Return<'_>),
        ) {
            // SAFETY: the slot was made for a `P` (above), alive while the slot is.
            unsafe { &*slot.this.cast::<P>() }.ret(&mut r());
        } else if core::ptr::fn_addr_eq(
            slot.ret,
            slot_ret::<Q> as unsafe fn(*const (), &mut Return<'_>),
        ) {
            // The same for the second type (the C API's ops: several on one function).
            // SAFETY: the slot was made for a `Q` (above), alive while the slot is.
            unsafe { &*slot.this.cast::<Q>() }.ret(&mut r());
        } else {
            // SAFETY: the slot's handler is alive while the slot is.
            unsafe { (slot.ret)(slot.this, &mut r()) };
        }
    }
    // No counter of returns: a store per hooked call for a figure nobody needs (`live` in
    // stats walks the stacks instead).
    stack.pop(&f);
    f.ret
}

/// The real return address for a frame of `task`'s stack whose return address slot at `retp`
/// holds our trampoline: upstream's `ftrace_graph_ret_addr()`. `idx` carries the position between
/// calls when walking a stack outwards (start at 0). Returns `ret` unchanged if it is not ours.
pub fn ret_addr(
    task: crate::sys::task::TaskRef,
    idx: &mut usize,
    ret: usize,
    retp: usize,
) -> usize {
    if ret != trampoline() {
        return ret;
    }
    // SAFETY: API calls are made while the module is loaded.
    let Some(g) = (unsafe { graph() }) else {
        return ret;
    };
    let np = NoPreempt::new();
    let Some(stack) = g.tasks.of_task(task, &np) else {
        return ret;
    };
    let mut n = 0;
    let mut found = ret;
    for f in stack.frames() {
        if n < *idx {
            n += 1;
            continue;
        }
        n += 1;
        // A tail-called hooked function's frame saved our own trampoline: keep going down.
        if (retp == 0 || f.retp == retp) && f.ret != trampoline() {
            *idx = n;
            found = f.ret;
            break;
        }
    }
    found
}

/// Stack trace of the current task into `store`, with our trampoline replaced by the real
/// return addresses. Returns how many entries were stored.
pub fn stack_trace(store: &mut [usize], skip: usize) -> usize {
    crate::arch::stack_trace(store, skip)
}

/// Exposed for the architecture code: the real return address of the frame at `retp`, or
/// `ret` itself. `pos` tracks the walk.
pub(crate) fn fix_ret(pos: &mut usize, ret: usize, retp: usize) -> usize {
    ret_addr(crate::sys::task::TaskRef::current(), pos, ret, retp)
}
