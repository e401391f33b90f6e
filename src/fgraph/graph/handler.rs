// SPDX-License-Identifier: GPL-2.0

//! What a graph user sees: the [`GraphHandler`] trait its callbacks implement, the [`Entry`] and
//! [`Return`] views they get, and the [`Slot`] the core keeps per registered ops.

use super::*;

/// Where an entry callback is called from.
pub struct Entry<'a> {
    /// The hooked function (ftrace's ip).
    pub func: usize,
    /// Where the function will return to (its caller).
    pub ret_ip: usize,
    /// Arguments, stack pointer.
    pub regs: &'a Regs,
    /// What the hooking code passed (the rethook API: its `ufgraph_rethook`); from the
    /// handler's own `ftrace_ops`, what its [`GraphHandler::pre_entry`] returned; 0 on the hub.
    pub cookie: usize,
    pub(super) stack: &'a Stack,
    pub(super) idx: usize,
    pub(super) np: &'a NoPreempt,
    pub(super) frame: EntryFrame,
}

/// The frame of the call an entry callback runs for.
#[derive(Clone, Copy)]
pub(super) enum EntryFrame {
    /// On the stack; its bitmap word is at this index.
    Pushed(usize),
    /// Not pushed yet (the one-step path, [`GraphHandler::RESERVES_FIRST`]): the first
    /// reservation pushes it with its data, or the core pushes it bare if the callback wants the
    /// return without data. `ret` and `retp` are the call's.
    Lazy {
        ret: usize,
        retp: usize,
        calltime: u64,
        /// The ops' index words (its slot's, [`Slot::index_words`]).
        iw: IndexWords,
    },
}

/// Counts a refused data reservation that was not the caller's mistake (see `Stats`).
pub(super) fn reserve_failed(bytes: usize) {
    if bytes == 0 || bytes > crate::fgraph::shadow::MAX_DATA_BYTES {
        return;
    }
    if let Some(g) = graph() {
        g.stats.reserve_failed.fetch_add(1, Relaxed);
    }
}

/// Counts a call whose frame did not fit, on the one-step path ([`EntryFrame::Lazy`]), in its
/// ops' `missed_overrun` (the handler reports the miss to its users itself).
#[cold]
pub(super) fn lazy_overrun(idx: usize) {
    let Some(g) = graph() else {
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
    // SAFETY: a slot in the array stays valid until a grace period after it is removed (`Graph`'s
    // invariants), and the entry callback runs with preemption disabled.
    unsafe { &*p }.missed_overrun.fetch_add(1, Relaxed);
}

impl<'a> Entry<'a> {
    /// Reserves `bytes` (1..=256) on the shadow stack for this ops' return callback, once per
    /// entry. `None` if out of range, already reserved, or the stack is full.
    #[inline(always)]
    pub fn reserve(&mut self, bytes: usize) -> Option<&'a mut [usize]> {
        match DataSize::new(bytes.div_ceil(core::mem::size_of::<usize>())) {
            Some(size) => self.reserve_sized(size),
            None => {
                reserve_failed(bytes);
                None
            }
        }
    }

    /// [`Entry::reserve`] of `size` words, a size made ahead (a handler whose data size is
    /// fixed at its registration: fprobe's probes): the stack's top word is then not encoded
    /// on every call.
    #[inline(always)]
    pub fn reserve_sized(&mut self, size: DataSize) -> Option<&'a mut [usize]> {
        let d = match self.frame {
            EntryFrame::Lazy {
                ret,
                retp,
                calltime,
                iw,
            } => {
                // The frame and the data in one step (one move of the stack top).
                match self
                    .stack
                    .push_with_data(ret, self.func, calltime, retp, iw, size)
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
            EntryFrame::Pushed(_) => self
                .stack
                .reserve_data(self.idx, size.words() * core::mem::size_of::<usize>()),
        };
        let Some(d) = d else {
            reserve_failed(size.words() * core::mem::size_of::<usize>());
            return None;
        };
        // The words were just reserved for this ops on the current task's stack, and nothing
        // else touches them until the frame pops (interrupts push above them).
        // SAFETY: `d` is the stack's own reservation (`data_ptr`'s contract), and the words it
        // names are this callback's alone (above): a unique borrow.
        Some(unsafe { &mut *self.stack.data_ptr(d) })
    }

    /// How many hooked frames the task has below this one, plus one (read when asked: most
    /// callbacks never do).
    pub fn depth(&self) -> usize {
        match self.frame {
            EntryFrame::Pushed(_) => self.stack.depth(),
            // Not pushed yet: this call's frame is not counted.
            EntryFrame::Lazy { .. } => self.stack.depth().wrapping_add(1),
        }
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
        let d = self.stack.retrieve_data(self.idx, depth)?;
        // SAFETY: the stack's decoding of one of its frames, below this call's.
        unsafe { data_slice(self.stack, d) }
    }
}

