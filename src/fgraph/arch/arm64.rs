// SPDX-License-Identifier: GPL-2.0

//! arm64: the return address is in the link register, x30, not on the stack.
//!
//! A hooked function is entered through `mov x9, lr; bl ftrace_caller`, patched in before its
//! own first instruction. ftrace_caller (arch/arm64/kernel/entry-ftrace.S) keeps the caller's
//! registers in a `struct ftrace_regs` a fixed distance below the stack pointer the function was
//! entered with (S), the link register in its `lr` field, and loads x30 back from there once the
//! callbacks are done. That field is our `retp`: writing the trampoline's address there makes the
//! function run with x30 = trampoline. It only lives while ftrace_caller does; afterwards the
//! address is wherever the function keeps x30: in its frame record if it calls anything, else in
//! the register.
//!
//! ```text
//!   S ->      +---------------------------+ <- the caller's frame
//!             | ftrace_caller: 2 records  |    then the function's own frame, whose record
//!             | ftrace_regs: .. lr <-retp |    {x29, x30 = trampoline} lies below S
//!             +---------------------------+
//!   return:   the trampoline puts its exit ftrace_regs at the same place (same S)
//! ```

use super::Slot;
use crate::fgraph::graph::{fix_ret, graph, trampoline};
use crate::fgraph::shadow::Frame;
use crate::sys::arm64;
use crate::sys::ftrace::Regs;
use crate::sys::sync::NoPreempt;
use crate::sys::task::{StackView, TaskRef};
use crate::sys::unwind;

/// Size of an arm64 instruction: the ftrace call site (`bl ftrace_caller`) is one.
const INSN: usize = 4;
/// Size of a frame record: the saved frame pointer, then the saved link register.
const RECORD: usize = 16;

/// Whether `f` is the frame of the return the trampoline is handling.
///
/// The trampoline builds its exit `ftrace_regs` where ftrace_caller had the entry ones of the same
/// call: both sit the same distance below S, the stack pointer the function was entered with and
/// returns with (AAPCS64: a callee restores sp). So the frame's `retp`, the entry registers' `lr`
/// field, is the exit registers' `lr` field: a stack pointer test, as on x86_64. Upstream's arm64
/// test (HAVE_FUNCTION_GRAPH_FP_TEST) compares the frame pointer instead, x29 at entry against
/// x29 at return; it tells the same calls apart (a tail call shares both S and x29 with its
/// caller, as it shares the return slot on x86_64) but would need x29 stored in the frame.
#[inline(always)]
pub fn frame_matches(f: &Frame, regs: &Regs) -> bool {
    // SAFETY: `regs` wraps a valid `ftrace_regs` (type invariant); the glue only computes the
    // address of its `lr` field.
    f.retp == unsafe { crate::fgraph::arch::hot::fregs::retp(regs.as_ptr()) } as usize
}

/// How far below the stack pointer a traced function was entered with ftrace_caller keeps its
/// entry `ftrace_regs`: the registers and two frame records (arch/arm64/kernel/entry-ftrace.S).
/// src/fgraph/arch/tramp_arm64.S lays out its exit registers the same way.
const FTRACE_FRAME: usize = arm64::FTRACE_FRAME;

/// The stack pointer S a hooked function was entered with, from its frame's `retp` (the `lr`
/// field of its entry registers).
fn entry_sp(retp: usize) -> usize {
    retp.wrapping_sub(arm64::FREGS_LR)
        .wrapping_add(FTRACE_FRAME)
}

/// A word of a kernel stack (the current task's, or a switched-out one's under stop_machine),
/// read without KASAN checks, as the kernel's unwinder reads (words around live frames may be
/// poisoned).
///
/// # Safety
///
/// `addr` must be an 8-byte aligned word of memory that stays allocated.
unsafe fn peek(addr: usize) -> usize {
    // SAFETY: a readable word (caller).
    unsafe { arm64::peek(addr) }
}

