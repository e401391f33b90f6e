// SPDX-License-Identifier: GPL-2.0

//! The per-task shadow stack: frames of saved return addresses, per-ops data and task variables.
//!
//! Each task that may run hooked code owns one [`ShadowStack`] (one page with its header in the
//! kernel). When a hooked function is entered, a *frame* is pushed: the real return address and
//! where it was found (`retp`), so the return trampoline can put it back, plus a *bitmap* word
//! naming the graph ops (by their index, 0..16) whose return callbacks must run, then any data the
//! ops reserved for their return callbacks. The encoding of the words is upstream's
//! (kernel/trace/fgraph.c, v6.12), so tools that know it read ours:
//!
//! ```text
//!  words[W-1]   | task var of ops 15                        |  per-task variables,
//!  ...          | ...                                       |  one word per ops index
//!  words[W-16]  | task var of ops 0                         |
//!               |                                           |  (never used by frames:
//!  MAX_OFFSET   |                                           |   frames stay below)
//!               |                                           |
//!  top -------> +-------------------------------------------+
//!               | DATA word: idx 3 | size 2-1 | type 2 | 8  |  top word: offset 8 back to frame
//!               | data word 2 of ops 3                      |
//!               | data word 1 of ops 3                      |
//!               +-------------------------------------------+
//!               | BITMAP word: bits{0,3} | type 1 | 5       |  offset 5 back to the frame start
//!               +-------------------------------------------+
//!               | seen: ops whose entry callbacks ran       |
//!               | retp: where the return address lived      |
//!               | calltime                                  |
//!               | func: the hooked function                 |
//!  frame start  | ret:  the real return address             |
//!               +-------------------------------------------+
//!               | (the caller's frame, same layout)         |
//!  words[0]     |                                           |
//! ```
//!
//! Word layout (bit numbers):
//!
//! ```text
//!   0..=9    offset in words from this word back to the start of its frame
//!   10..=11  type: 0 reserved (frame being built), 1 bitmap, 2 data
//!   bitmap:  12..=27  one bit per ops index whose return callback runs
//!   data:    12..=16  size in words - 1;  17..=20  ops index owning the data
//! ```
//!
//! The top word of a non-empty stack always encodes the offset back to the top frame, whatever
//! its type, so the frame can be found (to pop it, or to unwind) with one read.
//!
//! Our frame has one word upstream's `ftrace_ret_stack` lacks: `seen`, the ops whose entry
//! callbacks already ran for this frame. Several ops hooking one call each get their own ftrace
//! callback and join the frame the first one pushed; `seen` tells a second callback of the same
//! ops (a tail-recursive call, which reuses the return slot) that this frame is not its call's.
//! Above its 16 ops bits it holds teardown's marks (bits 16 to 18) and [`HUB_SEEN`] (bit 19):
//! the hub's callback, one for all its ops, ran for the frame's call.
//!
//! Concurrency: only the owning task writes its stack, but interrupts (NMIs included) that arrive
//! on its CPU push and pop frames above whatever the task was doing, and unwinders may read it.
//! Words are atomics accessed with `Relaxed` ordering (plain moves) and compiler fences order the
//! writes the way an interrupt needs to see them: a frame's words are written before `top` moves
//! over them, and rewritten after, in case an interrupt used the space in between.
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

mod frames;
mod onestep;
mod push;
#[cfg(test)]
mod tests;
pub mod word;

pub use frames::{Frames, Head};
pub use onestep::{OneStep, OneStepFrame};

use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// How many graph ops can be registered at once: one bit each in a bitmap word.
pub const ARRAY_SIZE: usize = 16;
/// Words of a frame before its bitmap word: ret, func, calltime, retp, seen.
pub const FRAME_WORDS: usize = 5;
/// Most data one ops may reserve in one frame, in words (upstream: 32 longs, 256 bytes).
pub const MAX_DATA_WORDS: usize = 1 << DATA_BITS;
/// Most data one ops may reserve in one frame, in bytes.
pub const MAX_DATA_BYTES: usize = MAX_DATA_WORDS * core::mem::size_of::<usize>();

const OFFSET_BITS: u32 = 10;
const OFFSET_MASK: usize = (1 << OFFSET_BITS) - 1;
const TYPE_SHIFT: u32 = OFFSET_BITS;
const TYPE_MASK: usize = 0b11;
const INDEX_SHIFT: u32 = TYPE_SHIFT + 2;
const INDEX_MASK: usize = (1 << ARRAY_SIZE) - 1;
const DATA_SHIFT: u32 = TYPE_SHIFT + 2;
const DATA_BITS: u32 = 5;
const DATA_MASK: usize = (1 << DATA_BITS) - 1;
const DATA_INDEX_SHIFT: u32 = DATA_SHIFT + DATA_BITS;
const DATA_INDEX_MASK: usize = 0b1111;

