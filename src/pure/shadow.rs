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
//!
//! Concurrency: only the owning task writes its stack, but interrupts (NMIs included) that arrive
//! on its CPU push and pop frames above whatever the task was doing, and unwinders may read it.
//! Words are atomics accessed with `Relaxed` ordering (plain moves) and compiler fences order the
//! writes the way an interrupt needs to see them: a frame's words are written before `top` moves
//! over them, and rewritten after, in case an interrupt used the space in between.

use core::sync::atomic::{compiler_fence, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

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

/// Decoding and encoding of single words, exactly as upstream's fgraph.c.
pub mod word {
    use super::*;

    /// The offset back to the start of the word's frame.
    pub const fn offset(w: usize) -> usize {
        w & OFFSET_MASK
    }

    /// The word's type.
    pub const fn kind(w: usize) -> WordType {
        match (w >> TYPE_SHIFT) & TYPE_MASK {
            0 => WordType::Reserved,
            1 => WordType::Bitmap,
            2 => WordType::Data,
            _ => WordType::Invalid,
        }
    }

    /// A reserved word at `offset` from its frame's start.
    pub const fn reserved(offset: usize) -> usize {
        offset & OFFSET_MASK
    }

    /// A bitmap word for ops `bits`, `offset` words above its frame's start.
    pub const fn bitmap(bits: u16, offset: usize) -> usize {
        ((bits as usize) << INDEX_SHIFT) | (1 << TYPE_SHIFT) | (offset & OFFSET_MASK)
    }

    /// The ops bitmap of a bitmap word.
    pub const fn bitmap_bits(w: usize) -> u16 {
        ((w >> INDEX_SHIFT) & INDEX_MASK) as u16
    }

    /// A data header for `words` words (1..=32) of ops `idx`, `offset` words above its frame's start.
    pub const fn data(idx: usize, words: usize, offset: usize) -> usize {
        ((idx & DATA_INDEX_MASK) << DATA_INDEX_SHIFT)
            | (((words - 1) & DATA_MASK) << DATA_SHIFT)
            | (2 << TYPE_SHIFT)
            | (offset & OFFSET_MASK)
    }

    /// The ops index of a data header.
    pub const fn data_index(w: usize) -> usize {
        (w >> DATA_INDEX_SHIFT) & DATA_INDEX_MASK
    }

    /// The size in words of the data under a data header.
    pub const fn data_words(w: usize) -> usize {
        ((w >> DATA_SHIFT) & DATA_MASK) + 1
    }
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
    /// Whether the frame is still being built (its entry callbacks are running): its bitmap
    /// word is still of the reserved type.
    pub building: bool,
}

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

    /// Pushes a frame in the reserved state and returns the index of its bitmap word.
    pub fn push(
        &self,
        ret: usize,
        func: usize,
        calltime: u64,
        retp: usize,
    ) -> Result<usize, PushError> {
        let top = self.top();
        // `top` first, so that a corrupt one cannot overflow the sum.
        if top >= Self::MAX_OFFSET || top + FRAME_WORDS + 1 >= Self::MAX_OFFSET {
            self.overrun.fetch_add(1, Relaxed);
            return Err(PushError::Overrun);
        }
        let bm = top + FRAME_WORDS;
        let reserved = word::reserved(FRAME_WORDS);
        // The offset word and `ret` first: an interrupt that unwinds right after `top` moves
        // must find the frame.
        self.set(bm, reserved);
        self.set(top + RET, ret);
        compiler_fence(SeqCst);
        self.top.store(bm + 1, Relaxed);
        compiler_fence(SeqCst);
        // An interrupt between the two fences may have pushed and popped over these words.
        self.set(bm, reserved);
        self.set(top + RET, ret);
        self.set(top + FUNC, func);
        self.set(top + CALLTIME, calltime as usize);
        self.set(top + RETP, retp);
        self.set(top + SEEN, 0);
        self.bump_depth(1);
        Ok(bm)
    }

    /// Pushes a frame in the reserved state with `words` (1..=32) words of data for ops `idx`
    /// above it, in one step (one move of `top`): the frame of a call whose only ops knows its
    /// data size before anything else runs. `seen` is set to `idx` alone. Returns the index of
    /// the bitmap word and the data. The result is the same stack as [`Self::push`], then
    /// [`Self::mark_seen`] and [`Self::reserve_data`] would leave.
    ///
    /// ```text
    ///   top after -> +--------------------------------+
    ///                | DATA word: idx | words-1 | 2   |  offset FRAME_WORDS + 1 + words
    ///                | data (words)                   |
    ///                | reserved bitmap word           |  offset FRAME_WORDS
    ///                | seen = 1 << idx | retp | time  |
    ///                | func | ret                     |
    ///   top before ->+--------------------------------+
    /// ```
    #[inline(always)]
    pub fn push_with_data(
        &self,
        ret: usize,
        func: usize,
        calltime: u64,
        retp: usize,
        idx: usize,
        words: usize,
    ) -> Result<(usize, DataRef), PushError> {
        debug_assert!((1..=MAX_DATA_WORDS).contains(&words) && idx < ARRAY_SIZE);
        let top = self.top();
        // The hot path's push: the frame is reached through one fixed-size window and one
        // more word, each bounds-checked once, and the sums cannot overflow (`top` and `words`
        // are checked small first), so no word costs a check of its own.
        let words = words % (MAX_DATA_WORDS + 1);
        let new_top = top.wrapping_add(FRAME_WORDS + 2).wrapping_add(words);
        // These two first: they bound every index below under MAX_OFFSET < W, so the compiler
        // drops the window's own checks.
        if top >= Self::MAX_OFFSET || new_top >= Self::MAX_OFFSET {
            return self.overran();
        }
        let (Some(fr), Some(head)) = (
            self.words
                .get(top..)
                .and_then(|s| s.first_chunk::<{ FRAME_WORDS + 1 }>()),
            self.words.get(new_top.wrapping_sub(1)),
        ) else {
            return self.overran();
        };
        let bm = top + FRAME_WORDS;
        let header = word::data(idx, words, FRAME_WORDS + 1 + words);
        // As in `push`: what an interrupt that unwinds right after `top` moves needs first (the
        // top word, which leads to the frame, and `ret`), then everything again once `top` has
        // moved over it, in case an interrupt used the space before.
        head.store(header, Relaxed);
        fr[RET].store(ret, Relaxed);
        compiler_fence(SeqCst);
        self.top.store(new_top, Relaxed);
        compiler_fence(SeqCst);
        head.store(header, Relaxed);
        fr[RET].store(ret, Relaxed);
        fr[FUNC].store(func, Relaxed);
        fr[CALLTIME].store(calltime as usize, Relaxed);
        fr[RETP].store(retp, Relaxed);
        fr[SEEN].store(1 << (idx % ARRAY_SIZE), Relaxed);
        fr[FRAME_WORDS].store(word::reserved(FRAME_WORDS), Relaxed);
        self.bump_depth(1);
        Ok((
            bm,
            DataRef {
                start: bm + 1,
                words,
            },
        ))
    }

    #[cold]
    fn overran<T>(&self) -> Result<T, PushError> {
        self.overrun.fetch_add(1, Relaxed);
        Err(PushError::Overrun)
    }

    /// Drops the top frame, whose bitmap word is at `bm`, with everything above it: an entry
    /// that pushed it and then declined the call.
    pub fn unpush(&self, bm: usize) {
        self.drop_frames(bm - FRAME_WORDS, 1);
    }

    /// Sets the entry time of `frame` (a frame of this stack).
    pub fn set_calltime(&self, frame: &Frame, calltime: u64) {
        self.set(frame.start + CALLTIME, calltime as usize);
    }

    /// Sets the entry time of the frame whose bitmap word is at `bm`.
    pub fn set_calltime_at(&self, bm: usize, calltime: u64) {
        if let Some(w) = bm
            .checked_sub(FRAME_WORDS - CALLTIME)
            .and_then(|i| self.words.get(i))
        {
            w.store(calltime as usize, Relaxed);
        }
    }

    /// Sets the ops bitmap of the frame whose bitmap word is at `bm`.
    pub fn set_bitmap(&self, bm: usize, bits: u16) {
        self.set(bm, word::bitmap(bits, FRAME_WORDS));
    }

    /// Puts the frame whose bitmap word is at `bm` back in the reserved state (being built):
    /// an ops that joins a frame another pushed rebuilds it while its entry callback runs, then
    /// sets the bitmap (read first with [`Self::bitmap`]) again with [`Self::set_bitmap`].
    pub fn set_building(&self, bm: usize) {
        self.set(bm, word::reserved(FRAME_WORDS));
    }

    /// Records that ops `idx` ran its entry callback for the frame whose bitmap word is at `bm`.
    pub fn mark_seen(&self, bm: usize, idx: usize) {
        self.mark_seen_bits(bm, 1 << idx);
    }

    /// [`Self::mark_seen`] for several ops at once (`bits`: one per ops index).
    #[inline(always)]
    pub fn mark_seen_bits(&self, bm: usize, bits: usize) {
        let at = bm - FRAME_WORDS + SEEN;
        self.set(at, self.w(at) | (bits & 0xffff));
    }

    /// Sets teardown's `marks` ([`mark`]) on `frame` (a frame of this stack), replacing the
    /// previous marks.
    pub fn set_marks(&self, frame: &Frame, marks: usize) {
        let at = frame.start + SEEN;
        self.set(at, (self.w(at) & !mark::ALL) | (marks & mark::ALL));
    }

    /// Forgets every frame, keeping the task variables: for a stack whose frames can never
    /// return (the idle task of a CPU that went offline restarts from scratch when the CPU comes
    /// back, as upstream's `init_idle()` resets its `curr_ret_stack`). Only while nothing runs
    /// on the stack.
    pub fn clear_frames(&self) {
        compiler_fence(SeqCst);
        self.top.store(0, Relaxed);
        self.depth.store(0, Relaxed);
    }

    /// The ops bitmap of the frame whose bitmap word is at `bm` (0 while reserved).
    pub fn bitmap(&self, bm: usize) -> u16 {
        let w = self.w(bm);
        if word::kind(w) == WordType::Bitmap {
            word::bitmap_bits(w)
        } else {
            0
        }
    }

    /// Reserves `bytes` (1..=256) of data for ops `idx` on top of the frame being built, once
    /// per entry callback. Returns `None` when the size is out of range, the stack is full, or
    /// `idx` already reserved data at the top of this frame.
    pub fn reserve_data(&self, idx: usize, bytes: usize) -> Option<DataRef> {
        if bytes == 0 || bytes > MAX_DATA_BYTES || idx >= ARRAY_SIZE {
            return None;
        }
        let words = bytes.div_ceil(core::mem::size_of::<usize>());
        let top = self.top();
        if top == 0 || top > Self::MAX_OFFSET {
            return None;
        }
        let below = self.w(top - 1);
        if word::kind(below) == WordType::Data && word::data_index(below) == idx {
            return None;
        }
        let new_top = top + words + 1;
        if new_top >= Self::MAX_OFFSET {
            return None;
        }
        let header = word::data(idx, words, word::offset(below) + words + 1);
        self.set(new_top - 1, header);
        compiler_fence(SeqCst);
        self.top.store(new_top, Relaxed);
        compiler_fence(SeqCst);
        self.set(new_top - 1, header);
        Some(DataRef { start: top, words })
    }

    // A load and a store, not an atomic add (a locked instruction on x86): only the owning task
    // changes its depth, and an interrupt that pushes frames over it pops them again before it
    // returns, so whatever it did between our load and our store nets out to nothing.
    fn bump_depth(&self, by: isize) {
        self.depth
            .store(self.depth.load(Relaxed).wrapping_add_signed(by), Relaxed);
    }

    /// Drops `frames` whole frames above `top` (calls that will never return through us).
    pub fn drop_frames(&self, top: usize, frames: usize) {
        self.truncate(top);
        self.bump_depth(-(frames as isize));
    }

    /// Drops everything above `top` (data reserved by an entry callback that declined).
    pub fn truncate(&self, top: usize) {
        compiler_fence(SeqCst);
        self.top.store(top, Relaxed);
    }

    /// The frame whose top word sits just below `top`, if `top` is a frame boundary.
    #[inline(always)]
    fn frame_below(&self, top: usize) -> Option<Frame> {
        if top == 0 || top > Self::MAX_OFFSET {
            return None;
        }
        // `top` is at most MAX_OFFSET (above) and `off` below it: no sum or difference here
        // can wrap, and the frame is read through one bounds-checked window (the return path
        // reads every frame it pops through here).
        let off = word::offset(self.w(top - 1));
        if off < FRAME_WORDS || off > top - 1 {
            return None;
        }
        let start = top.wrapping_sub(1).wrapping_sub(off);
        let fr = self
            .words
            .get(start..)?
            .first_chunk::<{ FRAME_WORDS + 1 }>()?;
        // Each word read once: they are atomics, which the compiler does not merge.
        let bm = fr[FRAME_WORDS].load(Relaxed);
        let seen = fr[SEEN].load(Relaxed);
        let kind = word::kind(bm);
        Some(Frame {
            start,
            ret: fr[RET].load(Relaxed),
            func: fr[FUNC].load(Relaxed),
            calltime: fr[CALLTIME].load(Relaxed) as u64,
            retp: fr[RETP].load(Relaxed),
            bitmap: if kind == WordType::Bitmap {
                word::bitmap_bits(bm)
            } else {
                0
            },
            seen: seen as u16,
            marks: seen & mark::ALL,
            building: kind == WordType::Reserved,
        })
    }

    /// The top frame.
    pub fn top_frame(&self) -> Option<Frame> {
        self.frame_below(self.top())
    }

    /// Pops the top frame, which must be `frame` (read with [`Self::top_frame`] before the return
    /// callbacks ran, so that they could still reach its data).
    pub fn pop(&self, frame: &Frame) {
        compiler_fence(SeqCst);
        self.top.store(frame.start, Relaxed);
        self.bump_depth(-1);
    }

    /// The frames from the top down: the top frame first.
    pub fn frames(&self) -> Frames<'_, W> {
        Frames {
            stack: self,
            top: self.top(),
        }
    }

    /// The data ops `idx` reserved in the frame `depth` levels below the top frame (0: the top
    /// frame, the one being returned from in a return callback).
    pub fn retrieve_data(&self, idx: usize, depth: usize) -> Option<DataRef> {
        let mut top = self.top();
        for _ in 0..depth {
            top = self.frame_below(top)?.start;
        }
        let frame = self.frame_below(top)?;
        // Data lies between the frame's bitmap word and `top`; a header claiming more words
        // than that (a corrupt stack) ends the search rather than wrapping below the frame.
        let floor = frame.start + FRAME_WORDS + 1;
        let mut i = top;
        while i > floor {
            let w = self.w(i - 1);
            if word::kind(w) != WordType::Data {
                break;
            }
            let n = word::data_words(w);
            if n + 1 > i - floor {
                break;
            }
            if word::data_index(w) == idx {
                return Some(DataRef {
                    start: i - 1 - n,
                    words: n,
                });
            }
            i -= n + 1;
        }
        None
    }

    /// The data ops `idx` reserved in the top frame, if it was the last reservation made there
    /// (one look at the top word): the common case of one ops with data on a frame. `None`
    /// does not mean there is none: [`Self::retrieve_data`] searches the whole frame.
    #[inline(always)]
    pub fn data_on_top(&self, idx: usize) -> Option<DataRef> {
        let top = self.top();
        if top == 0 || top > Self::MAX_OFFSET {
            return None;
        }
        let w = self.w(top - 1);
        if word::kind(w) != WordType::Data || word::data_index(w) != idx {
            return None;
        }
        let n = word::data_words(w);
        // `n < top` (checked), so the start does not wrap.
        (n < top).then(|| DataRef {
            start: top.wrapping_sub(1).wrapping_sub(n),
            words: n,
        })
    }

    /// The task variable of ops `idx`.
    pub fn task_var(&self, idx: usize) -> &AtomicUsize {
        &self.words[W - ARRAY_SIZE + idx]
    }

    /// A raw pointer to word `i`, for handing reserved data to C callbacks.
    pub fn word_ptr(&self, i: usize) -> *mut usize {
        self.words[i].as_ptr()
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

/// Iterator over a stack's frames, top first. It stops at a word that does not decode (a
/// corrupt stack), never reading outside the stack.
pub struct Frames<'a, const W: usize> {
    stack: &'a ShadowStack<W>,
    top: usize,
}