/// Whether the `ftrace_regs` whose `lr` field is at `retp` are the trampoline's exit registers:
/// their `sp` is the stack pointer the function was entered with, and their `pc` the trampoline.
///
/// # Safety
///
/// The `sp` and `pc` fields of those registers must be mapped stack words (they lie between
/// `retp` and the entry stack pointer).
unsafe fn exit_regs(retp: usize, tramp: usize) -> bool {
    let regs = retp.wrapping_sub(arm64::FREGS_LR);
    // SAFETY: the two fields are mapped stack words (caller).
    unsafe {
        peek(regs + arm64::FREGS_SP) == entry_sp(retp) && peek(regs + arm64::FREGS_PC) == tramp
    }
}

/// Where a hooked function takes its return address from, which decides where teardown can
/// write a real one.
enum ReturnSlots {
    /// The saved lr of its frame record, unsigned (no PAC at run time, no shadow call stack).
    Plain,
    /// The shadow call stack, unsigned: the epilogue reloads x30 from there (pushed before
    /// PACIASP signs it), and only authenticates the frame record's copy.
    Scs,
    /// The frame record's copy, signed with the task's key and its entry sp: only the task
    /// can re-sign it.
    Signed,
}

impl ReturnSlots {
    /// This kernel's. With CONFIG_DYNAMIC_SCS the kernel uses its shadow call stack only on a
    /// CPU without PAC (it patches PACIASP/AUTIASP into the pushes and pops at boot).
    fn of_kernel() -> Self {
        if arm64::scs_enabled() {
            ReturnSlots::Scs
        } else if arm64::kernel_pac() {
            ReturnSlots::Signed
        } else {
            ReturnSlots::Plain
        }
    }
}

/// Where this kernel's hooked functions take their return addresses from, as the stats file
/// shows it: `scs`, `signed` (teardown waits for such frames) or `plain`.
pub fn return_slots() -> &'static str {
    match ReturnSlots::of_kernel() {
        ReturnSlots::Plain => "plain",
        ReturnSlots::Scs => "scs",
        ReturnSlots::Signed => "signed",
    }
}

/// Maps the trampolines of a stack trace, innermost first, to the real return addresses.
struct Fixer {
    tramp: usize,
    /// Frames of the current task's shadow stack already accounted for (see `ret_addr`).
    pos: usize,
}

impl Fixer {
    /// Fixes one trace entry in place.
    fn fix(&mut self, ip: &mut usize) {
        if *ip == self.tramp {
            // A frame record whose saved lr is our trampoline, or the trampoline's own record
            // (a trace taken in a return callback): the next frame's real address.
            *ip = fix_ret(&mut self.pos, self.tramp, 0);
        } else if self.entering(*ip) {
            // The next frame's entry is in progress: our address is in ftrace_regs (or not
            // written yet), not in any frame record, so no trampoline in the trace stands for
            // it, and the caller's real address is already in the trace (ftrace_caller's record
            // of the call site). Account for the frame, or the next trampoline up would be
            // given its address.
            let _ = fix_ret(&mut self.pos, self.tramp, 0);
        } else if self.settled(*ip) {
            // The trampoline's own record, in a return callback: it holds the real address
            // already (`settle_slot`), which stands for the frame being returned from.
            self.pos += 1;
        }
    }

    /// Whether `ip` is the real return address the trampoline settled in its own frame record
    /// for the next unaccounted frame: that frame's return is in progress below us. Its exit
    /// registers then lie where its entry registers did, with the trampoline as pc and the
    /// function's entry stack pointer as sp; the return address alone could also be a caller's.
    fn settled(&self, ip: usize) -> bool {
        match self.next_frame() {
            // A frame of the current task: `retp` and the words after it lie in the kernel stack
            // (task or interrupt stack) its entry ran on, which stays mapped.
            Some(f) => {
                // SAFETY: mapped stack words (above).
                f.ret == ip && f.ret != self.tramp && unsafe { exit_regs(f.retp, self.tramp) }
            }
            None => false,
        }
    }

    /// The current task's next unaccounted frame (`pos` from the top), if any.
    fn next_frame(&self) -> Option<Frame> {
        let g = graph()?;
        let np = NoPreempt::new();
        let stack = g.tasks().current(&np)?;
        stack.frames().nth(self.pos)
    }

