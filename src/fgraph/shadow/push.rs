// SPDX-License-Identifier: GPL-2.0

//! Writing a stack: pushing a frame, building it (bitmap, marks, reserved data), and dropping
//! frames; the fences that keep each step safe from an interrupt running on top of it.

use core::sync::atomic::{compiler_fence, Ordering::Relaxed, Ordering::SeqCst};

use super::*;

impl<const W: usize> ShadowStack<W> {
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

    /// Pushes a frame in the reserved state with `size` words of data for the ops `iw` names
    /// above it, in one step (one move of `top`): the frame of a call whose only ops knows its
    /// data size before anything else runs. `seen` is set to that ops alone. Returns the index of
    /// the bitmap word and the data. The result is the same stack as [`Self::push`], then
    /// [`Self::mark_seen`] and [`Self::reserve_data`] would leave.
    ///
    /// ```text
    ///   top after -> +--------------------------------+
    ///                | DATA word: idx | words-1 | 2   |  offset FRAME_WORDS + 1 + words:
    ///                |                                |  `size`'s word with idx added
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
        iw: IndexWords,
        size: DataSize,
    ) -> Result<(usize, DataRef), PushError> {
        let top = self.top();
        // The hot path's push: the frame is reached through one fixed-size window and one
        // more word, each bounds-checked once, and the sums cannot overflow (`top` and `words`
        // are checked small first), so no word costs a check of its own.
        let words = size.words();
        const { assert!(Self::MAX_OFFSET > FRAME_WORDS + 2 + MAX_DATA_WORDS) };
        // One compare first: the new top below MAX_OFFSET (the limit cannot wrap: `words` is at
        // most 32, above). It bounds every index below under MAX_OFFSET < W, so the compiler
        // drops the window's own checks.
        if top >= Self::MAX_OFFSET - (FRAME_WORDS + 2) - words {
            return self.overran();
        }
        let new_top = top.wrapping_add(FRAME_WORDS + 2).wrapping_add(words);
        let (Some(fr), Some(head)) = (
            self.words
                .get(top..)
                .and_then(|s| s.first_chunk::<{ FRAME_WORDS + 1 }>()),
            self.words.get(new_top.wrapping_sub(1)),
        ) else {
            return self.overran();
        };
        let bm = top + FRAME_WORDS;
        let header = size.head_of(&iw);
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
        fr[SEEN].store(iw.seen, Relaxed);
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

    /// [`Self::set_bitmap`] with the one ops `iw` names: its word made once.
    #[inline(always)]
    pub fn set_bitmap_one(&self, bm: usize, iw: &IndexWords) {
        self.set(bm, iw.bitmap());
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

    /// [`Self::mark_seen_bits`] from the hub's callback: the ops of its mask, and [`HUB_SEEN`].
    #[inline(always)]
    pub fn mark_seen_hub(&self, bm: usize, bits: usize) {
        let at = bm - FRAME_WORDS + SEEN;
        self.set(at, self.w(at) | (bits & 0xffff) | HUB_SEEN);
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

    /// Pops the top frame, which must be `frame` (read with [`Self::top_frame`] before the return
    /// callbacks ran, so that they could still reach its data).
    pub fn pop(&self, frame: &Frame) {
        compiler_fence(SeqCst);
        self.top.store(frame.start, Relaxed);
        self.bump_depth(-1);
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
}