/// Where a return callback is called from.
pub struct Return<'a> {
    /// The hooked function.
    pub func: usize,
    /// Where the function returns to.
    pub ret_ip: usize,
    /// When the function was entered (`trace_clock_local`); 0 for handlers that do not want
    /// times (`GraphHandler::WANTS_TIMES`).
    pub calltime: u64,
    /// When it returned.
    pub rettime: u64,
    /// The return value registers and the stack pointer as the function left them.
    pub regs: &'a Regs,
    pub(super) stack: &'a Stack,
    /// The stack's top word, read with the frame: where the last reservation's data is.
    pub(super) head: Head,
    pub(super) idx: usize,
    pub(super) np: &'a NoPreempt,
}

impl<'a> Return<'a> {
    /// As [`Entry::no_preempt`].
    pub fn no_preempt(&self) -> &'a NoPreempt {
        self.np
    }

    /// As [`Entry::depth`]: the frame being returned from is still on the stack while the
    /// return callbacks run (read when asked: most callbacks never do).
    pub fn depth(&self) -> usize {
        self.stack.depth()
    }

    /// How many of this task's calls found its shadow stack full so far (upstream's
    /// `ftrace_graph_ret.overrun`).
    pub fn overrun(&self) -> usize {
        self.stack.overrun()
    }

    /// The return value.
    pub fn retval(&self) -> usize {
        self.regs.retval()
    }

    /// What this ops' entry callback reserved for this frame.
    #[inline(always)]
    pub fn data(&self) -> Option<&'a [usize]> {
        // The frame being returned from is the top one: its last reservation is on top, and
        // the return path read the top word already.
        // The search takes the stack and the index, not `self`: a call given `&self` would make
        // the caller build the whole `Return` in memory, on the fast path too.
        match self.head.data(self.idx) {
            // SAFETY: the stack's decoding of its top frame, this return's.
            Some(d) => unsafe { data_slice(self.stack, d) },
            None => search_data(self.stack, self.idx),
        }
    }

    /// What this ops' entry callback reserved for this frame, if it is `size` and all the frame
    /// holds (a frame pushed with its data in one step, by this ops alone): one compare, for a
    /// caller that knows the size it expects. `None` does not mean there is none:
    /// [`Return::data`] finds it wherever it lies.
    #[inline(always)]
    pub fn data_exact(&self, size: DataSize) -> Option<&'a [usize]> {
        let d = self.head.data_exact(self.idx, size)?;
        // SAFETY: the stack's decoding of its top frame, this return's.
        unsafe { data_slice(self.stack, d) }
    }

    /// What this ops reserved `depth` frames up (0: this frame).
    pub fn parent_data(&self, depth: usize) -> Option<&'a [usize]> {
        let d = self.stack.retrieve_data(self.idx, depth)?;
        // SAFETY: the stack's decoding of one of its frames, below this call's.
        unsafe { data_slice(self.stack, d) }
    }

    /// This ops' variable in the current task.
    pub fn task_var(&self) -> &'a AtomicUsize {
        self.stack.task_var(self.idx)
    }
}