    /// Whether `ip` is ftrace_caller's return address into the function of the next unaccounted
    /// frame, just past its `bl ftrace_caller`: that frame's entry is still running below us.
    ///
    /// That address is the return address of nothing else (the instruction before it is the
    /// ftrace call), and `func` is the call itself (ftrace's ip) or, for frames pushed by the
    /// rethook API with `Regs::ip`, the address after it. A frame whose saved return address is
    /// our own trampoline (a tail call) is left alone: ftrace_caller's record of the call site
    /// then holds the trampoline, which accounts for it.
    fn entering(&self, ip: usize) -> bool {
        match self.next_frame() {
            Some(f) => f.ret != self.tramp && (ip == f.func + INSN || ip == f.func),
            None => false,
        }
    }
}

/// Saves the current task's stack trace with the kernel's unwinder (`stack_trace_save`, which
/// walks the frame records), putting the real return addresses in place of our trampoline.
///
/// The kernel's unwinder recovers its own return_to_handler, not our trampoline, and gives us
/// return addresses only, not the frame records they came from: the trampolines are matched to
/// the shadow stack's frames in order, innermost first (`fix_ret` with `retp` 0). Frames that
/// have no trampoline in the trace are accounted for where they can be recognised: a return in
/// progress has the trampoline's own frame record, an entry in progress its ftrace_caller return
/// address. One case cannot be recognised from return addresses alone: a trace taken in an
/// interrupt that hit a hooked function before it saved x30 (a leaf, or its first or last
/// instructions). The interrupted function's frame has no trampoline in the trace, and the
/// trampolines further out get real addresses one frame off.
pub fn stack_trace(store: &mut [usize], skip: usize) -> usize {
    if store.is_empty() {
        return 0;
    }
    let len = store.len().min(u32::MAX as usize);
    let mut fixer = Fixer {
        tramp: trampoline(),
        pos: 0,
    };

    // Trampolines among the skipped entries still stand for frames that must be accounted for
    // in order: read those entries first, using `store` as scratch. Each call walks from this
    // function, so both walks number the entries alike.
    let mut seen = 0;
    while seen < skip {
        let want = (skip - seen).min(len);
        let n = unwind::save_current(&mut store[..want], seen);
        for ip in &mut store[..n] {
            fixer.fix(ip);
        }
        if n < want {
            // The trace is shorter than what is to be skipped.
            return 0;
        }
        seen += n;
    }

    let n = unwind::save_current(&mut store[..len], skip);
    for ip in &mut store[..n] {
        fixer.fix(ip);
    }
    n
}

/// At a return through the trampoline, before `f` is popped and before any return callback runs:
/// writes its real return address into the trampoline's frame record (at S - 16, S being the
/// stack pointer the function returned with, the exit registers' `sp`), which holds the
/// trampoline's own address until now. The kernel's unwinder follows frame records, so a trace
/// taken in a return callback then shows the function's real caller where it showed
/// `ufgraph_return_trampoline`. A tail-called function's frame returns to our trampoline again:
/// the record keeps it. ufgraph's own unwinder recognises the settled record (`Fixer::fix`), and
/// teardown never sees it with the frame still on the stack: preemption stays disabled from here
/// to the pop.
#[inline(always)]
pub fn settle_slot(f: &Frame, regs: &Regs) {
    let lr = regs.sp().wrapping_sub(RECORD - 8);
    // The trampoline built its frame record {x29, lr} at S - 16, below the stack pointer S it
    // was entered with and above the exit registers `regs` points to, on the current task's stack.
    // SAFETY: so `lr` is an aligned stack word only this task writes (unwinders read it).
    unsafe { (lr as *mut usize).write_volatile(f.ret) };
}

