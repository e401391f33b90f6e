// SPDX-License-Identifier: GPL-2.0

//! Reading a stack: decoding the frame below a word, walking the frames top first, and finding
//! an ops' reserved data. Every read is bounds-checked, so a corrupt stack ends a walk instead of
//! reading outside the stack.

use core::sync::atomic::Ordering::Relaxed;

use super::*;

impl<const W: usize> ShadowStack<W> {
    /// The frame whose top word sits just below `top`, if `top` is a frame boundary.
    #[inline(always)]
    fn frame_below(&self, top: usize) -> Option<Frame> {
        self.frame_head_below(top).map(|(f, _)| f)
    }

    /// [`Self::frame_below`], with the top word it decoded.
    #[inline(always)]
    fn frame_head_below(&self, top: usize) -> Option<(Frame, Head)> {
        self.frame_head_below_with::<true>(top)
    }

    /// [`Self::frame_head_below`]; with `FULL` false, the frame's `calltime` and `seen` words
    /// are not read (their fields, `marks` and `hub` are 0): see [`Self::top_frame_ret`].
    #[inline(always)]
    fn frame_head_below_with<const FULL: bool>(&self, top: usize) -> Option<(Frame, Head)> {
        if top == 0 || top > Self::MAX_OFFSET {
            return None;
        }
        // `top` is at most MAX_OFFSET (above) and `off` below it: no sum or difference here
        // can wrap, and the frame is read through one bounds-checked window (the return path
        // reads every frame it pops through here).
        let head = self.w(top - 1);
        let off = word::offset(head);
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
        let seen = if FULL { fr[SEEN].load(Relaxed) } else { 0 };
        let kind = word::kind(bm);
        let frame = Frame {
            start,
            ret: fr[RET].load(Relaxed),
            func: fr[FUNC].load(Relaxed),
            calltime: if FULL {
                fr[CALLTIME].load(Relaxed) as u64
            } else {
                0
            },
            retp: fr[RETP].load(Relaxed),
            bitmap: if kind == WordType::Bitmap {
                word::bitmap_bits(bm)
            } else {
                0
            },
            seen: seen as u16,
            marks: seen & mark::ALL,
            hub: seen & HUB_SEEN != 0,
            building: kind == WordType::Reserved,
        };
        // `floor`: the frame's first word above its bitmap word, at most `top` (`off` is at
        // least FRAME_WORDS).
        let floor = start.wrapping_add(FRAME_WORDS + 1);
        Some((
            frame,
            Head {
                top,
                word: head,
                floor,
            },
        ))
    }

    /// The top frame.
    pub fn top_frame(&self) -> Option<Frame> {
        self.frame_below(self.top())
    }

    /// The top frame and the top word it was found with: the return path's one decode, from
    /// which [`Head::data`] finds the data on top without reading the stack again.
    #[inline(always)]
    pub fn top_frame_head(&self) -> Option<(Frame, Head)> {
        self.frame_head_below(self.top())
    }

    /// [`Self::top_frame_head`] for the return path, which needs neither the frame's call
    /// time (read, when a callback wants it, with [`Self::calltime_at`]) nor its `seen` word:
    /// the frame's `calltime`, `seen`, `marks` and `hub` are 0. Its words are atomics, which
    /// the compiler does not drop when unused: two loads (and a register kept) a return.
    #[inline(always)]
    pub fn top_frame_ret(&self) -> Option<(Frame, Head)> {
        self.frame_head_below_with::<false>(self.top())
    }

    /// The call time of the frame that starts at `start` (a [`Frame::start`] of this stack).
    /// Takes the index, not the frame: a closure that borrows a frame makes the compiler build
    /// the whole frame in memory.
    #[inline(always)]
    pub fn calltime_at(&self, start: usize) -> u64 {
        start
            .checked_add(CALLTIME)
            .and_then(|i| self.words.get(i))
            .map_or(0, |w| w.load(Relaxed) as u64)
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
    /// (the top word is its header): the common case of one ops with data on a frame. `None`
    /// does not mean there is none: [`Self::retrieve_data`] searches the whole frame. The
    /// return path reads the same from the [`Head`] it decoded with the frame.
    pub fn data_on_top(&self, idx: usize) -> Option<DataRef> {
        self.top_frame_head().and_then(|(_, head)| head.data(idx))
    }
}

/// The top word of a stack, as [`ShadowStack::top_frame_head`] read it with the top frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// The stack's top (the index above the word).
    top: usize,
    /// The word.
    word: usize,
    /// The first word above the frame's bitmap word (at most `top`).
    floor: usize,
}

impl Head {
    /// The data ops `idx` reserved last in the frame read with this head, if the head is its
    /// header (what [`ShadowStack::data_on_top`] finds), without reading the stack. Valid while
    /// the frame is the top one (interrupts that push above it pop again before it is read).
    #[inline(always)]
    pub fn data(&self, idx: usize) -> Option<DataRef> {
        let w = self.word;
        if word::kind(w) != WordType::Data || word::data_index(w) != idx {
            return None;
        }
        let n = word::data_words(w);
        // The data and its header lie between the bitmap word and the top: `floor <= top`, so
        // neither difference wraps.
        (n < self.top.wrapping_sub(self.floor)).then(|| DataRef {
            start: self.top.wrapping_sub(1).wrapping_sub(n),
            words: n,
        })
    }
}

impl Head {
    /// The data of ops `idx` if it is all the frame holds above its bitmap word, `size` words
    /// under one header (what [`ShadowStack::push_with_data`] leaves): one compare of the head
    /// with the header that layout has, no decoding. `None` does not mean there is none:
    /// [`Head::data`] decodes.
    #[inline(always)]
    pub fn data_exact(&self, idx: usize, size: DataSize) -> Option<DataRef> {
        // The header at `FRAME_WORDS + 1 + words` from the frame's start, right above the
        // data, names the frame this head was decoded with: the data starts at `floor`.
        let words = size.words();
        let ok = idx < ARRAY_SIZE && self.word == size.head(idx);
        debug_assert!(!ok || self.floor + words + 1 == self.top);
        ok.then_some(DataRef {
            start: self.floor,
            words,
        })
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