/// What [`GraphHandler::entry_first`] is handed: a call from the handler's own `ftrace_ops`
/// that no ops of ours hooked yet (its return address is not our trampoline), the recursion
/// guard held and the task's stack found.
pub struct FirstEntry<'a> {
    pub(super) slot: &'a Slot,
    /// The hooked function (ftrace's ip).
    pub func: usize,
    /// Where the function will return to (its caller): the return address as the call left it.
    pub ret_ip: usize,
    /// Arguments, stack pointer.
    pub regs: &'a Regs,
    pub(super) stack: &'a Stack,
    pub(super) retp: *mut usize,
    pub(super) np: &'a NoPreempt,
}

impl<'a> FirstEntry<'a> {
    /// As [`Entry::no_preempt`].
    pub fn no_preempt(&self) -> &'a NoPreempt {
        self.np
    }

    /// Pushes one frame for this ops alone with `size` words of data in one step (the frame and
    /// the data, one move of the stack top: `fgraph::shadow::OneStep`'s layout), and returns
    /// the data and what [`FirstEntry::keep`] or [`FirstEntry::decline`] (one of them, once)
    /// needs to finish the call: until then the frame is being built, so that a hook made from
    /// inside the handler's callbacks for this very call (the rethook API) is refused, as on
    /// the general path. The frame records no call time: the core asks only handlers that want
    /// none ([`GraphHandler::WANTS_TIMES`] false). `None`: no room for the frame (an overrun,
    /// counted on the stack and the slot; the caller tells its users).
    #[inline(always)]
    pub fn push_one_step(&self, size: DataSize) -> Option<(OneStepPush, &'a mut [usize])> {
        let iw = self.slot.index_words();
        let Ok((bm, d)) =
            self.stack
                .push_with_data(self.ret_ip, self.func, 0, self.retp as usize, iw, size)
        else {
            self.slot.missed_overrun.fetch_add(1, Relaxed);
            return None;
        };
        // The words were just reserved for this ops on the current task's stack, and nothing
        // else touches them until the frame pops (interrupts push above them).
        // SAFETY: `d` is the stack's own reservation (`data_ptr`'s contract), and the words it
        // names are this call's alone (above): a unique borrow.
        let data = unsafe { &mut *self.stack.data_ptr(d) };
        Some((OneStepPush { bm, iw }, data))
    }

    /// Keeps the call [`FirstEntry::push_one_step`] pushed: its bitmap word names this ops, and
    /// the function returns to our trampoline.
    #[inline(always)]
    pub fn keep(&self, p: OneStepPush) {
        self.stack.set_bitmap_one(p.bm, &p.iw);
        // SAFETY: `retp` is this call's return-address location (the entry registers'), an
        // aligned word of the current task's stack (x86_64) or its saved link register.
        unsafe { self.retp.write(trampoline()) };
    }

    /// Declines the call [`FirstEntry::push_one_step`] pushed: the stack is as it was before.
    #[inline(always)]
    pub fn decline(&self, p: OneStepPush) {
        self.stack.unpush(p.bm);
    }
}

/// A frame [`FirstEntry::push_one_step`] pushed, being built: [`FirstEntry::keep`] or
/// [`FirstEntry::decline`] finishes it.
#[must_use]
pub struct OneStepPush {
    bm: usize,
    iw: IndexWords,
}

/// A way of its own for the return path's common case, tried at every return before the core
/// decodes the top frame: [`return_handler`]'s third type, chosen where it is instantiated
/// (the crate root: fprobe's single exit probe, whose exit handler may be of a Rust probe type
/// the root names). `()` has none.
pub trait OwnReturn {
    /// At a return (the recursion guard held, the task's stack found): handles it, and then
    /// returns the real return address ([`FirstReturn::one_step`] does all but the callback),
    /// or hands it to the general path (`None`).
    fn ret_first(r: &FirstReturn<'_>) -> Option<usize>;
}

impl OwnReturn for () {
    #[inline(always)]
    fn ret_first(_r: &FirstReturn<'_>) -> Option<usize> {
        None
    }
}

/// What [`OwnReturn::ret_first`] is handed at a return, before the core decodes the top
/// frame: the current task's stack and the return's registers, under the return path's
/// recursion guard.
pub struct FirstReturn<'a> {
    pub(super) stack: &'a Stack,
    pub(super) regs: &'a Regs,
    pub(super) np: &'a NoPreempt,
}