/// What teardown remembers while it judges one task's frames, innermost first: the entries of
/// the task's shadow call stack it has rewritten already. [`QuietStack::scs_slot`] finds a
/// frame's entry by counting the entries that hold our trampoline; an inner frame handed back a
/// moment ago no longer holds it in its entry (its frame record's signed copy still does), and
/// without this every frame outside it would look miscounted, and be waited for forever (a task
/// asleep under two nested hooked calls). One bit per entry of the task's shadow call stack.
#[derive(Default)]
pub struct TaskWalk {
    /// The task's shadow call stack in use, [base, top), once `scs_slot` has looked at it.
    scs: Option<(usize, usize)>,
    /// Bit i: the entry at base + 8 * i was rewritten.
    rewritten: [u64; TaskWalk::WORDS],
    /// An entry beyond the bitmap was rewritten (a shadow call stack bigger than 4 KiB): counts
    /// can no longer be trusted.
    overflowed: bool,
}

impl TaskWalk {
    /// Words of the bitmap: 512 entries, a whole 4 KiB shadow call stack (SCS_SIZE is
    /// PAGE_SIZE << SCS_ORDER, SCS_ORDER 0).
    const WORDS: usize = 8;

    /// Before the first frame of a task.
    pub const fn new() -> Self {
        TaskWalk {
            scs: None,
            rewritten: [0; Self::WORDS],
            overflowed: false,
        }
    }

    /// The index of the shadow-call-stack entry at `addr`, if it is one of the task's.
    fn entry(&self, addr: usize) -> Option<usize> {
        let (base, top) = self.scs?;
        (addr >= base && addr < top).then(|| (addr - base) / 8)
    }

    /// Teardown rewrote the slot at `addr` (returned by [`find_slot`]). Only shadow-call-stack
    /// entries matter: other slots (frame records, entry registers) are not counted.
    pub fn handed(&mut self, addr: usize) {
        if let Some(i) = self.entry(addr) {
            match self.rewritten.get_mut(i / 64) {
                Some(w) => *w |= 1 << (i % 64),
                None => self.overflowed = true,
            }
        }
    }

    /// Whether teardown rewrote the shadow-call-stack entry at `addr` during this walk.
    fn rewrote(&self, addr: usize) -> bool {
        self.entry(addr)
            .and_then(|i| self.rewritten.get(i / 64).map(|w| w & (1 << (i % 64)) != 0))
            .unwrap_or(false)
    }
}

