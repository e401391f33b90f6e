// SPDX-License-Identifier: GPL-2.0

//! The hot path: the ftrace callbacks of graph ops (a hooked function's entry), the return
//! handler the trampoline calls, and the stack-trace fix-ups for frames that return through us.

use super::*;

/// The ftrace callback of a graph ops whose handler is an `H`: one instance per handler type,
/// so that the handler's entry callback is called directly (and inlined) rather than through
/// the slot's function pointer.
///
/// # Safety
///
/// Called by ftrace only, as the callback of a registered graph ops' `ftrace_ops` whose
/// `private` is its [`Slot`], made for an `H`.
pub(super) unsafe extern "C" fn graph_entry<H: GraphHandler>(
    ip: usize,
    parent_ip: usize,
    op: *mut crate::sys::ftrace::RawFtraceOps,
    fregs: *mut crate::sys::ftrace::RawFregs,
) {
    // Both paths are tail calls with this callback's own arguments: it makes no frame and moves
    // no register.
    H::route(
        // SAFETY: ftrace's callback arguments, passed on.
        || unsafe { graph_entry_direct::<H>(ip, parent_ip, op, fregs) },
        // SAFETY: as above.
        || unsafe { graph_entry_pre::<H>(ip, parent_ip, op, fregs) },
    )
}