/// What [`FirstReturn::one_step`] tells its callback of the call returning.
pub struct OneStepCall<'a> {
    /// The hooked function.
    pub func: usize,
    /// Where it returns to.
    pub ret_ip: usize,
    /// The return value registers and the stack pointer as the function left them.
    pub regs: &'a Regs,
    /// The data the ops reserved at the entry.
    pub data: &'a [usize],
}

impl<'a> FirstReturn<'a> {
    /// As [`Entry::no_preempt`].
    pub fn no_preempt(&self) -> &'a NoPreempt {
        self.np
    }

    /// The return of a one-step frame of `os`'s layout (the ops it names alone on the call, its
    /// data of the size it was made for: see `fgraph::shadow::OneStep`), if that is the top
    /// frame and this return's: `call` runs the ops' return callback, or says it is not its
    /// frame after all (`false`, having run nothing: the core then decodes it as any other).
    /// Then the frame is popped and its real return address returned. What the general path
    /// does for such a frame, without decoding it: the frame matched with two compares, the
    /// slot of the ops not looked up (the caller's `os` names its own ops' index, which no
    /// other ops holds while the caller can be reached).
    #[inline(always)]
    pub fn one_step(
        &self,
        os: &OneStep,
        call: impl FnOnce(&OneStepCall<'_>) -> bool,
    ) -> Option<usize> {
        let f = self.stack.top_one_step(os)?;
        let frame = f.frame(os);
        // Not this return's frame (returns were skipped above it), or a tail call's inner frame,
        // which returns to our trampoline again (the frame below knows the real address): the
        // general path sorts those out.
        if !arch::frame_matches(&frame, self.regs) || f.ret == trampoline() {
            return None;
        }
        // Before the callback, as the general path does (the kernel's unwinder in a return
        // callback goes on to the real caller); harmless if `call` declines: the general path
        // writes the same again.
        arch::settle_slot(&frame, self.regs);
        // SAFETY: `f.data` is the stack's decoding of its top frame, this return's.
        let data = unsafe { data_slice(self.stack, f.data) }?;
        if !call(&OneStepCall {
            func: f.func,
            ret_ip: f.ret,
            regs: self.regs,
            data,
        }) {
            return None;
        }
        self.stack.pop_one_step(&f);
        Some(f.ret)
    }
}

/// The data ops `idx` reserved in the top frame of `stack`, wherever it lies there.
#[inline(never)]
fn search_data(stack: &Stack, idx: usize) -> Option<&[usize]> {
    let d = stack.retrieve_data(idx, 0)?;
    // SAFETY: the stack's decoding of its top frame.
    unsafe { data_slice(stack, d) }
}

/// The words `d` names on `stack`, the current task's.
///
/// # Safety
///
/// `d` was made by `stack`'s own decoding (`Head::data`, `Head::data_exact`,
/// `retrieve_data`) of a frame that is still on it.
pub(super) unsafe fn data_slice(stack: &Stack, d: DataRef) -> Option<&[usize]> {
    // `d` names words below the stack top that belong to a live frame of the current task,
    // which are not rewritten while the frame lives.
    // SAFETY: `d` was made by the stack's decoding (the caller's contract), as `data_ptr`
    // requires, and its words stay unchanged while borrowed (above).
    Some(unsafe { &*stack.data_ptr(d) })
}