/// Where `f`'s task (`task`, whose kernel stack is `view`, a task that can still run) will take
/// the frame's return address from, if that place can be found for certain and holds a plain
/// address ([`Slot::At`]). If the function was entered with a stack pointer at or below the one
/// the switched-out task saved, the call is no longer on the stack ([`Slot::Gone`]). Otherwise
/// [`Slot::Unknown`]: teardown waits for the frame to return through the trampoline.
///
/// The place is found from the task's chain of frame records, starting at the frame pointer it
/// saved when it was switched out. The function was entered with stack pointer S (derived from
/// `retp`); its own frame record, if it has stored one, is the highest record below S (what lies
/// between S and it is its own frame, what lies below are frames of the calls it made, and its
/// caller's records are at S or above). Then:
///
/// - the task is still inside the function's ftrace_caller (the two records ftrace_caller builds
///   for the call, at S - 16 and S - 32, the lower one returning just past the function's ftrace
///   call): the address is in the entry registers at `retp`, which ftrace_caller has yet to load
///   into x30. Write it there; nothing is signed or pushed yet;
/// - the task is inside the trampoline (see [`QuietStack::in_trampoline`]): the function has
///   returned already, and the frame goes when the trampoline finishes. Pending: teardown waits
///   until the trampoline has popped it;
/// - otherwise the record is the function's own. Without a shadow call stack or kernel pointer
///   authentication its saved lr is the slot. With a shadow call stack, the function returns
///   to what it pushed there, plainly (the record's signed copy is only authenticated): the
///   slot is that entry, found by [`QuietStack::scs_slot`]. With pointer authentication alone,
///   the record's copy is what the function returns to, our address signed with the task's key
///   and S: we cannot re-sign it, and a plain address would fault at the function's AUTIASP,
///   so the frame is waited for;
/// - anything else, unknown: the task is running (the stoppers of stop_machine), the function
///   has not saved x30 yet or no longer has it saved (a leaf, preempted).
///
/// # Safety
///
/// Only under `stop_machine`: the owning task cannot run (unless `view.running`) or exit, so its
/// stack is quiet and stays allocated.
pub unsafe fn find_slot(
    f: &Frame,
    task: Option<TaskRef>,
    view: Option<&StackView>,
    walk: &mut TaskWalk,
) -> Slot {
    let (Some(task), Some(view)) = (task, view) else {
        return Slot::Unknown;
    };
    let tramp = crate::fgraph::graph::trampoline();
    let sp = entry_sp(f.retp);
    if sp <= view.lo || sp > view.hi || !sp.is_multiple_of(RECORD) {
        // The entry registers of this call were not on this task's stack: not a live call.
        return Slot::Gone;
    }
    if view.running {
        // A stopper: it saved no frame pointer to walk from.
        return Slot::Unknown;
    }
    if view.saved_sp >= sp {
        // The task's stack pointer is above where the function was entered: the call is gone.
        return Slot::Gone;
    }
    let stack = QuietStack {
        lo: view.lo,
        hi: view.hi,
    };
    // SAFETY: the task is switched out and stays so (caller).
    let fp = unsafe { arm64::saved_fp(task) };
    // SAFETY: [lo, hi) is the stack of a switched-out task; during stop_machine nothing runs on
    // it or frees it.
    let Some((rec, below)) = (unsafe { stack.record_below(fp, sp) }) else {
        return Slot::Unknown;
    };
    // SAFETY: `rec` and `below` are records of the quiet stack, found by the walk.
    let entering = unsafe { stack.in_ftrace_caller(f, sp, rec, below) };
    // SAFETY: `rec` is a record of the quiet stack, and `f.retp` a word of it (the glue found
    // the task by it).
    let returning = !entering && unsafe { stack.in_trampoline(f, sp, rec, tramp) };
    let slot = if entering {
        // The entry registers are live, and ftrace_caller loads x30 from them.
        f.retp
    } else if returning {
        return Slot::Unknown;
    } else {
        match ReturnSlots::of_kernel() {
            ReturnSlots::Plain => rec + 8,
            // SAFETY: `fp` is where the switched-out task's chain starts, `rec` a record of it.
            ReturnSlots::Scs => match unsafe { stack.scs_slot(task, fp, rec, tramp, walk) } {
                Some(at) => at,
                None => return Slot::Unknown,
            },
            ReturnSlots::Signed => return Slot::Unknown,
        }
    };
    // `slot` is the lr word of a frame record of the chain, the `lr` field of the entry
    // registers of a live ftrace_caller (both inside the quiet stack), or an entry of the task's
    // quiet shadow call stack.
    // SAFETY: each of those is an 8-byte aligned word that stays allocated (above).
    let value = unsafe { stack.peek(slot) };
    if !entering
        && value != tramp
        && crate::sys::ksym::hooker(value) == crate::sys::hookers::stacks::Hooker::Plain
    {
        // The function's record holds neither our trampoline nor another hooker's: the record
        // is not this call's (it returned, or has not saved x30 yet): do not guess.
        return Slot::Unknown;
    }
    Slot::At { addr: slot, value }
}

/// The kernel stack [lo, hi) of a task that is switched out while all CPUs are stopped: nothing
/// runs on it, writes it or frees it.
struct QuietStack {
    lo: usize,
    hi: usize,
}

impl QuietStack {
    /// The word at `addr`.
    ///
    /// # Safety
    ///
    /// `addr` must be an 8-byte aligned word of the stack.
    unsafe fn peek(&self, addr: usize) -> usize {
        // SAFETY: a word of the stack (caller), which stays allocated while it is quiet.
        unsafe { peek(addr) }
    }

    /// Whether the records `rec` and `below` (from [`QuietStack::record_below`] for `sp`) are the
    /// two ftrace_caller builds for the entry of `f`'s function: the call site's at S - 16, and
    /// its own at S - 32, returning just past the function's `bl ftrace_caller` (ftrace's ip,
    /// which is `f.func`, plus one instruction; or `f.func` itself for frames pushed by the
    /// rethook API with `Regs::ip`). That is the return address of nothing else.
    ///
    /// # Safety
    ///
    /// `below`, if any, must be a record of this quiet stack.
    unsafe fn in_ftrace_caller(
        &self,
        f: &Frame,
        sp: usize,
        rec: usize,
        below: Option<usize>,
    ) -> bool {
        if rec != sp - RECORD || below != Some(sp - 2 * RECORD) {
            return false;
        }
        // SAFETY: the saved lr of a record of this stack (caller).
        let lr = unsafe { self.peek(sp - 2 * RECORD + 8) };
        lr == f.func + INSN || lr == f.func
    }