impl<const W: usize> Iterator for Frames<'_, W> {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        let f = self.stack.frame_below(self.top)?;
        self.top = f.start;
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type S = ShadowStack<512>;

    fn stack() -> Box<S> {
        Box::new(S::new())
    }

    #[test]
    fn encoding_matches_upstream() {
        // Upstream's own example (fgraph.c): ops 0 and 3 on the return, ops 3 stored 2 words.
        // FGRAPH_FRAME_OFFSET there is the size of its ftrace_ret_stack; use ours.
        let bm = word::bitmap(0b1001, FRAME_WORDS);
        assert_eq!(bm, (9 << 12) | (1 << 10) | FRAME_WORDS);
        let d = word::data(3, 2, FRAME_WORDS + 3);
        assert_eq!(d, (3 << 17) | (1 << 12) | (2 << 10) | (FRAME_WORDS + 3));
        assert_eq!(word::data_index(d), 3);
        assert_eq!(word::data_words(d), 2);
        assert_eq!(word::kind(d), WordType::Data);
        assert_eq!(word::kind(bm), WordType::Bitmap);
        assert_eq!(word::kind(word::reserved(4)), WordType::Reserved);
        assert_eq!(word::data_words(word::data(15, 32, 1)), 32);
        assert_eq!(word::data_index(word::data(15, 32, 1)), 15);
    }

    #[test]
    fn push_pop_restores_everything() {
        let s = stack();
        let bm = s.push(0x1111, 0xf00, 42, 0x7000).unwrap();
        assert!(
            s.top_frame().unwrap().building,
            "a frame is being built until its bitmap is set"
        );
        assert_eq!(bm, FRAME_WORDS);
        s.set_bitmap(bm, 1 << 5);
        let f = s.top_frame().unwrap();
        assert_eq!(
            (f.start, f.ret, f.func, f.calltime, f.retp, f.bitmap),
            (0, 0x1111, 0xf00, 42, 0x7000, 1 << 5)
        );
        assert_eq!(f.seen, 0);
        s.mark_seen(bm, 5);
        assert!(!s.top_frame().unwrap().building);
        s.mark_seen(bm, 15);
        assert_eq!(s.top_frame().unwrap().seen, (1 << 5) | (1 << 15));
        assert_eq!(s.depth(), 1);
        s.pop(&f);
        assert_eq!(s.top(), 0);
        assert_eq!(s.depth(), 0);
        assert!(s.top_frame().is_none());
    }

    #[test]
    fn push_with_data_equals_push_then_reserve() {
        for (idx, words) in [(0, 1), (3, 2), (15, MAX_DATA_WORDS)] {
            let a = stack();
            let b = stack();
            a.push(0x77, 0x10, 0, 0x7000).unwrap();
            b.push(0x77, 0x10, 0, 0x7000).unwrap();
            let bm = a.push(0x1111, 0xf00, 42, 0x6000).unwrap();
            a.mark_seen(bm, idx);
            let d = a.reserve_data(idx, words * 8).unwrap();
            let (bm2, d2) = b
                .push_with_data(0x1111, 0xf00, 42, 0x6000, idx, words)
                .unwrap();
            assert_eq!((bm, d), (bm2, d2));
            assert_eq!(a.top(), b.top());
            assert_eq!(a.depth(), b.depth());
            for i in 0..a.top() {
                if i < d.start || i >= d.start + d.words {
                    assert_eq!(a.word(i), b.word(i), "word {i} (idx {idx}, {words} words)");
                }
            }
            assert!(b.top_frame().unwrap().building);
            assert_eq!(b.data_on_top(idx), Some(d2));
            assert_eq!(b.retrieve_data(idx, 0), Some(d2));
            b.set_bitmap(bm2, 1 << idx);
            let f = b.top_frame().unwrap();
            assert_eq!(
                (f.ret, f.func, f.calltime, f.retp, f.bitmap, f.seen),
                (0x1111, 0xf00, 42, 0x6000, 1 << idx, 1 << idx)
            );
            // The call time through the bitmap word's index (the hub's joins), data untouched.
            b.set_calltime_at(bm2, 77);
            assert_eq!(b.top_frame().unwrap().calltime, 77);
            assert_eq!(b.data_on_top(idx), Some(d2));
            b.set_calltime_at(1, 5); // below any frame's bitmap word: ignored, no panic
            b.set_calltime_at(usize::MAX, 5);
            assert!(!f.building);
            b.unpush(bm2);
            assert_eq!(b.depth(), 1);
            assert_eq!(b.top_frame().unwrap().ret, 0x77);
        }
    }

    #[test]
    fn push_with_data_refuses_when_full() {
        let s = stack();
        let mut n = 0;
        while s.push_with_data(1, 2, 0, 3, 0, 4).is_ok() {
            n += 1;
        }
        assert!(n > 0 && s.top() < S::MAX_OFFSET);
        assert_eq!(s.overrun(), 1);
        assert_eq!(s.depth(), n);
        assert_eq!(s.frames().count(), n);
    }

    #[test]
    fn dropping_skipped_frames_keeps_depth_and_calltime_right() {
        let s = stack();
        let bm = s.push(0x10, 0xa, 0, 0x7000).unwrap();
        s.set_bitmap(bm, 1);
        let outer = s.top_frame().unwrap();
        // Two calls above it that will never return through us (say, a longjmp-like exit).
        for i in 0..2 {
            let b = s.push(0x20 + i, 0xb, 5, 0x6000).unwrap();
            s.set_bitmap(b, 1);
        }
        assert_eq!(s.depth(), 3);
        // What the return handler does when the return it sees is the outer frame's.
        let above = s.frames().take_while(|f| f.start != outer.start).count();
        let outer_top = s
            .frames()
            .take_while(|f| f.start != outer.start)
            .last()
            .unwrap()
            .start;
        s.drop_frames(outer_top, above);
        assert_eq!(s.depth(), 1);
        let f = s.top_frame().unwrap();
        assert_eq!((f.start, f.ret, f.calltime), (0, 0x10, 0));
        // A joining ops that wants times fills a calltime the pushing ops left at 0.
        s.set_calltime(&f, 77);
        assert_eq!(s.top_frame().unwrap().calltime, 77);
        s.pop(&f);
        assert_eq!((s.top(), s.depth()), (0, 0));
    }

    #[test]
    fn nested_frames_unwind_in_order() {
        let s = stack();
        for i in 0..10usize {
            let bm = s
                .push(0x1000 + i, 0x2000 + i, i as u64, 0x3000 + i)
                .unwrap();
            s.set_bitmap(bm, 1);
            if i % 3 == 0 {
                s.reserve_data(2, 8 * (i + 1)).unwrap();
            }
        }
        let rets: Vec<_> = s.frames().map(|f| f.ret).collect();
        assert_eq!(rets, (0..10).rev().map(|i| 0x1000 + i).collect::<Vec<_>>());
        for i in (0..10usize).rev() {
            let f = s.top_frame().unwrap();
            assert_eq!(f.ret, 0x1000 + i);
            s.pop(&f);
        }
        assert_eq!(s.top(), 0);
    }

    // Upstream's "multiple fgraph storage" selftest, in shadow-stack terms: several ops on one
    // function each store data of a different size, and each gets back exactly its own.
    #[test]
    fn several_ops_store_and_retrieve_their_own_data() {
        let s = stack();
        let bm = s.push(1, 2, 3, 4).unwrap();
        let sizes = [(0usize, 8usize), (1, 16), (5, 3), (9, 256), (15, 24)];
        for &(idx, bytes) in &sizes {
            let d = s.reserve_data(idx, bytes).unwrap();
            assert_eq!(d.words, bytes.div_ceil(8));
            for k in 0..d.words {
                s.set_word(d.start + k, idx * 1000 + k);
            }
        }
        s.set_bitmap(
            bm,
            sizes.iter().map(|&(i, _)| 1u16 << i).fold(0, |a, b| a | b),
        );
        // A nested call in between changes nothing.
        let nb = s.push(9, 9, 9, 9).unwrap();
        s.set_bitmap(nb, 1);
        s.reserve_data(5, 40).unwrap();
        let nf = s.top_frame().unwrap();
        s.pop(&nf);
        // The last reservation is found on top; the others are not, and a full search finds all.
        assert_eq!(s.data_on_top(15), s.retrieve_data(15, 0));
        assert!(s.data_on_top(0).is_none());
        for &(idx, bytes) in &sizes {
            let d = s.retrieve_data(idx, 0).unwrap();
            assert_eq!(d.words, bytes.div_ceil(8), "ops {idx}");
            for k in 0..d.words {
                assert_eq!(s.word(d.start + k), idx * 1000 + k);
            }
        }
        assert!(s.retrieve_data(3, 0).is_none());
        let f = s.top_frame().unwrap();
        assert_eq!(f.ret, 1);
        assert_eq!(
            f.bitmap,
            (1 << 0) | (1 << 1) | (1 << 5) | (1 << 9) | (1 << 15)
        );
    }

    #[test]
    fn parent_data_by_depth() {
        let s = stack();
        for depth in 0..4usize {
            s.push(depth, 0, 0, 0).unwrap();
            let d = s.reserve_data(7, 8).unwrap();
            s.set_word(d.start, 100 + depth);
        }
        for back in 0..4usize {
            let d = s.retrieve_data(7, back).unwrap();
            assert_eq!(s.word(d.start), 100 + 3 - back);
        }
        assert!(s.retrieve_data(7, 4).is_none());
    }

    #[test]
    fn reserve_rules() {
        let s = stack();
        assert!(s.reserve_data(0, 8).is_none(), "no frame to reserve in");
        s.push(0, 0, 0, 0).unwrap();
        assert!(s.reserve_data(0, 0).is_none());
        assert!(s.reserve_data(0, MAX_DATA_BYTES + 1).is_none());
        assert!(s.reserve_data(ARRAY_SIZE, 8).is_none());
        assert!(s.reserve_data(4, MAX_DATA_BYTES).is_some());
        assert!(
            s.reserve_data(4, 8).is_none(),
            "second reservation in one entry"
        );
        assert!(s.reserve_data(5, 1).is_some());
    }

    #[test]
    fn declined_entry_discards_its_data() {
        let s = stack();
        let bm = s.push(0, 0, 0, 0).unwrap();
        s.reserve_data(1, 16).unwrap();
        let save = s.top();
        s.reserve_data(2, 16).unwrap();
        s.truncate(save);
        s.set_bitmap(bm, 1 << 1);
        assert!(s.retrieve_data(2, 0).is_none());
        assert!(s.retrieve_data(1, 0).is_some());
    }

    #[test]
    fn deep_recursion_overruns_without_corruption() {
        let s = stack();
        let mut pushed = 0;
        for i in 0..200usize {
            match s.push(i, i, 0, i) {
                Ok(bm) => {
                    s.set_bitmap(bm, 1);
                    pushed += 1;
                }
                Err(PushError::Overrun) => {}
            }
        }
        assert!(pushed > 50 && pushed < 200);
        assert_eq!(s.overrun(), 200 - pushed);
        assert!(s.top() < S::MAX_OFFSET);
        for (n, i) in (0..pushed).rev().enumerate() {
            let f = s.top_frame().unwrap();
            assert_eq!(f.ret, i, "frame {n}");
            s.pop(&f);
        }
        // The task variables above MAX_OFFSET were never touched.
        for idx in 0..ARRAY_SIZE {
            assert_eq!(s.task_var(idx).load(Relaxed), 0);
        }
    }

    #[test]
    fn task_vars_are_per_ops() {
        let s = stack();
        s.task_var(3).store(33, Relaxed);
        s.task_var(15).store(1515, Relaxed);
        assert_eq!(s.task_var(3).load(Relaxed), 33);
        assert_eq!(s.task_var(15).load(Relaxed), 1515);
        assert_eq!(s.task_var(0).load(Relaxed), 0);
        s.reset();
        assert_eq!(s.task_var(15).load(Relaxed), 0);
    }

    #[test]
    fn teardown_marks_live_beside_seen() {
        let s = stack();
        let bm = s.push(1, 2, 0, 3).unwrap();
        s.mark_seen(bm, 15);
        s.set_bitmap(bm, 1 << 15);
        let f = s.top_frame().unwrap();
        assert_eq!(f.marks, 0);
        s.set_marks(&f, mark::PENDING);
        let f = s.top_frame().unwrap();
        assert_eq!(
            (f.seen, f.marks, f.bitmap),
            (1 << 15, mark::PENDING, 1 << 15)
        );
        s.set_marks(&f, mark::GONE);
        let f = s.top_frame().unwrap();
        assert_eq!((f.seen, f.marks, f.bitmap), (1 << 15, mark::GONE, 1 << 15));
        s.set_marks(&f, mark::HANDED);
        let f = s.top_frame().unwrap();
        assert_eq!((f.seen, f.marks), (1 << 15, mark::HANDED));
        // A joining ops' seen bit keeps the marks.
        s.mark_seen(bm, 2);
        assert_eq!(s.top_frame().unwrap().marks, mark::HANDED);
        s.task_var(4).store(44, Relaxed);
        s.clear_frames();
        assert!(s.top_frame().is_none());
        assert_eq!((s.top(), s.depth()), (0, 0));
        assert_eq!(s.task_var(4).load(Relaxed), 44);
    }

    #[test]
    fn corrupt_top_word_stops_walks() {
        let s = stack();
        s.push(1, 1, 1, 1).unwrap();
        s.set_word(s.top() - 1, 0); // offset 0 cannot be a frame
        assert!(s.top_frame().is_none());
        assert_eq!(s.frames().count(), 0);
    }

    /// Whatever `top` and the words hold (a corrupt stack), no walk, lookup or push panics or
    /// reads outside the stack: the return path and unwinders run these on every hooked return.
    #[test]
    fn corrupt_stack_never_panics() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let tops = |r: u64| -> usize {
            match r % 6 {
                0 => usize::MAX - (r as usize >> 8) % 4,
                1 => 512 + (r as usize >> 8) % 8,
                2 => S::MAX_OFFSET - 2 + (r as usize >> 8) % 5,
                _ => (r as usize >> 8) % 520,
            }
        };
        for _ in 0..20_000 {
            let s = stack();
            for i in 0..512 {
                let r = rnd();
                // Mostly plausible words: data/bitmap/reserved with small offsets.
                let w = match r % 4 {
                    0 => r as usize,
                    1 => word::data(
                        (r >> 8) as usize % 16,
                        1 + (r >> 16) as usize % 32,
                        (r >> 24) as usize % 1024,
                    ),
                    2 => word::bitmap((r >> 8) as u16, (r >> 24) as usize % 1024),
                    _ => word::reserved((r >> 24) as usize % 1024),
                };
                s.set_word(i, w);
            }
            let top = tops(rnd());
            s.top.store(top, Relaxed);
            let idx = rnd() as usize % 16;
            let _ = s.top_frame();
            let _ = s.frames().take(1000).count();
            let _ = s.data_on_top(idx);
            for d in 0..4 {
                let _ = s.retrieve_data(idx, d);
            }
            if let Ok((bm, d)) = s.push_with_data(1, 2, 3, 4, idx, 1 + rnd() as usize % 32) {
                assert!(d.start + d.words < S::MAX_OFFSET);
                let _ = s.data_on_top(idx);
                let _ = s.retrieve_data(idx, 0);
                s.unpush(bm);
            }
            // The general path's push and reservation too.
            s.top.store(top, Relaxed);
            let _ = s.reserve_data(idx, 8 * (1 + rnd() as usize % 32));
            s.top.store(top, Relaxed);
            if let Ok(bm) = s.push(1, 2, 3, 4) {
                let _ = s.reserve_data(idx, 16);
                s.set_bitmap(bm, 1);
                let _ = s.top_frame();
            }
        }
    }
}