/// A handler type of which several ops may hook one call: the C API's ops, several on one
/// function being what the hub is for. When two or more hook a call, what their callbacks are
/// told is built once per call (entry) and once per frame (return), and the same one is handed
/// to each in turn, as upstream hands every `fgraph_ops` on a call the same
/// `ftrace_graph_ent`: per further ops, the core then loads the handler and calls it, and
/// carries nothing else from one to the next. A callback sees what an earlier one wrote in it
/// (upstream's rule too).
///
/// ```text
///   hub_entry(ip) -- hub_enter: the frame pushed (or joined) once
///                 `- join_all: call = call_of(Entry of ops 3)     built once
///                       ops 3: entry_batched(&mut call)            same `call`
///                       ops 5: entry_batched(&mut call)
///                       ops 9: entry_batched(&mut call)
///   return:  ret = ret_of(Return of the lowest ops)                built once
///                       ops 3, 5, 9: ret_batched(&mut ret)
/// ```
pub trait Batched: GraphHandler {
    /// What each entry callback on one call is given.
    type Call;
    /// What each return callback of one frame is given.
    type Ret;
    /// The [`Batched::Call`] of the call `e` is an entry of. Reads only what every ops on the
    /// call shares (the function, the depth, the registers), never `e`'s ops' own state (data,
    /// task variable). It holds the registers too: the loop then keeps one value fewer across
    /// the callbacks.
    fn call_of(e: &Entry<'_>) -> Self::Call;
    /// [`GraphHandler::entry`], told `call` (see [`Batched::call_of`]).
    fn entry_batched(&self, call: &mut Self::Call) -> bool;
    /// The [`Batched::Ret`] of the frame `r` is a return of; as [`Batched::call_of`], only what
    /// every ops on the frame shares (function, return value, depth, times, registers).
    fn ret_of(r: &Return<'_>) -> Self::Ret;
    /// [`GraphHandler::ret`], told `ret` (see [`Batched::ret_of`]).
    fn ret_batched(&self, ret: &mut Self::Ret);
    /// [`Batched::entry_batched`] of `slot`'s handler through callbacks its slot caches, if
    /// it has them (`None`: it has not; the caller then tells the slot's handler type): the C
    /// API's ops. The default: no slot has any.
    #[inline(always)]
    fn entry_cached(_slot: &Slot, _call: &mut Self::Call) -> Option<bool> {
        None
    }
    /// [`Batched::ret_batched`] through `slot`'s cached callbacks, as
    /// [`Batched::entry_cached`]: `false` if it has none.
    #[inline(always)]
    fn ret_cached(_slot: &Slot, _ret: &mut Self::Ret) -> bool {
        false
    }
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
    /// handler that does not want them sees 0, whatever the others on its frames want.
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
    /// [`GraphHandler::route`] says so; not on the hub, nor for hooks made through
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
    /// Routes a call from the handler's own `ftrace_ops`: calls `direct` (straight to the
    /// shadow-stack path, a cookie of 0), `pre` (through [`GraphHandler::pre_entry`]), or
    /// neither (the handler has nothing to run for any call now: fprobe while its first probe
    /// registers and its last one unregisters, when ftrace patching every function's call
    /// site runs kernel code that calls them; the callback then returns before the recursion
    /// guard). Decided before the guard is taken, so from a plain read of the handler's state
    /// (fprobe: `DISPATCH`). A method that calls, not one that returns the way: returned as a
    /// value, the way was built and tested again (12 instructions a call instead of 4).
    #[inline(always)]
    fn route(direct: impl FnOnce(), _pre: impl FnOnce()) {
        direct()
    }
    /// Whether [`GraphHandler::entry_first`] is this handler's own (the default handles
    /// nothing): the ftrace callback then asks it first, before it goes the general way.
    const ENTRY_FIRST: bool = false;
    /// For a call from the handler's own `ftrace_ops` with a cookie of 0 (no
    /// [`GraphHandler::pre_entry`] ran) that no ops of ours hooked yet, before the general
    /// entry path: the handler may enter it itself ([`FirstEntry::push_one_step`]), and then
    /// returns `true` (whatever came of it: the call is done). `false` goes the general way
    /// ([`GraphHandler::entry`]). Asked only if [`GraphHandler::ENTRY_FIRST`] says so, of a
    /// handler that wants no call times. Its common case then runs in a frame of its own, with
    /// none of the general path's registers to keep.
    #[inline(always)]
    fn entry_first(&self, _e: &FirstEntry<'_>) -> bool {
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
pub(super) unsafe fn slot_ret<H: GraphHandler>(this: *const (), r: &mut Return<'_>) {
    // SAFETY: the caller's contract.
    unsafe { &*this.cast::<H>() }.ret(r)
}

/// A slot's entry callback for handler type `H` (`Slot::entry`), at module level so that the
/// hub can tell a slot of a known handler type by this function's address (see
/// [`Slot::handler`]).
///
/// # Safety
///
/// `this` must be the `H` the slot was made for, alive.
pub(super) unsafe fn slot_entry<H: GraphHandler>(this: *const (), e: &mut Entry<'_>) -> bool {
    // SAFETY: the caller's contract.
    unsafe { &*this.cast::<H>() }.entry(e)
}

/// What the core knows of a registered ops. Type-erased: Rust handlers and C `ufgraph_ops` both
/// sit behind it.
///
/// # Invariants
///
/// - `entry`, `ret`, `missed`, `set_index` and `ftrace_func` were made for one handler type
///   `H` ([`Slot::new`]), and `this` points to an `H` (`slot_entry::<H>` as `entry` tells
///   which), valid from `new` until the slot is unregistered and no callback that found it
///   can still be running (the contract of `new`: its owner drops the handler only after
///   [`Graph::unregister`], which waits a grace period, has returned).
/// - `hub_ips` is touched only by `Graph` methods holding the graph's registration lock.
/// - While registered on its own `ftrace_ops`, that ops' `private` is this slot.
pub struct Slot {
    pub(super) idx: AtomicUsize,
    /// [`IndexWords`] of `idx` (while unassigned, of `usize::MAX % 16`, as `idx` reads then),
    /// kept with it by [`Slot::assign`].
    index_words: [AtomicUsize; 3],
    pub(super) ftrace: RawOps,
    pub(in crate::fgraph) this: *const (),
    pub(super) entry: unsafe fn(*const (), &mut Entry<'_>) -> bool,
    pub(super) ret: unsafe fn(*const (), &mut Return<'_>),
    /// The ftrace callback for this slot's handler type: `graph_entry::<H>`, in which the
    /// handler's entry callback is a direct (inlined) call.
    pub(super) ftrace_func: unsafe extern "C" fn(
        usize,
        usize,
        *mut crate::sys::ftrace::RawFtraceOps,
        *mut crate::sys::ftrace::RawFregs,
    ),
    pub(super) missed: unsafe fn(*const (), usize),
    pub(super) set_index: unsafe fn(*const (), Option<usize>),
    pub(super) wants_times: bool,
    /// A C ops' callbacks, read from its `struct ufgraph_ops` when it registers (the header
    /// says they must not change while it is registered), and `None` for any other handler:
    /// the multi-ops loops call them with one load and no test of the handler's type (three
    /// instructions fewer per ops on each side of a call).
    pub(in crate::fgraph) c_entry: crate::bindings::ufgraph_entry_t,
    pub(in crate::fgraph) c_ret: crate::bindings::ufgraph_ret_t,
    /// [`GraphHandler::STACKS_ON_DEMAND`].
    pub(super) stacks_on_demand: bool,
    /// While the slot is registered on the hub: the functions it selects, sorted (the graph's
    /// registration lock guards it: only `Graph` methods holding it touch it).
    pub(super) hub_ips: core::cell::UnsafeCell<KVec<usize>>,
    /// Whether the slot is registered on the hub rather than on its own `ftrace_ops`.
    pub(super) on_hub: core::sync::atomic::AtomicBool,
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
        /// The slot's `missed` callback for an `H`.
        ///
        /// # Safety
        ///
        /// `this` must be the slot's handler, an `H` (the contract of [`Slot::new`]).
        unsafe fn missed<H: GraphHandler>(this: *const (), func: usize) {
            // SAFETY: as above.
            unsafe { &*this.cast::<H>() }.missed(func)
        }
        /// The slot's `set_index` callback for an `H`.
        ///
        /// # Safety
        ///
        /// As for `missed`.
        unsafe fn set_index<H: GraphHandler>(this: *const (), idx: Option<usize>) {
            // SAFETY: as above.
            unsafe { &*this.cast::<H>() }.set_index(idx)
        }
        Self {
            idx: AtomicUsize::new(usize::MAX),
            index_words: {
                let w = IndexWords::new(usize::MAX).to_words();
                [
                    AtomicUsize::new(w[0]),
                    AtomicUsize::new(w[1]),
                    AtomicUsize::new(w[2]),
                ]
            },
            ftrace,
            this: handler.cast(),
            entry: slot_entry::<H>,
            ret: slot_ret::<H>,
            ftrace_func: graph_entry::<H>,
            missed: missed::<H>,
            set_index: set_index::<H>,
            wants_times: H::WANTS_TIMES,
            c_entry: None,
            c_ret: None,
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

    /// The frame words of the ops' index (valid while registered: set with it, before the
    /// slot is published, as `idx` is).
    #[inline(always)]
    pub(super) fn index_words(&self) -> IndexWords {
        IndexWords::from_words(self.index_words.each_ref().map(|w| w.load(Relaxed)))
    }

    // Records the slot's index and tells its handler, before anything can call it; counts the
    // handlers that want call times.
    pub(super) fn assign(&self, g: &Graph, idx: Option<usize>) {
        if self.wants_times {
            match idx {
                Some(_) => g.timed.fetch_add(1, Relaxed),
                None => g.timed.fetch_sub(1, Relaxed),
            };
        }
        self.idx.store(idx.unwrap_or(usize::MAX), Relaxed);
        // Unassigned: the words of the index `idx` then reads as (`usize::MAX % 16`), so that
        // a callback that still ran after a failed registration or unregistration (ftrace
        // refused to add or remove the ops) sees one index whichever it reads.
        let words = IndexWords::new(idx.unwrap_or(usize::MAX)).to_words();
        for (w, v) in self.index_words.iter().zip(words) {
            w.store(v, Relaxed);
        }
        // SAFETY: `this` is the handler `set_index` was made for, alive while the slot is being
        // registered or unregistered (the type invariants).
        unsafe { (self.set_index)(self.this, idx) };
    }

    /// Counts a call of `ip` this slot missed, on the counter `which` picks, and tells the
    /// handler.
    pub(in crate::fgraph) fn note_missed(
        &self,
        ip: usize,
        which: impl FnOnce(&Self) -> &AtomicU64,
    ) {
        which(self).fetch_add(1, Relaxed);
        // SAFETY: `this` is the handler `missed` was made for, alive while the slot is registered
        // (the type invariants).
        unsafe { (self.missed)(self.this, ip) };
    }

    /// The handler's entry callback, through the slot.
    pub(in crate::fgraph) fn call_entry(&self, e: &mut Entry<'_>) -> bool {
        // SAFETY: `this` is the handler `entry` was made for, alive while the slot is registered
        // (the type invariants).
        unsafe { (self.entry)(self.this, e) }
    }

    /// The slot's handler, if it was made for a `Q` (told by its entry function's address, as
    /// [`return_handler`] tells its own type by the return function's): the hub's common users,
    /// the C API's ops, are then called directly (inlined), with no `Entry` in memory.
    #[inline(always)]
    pub(in crate::fgraph) fn handler<Q: GraphHandler>(&self) -> Option<&Q> {
        // `slot_entry::<Q>` has one instance in the module (the kernel builds Rust as one
        // codegen unit); were two identical instances merged, calling one for the other would
        // do the same.
        if core::ptr::fn_addr_eq(
            self.entry,
            slot_entry::<Q> as unsafe fn(*const (), &mut Entry<'_>) -> bool,
        ) {
            // The slot was made for a `Q` by `Slot::new` (its entry is `slot_entry::<Q>`), and
            // is registered for the whole callback this is called from.
            // SAFETY: `this` points to that `Q` (the type invariants), alive while registered.
            Some(unsafe { &*self.this.cast::<Q>() })
        } else {
            None
        }
    }

    /// Whether the slot's return callback is `H`'s (`slot_ret::<H>`): then it was made for an
    /// `H` (one instance of it in the module: the kernel builds Rust as one codegen unit; were
    /// two identical instances merged, calling one for the other would do the same), and the
    /// return path calls `H::ret` directly, inlined.
    #[inline(always)]
    pub(in crate::fgraph) fn ret_is<H: GraphHandler>(&self) -> bool {
        core::ptr::fn_addr_eq(
            self.ret,
            slot_ret::<H> as unsafe fn(*const (), &mut Return<'_>),
        )
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