    /// Whether the task is inside the trampoline, returning from `f`'s function (entered with
    /// `sp`), `rec` being the highest record below `sp`. Either the trampoline's own record is in
    /// the chain (at S - 16, its exit registers at `retp`, with `sp` and the trampoline as pc),
    /// or the task was interrupted on the trampoline's first instruction, before it changed
    /// anything: the exception's record, inside its pt_regs, then holds the trampoline as lr,
    /// like the function's own record would, and its pt_regs say pc = trampoline and sp = S.
    ///
    /// A coincidence in those words only makes teardown wait for a frame it could have handed
    /// back.
    ///
    /// # Safety
    ///
    /// `rec` must be a record of this quiet stack, and `f.retp` a word of it.
    unsafe fn in_trampoline(&self, f: &Frame, sp: usize, rec: usize, tramp: usize) -> bool {
        // SAFETY: `retp` is a word of the quiet stack and the registers' `sp` and `pc` lie
        // between it and `sp`, inside it too.
        if rec == sp - RECORD && unsafe { exit_regs(f.retp, tramp) } {
            return true;
        }
        // SAFETY: `rec` is a record of the quiet stack (caller).
        unsafe { self.exception_at(rec, tramp, sp) }
    }

    /// Whether the frame record at `rec` is the one an EL1 exception entry builds inside its
    /// `pt_regs` (entry.S, kernel_entry), for an exception taken at `pc` with stack pointer `sp`.
    ///
    /// # Safety
    ///
    /// `rec` must be a record of this quiet stack.
    unsafe fn exception_at(&self, rec: usize, pc: usize, sp: usize) -> bool {
        let Some(regs) = rec.checked_sub(arm64::PT_REGS_STACKFRAME) else {
            return false;
        };
        if regs < self.lo {
            return false;
        }
        // SAFETY: `regs` is at or above `lo` and below `rec`: the pt_regs' `pc` and `sp` fields
        // lie in the quiet stack.
        unsafe {
            self.peek(regs + arm64::PT_REGS_PC) == pc && self.peek(regs + arm64::PT_REGS_SP) == sp
        }
    }

