// SPDX-License-Identifier: GPL-2.0

//! The one-step frame: what an ops that hooks a call alone, with data of a size it knows up
//! front, leaves on the stack ([`ShadowStack::push_with_data`], kept with
//! [`ShadowStack::set_bitmap_one`]), and how the return path recognises it with two compares
//! instead of decoding it.
//!
//! Its layout is fixed by the ops index and the data size alone, so both words that tell it
//! apart can be made ahead ([`OneStep`]):
//!
//! ```text
//!   top ------> +--------------------------------+
//!   top - 1     | DATA word: idx | words-1 | 2   |  == OneStep::head (offset 6 + words)
//!               | data (words)                   |  [start + 6, start + 6 + words)
//!   start + 5   | BITMAP word: bit idx | 1 | 5   |  == OneStep::bitmap (the ops alone)
//!   start + 4   | seen | retp | calltime | func  |
//!   start       | ret                            |
//!               +--------------------------------+  start = top - (7 + words)
//! ```
//!
//! A frame the general path built (pushed, then one reservation by the ops, kept by it alone)
//! has exactly these words too: the match says what the frame holds, not which path built it.
//! A frame whose top word or bitmap word differs in any bit (another ops kept it too, or
//! reserved data, or it is still being built, or the data is of another size) does not match,
//! and the return path decodes it as any other.

use core::sync::atomic::Ordering::Relaxed;

use super::*;

/// The top word and the bitmap word of a one-step frame of one ops index and data size (see
/// the module documentation), and that size. Made once, where the index and the size are
/// fixed (fprobe: when it publishes its single exit probe), and compared whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneStep {
    head: usize,
    bitmap: usize,
    size: DataSize,
}

impl OneStep {
    /// The words of a one-step frame of the ops `iw` names, with `size` words of data.
    pub const fn new(iw: &IndexWords, size: DataSize) -> Self {
        Self {
            head: size.head_of(iw),
            bitmap: iw.bitmap(),
            size,
        }
    }

    /// Words that no frame has: a stack's top word always encodes an offset of at least
    /// FRAME_WORDS, and a kept frame's bitmap word has its type bits set. Matches nothing
    /// (what a `OneStep` is while the ops it would name is not registered).
    pub const fn none() -> Self {
        const NONE: OneStep = OneStep {
            head: 0,
            bitmap: 0,
            size: match DataSize::new(1) {
                Some(s) => s,
                None => panic!("one word is a data size"),
            },
        };
        NONE
    }

    /// The two words, to keep (in atomics: the return path reads them while the data size
    /// stays what it was made with).
    pub const fn to_words(&self) -> [usize; 2] {
        [self.head, self.bitmap]
    }

    /// From the words [`OneStep::to_words`] gave, for data of `size`.
    pub const fn from_words(w: [usize; 2], size: DataSize) -> Self {
        Self {
            head: w[0],
            bitmap: w[1],
            size,
        }
    }

    /// Words from the frame's start to the top of the stack: the frame, its bitmap word, the
    /// data and its header.
    #[inline(always)]
    const fn len(&self) -> usize {
        FRAME_WORDS + 2 + self.size.words()
    }
}

/// The top frame of a stack, found by [`ShadowStack::top_one_step`]: what the return path
/// reads of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneStepFrame {
    /// Index of the frame's first word (the stack top once it is popped).
    pub start: usize,
    /// The real return address.
    pub ret: usize,
    /// The hooked function.
    pub func: usize,
    /// Where the return address lived.
    pub retp: usize,
    /// The ops' data (the header word above it excluded).
    pub data: DataRef,
}

impl OneStepFrame {
    /// As a [`Frame`]: the fields the return path reads (`calltime` and `seen` are not read,
    /// and left 0; `bitmap` is the one ops `os` names).
    pub fn frame(&self, os: &OneStep) -> Frame {
        Frame {
            start: self.start,
            ret: self.ret,
            func: self.func,
            retp: self.retp,
            bitmap: word::bitmap_bits(os.bitmap),
            ..Frame::default()
        }
    }
}

impl<const W: usize> ShadowStack<W> {
    /// The top frame, if it is a one-step frame of `os`'s layout: two words compared (the top
    /// word and the bitmap word), nothing decoded. `None` does not mean the stack is empty or
    /// corrupt: [`Self::top_frame_head`] decodes any frame.
    #[inline(always)]
    pub fn top_one_step(&self, os: &OneStep) -> Option<OneStepFrame> {
        let top = self.top();
        // `top` at most MAX_OFFSET, and the frame's `len` words below it: every word read
        // below is in the stack.
        if top > Self::MAX_OFFSET {
            return None;
        }
        let start = top.checked_sub(os.len())?;
        // `start + len` is `top`, at most MAX_OFFSET < W: the window and the top word are in
        // the stack (the compiler drops the checks it can prove; a bounds failure would only
        // refuse the match).
        let fr = self
            .words
            .get(start..)?
            .first_chunk::<{ FRAME_WORDS + 1 }>()?;
        let head = self.words.get(top.wrapping_sub(1))?;
        if head.load(Relaxed) != os.head || fr[FRAME_WORDS].load(Relaxed) != os.bitmap {
            return None;
        }
        Some(OneStepFrame {
            start,
            ret: fr[RET].load(Relaxed),
            func: fr[FUNC].load(Relaxed),
            retp: fr[RETP].load(Relaxed),
            data: DataRef {
                start: start + FRAME_WORDS + 1,
                words: os.size.words(),
            },
        })
    }

    /// Pops the top frame `f` ([`Self::top_one_step`] found it, before the return callbacks
    /// ran), as [`Self::pop`] does.
    #[inline(always)]
    pub fn pop_one_step(&self, f: &OneStepFrame) {
        self.drop_frames(f.start, 1);
    }
}