const RET: usize = 0;
const FUNC: usize = 1;
const CALLTIME: usize = 2;
const RETP: usize = 3;
const SEEN: usize = 4;

/// The type field of a stack word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordType {
    /// A frame whose entry callbacks are still running.
    Reserved,
    /// The bitmap of ops whose return callbacks run.
    Bitmap,
    /// The header above data reserved by one ops.
    Data,
    /// Not a valid type: the stack is corrupt.
    Invalid,
}

/// Why a push failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// No room for another frame (deep recursion): counted in [`ShadowStack::overrun`].
    Overrun,
}

/// A frame on a shadow stack, as the return path and unwinders see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// Index of the frame's first word.
    pub start: usize,
    /// The real return address.
    pub ret: usize,
    /// The hooked function.
    pub func: usize,
    /// When the function was entered (the kernel's local clock).
    pub calltime: u64,
    /// Where the return address lived (the stack slot on x86, the saved link register on arm64).
    pub retp: usize,
    /// The ops whose return callbacks run (zero while the frame is being built).
    pub bitmap: u16,
    /// The ops whose entry callbacks ran for this frame.
    pub seen: u16,
    /// What teardown decided about this frame ([`mark`]): bits of the `seen` word above the 16
    /// ops bits, which no entry or return path reads.
    pub marks: usize,
    /// Whether the hub's callback ran for this frame's call ([`HUB_SEEN`]).
    pub hub: bool,
    /// Whether the frame is still being built (its entry callbacks are running): its bitmap
    /// word is still of the reserved type.
    pub building: bool,
}

/// A bit of the `seen` word above the ops and teardown's marks: the hub's callback (one for all
/// its ops, once per call) ran for this frame's call. An entry of the same function at the same
/// return slot that finds it is a tail call's, whatever the hub's mask of ops was then and is
/// now (ops come and go between a tail call's two entries).
pub const HUB_SEEN: usize = 1 << 19;

/// Marks teardown leaves on frames it has looked at (see `fgraph::graph`'s teardown). They make
/// a second look at the same frame give the same answer: a frame whose return slot was already
/// rewritten must not be taken for one another hooker stacked over.
pub mod mark {
    /// The real return address was written back into the frame's slot: the frame will never
    /// return through the trampoline.
    pub const HANDED: usize = 1 << 16;
    /// Another hooker saved our trampoline for this frame: it will return through it later.
    pub const PENDING: usize = 1 << 17;
    /// The call was abandoned (no longer on its task's stack): it never returns, and its frame
    /// is left alone. Marked so that a later pass of teardown does not judge it again against a
    /// stack that has moved on.
    pub const GONE: usize = 1 << 18;
    /// Every mark.
    pub const ALL: usize = HANDED | PENDING | GONE;
}

/// A data size of 1 to 32 words, with the top word a one-step push of it leaves
/// ([`ShadowStack::push_with_data`]) less the ops index: made once, where the size is fixed (a
/// probe's registration), so that the hot paths only add the index to store or compare that
/// word (two instructions) instead of encoding it from the size (eight).
///
/// ```text
///   head0 = DATA type | words-1 | offset FRAME_WORDS+1+words     (index field 0)
///   top word of the push by ops idx = head0 | idx << 17
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSize {
    /// The size in words, less one (0..=31).
    less_one: usize,
    head0: usize,
}

impl DataSize {
    /// `words` (1..=32) words, or `None`.
    pub const fn new(words: usize) -> Option<Self> {
        if words == 0 || words > MAX_DATA_WORDS {
            return None;
        }
        Some(Self {
            less_one: words - 1,
            head0: word::data(0, words, FRAME_WORDS + 1 + words),
        })
    }

    /// The size in words (1..=32).
    #[inline(always)]
    pub const fn words(&self) -> usize {
        // Kept less one, and masked (a no-op on what `new` made): the compiler then knows the
        // size is 1 to 32, so sums with it need no overflow check and a slice of it is never
        // empty.
        (self.less_one & (MAX_DATA_WORDS - 1)) + 1
    }

    /// The top word ops `idx` leaves when it pushes a frame with this much data in one step.
    #[inline(always)]
    const fn head(&self, idx: usize) -> usize {
        self.head0 | ((idx & DATA_INDEX_MASK) << DATA_INDEX_SHIFT)
    }

    /// [`DataSize::head`], for the ops `iw` names.
    #[inline(always)]
    const fn head_of(&self, iw: &IndexWords) -> usize {
        self.head0 | iw.data
    }
}

/// The words that name one ops index in a frame its one-step push makes
/// ([`ShadowStack::push_with_data`]): its bit in `seen`, the bitmap word of it alone, and its
/// field of a data header. Made once (a slot's registration), so that the push stores them
/// rather than shifting the index into each (the index, a load, then kept in a register or
/// memory across the entry callback: six instructions a call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexWords {
    seen: usize,
    bitmap: usize,
    data: usize,
}