    /// The entry of `task`'s shadow call stack that the function whose frame record is `rec` will
    /// return through, if it is certainly that one and holds our trampoline, plainly.
    ///
    /// A function that saves x30 pushes it on the shadow call stack (before PACIASP signs it)
    /// and stores it in its frame record (signed, with PAC), in its prologue; its epilogue
    /// authenticates the record's copy and then returns to the shadow call stack's. Entries
    /// and records of such functions are in the same order, innermost last pushed. Records that
    /// assembly code builds (ftrace_caller's, an exception's, the trampoline's own) have no
    /// entry, and a function can be caught between its push and its record, or between its
    /// record's pop and its entry's. So the entry is found by counting, and only if the counts
    /// agree over the whole stack:
    ///
    /// ```text
    ///   task stack (records, chain from fp)      shadow call stack [base, sp)
    ///   +--------------------------+ hi          +----------------+ base
    ///   | caller's record   lr=A   |             | A              |
    ///   | rec (ours)  lr=PAC(tramp)| ----------> | tramp          |  k-th tramp entry from the top
    ///   | ftrace/irq record lr=pc  |  (no entry) | B              |
    ///   | callee's record   lr=B   |             | tramp          |  (an inner call of ours)
    ///   | inner call's  lr=PAC(tramp)|           +----------------+ sp (saved at the switch)
    ///   +--------------------------+ fp
    /// ```
    ///
    /// `k` is the number of records inner to `rec` whose lr (PAC stripped) is the trampoline.
    /// The answer is the k-th entry from the top that is exactly the trampoline, and only if the
    /// stack has as many such entries as the chain has such records. Entries this teardown
    /// rewrote already (`walk`: inner frames handed back just before) still count as such: their
    /// records keep the signed trampoline. Any other count (a
    /// function mid-prologue or mid-epilogue, a task inside the trampoline, a signed entry), or a
    /// chain that leaves the stack, is `None`: teardown waits for the frame instead.
    ///
    /// # Safety
    ///
    /// `task` must be switched out and stay so (its shadow call stack is quiet), `fp` the frame
    /// pointer it saved, and `rec` a record of its chain.
    unsafe fn scs_slot(
        &self,
        task: TaskRef,
        fp: usize,
        rec: usize,
        tramp: usize,
        walk: &mut TaskWalk,
    ) -> Option<usize> {
        if walk.overflowed {
            return None;
        }
        let strip = arm64::strip_pac;
        // SAFETY: `rec` is a record of this stack (caller).
        if strip(unsafe { self.peek(rec + 8) }) != tramp {
            return None;
        }
        // SAFETY: `task` is alive and switched out (caller).
        let (base, top) = unsafe { arm64::scs(task) }?;
        // The same task's stack for every frame of the walk: what `handed` indexes.
        walk.scs = Some((base, top));
        let (mut inner, mut total) = (0usize, 0usize);
        let mut r = fp;
        while r != 0 {
            if r < self.lo || r > self.hi - RECORD || !r.is_multiple_of(8) {
                return None;
            }
            // SAFETY: `r` is an aligned record of the stack (checked above).
            let (next, lr) = unsafe { (self.peek(r), self.peek(r + 8)) };
            if strip(lr) == tramp {
                total += 1;
                if r < rec {
                    inner += 1;
                }
            }
            // Records go up the stack, and the final one (in the task's first pt_regs) links
            // to 0.
            if next != 0 && next <= r {
                return None;
            }
            r = next;
        }
        let (mut seen, mut slot) = (0usize, None);
        let mut at = top;
        while at > base {
            at -= 8;
            // SAFETY: [base, top) is the task's shadow call stack in use (glue), quiet (caller).
            let v = unsafe { self.peek_any(at) };
            if v == tramp || walk.rewrote(at) {
                if seen == inner {
                    if v != tramp {
                        // Our frame's entry would be one handed back already: the counts are off.
                        return None;
                    }
                    slot = Some(at);
                }
                seen += 1;
            } else if strip(v) == tramp {
                // Signed: not what this layout pushes.
                return None;
            }
        }
        if seen != total {
            return None;
        }
        slot
    }

    /// A word outside the task's kernel stack (its shadow call stack), read as [`Self::peek`].
    ///
    /// # Safety
    ///
    /// `addr` must be an 8-byte aligned word of memory that stays allocated.
    unsafe fn peek_any(&self, addr: usize) -> usize {
        // SAFETY: a readable word that stays allocated (caller).
        unsafe { peek(addr) }
    }

    /// Walks the frame-record chain from `fp` up to the first record at or above `sp`. Returns the
    /// last record below `sp` and the one before it (the record of whatever that frame called),
    /// or `None` if there is none, or the chain leaves the stack, goes backwards or ends first:
    /// then nothing about it is certain.
    ///
    /// # Safety
    ///
    /// `self` must describe a quiet stack (see the type).
    unsafe fn record_below(&self, mut fp: usize, sp: usize) -> Option<(usize, Option<usize>)> {
        let mut last: Option<usize> = None;
        let mut before: Option<usize> = None;
        loop {
            if fp < self.lo || fp > self.hi - RECORD || !fp.is_multiple_of(8) {
                return None;
            }
            if fp >= sp {
                return last.map(|r| (r, before));
            }
            before = last;
            last = Some(fp);
            // SAFETY: `fp` is an aligned word of the stack (checked above).
            let next = unsafe { self.peek(fp) };
            // Records go up the stack: this bounds the walk (and a 0 ends the chain).
            if next <= fp {
                return None;
            }
            fp = next;
        }
    }
}