/// The slot of `op`, a registered graph ops' `ftrace_ops`.
///
/// # Safety
///
/// `op` must be the `ftrace_ops` ftrace called a [`graph_entry`] with.
#[inline(always)]
pub(super) unsafe fn op_slot<'a>(op: *mut crate::sys::ftrace::RawFtraceOps) -> &'a Slot {
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
pub(super) unsafe fn graph_entry_pre<H: GraphHandler>(
    ip: usize,
    parent_ip: usize,
    op: *mut crate::sys::ftrace::RawFtraceOps,
    fregs: *mut crate::sys::ftrace::RawFregs,
) {
    // Never null: the module builds only for kernels with DYNAMIC_FTRACE_WITH_ARGS (helpers.c),
    // whose ftrace always passes its registers.
    debug_assert!(!fregs.is_null());
    // The slot is looked up where it is used, not before the guard: an entry-only probe's
    // call (`pre_entry` alone) then never loads it.
    // SAFETY: the caller's contract: `op` is the ftrace_ops of this call's graph ops.
    let slot = || unsafe { op_slot(op) };
    // SAFETY: the slot was made for an `H` (`Slot::new::<H>` set this callback), alive while
    // it is registered.
    let handler = || unsafe { &*slot().this.cast::<H>() };
    // As in `Graph::enter_with`, with the handler's own recursion miss and its `pre_entry`.
    let guard = match Recursion::try_lock(ip, parent_ip) {
        Ok(g) => g,
        Err(Refused::Recursion) => {
            slot().missed_recursion.fetch_add(1, Relaxed);
            handler().missed_recursion(ip);
            return;
        }
        Err(Refused::Unsafe) => return,
    };
    let h = handler();
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
pub(super) unsafe fn graph_entry_direct<H: GraphHandler>(
    ip: usize,
    parent_ip: usize,
    op: *mut crate::sys::ftrace::RawFtraceOps,
    fregs: *mut crate::sys::ftrace::RawFregs,
) {
    // Never null: the module builds only for kernels with DYNAMIC_FTRACE_WITH_ARGS (helpers.c),
    // whose ftrace always passes its registers.
    debug_assert!(!fregs.is_null());
    // SAFETY: the caller's contract.
    let slot = unsafe { op_slot(op) };
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    if H::ENTRY_FIRST && !H::WANTS_TIMES {
        // The guard's common case runs the handler's own way inlined; any other context the
        // same, out of line.
        let r = Recursion::run(
            ip,
            parent_ip,
            // SAFETY: ftrace's callback arguments, for a slot made for an `H`; the guard is held.
            |me, np| unsafe { entry_first_or_general::<H>(slot, ip, fregs, me, np) },
            // SAFETY: as above.
            |me, np| unsafe { entry_first_or_general_outlined::<H>(slot, ip, fregs, me, np) },
        );
        if let Err(Refused::Recursion) = r {
            slot.missed_recursion.fetch_add(1, Relaxed);
            h.missed_recursion(ip);
        }
        return;
    }
    let guard = match Recursion::try_lock(ip, parent_ip) {
        Ok(g) => g,
        Err(Refused::Recursion) => {
            slot.missed_recursion.fetch_add(1, Relaxed);
            h.missed_recursion(ip);
            return;
        }
        Err(Refused::Unsafe) => return,
    };
    if let Some(g) = graph() {
        // SAFETY: as above.
        unsafe {
            g.enter_guarded(
                slot,
                ip,
                fregs,
                0,
                guard.no_preempt(),
                H::RESERVES_FIRST,
                H::WANTS_TIMES,
                |e| h.entry(e),
            )
        };
    }
    drop(guard);
}

/// [`graph_entry_direct`] under the guard, for a handler with a [`GraphHandler::entry_first`]:
/// its own way first, for a call nothing of ours hooked yet, else the general way.
///
/// # Safety
///
/// ftrace's callback arguments (`ip`, `fregs`) for `slot`, made for an `H`, with the recursion
/// guard held (`np`) by the current task `me`.
#[inline(always)]
unsafe fn entry_first_or_general<H: GraphHandler>(
    slot: &Slot,
    ip: usize,
    fregs: *mut crate::sys::ftrace::RawFregs,
    me: Current,
    np: &NoPreempt,
) {
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    // The stack is looked for in this CPU's cache first. A miss (about once per context switch)
    // goes on out of line, as does the general way: nothing is kept across those calls, so this
    // frame saves only the registers the handler's own way needs.
    let Some(stack) = Tasks::cached(me, np) else {
        // SAFETY: the caller's contract.
        return unsafe { entry_uncached::<H>(slot, ip, fregs, me, np) };
    };
    // SAFETY: the caller's contract.
    unsafe { entry_with_stack::<H>(h, slot, ip, fregs, stack, np) }
}

/// [`entry_first_or_general`] with the current task's stack found: the handler's own way for a
/// call nothing of ours hooked yet, else the general way.
///
/// # Safety
///
/// As for [`entry_first_or_general`]; `stack` is the current task's and `h` the slot's handler.
#[inline(always)]
unsafe fn entry_with_stack<H: GraphHandler>(
    h: &H,
    slot: &Slot,
    ip: usize,
    fregs: *mut crate::sys::ftrace::RawFregs,
    stack: &Stack,
    np: &NoPreempt,
) {
    // SAFETY: the return-address location of this call (ftrace's entry registers).
    let retp = unsafe { arch::hot::fregs::retp(fregs) };
    // SAFETY: `retp` is a valid, aligned word (the stack slot or the saved link register).
    let ret_ip = unsafe { retp.read() };
    if ret_ip != trampoline() {
        let e = FirstEntry {
            slot,
            func: ip,
            ret_ip,
            // SAFETY: ftrace passes valid registers for the duration of the callback.
            regs: unsafe { Regs::from_raw(fregs) },
            stack,
            retp,
            np,
        };
        if h.entry_first(&e) {
            return;
        }
    }
    if let Some(g) = graph() {
        // SAFETY: the caller's contract; the guard is held.
        unsafe { graph_enter_general::<H>(g, slot, ip, fregs, np) };
    }
}

/// [`entry_first_or_general`] after this CPU's cache missed: the table, then the same.
///
/// # Safety
///
/// As for [`entry_first_or_general`].
#[cold]
#[inline(never)]
unsafe fn entry_uncached<H: GraphHandler>(
    slot: &Slot,
    ip: usize,
    fregs: *mut crate::sys::ftrace::RawFregs,
    me: Current,
    np: &NoPreempt,
) {
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    match graph().and_then(|g| g.tasks.current_uncached(me, np)) {
        // SAFETY: the caller's contract; `stack` is the current task's.
        Some(stack) => unsafe { entry_with_stack::<H>(h, slot, ip, fregs, stack, np) },
        // No stack: the general way counts the miss.
        None => {
            if let Some(g) = graph() {
                // SAFETY: the caller's contract; the guard is held.
                unsafe { graph_enter_general::<H>(g, slot, ip, fregs, np) };
            }
        }
    }
}

/// [`entry_first_or_general`] out of line: for the guard's other cases (see [`Recursion::run`]).
///
/// # Safety
///
/// As for [`entry_first_or_general`].
#[inline(never)]
unsafe fn entry_first_or_general_outlined<H: GraphHandler>(
    slot: &Slot,
    ip: usize,
    fregs: *mut crate::sys::ftrace::RawFregs,
    me: Current,
    np: &NoPreempt,
) {
    // SAFETY: the caller's contract.
    unsafe { entry_first_or_general::<H>(slot, ip, fregs, me, np) }
}

/// [`graph_entry_direct`]'s general way for a handler with a [`GraphHandler::entry_first`] that
/// did not take the call: out of line, so that the handler's own way runs in a frame that keeps
/// none of this one's registers.
///
/// # Safety
///
/// As for [`Graph::enter_guarded`], with `slot` made for an `H` and a cookie of 0.
#[inline(never)]
unsafe fn graph_enter_general<H: GraphHandler>(
    g: &Graph,
    slot: &Slot,
    ip: usize,
    fregs: *mut crate::sys::ftrace::RawFregs,
    np: &NoPreempt,
) {
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    // SAFETY: the caller's contract.
    unsafe {
        g.enter_guarded(
            slot,
            ip,
            fregs,
            0,
            np,
            H::RESERVES_FIRST,
            H::WANTS_TIMES,
            |e| h.entry(e),
        )
    };
}

/// The shadow-stack part of [`graph_entry`] after a [`GraphHandler::pre_entry`]. Out of line: a call `pre_entry` finishes (an
/// entry-only fprobe) then runs in a small frame that saves few registers, and only a call that
/// goes on pays for the registers this part needs.
///
/// # Safety
///
/// As for [`Graph::enter_guarded`], with `slot` made for an `H`.
#[inline(never)]
pub(super) unsafe fn graph_enter<H: GraphHandler>(
    slot: &Slot,
    ip: usize,
    fregs: *mut crate::sys::ftrace::RawFregs,
    cookie: usize,
    np: &NoPreempt,
) {
    let Some(g) = graph() else {
        return;
    };
    // SAFETY: the slot was made for an `H`, alive while it is registered.
    let h = unsafe { &*slot.this.cast::<H>() };
    // SAFETY: the caller's contract.
    unsafe {
        g.enter_guarded(
            slot,
            ip,
            fregs,
            cookie,
            np,
            H::RESERVES_FIRST,
            H::WANTS_TIMES,
            |e| h.entry(e),
        )
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
        fregs: *mut crate::sys::ftrace::RawFregs,
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
        fregs: *mut crate::sys::ftrace::RawFregs,
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
        let wanted = unsafe {
            self.enter_guarded(
                slot,
                ip,
                fregs,
                cookie,
                guard.no_preempt(),
                lazy,
                true,
                entry,
            )
        };
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
    pub(super) unsafe fn enter_guarded(
        &self,
        slot: &Slot,
        ip: usize,
        fregs: *mut crate::sys::ftrace::RawFregs,
        cookie: usize,
        np: &NoPreempt,
        lazy: bool,
        may_time: bool,
        entry: impl FnOnce(&mut Entry<'_>) -> bool,
    ) -> bool {
        let Some(stack) = self.tasks.current(np) else {
            slot.missed_nostack.fetch_add(1, Relaxed);
            // SAFETY: the slot's handler is alive while it is registered.
            unsafe { (slot.missed)(slot.this, ip) };
            return false;
        };
        // SAFETY: the caller's contract, and the guard is held (preemption disabled).
        unsafe { self.enter_locked(slot, ip, fregs, cookie, stack, np, lazy, may_time, entry) }
    }

    /// [`Graph::enter_with`] once the recursion guard is held and the task's stack found:
    /// pushes (or joins) the call's frame for `slot`, an ops on its own `ftrace_ops` (or the
    /// rethook API's), and runs its entry callback. (The hub's ops enter a call all together:
    /// [`Graph::hub_enter`].)
    ///
    /// The call joins the top frame (another ops hooking this same call pushed it) unless
    /// `slot` has marked it "seen": then `slot` entered it before, so this is another call: the
    /// function tail-called itself (same return slot, our trampoline in it), and the call gets
    /// a frame of its own. The bit is made only where a frame is joined: made up front, it put
    /// four instructions on fprobe's one-step entry, which joins nothing.
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter_with`]; `stack` is the current task's and `np` the held guard's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::fgraph) unsafe fn enter_locked<'a>(
        &self,
        slot: &Slot,
        ip: usize,
        fregs: *mut crate::sys::ftrace::RawFregs,
        cookie: usize,
        stack: &'a Stack,
        np: &'a NoPreempt,
        lazy: bool,
        may_time: bool,
        entry: impl FnOnce(&mut Entry<'_>) -> bool,
    ) -> bool {
        // SAFETY: valid for the call (caller).
        let regs = unsafe { Regs::from_raw(fregs) };
        // Below 16 while the slot is registered (its callbacks run only then); the remainder
        // tells the compiler, which then needs no check for the shifts.
        let idx = slot.idx() % ARRAY_SIZE;
        // SAFETY: the return-address location of this call (caller: entry registers).
        let retp = unsafe { arch::hot::fregs::retp(fregs) };
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
            let iw = slot.index_words();
            // `may_time`: whether the handler's type may want times at all (a constant where
            // the type is known: fprobe's one-step entry then does not test the slot).
            let calltime = if may_time && slot.wants_times {
                self.now()
            } else {
                0
            };
            let mut e = Entry {
                func: ip,
                ret_ip: old_ret,
                regs,
                cookie,
                stack,
                idx,
                np,
                frame: EntryFrame::Lazy {
                    ret: old_ret,
                    retp: retp as usize,
                    calltime,
                    iw,
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
            stack.set_bitmap_one(bm, &iw);
            // SAFETY: the return-address location of this call (see `retp` above).
            unsafe { retp.write(tramp) };
            return true;
        }

        // Another ops hooking this same call pushed the frame already: join it. The frame's
        // "seen" mask tells this call apart from a tail-recursive one at the same stack slot
        // (above).
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
        let bm = match top {
            Some(f)
                if old_ret == tramp
                    && f.retp == retp as usize
                    && f.func == ip
                    && usize::from(f.seen) & (1 << idx) == 0 =>
            {
                // The ops that pushed the frame may not have wanted the time, this one does.
                if slot.wants_times && f.calltime == 0 {
                    stack.set_calltime(&f, self.now());
                }
                f.start + FRAME_WORDS
            }
            _ => {
                // Taken while any registered ops wants times, even if this one does not: a
                // test of this slot's wish here cost fprobe entry+exit three instructions and
                // the shim two (through the compiler's layout of the whole entry).
                let t = self.now();
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

        let ret_ip = real_ret(stack, old_ret, tramp);
        let save = stack.top();
        let mut e = Entry {
            func: ip,
            ret_ip,
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
        if !wanted {
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

    /// The ops of `mask` on a call whose frame (bitmap word at `bm`, returning to `ret_ip`, its
    /// call time taken if `timed`) the hub callback has just pushed or joined for them
    /// ([`Graph::hub_enter`]): the frame is known, nothing is looked for. Each ops' entry
    /// callback runs in turn; the frame's bitmap word is written once, after the last (nothing
    /// reads it meanwhile: a hook made from inside a callback for this call finds the frame
    /// being built and is refused, and other hookers of the call come after this callback
    /// returns), and returned. The caller marked the frame "seen" for the whole mask.
    ///
    /// The loop is what each further ops on a function costs, so it carries as little as it
    /// can across the callbacks: the bits still to run (a `u32` widened from the mask's 16
    /// bits, so that the index of the lowest needs no masking), the ops keeping the call (the
    /// mask less each that declines or has no slot: keeping, the common case, costs no bit
    /// arithmetic), the frame's bits from before the loop, the stack and its top before the
    /// callback, the registers (in the shared call struct). The ops' bit is taken from the bits
    /// to run again after the callback rather than kept; what only a handler of another type
    /// than `Q` needs (the `Entry`) sits in memory, for [`join_other`].
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter_locked`]; `bm` is the bitmap word of the current task's top frame,
    /// this call's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::fgraph) unsafe fn join_all<Q: Batched>(
        &self,
        mask: usize,
        ip: usize,
        fregs: *mut crate::sys::ftrace::RawFregs,
        stack: &Stack,
        np: &NoPreempt,
        bm: usize,
        ret_ip: usize,
        timed: bool,
    ) -> usize {
        // Being built while the entry callbacks run, as in `enter_locked`.
        let mut bits = stack.bitmap(bm) as usize;
        stack.set_building(bm);
        // A frame pushed without a call time that an ops further on wants: taken now, once,
        // before the callbacks, so the loop below carries no "timed" state from one ops to the
        // next. While no registered ops wants times (C ops, fprobe and the shim do not), the
        // ops are not even looked at.
        if !timed && self.timed.load(Relaxed) != 0 && self.any_wants_times(mask) {
            stack.set_calltime_at(bm, self.now());
        }
        // The caller (`hub_enter`) marked every index of its whole mask seen, before this:
        // "seen" only tells a later entry of the same ops into this call (from its own
        // `ftrace_ops`) from a tail-recursive one, and an index that has no slot now gets no
        // new ops before this callback ends (an index is reused only a grace period after its
        // ops left the array, and this callback is an RCU-sched reader), while an ops on its
        // way in here is a hub ops, with no `ftrace_ops` of its own.
        // SAFETY: valid for the call (caller).
        let regs = unsafe { Regs::from_raw(fregs) };
        let other = JoinCtx {
            func: ip,
            ret_ip,
            regs,
            stack,
            np,
            bm,
        };
        // What every `Q` on the call is told, built once (`Batched`).
        let mut call = Q::call_of(&other.entry(mask.trailing_zeros() as usize % ARRAY_SIZE));
        // The stack top before each callback: a declining callback's reservation is dropped.
        let mut save = stack.top();
        // The ops that keep the call: the mask's, less each that declines or has no slot (every
        // path but a callback's "keep" clears its bit below). Keeping is the common case, and
        // this way it costs no bit arithmetic.
        let mut kept = mask;
        // A bit per array index: the u16 it is, widened. As a u16 its arithmetic takes more
        // instructions; as a usize the index of its lowest bit is masked (`% ARRAY_SIZE`), which
        // the compiler drops for a u32 whose upper half it knows is clear.
        let mut rest = u32::from(mask as u16);
        while rest != 0 {
            // Below 16: the mask has a bit per array index.
            let idx = rest.trailing_zeros() as usize % ARRAY_SIZE;
            let wanted = match self.slot_at(idx) {
                Some(slot) => match Q::entry_cached(slot, &mut call) {
                    Some(w) => w,
                    None => match slot.handler::<Q>() {
                        Some(h) => h.entry_batched(&mut call),
                        None => join_other(slot, &other, idx),
                    },
                },
                None => false,
            };
            if wanted {
                save = stack.top();
            } else {
                // This ops' bit: the lowest of `rest`, still.
                kept ^= (rest & rest.wrapping_neg()) as usize;
                if stack.top() != save {
                    // What a declining callback reserved goes with it.
                    stack.truncate(save);
                }
            }
            rest &= rest - 1;
        }
        bits |= kept;
        stack.set_bitmap(bm, bits as u16);
        bits
    }

    /// The hub's entry for one call of `ip`: the ops of `mask` (the hub's for `ip`), each
    /// called in index order on one frame. The frame is pushed, or, for an entry of a call
    /// some ops on its own `ftrace_ops` already hooked, joined, once for them all; then
    /// [`Graph::join_all`] runs every callback, the first ops' included, and the frame is
    /// dropped again if none kept the call. One push-or-join per hub callback: what each
    /// further ops on a function costs is one turn of `join_all`'s loop, nothing else.
    ///
    /// The frame joined is the top one, of this call (same return slot, our trampoline in it,
    /// same function), that neither the hub nor any ops of `mask` has seen: then this is the
    /// entry of a tail call at the same slot (see [`Graph::enter_locked`]). The hub enters each
    /// call once, so its own mark decides; the ops' marks are kept as well. A frame being built for this
    /// call (a hook made from inside one of its callbacks) is refused for every ops, counted.
    ///
    /// # Safety
    ///
    /// As for [`Graph::enter_locked`] (ftrace's entry registers for `ip`, the recursion guard
    /// held, `stack` the current task's).
    #[inline(always)]
    pub(in crate::fgraph) unsafe fn hub_enter<Q: Batched>(
        &self,
        mask: usize,
        ip: usize,
        fregs: *mut crate::sys::ftrace::RawFregs,
        stack: &Stack,
        np: &NoPreempt,
    ) {
        // SAFETY: the return-address location of this call (caller: entry registers).
        let retp = unsafe { arch::hot::fregs::retp(fregs) };
        // SAFETY: `retp` is a valid, aligned word (the stack slot or the saved link register).
        let old_ret = unsafe { retp.read() };
        let tramp = trampoline();
        let top = stack.top_frame();
        if top.is_some_and(|f| f.building && f.retp == retp as usize) {
            self.each_missed(mask, ip, true);
            return;
        }
        let mut fresh = false;
        let (bm, timed) = match top {
            Some(f)
                if old_ret == tramp
                    && f.retp == retp as usize
                    && f.func == ip
                    && !f.hub
                    && usize::from(f.seen) & mask == 0 =>
            {
                (f.start + FRAME_WORDS, f.calltime != 0)
            }
            _ => {
                let t = self.now();
                match stack.push(old_ret, ip, t, retp as usize) {
                    Ok(bm) => {
                        fresh = true;
                        (bm, t != 0)
                    }
                    Err(_) => {
                        self.each_missed(mask, ip, false);
                        return;
                    }
                }
            }
        };
        // Every ops of the mask sees this call, those that decline it included, and the hub
        // itself: without their marks a tail call of the same function at the same return slot
        // would join this frame as if it were this call. The hub's own mark says so whatever
        // ops come or go between the two entries (the mask may have none in common then).
        stack.mark_seen_hub(bm, mask);
        let ret_ip = real_ret(stack, old_ret, tramp);
        // SAFETY: as above; `bm` is this call's top frame.
        let bits = unsafe { self.join_all::<Q>(mask, ip, fregs, stack, np, bm, ret_ip, timed) };
        if fresh {
            if bits == 0 {
                stack.unpush(bm);
            } else {
                // SAFETY: as above: the return-address location of this call.
                unsafe { retp.write(tramp) };
            }
        }
    }

    /// Counts a call of `ip` that the registered ops of `mask` missed (`recursion`: a hook
    /// from inside one of their callbacks, else a full shadow stack), and tells each. Out of
    /// line: the hub's entry carries neither loop.
    #[cold]
    #[inline(never)]
    fn each_missed(&self, mask: usize, ip: usize, recursion: bool) {
        crate::fgraph::hub::each_slot(self, mask, |slot| {
            if recursion {
                slot.note_missed(ip, |s| &s.missed_recursion);
            } else {
                slot.note_missed(ip, |s| &s.missed_overrun);
            }
        });
    }

    /// Whether a registered ops of `mask` wants call times.
    #[inline(never)]
    fn any_wants_times(&self, mut mask: usize) -> bool {
        while mask != 0 {
            let idx = mask.trailing_zeros() as usize % ARRAY_SIZE;
            mask &= mask - 1;
            if self.slot_at(idx).is_some_and(|s| s.wants_times) {
                return true;
            }
        }
        false
    }

    /// `trace_clock_local()` if a registered handler wants call times, else 0 (no clock read).
    #[inline(always)]
    pub(super) fn now(&self) -> u64 {
        if self.timed.load(Relaxed) == 0 {
            return 0;
        }
        crate::sys::ftrace::clock_local()
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

/// What [`Graph::join_all`] hands an ops whose handler is of another type than its `Q`: the
/// call, for the `Entry` that ops' callback gets.
struct JoinCtx<'a> {
    func: usize,
    ret_ip: usize,
    regs: &'a Regs,
    stack: &'a Stack,
    np: &'a NoPreempt,
    bm: usize,
}

impl<'a> JoinCtx<'a> {
    /// The `Entry` of ops `idx` on the call.
    #[inline(always)]
    fn entry(&self, idx: usize) -> Entry<'a> {
        Entry {
            func: self.func,
            ret_ip: self.ret_ip,
            regs: self.regs,
            cookie: 0,
            stack: self.stack,
            idx,
            np: self.np,
            frame: EntryFrame::Pushed(self.bm),
        }
    }
}

/// [`Graph::join_all`]'s call of `slot` (index `idx`), a handler of another type than the
/// loop's: through the slot, with its `Entry`. Out of line, so that the loop keeps none of what
/// only this needs in registers.
#[inline(never)]
fn join_other(slot: &Slot, ctx: &JoinCtx<'_>, idx: usize) -> bool {
    slot.call_entry(&mut ctx.entry(idx))
}

/// What the return trampoline calls (`ufgraph_return_handler`, instantiated at the crate root,
/// where every handler type is known) with the registers the hooked function returned with;
/// returns the real return address. `F`'s own way is tried first (fprobe's single exit probe);
/// then return callbacks of handlers of type `P` (fprobe) and `Q` (the C API's ops) are called
/// directly (inlined), others through their slot.
///
/// # Safety
///
/// Only from the trampoline, which only runs as the return of a function whose entry installed
/// it on the current task's stack.
#[inline(always)]
pub unsafe fn return_handler<P: GraphHandler, Q: Batched, F: OwnReturn>(
    fregs: *mut crate::sys::ftrace::RawFregs,
) -> usize {
    // The frame is popped whatever happens; only the callbacks need the recursion guard (a
    // return callback that calls a hooked function, whose own return would re-enter here).
    // Either way preemption is disabled once. The body is instantiated inline for the guard's
    // common case (`Recursion::run`: task context), which then carries no test of the outcome
    // per callback and no guard state in a register, and once out of line for the rest.
    match Recursion::run(
        trampoline(),
        0,
        // SAFETY: the caller's contract; the guard is held.
        |me, np| unsafe { return_body::<P, Q, F>(fregs, me, np, None) },
        // SAFETY: as above.
        |me, np| unsafe { return_body_outlined::<P, Q, F>(fregs, me, np, None) },
    ) {
        Ok(ret) => ret,
        Err(refused) => {
            let np = NoPreempt::new();
            // SAFETY: the caller's contract; preemption is disabled.
            unsafe { return_body_outlined::<P, Q, F>(fregs, Current::read(), &np, Some(refused)) }
        }
    }
}

/// [`return_body`] out of line: the guard's other cases and a refused guard (see
/// [`Recursion::run`]), so that the common case is its only copy inlined.
///
/// # Safety
///
/// As for [`return_body`].
#[inline(never)]
unsafe fn return_body_outlined<P: GraphHandler, Q: Batched, F: OwnReturn>(
    fregs: *mut crate::sys::ftrace::RawFregs,
    me: Current,
    np: &NoPreempt,
    refused: Option<Refused>,
) -> usize {
    // SAFETY: the caller's contract.
    unsafe { return_body::<P, Q, F>(fregs, me, np, refused) }
}

/// [`return_handler`] once preemption is disabled (`np`), with the recursion guard held unless
/// `refused` says why not: then the frame is popped and no callback runs. `me` is the current
/// task (the guard read it).
///
/// # Safety
///
/// As for [`return_handler`].
#[inline(always)]
unsafe fn return_body<P: GraphHandler, Q: Batched, F: OwnReturn>(
    fregs: *mut crate::sys::ftrace::RawFregs,
    me: Current,
    np: &NoPreempt,
    refused: Option<Refused>,
) -> usize {
    // This CPU's cache first: the table only about once per context switch, out of line (and
    // all of the return with it, so that nothing is kept across the call).
    let Some(stack) = Tasks::cached(me, np) else {
        // SAFETY: the caller's contract.
        return unsafe { return_uncached::<P, Q, F>(fregs, me, np, refused) };
    };
    // SAFETY: the caller's contract; `stack` is the current task's.
    unsafe { return_with_stack::<P, Q, F>(fregs, stack, np, refused) }
}

/// [`return_body`] after this CPU's cache missed: the table, then the same.
///
/// # Safety
///
/// As for [`return_body`].
#[cold]
#[inline(never)]
unsafe fn return_uncached<P: GraphHandler, Q: Batched, F: OwnReturn>(
    fregs: *mut crate::sys::ftrace::RawFregs,
    me: Current,
    np: &NoPreempt,
    refused: Option<Refused>,
) -> usize {
    let g = graph().expect("ufgraph: return trampoline without a graph core");
    let Some(stack) = g.tasks.current_uncached(me, np) else {
        panic!("ufgraph: return trampoline on a task without a shadow stack");
    };
    // SAFETY: the caller's contract; `stack` is the current task's.
    unsafe { return_with_stack::<P, Q, F>(fregs, stack, np, refused) }
}

/// [`return_body`] with the current task's stack found.
///
/// # Safety
///
/// As for [`return_body`]; `stack` is the current task's.
#[inline(always)]
unsafe fn return_with_stack<P: GraphHandler, Q: Batched, F: OwnReturn>(
    fregs: *mut crate::sys::ftrace::RawFregs,
    stack: &Stack,
    np: &NoPreempt,
    refused: Option<Refused>,
) -> usize {
    // SAFETY: the trampoline passes the registers it saved.
    let regs = unsafe { Regs::from_raw(fregs) };
    // The instantiation's own way first (fprobe: a frame of its single exit probe, matched with
    // two compares), unless the guard refused the callbacks.
    if refused.is_none() {
        if let Some(ret) = F::ret_first(&FirstReturn { stack, regs, np }) {
            return ret;
        }
    }
    // Frames return through us only while the graph core exists (teardown hands the others
    // back and waits for the rest).
    let g = graph().expect("ufgraph: return trampoline without a graph core");
    let Some((mut f, mut head)) = stack.top_frame_ret() else {
        panic!("ufgraph: return trampoline with an empty shadow stack");
    };
    // The frame must be this return's. If it is not, returns were skipped above it (a frame of
    // a call that never returned normally): find ours further down and drop the others.
    if !arch::frame_matches(&f, regs) {
        (f, head) = drop_skipped_frames(g, stack, regs);
    }

    // Before the callbacks: put the real return address where the trampoline's frame keeps the
    // function's (x86_64: the return slot it reclaimed; arm64: its frame record's lr). Only
    // unwinders read that word, and now the kernel's own (`stack_trace_save()` in a return
    // callback, perf callchains, an interrupt's trace) goes on from the trampoline to the real
    // caller instead of stopping at our address. Preemption is disabled from here to the pop,
    // so teardown never sees a settled slot with its frame still on the stack.
    arch::settle_slot(&f, regs);
    let ret_ip = real_ret(stack, f.ret, trampoline());
    // The call and return times, for a callback whose type may want them (`timed`): read only
    // while a registered ops wants times (`Graph::now`), as at the push; else 0.
    let start = f.start;
    let times = move |timed: bool| {
        if !timed {
            return (0, 0);
        }
        match g.now() {
            0 => (0, 0),
            now => (stack.calltime_at(start), now),
        }
    };
    // What each ops' return callback gets, told the call and return times: built where (and
    // only if) the callback is called, so a direct call's `Return` can stay in registers
    // (`call_ret`).
    let ret_with = move |idx: usize, (calltime, rettime): (u64, u64)| Return {
        func: f.func,
        ret_ip,
        calltime,
        rettime,
        regs,
        stack,
        head,
        idx,
        np,
    };
    // The same, told whether the callback's type may want times (`times` reads them then).
    let ret_of = |idx: usize| move |timed: bool| ret_with(idx, times(timed));
    // The common case first: one ops on the frame, its callback called with nothing kept for
    // another (the loop below would do the same, with more to carry from one ops to the next).
    if refused.is_none() && f.bitmap.is_power_of_two() {
        call_ret_single::<P, Q, _>(g, f.bitmap, ret_of);
        stack.pop(&f);
        return f.ret;
    }
    // The loop stays here: moved into a helper of its own (even `inline(always)`), it changed
    // the code generated for the whole handler.
    // As a u32 (the u16 it is, widened): no 16-bit arithmetic and tests in the loop.
    let mut bits = u32::from(f.bitmap);
    // What every `Q` of the frame is told, built once (`Batched`).
    let mut shared = Q::ret_of(&ret_of(bits.trailing_zeros() as usize % ARRAY_SIZE)(
        Q::WANTS_TIMES,
    ));
    // The times of the other ops that want them, read once for the frame (zeros, and no clock
    // read, while no registered ops wants times).
    let frame_times = times(true);
    while bits != 0 {
        let idx = bits.trailing_zeros() as usize % ARRAY_SIZE;
        bits &= bits - 1;
        let Some(slot) = g.slot_at(idx) else {
            continue;
        };
        if let Some(why) = refused {
            refuse_ret(slot, why, f.func);
            continue;
        }
        if Q::ret_cached(slot, &mut shared) {
            continue;
        }
        match slot.handler::<Q>() {
            Some(h) => h.ret_batched(&mut shared),
            None => {
                let t = if slot.wants_times {
                    frame_times
                } else {
                    (0, 0)
                };
                call_ret_not::<P>(slot, &mut ret_with(idx, t))
            }
        }
    }
    // No counter of returns: a store per hooked call for a figure nobody needs (`live` in
    // stats walks the stacks instead).
    stack.pop(&f);
    f.ret
}

/// For a return whose frame (`regs`) is not the top one of `stack`: drops the frames above it
/// (counted in `skipped_frames`), and returns it, now the top frame, with its head.
#[inline(always)]
fn drop_skipped_frames(g: &Graph, stack: &Stack, regs: &Regs) -> (Frame, Head) {
    let Some(c) = stack.frames().find(|c| arch::frame_matches(c, regs)) else {
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
    let Some((c, h)) = stack.top_frame_head() else {
        panic!("ufgraph: no shadow-stack frame for this return");
    };
    (c, h)
}

/// The real return address of a call whose return slot held `ret` (at its entry, or saved in
/// its frame, the top one of `stack`): `ret` itself, unless it is our trampoline `tramp` (a
/// frame joined, or a tail call's inner frame), in which case the nearest frame below that saved
/// another address knows it.
#[inline(always)]
fn real_ret(stack: &Stack, ret: usize, tramp: usize) -> usize {
    if ret == tramp {
        stack
            .frames()
            .find(|f| f.ret != tramp)
            .map_or(ret, |f| f.ret)
    } else {
        ret
    }
}

/// The return callback of the one ops whose bit `bits` holds (a power of two), with the
/// `Return` `ret_of(idx)` builds: none if the ops has gone since the entry.
#[inline(always)]
fn call_ret_single<'a, P: GraphHandler, Q: GraphHandler, R: Fn(bool) -> Return<'a>>(
    g: &Graph,
    bits: u16,
    ret_of: impl Fn(usize) -> R,
) {
    let idx = bits.trailing_zeros() as usize % ARRAY_SIZE;
    let sp = g.array[idx].load(Acquire);
    if !sp.is_null() {
        // SAFETY: a slot in the array stays valid until an RCU-sched grace period after it
        // is removed, and preemption is disabled.
        let slot = unsafe { &*sp };
        call_ret::<P, Q>(slot, ret_of(idx));
    }
}

/// What a return the recursion guard refused (`why`) does instead of `slot`'s callback, for a
/// call of `func`.
#[inline(always)]
fn refuse_ret(slot: &Slot, why: Refused, func: usize) {
    match why {
        Refused::Recursion => {
            slot.missed_recursion.fetch_add(1, Relaxed);
            // SAFETY: the slot's handler is alive while the slot is.
            unsafe { (slot.missed)(slot.this, func) };
        }
        // Nothing but the pop where RCU does not protect what callbacks would read.
        Refused::Unsafe => {}
    }
}

/// Calls `slot`'s return callback with the `Return` `r` builds, told whether the callback may
/// want times. A slot made for a `P` or a `Q` (`Slot::ret_is`) has its callback inlined; any
/// other goes through the slot. One `Return` per branch: the one handed to the slot's function
/// pointer has to be in memory, the direct calls' need not be. A `P` or `Q` whose type wants
/// no times, or a slot of another type whose handler wants none (`Slot::wants_times`), is told
/// 0 for both without the clock's state or the frame's call time being read (a load and a test
/// a return).
#[inline(always)]
fn call_ret<'a, P: GraphHandler, Q: GraphHandler>(slot: &Slot, r: impl Fn(bool) -> Return<'a>) {
    if slot.ret_is::<P>() {
        // SAFETY: the slot was made for a `P` (above), alive while the slot is (the caller
        // read it from the array with preemption disabled).
        unsafe { &*slot.this.cast::<P>() }.ret(&mut r(P::WANTS_TIMES));
    } else if slot.ret_is::<Q>() {
        // The same for the second type (the C API's ops: several on one function).
        // SAFETY: the slot was made for a `Q` (above), alive while the slot is.
        unsafe { &*slot.this.cast::<Q>() }.ret(&mut r(Q::WANTS_TIMES));
    } else {
        // SAFETY: the slot's handler is alive while the slot is.
        unsafe { (slot.ret)(slot.this, &mut r(slot.wants_times)) };
    }
}

/// [`call_ret`] for a slot known not to be made for a `Q` (the multi-ops loop tells those
/// first), told `r`: a `P`'s callback called directly, any other through the slot. Out of line
/// and cold: inlined, LLVM hoisted the `P` callback's reading of the frame (fprobe's head word
/// and data addresses, 29 instructions) out of the loop, where every frame with several ops
/// paid for it, the C API's own included.
#[inline(never)]
#[cold]
fn call_ret_not<P: GraphHandler>(slot: &Slot, r: &mut Return<'_>) {
    if slot.ret_is::<P>() {
        // SAFETY: the slot was made for a `P` (above), alive while the slot is (the caller
        // read it from the array with preemption disabled).
        unsafe { &*slot.this.cast::<P>() }.ret(r);
    } else {
        // SAFETY: the slot's handler is alive while the slot is.
        unsafe { (slot.ret)(slot.this, r) };
    }
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
    let Some(g) = graph() else {
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
    arch::stack_trace(store, skip)
}

/// Exposed for the architecture code: the real return address of the frame at `retp`, or
/// `ret` itself. `pos` tracks the walk.
pub(crate) fn fix_ret(pos: &mut usize, ret: usize, retp: usize) -> usize {
    ret_addr(crate::sys::task::TaskRef::current(), pos, ret, retp)
}