impl IndexWords {
    /// The words of ops `idx` (below 16).
    pub const fn new(idx: usize) -> Self {
        let idx = idx % ARRAY_SIZE;
        Self {
            seen: 1 << idx,
            bitmap: word::bitmap_one(idx, FRAME_WORDS),
            data: (idx & DATA_INDEX_MASK) << DATA_INDEX_SHIFT,
        }
    }

    /// From the three words [`IndexWords::to_words`] gave.
    pub const fn from_words(w: [usize; 3]) -> Self {
        Self {
            seen: w[0],
            bitmap: w[1],
            data: w[2],
        }
    }

    /// The three words, to keep (in a slot's atomics).
    pub const fn to_words(&self) -> [usize; 3] {
        [self.seen, self.bitmap, self.data]
    }

    /// The bitmap word of a frame this ops alone keeps ([`word::bitmap`] of its bit).
    pub const fn bitmap(&self) -> usize {
        self.bitmap
    }
}

/// Where one ops' reserved data lives on a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRef {
    /// Index of the first data word.
    pub start: usize,
    /// Size in words.
    pub words: usize,
}

/// A shadow stack of `W` words (`W` > 64). See the module documentation for the layout.
#[repr(C)]
pub struct ShadowStack<const W: usize> {
    top: AtomicUsize,
    depth: AtomicUsize,
    overrun: AtomicUsize,
    words: [AtomicUsize; W],
}

impl<const W: usize> Default for ShadowStack<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> ShadowStack<W> {
    const ASSERT_SIZE: () = assert!(W > 4 * (FRAME_WORDS + 1 + ARRAY_SIZE) && W <= OFFSET_MASK * 2);

    /// Words at and above this index are never used by frames: they hold the task variables and
    /// leave room for one more frame's header, as upstream does.
    pub const MAX_OFFSET: usize = W - (FRAME_WORDS + 1 + ARRAY_SIZE);

    /// An empty stack with zeroed task variables.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ASSERT_SIZE;
        Self {
            top: AtomicUsize::new(0),
            depth: AtomicUsize::new(0),
            overrun: AtomicUsize::new(0),
            words: [const { AtomicUsize::new(0) }; W],
        }
    }

    /// Resets to empty with zeroed task variables (for memory that was not built by `new`).
    pub fn reset(&self) {
        self.top.store(0, Relaxed);
        self.depth.store(0, Relaxed);
        self.overrun.store(0, Relaxed);
        for w in &self.words[W - ARRAY_SIZE..] {
            w.store(0, Relaxed);
        }
    }

    fn w(&self, i: usize) -> usize {
        self.words[i].load(Relaxed)
    }

    fn set(&self, i: usize, v: usize) {
        self.words[i].store(v, Relaxed)
    }

    /// The index of the next free word (upstream's `curr_ret_stack`).
    pub fn top(&self) -> usize {
        self.top.load(Relaxed)
    }

    /// How many frames are on the stack.
    pub fn depth(&self) -> usize {
        self.depth.load(Relaxed)
    }

    /// How many pushes failed for lack of room.
    pub fn overrun(&self) -> usize {
        self.overrun.load(Relaxed)
    }

    /// The task variable of ops `idx`.
    pub fn task_var(&self, idx: usize) -> &AtomicUsize {
        &self.words[W - ARRAY_SIZE + idx]
    }

    /// A raw pointer to word `i`, for handing reserved data to C callbacks.
    pub fn word_ptr(&self, i: usize) -> *mut usize {
        self.words[i].as_ptr()
    }

    /// The words `d` names, as a raw slice pointer: [`Self::word_ptr`] without its bounds
    /// check, for the hot paths' data (a check that cost the return path two instructions a
    /// call, with a panic no `DataRef` the stack made can reach).
    ///
    /// # Safety
    ///
    /// `d` was made by this stack's own decoding or reservation ([`Self::reserve_data`],
    /// [`Self::push_with_data`], [`Head::data`], [`Head::data_exact`],
    /// [`Self::retrieve_data`]): its words lie within the stack.
    #[inline(always)]
    pub unsafe fn data_ptr(&self, d: DataRef) -> *mut [usize] {
        // `AtomicUsize` has `usize`'s layout and is an `UnsafeCell`: writing through a pointer
        // made from a shared borrow of it is allowed.
        // SAFETY: `d.start + d.words <= W` (the caller's contract): the offset stays inside
        // `words`.
        let p = unsafe { self.words.as_ptr().add(d.start) };
        core::ptr::slice_from_raw_parts_mut(p.cast::<usize>().cast_mut(), d.words)
    }

    /// Reads word `i` (data words included).
    pub fn word(&self, i: usize) -> usize {
        self.w(i)
    }

    /// Writes word `i` (data words).
    pub fn set_word(&self, i: usize, v: usize) {
        self.set(i, v)
    }
}
