// SPDX-License-Identifier: GPL-2.0

//! The promises of the shadow stack (`src/pure/shadow/`) and of the reader of upstream's
//! function_graph stack (`handback::fgraph_find`), on stacks an input describes.
//!
//! An input is one of two things (its first byte says which):
//!
//! - **an image**: any `top` (plausible, past the end, or wild) and any words (plausible
//!   bitmap, data and reserved words with any fields, or raw values): a corrupt stack, as a
//!   stray write or a bug would leave it. The return path and unwinders read such a stack on
//!   every hooked return and the entry path pushes on it, so none of them may panic, read
//!   outside the stack or write at or above `MAX_OFFSET` (the task variables), and what they
//!   return must be what the words say:
//!   - the frame walk goes strictly down, each frame below the top it was found under, its
//!     fields the words at its start, and ends within `top / 6` frames;
//!   - a data lookup returns a range inside its frame, under a data header of that ops and size;
//!   - a push that succeeds leaves exactly the frame pushed on top (with its data where the
//!     push said), writes only above the old top, and is undone by popping it; one that fails
//!     counts an overrun and writes nothing;
//!   - `fgraph_find` reads only indexes below the length it is given and returns the `ret`
//!     word of a frame whose `retp` word holds the slot asked for.
//! - **a sequence of operations** (push, push with data, reserve, set the bitmap, mark seen,
//!   pop, decline, drop frames, task variables...), run on a stack and on a model of it, as the
//!   entry and return paths use them: after each operation the stack has the model's top,
//!   depth, overrun count, frames (every field), data (place and contents) and task variables,
//!   and no word at or above `MAX_OFFSET` other than the task variables was ever written.

use std::sync::atomic::Ordering::Relaxed;

use crate::common::{Bytes, Source};
use ufgraph_pure::handback::fgraph_find;
use ufgraph_pure::shadow::{
    mark, word, DataRef, Frame, ShadowStack, WordType, ARRAY_SIZE, FRAME_WORDS, MAX_DATA_BYTES,
    MAX_DATA_WORDS,
};

/// Words of a stack: the kernel's (`STACK_WORDS`, src/fgraph/tasks.rs).
pub const W: usize = 506;
type Stack = ShadowStack<W>;
const MAX_OFFSET: usize = Stack::MAX_OFFSET;

use crate::common::{ensure, Verdict};

/// How many kinds of input there are: images, operation sequences, corrupted stacks.
const MODES: usize = 3;

/// Runs one input; returns a label for the statistics, or what promise it breaks.
pub fn check(data: &[u8]) -> Result<&'static str, String> {
    let mut src = Bytes(data);
    match src.below(MODES) {
        0 => check_image(&mut src),
        1 => check_ops(&mut src),
        _ => check_corrupted(&mut src),
    }
}

// ---------------------------------------------------------------------------------------------
// Images: corrupt stacks.

/// How an image's words are drawn, one choice per word.
const WORD_KINDS: usize = 5;

/// The parameters of an image: everything but the words.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageParams {
    pub top: usize,
    /// Whether `top` is any value rather than one around the stack's size.
    pub wild_top: bool,
    pub idx: usize,
    pub push_words: usize,
    pub fg_words: usize,
    pub fg_frame_words: usize,
    pub fg_ret_word: usize,
    pub fg_retp_word: usize,
    /// The index of the word whose value `fgraph_find` looks for.
    pub fg_retp_at: usize,
    pub fg_skip_mod: usize,
}

impl ImageParams {
    fn decode(src: &mut impl Source) -> Self {
        let wild_top = src.below(4) == 3;
        let top = if wild_top {
            src.next() as usize
        } else {
            src.below(W + 24)
        };
        Self::decode_rest(src, top, wild_top)
    }

    /// Everything after `top`.
    fn decode_rest(src: &mut impl Source, top: usize, wild_top: bool) -> Self {
        ImageParams {
            top,
            wild_top,
            idx: src.below(ARRAY_SIZE),
            push_words: 1 + src.below(MAX_DATA_WORDS),
            fg_words: src.below(W + 1),
            fg_frame_words: src.below(10),
            fg_ret_word: src.below(10),
            fg_retp_word: src.below(10),
            fg_retp_at: src.below(W),
            fg_skip_mod: 1 + src.below(4),
        }
    }

    /// The bytes that decode as these parameters (the mode byte included), then `words` as raw
    /// values: an image seed.
    pub fn encode(&self, words: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        Bytes::encode_below(&mut out, MODES, 0);
        Bytes::encode_below(&mut out, 4, if self.wild_top { 3 } else { 0 });
        if self.wild_top {
            Bytes::encode_next(&mut out, self.top as u64);
        } else {
            Bytes::encode_below(&mut out, W + 24, self.top);
        }
        Bytes::encode_below(&mut out, ARRAY_SIZE, self.idx);
        Bytes::encode_below(&mut out, MAX_DATA_WORDS, self.push_words - 1);
        Bytes::encode_below(&mut out, W + 1, self.fg_words);
        Bytes::encode_below(&mut out, 10, self.fg_frame_words);
        Bytes::encode_below(&mut out, 10, self.fg_ret_word);
        Bytes::encode_below(&mut out, 10, self.fg_retp_word);
        Bytes::encode_below(&mut out, W, self.fg_retp_at);
        Bytes::encode_below(&mut out, 4, self.fg_skip_mod - 1);
        for &w in words.iter().take(W) {
            Bytes::encode_below(&mut out, WORD_KINDS, 0);
            Bytes::encode_next(&mut out, w as u64);
        }
        out
    }
}

/// One word of an image: mostly words that decode, with fields of any value.
fn image_word(src: &mut impl Source) -> usize {
    match src.below(WORD_KINDS) {
        0 => src.next() as usize,
        1 => word::data(src.below(16), 1 + src.below(32), src.below(1024)),
        2 => word::bitmap(src.below(1 << 16) as u16, src.below(1024)),
        3 => word::reserved(src.below(1024)),
        _ => src.below(1 << 12),
    }
}

fn snapshot(s: &Stack) -> Vec<usize> {
    (0..W).map(|i| s.word(i)).collect()
}

/// The words that differ between two snapshots, outside `keep` (the range a push may write).
fn changed_outside(a: &[usize], b: &[usize], keep: core::ops::Range<usize>) -> Option<usize> {
    (0..W).find(|&i| !keep.contains(&i) && a[i] != b[i])
}

/// The frame the words at `start` describe.
fn frame_at(image: &[usize], start: usize) -> Frame {
    let bm = image[start + FRAME_WORDS];
    let seen = image[start + 4];
    Frame {
        start,
        ret: image[start],
        func: image[start + 1],
        calltime: image[start + 2] as u64,
        retp: image[start + 3],
        bitmap: if word::kind(bm) == WordType::Bitmap {
            word::bitmap_bits(bm)
        } else {
            0
        },
        seen: seen as u16,
        marks: seen & mark::ALL,
        building: word::kind(bm) == WordType::Reserved,
    }
}

/// A data range found below `top` in `frame`: inside the frame, under its header.
fn check_data(
    image: &[usize],
    frame: &Frame,
    top: usize,
    idx: usize,
    d: DataRef,
    what: &str,
) -> Verdict {
    let header_at = d.start + d.words;
    ensure(
        frame.start + FRAME_WORDS < d.start && header_at < top,
        || {
            format!(
                "{what}: data {d:?} outside frame at {} under top {top}",
                frame.start
            )
        },
    )?;
    let h = image[header_at];
    ensure(
        word::kind(h) == WordType::Data
            && word::data_index(h) == idx
            && word::data_words(h) == d.words,
        || format!("{what}: data {d:?} of ops {idx} under header {h:#x}"),
    )
}

/// The readers on the image as it is: walks and lookups.
fn check_readers(s: &Stack, image: &[usize], top: usize, idx: usize) -> Result<usize, String> {
    let frames: Vec<Frame> = s.frames().take(W + 1).collect();
    ensure(
        frames.len() * (FRAME_WORDS + 1) <= top.min(MAX_OFFSET),
        || format!("{} frames under top {top}", frames.len()),
    )?;
    ensure(s.top_frame() == frames.first().copied(), || {
        "top frame is not the walk's first".into()
    })?;
    let mut above = top;
    for (n, f) in frames.iter().enumerate() {
        ensure(above <= MAX_OFFSET && f.start + FRAME_WORDS < above, || {
            format!("frame {n} at {} not under {above}", f.start)
        })?;
        ensure(*f == frame_at(image, f.start), || {
            format!("frame {n} {f:?} is not its words")
        })?;
        above = f.start;
    }
    if let Some(d) = s.data_on_top(idx) {
        ensure(top <= MAX_OFFSET && d.start + d.words + 1 == top, || {
            format!("data on top {d:?}")
        })?;
        let h = image[top - 1];
        ensure(
            word::data_index(h) == idx && word::data_words(h) == d.words,
            || format!("data on top {d:?} under {h:#x}"),
        )?;
    }
    for depth in 0..4 {
        let found = s.retrieve_data(idx, depth);
        match frames.get(depth) {
            None => ensure(found.is_none(), || {
                format!("data {found:?} at depth {depth} of no frame")
            })?,
            Some(f) => {
                if let Some(d) = found {
                    let top_here = if depth == 0 {
                        top
                    } else {
                        frames[depth - 1].start
                    };
                    check_data(image, f, top_here, idx, d, "retrieve")?;
                }
            }
        }
    }
    Ok(frames.len())
}

/// The entry path on the image: pushes, reservations, and undoing them.
fn check_pushes(s: &Stack, image: &[usize], p: &ImageParams) -> Verdict {
    check_push_with_data(s, image, p)?;
    s.truncate(p.top);
    check_push_reserve_pop(s, p)?;
    s.truncate(p.top);
    check_reserve_on_top(s, p)?;
    s.truncate(p.top);
    Ok(())
}

/// Since `image` was taken, on top `top`, `what` wrote no word of the stack outside `keep`.
fn writes_only(
    image: &[usize],
    s: &Stack,
    top: usize,
    keep: core::ops::Range<usize>,
    what: &str,
) -> Verdict {
    match changed_outside(image, &snapshot(s), keep) {
        Some(i) => Err(format!("{what} on top {top} wrote word {i}")),
        None => Ok(()),
    }
}

/// The hot path's push with data, then unpushing it.
fn check_push_with_data(s: &Stack, image: &[usize], p: &ImageParams) -> Verdict {
    let top = p.top;
    let (idx, words) = (p.idx, p.push_words);
    let overrun = s.overrun();
    let fits = top
        .checked_add(FRAME_WORDS + 2 + words)
        .is_some_and(|t| t < MAX_OFFSET);
    match s.push_with_data(0x1111, 0x2222, 0x3333, 0x4444, idx, words) {
        Ok((bm, d)) => {
            ensure(fits, || {
                format!("push_with_data of {words} words on top {top} fits")
            })?;
            let new_top = top + FRAME_WORDS + 2 + words;
            ensure(
                bm == top + FRAME_WORDS
                    && d == DataRef {
                        start: bm + 1,
                        words,
                    },
                || format!("push_with_data gave {bm}, {d:?} on top {top}"),
            )?;
            ensure(s.top() == new_top, || {
                format!("top {} after push_with_data", s.top())
            })?;
            let want = Frame {
                start: top,
                ret: 0x1111,
                func: 0x2222,
                calltime: 0x3333,
                retp: 0x4444,
                bitmap: 0,
                seen: 1 << idx,
                marks: 0,
                building: true,
            };
            ensure(s.top_frame() == Some(want), || {
                format!("pushed {:?}", s.top_frame())
            })?;
            ensure(
                s.data_on_top(idx) == Some(d) && s.retrieve_data(idx, 0) == Some(d),
                || format!("data {d:?} not found on top"),
            )?;
            writes_only(image, s, top, top..new_top, "push_with_data")?;
            s.unpush(bm);
            ensure(s.top() == top, || format!("unpush left top {}", s.top()))?;
        }
        Err(_) => {
            ensure(!fits, || {
                format!("push_with_data of {words} words on top {top} refused")
            })?;
            ensure(s.overrun() == overrun + 1, || "overrun not counted".into())?;
            writes_only(image, s, top, 0..0, "a refused push_with_data")?;
        }
    }

    Ok(())
}

/// The general path: push, reserve, set the bitmap, pop.
fn check_push_reserve_pop(s: &Stack, p: &ImageParams) -> Verdict {
    let top = p.top;
    let (idx, words) = (p.idx, p.push_words);
    let image = snapshot(s);
    let fits = top
        .checked_add(FRAME_WORDS + 1)
        .is_some_and(|t| t < MAX_OFFSET);
    match s.push(0x5555, 0x6666, 0x7777, 0x8888) {
        Ok(bm) => {
            ensure(fits && bm == top + FRAME_WORDS && s.top() == bm + 1, || {
                format!("push gave {bm}, top {}, on top {top}", s.top())
            })?;
            let room = bm + 1 + words + 1 < MAX_OFFSET;
            let d = s.reserve_data(idx, words * 8);
            ensure(d.is_some() == room, || {
                format!("reserve of {words} words on top {}: {d:?}", bm + 1)
            })?;
            if let Some(d) = d {
                ensure(
                    d == DataRef {
                        start: bm + 1,
                        words,
                    },
                    || format!("reserved {d:?}"),
                )?;
                ensure(s.retrieve_data(idx, 0) == Some(d), || {
                    "reserved data not found".into()
                })?;
            }
            s.set_bitmap(bm, 0x8001);
            let f = s.top_frame().ok_or("pushed frame not found")?;
            ensure(
                (
                    f.start, f.ret, f.func, f.calltime, f.retp, f.bitmap, f.building,
                ) == (top, 0x5555, 0x6666, 0x7777, 0x8888, 0x8001, false),
                || format!("pushed {f:?}"),
            )?;
            writes_only(&image, s, top, top..s.top(), "push")?;
            s.pop(&f);
            ensure(s.top() == top, || format!("pop left top {}", s.top()))?;
        }
        Err(_) => ensure(!fits, || format!("push on top {top} refused"))?,
    }

    Ok(())
}

/// A reservation on whatever is on top (an entry callback on a corrupt frame).
fn check_reserve_on_top(s: &Stack, p: &ImageParams) -> Verdict {
    let top = p.top;
    let (idx, words) = (p.idx, p.push_words);
    let image = snapshot(s);
    if let Some(d) = s.reserve_data(idx, words * 8) {
        ensure(
            top >= 1 && d == DataRef { start: top, words } && top + words + 1 < MAX_OFFSET,
            || format!("reserved {d:?} on top {top}"),
        )?;
        writes_only(&image, s, top, top..top + words + 1, "reservation")?;
    }
    Ok(())
}

/// `fgraph_find` on the image read as upstream's function_graph stack.
fn check_fgraph_find(image: &[usize], p: &ImageParams) -> Verdict {
    let words = p.fg_words;
    let bad = std::cell::Cell::new(None);
    let read = |i: usize| {
        if i >= words {
            bad.set(Some(i));
            return 0;
        }
        image[i]
    };
    let retp = image[p.fg_retp_at];
    let skip = |r: usize| p.fg_skip_mod > 1 && r.is_multiple_of(p.fg_skip_mod);
    let (fw, rw, pw) = (p.fg_frame_words, p.fg_ret_word, p.fg_retp_word);
    let found = fgraph_find(read, p.top, words, fw, rw, pw, retp, skip);
    ensure(bad.get().is_none(), || {
        format!("fgraph_find read word {:?} of {words}", bad.get())
    })?;
    if let Some(r) = found {
        ensure(fw > 0 && rw < fw && pw < fw && r >= rw, || {
            format!("found {r} with {fw}/{rw}/{pw}")
        })?;
        let start = r - rw;
        ensure(start + fw <= words && start < p.top.min(words), || {
            format!("found frame {start} past {words} words, top {}", p.top)
        })?;
        ensure(image[start + pw] == retp && !skip(r), || {
            format!("found {r}: not slot {retp:#x}")
        })?;
    }
    Ok(())
}

fn check_image(src: &mut Bytes<'_>) -> Result<&'static str, String> {
    let p = ImageParams::decode(src);
    let s = Box::new(Stack::new());
    let mut i = 0;
    while !src.is_empty() && i < W {
        s.set_word(i, image_word(src));
        i += 1;
    }
    s.truncate(p.top);
    let image = snapshot(&s);
    let frames = check_readers(&s, &image, p.top, p.idx)?;
    check_pushes(&s, &image, &p)?;
    check_fgraph_find(&image, &p)?;
    Ok(match frames {
        0 => "image: no frame",
        1 => "image: one frame",
        _ => "image: frames",
    })
}

// ---------------------------------------------------------------------------------------------
// Operation sequences against a model.

/// What the entry and return paths do to a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Push {
        ret: usize,
        func: usize,
        calltime: u64,
        retp: usize,
    },
    PushWithData {
        ret: usize,
        idx: usize,
        words: usize,
    },
    /// `bytes` 0 and above `MAX_DATA_BYTES`, `idx` 16: refused.
    Reserve {
        idx: usize,
        bytes: usize,
    },
    SetBitmap {
        bits: u16,
    },
    SetBuilding,
    MarkSeen {
        idx: usize,
    },
    SetMarks {
        marks: usize,
    },
    SetCalltime {
        calltime: u64,
        at_bm: bool,
    },
    Pop,
    Unpush,
    /// Truncate to before the top frame's last reservation (an entry callback that declined).
    Decline,
    /// Drop frames above a frame (calls that will never return through us).
    DropFrames {
        n: usize,
    },
    TaskVar {
        idx: usize,
        value: usize,
    },
    ClearFrames,
}

const OPS: usize = 14;

impl Op {
    fn decode(src: &mut impl Source) -> Op {
        match src.below(OPS) {
            0 => Op::Push {
                ret: src.below(1 << 16),
                func: src.below(1 << 16),
                calltime: src.below(1 << 16) as u64,
                retp: src.below(1 << 16),
            },
            1 => Op::PushWithData {
                ret: src.below(1 << 16),
                idx: src.below(ARRAY_SIZE),
                words: 1 + src.below(MAX_DATA_WORDS),
            },
            2 => Op::Reserve {
                idx: src.below(ARRAY_SIZE + 1),
                bytes: src.below(MAX_DATA_BYTES + 9),
            },
            3 => Op::SetBitmap {
                bits: src.below(1 << 16) as u16,
            },
            4 => Op::SetBuilding,
            5 => Op::MarkSeen {
                idx: src.below(ARRAY_SIZE),
            },
            6 => Op::SetMarks {
                marks: [0, mark::HANDED, mark::PENDING, mark::ALL][src.below(4)],
            },
            7 => Op::SetCalltime {
                calltime: src.next(),
                at_bm: src.below(2) == 1,
            },
            8 => Op::Pop,
            9 => Op::Unpush,
            10 => Op::Decline,
            11 => Op::DropFrames { n: src.below(256) },
            12 => Op::TaskVar {
                idx: src.below(ARRAY_SIZE),
                value: src.below(1 << 16),
            },
            _ => Op::ClearFrames,
        }
    }

    /// The bytes [`Op::decode`] reads as this operation.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let op = |out: &mut Vec<u8>, n| Bytes::encode_below(out, OPS, n);
        let b16 = |out: &mut Vec<u8>, v: usize| Bytes::encode_below(out, 1 << 16, v);
        match *self {
            Op::Push {
                ret,
                func,
                calltime,
                retp,
            } => {
                op(out, 0);
                for v in [ret, func, calltime as usize, retp] {
                    b16(out, v);
                }
            }
            Op::PushWithData { ret, idx, words } => {
                op(out, 1);
                b16(out, ret);
                Bytes::encode_below(out, ARRAY_SIZE, idx);
                Bytes::encode_below(out, MAX_DATA_WORDS, words - 1);
            }
            Op::Reserve { idx, bytes } => {
                op(out, 2);
                Bytes::encode_below(out, ARRAY_SIZE + 1, idx);
                Bytes::encode_below(out, MAX_DATA_BYTES + 9, bytes);
            }
            Op::SetBitmap { bits } => {
                op(out, 3);
                b16(out, bits.into());
            }
            Op::SetBuilding => op(out, 4),
            Op::MarkSeen { idx } => {
                op(out, 5);
                Bytes::encode_below(out, ARRAY_SIZE, idx);
            }
            Op::SetMarks { marks } => {
                op(out, 6);
                let i = [0, mark::HANDED, mark::PENDING, mark::ALL]
                    .iter()
                    .position(|&m| m == marks);
                Bytes::encode_below(out, 4, i.expect("marks"));
            }
            Op::SetCalltime { calltime, at_bm } => {
                op(out, 7);
                Bytes::encode_next(out, calltime);
                Bytes::encode_below(out, 2, at_bm as usize);
            }
            Op::Pop => op(out, 8),
            Op::Unpush => op(out, 9),
            Op::Decline => op(out, 10),
            Op::DropFrames { n } => {
                op(out, 11);
                Bytes::encode_below(out, 256, n);
            }
            Op::TaskVar { idx, value } => {
                op(out, 12);
                Bytes::encode_below(out, ARRAY_SIZE, idx);
                b16(out, value);
            }
            Op::ClearFrames => op(out, 13),
        }
    }
}

/// An operation-sequence seed: the mode byte, then the operations.
pub fn encode_ops(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    Bytes::encode_below(&mut out, MODES, 1);
    for op in ops {
        op.encode(&mut out);
    }
    out
}

#[derive(Clone, Debug)]
struct MData {
    idx: usize,
    start: usize,
    words: usize,
    /// What its words hold (`None`: not written yet, whatever was there).
    fill: Option<usize>,
}

#[derive(Clone, Debug)]
struct MFrame {
    start: usize,
    ret: usize,
    func: usize,
    calltime: u64,
    retp: usize,
    /// `None` while the frame is being built.
    bitmap: Option<u16>,
    seen: u16,
    marks: usize,
    data: Vec<MData>,
}

impl MFrame {
    fn frame(&self) -> Frame {
        Frame {
            start: self.start,
            ret: self.ret,
            func: self.func,
            calltime: self.calltime,
            retp: self.retp,
            bitmap: self.bitmap.unwrap_or(0),
            seen: self.seen,
            marks: self.marks,
            building: self.bitmap.is_none(),
        }
    }

    fn bm(&self) -> usize {
        self.start + FRAME_WORDS
    }

    /// The latest data `idx` reserved here.
    fn data_of(&self, idx: usize) -> Option<DataRef> {
        self.data
            .iter()
            .rev()
            .find(|d| d.idx == idx)
            .map(|d| DataRef {
                start: d.start,
                words: d.words,
            })
    }
}

/// What the stack should hold.
#[derive(Default)]
struct Model {
    frames: Vec<MFrame>,
    top: usize,
    overrun: usize,
    task_vars: [usize; ARRAY_SIZE],
}

/// Runs `op` on the stack and the model.
fn apply(s: &Stack, m: &mut Model, op: Op, fill: usize) -> Verdict {
    match op {
        Op::Push {
            ret,
            func,
            calltime,
            retp,
        } => apply_push(s, m, [ret, func, calltime as usize, retp]),
        Op::PushWithData { ret, idx, words } => apply_push_with_data(s, m, ret, idx, words, fill),
        Op::Reserve { idx, bytes } => apply_reserve(s, m, idx, bytes, fill),
        Op::Pop => apply_pop(s, m),
        op => {
            apply_edit(s, m, op);
            Ok(())
        }
    }
}

impl MFrame {
    /// A frame pushed at `start` with `[ret, func, calltime, retp]`, still being built.
    fn building(start: usize, [ret, func, calltime, retp]: [usize; 4], seen: u16) -> Self {
        MFrame {
            start,
            ret,
            func,
            calltime: calltime as u64,
            retp,
            bitmap: None,
            seen,
            marks: 0,
            data: Vec::new(),
        }
    }
}

impl Model {
    /// A push the model has no room for: the stack must have refused it (`refused`), and
    /// counted an overrun.
    fn overran(&mut self, refused: bool, what: impl FnOnce() -> String) -> Verdict {
        ensure(refused, what)?;
        self.overrun += 1;
        Ok(())
    }
}

/// Writes `fill`, `fill + 1`... into the words of `d`, reserved by ops `idx`: what the model
/// then remembers of them.
fn fill_data(s: &Stack, idx: usize, d: DataRef, fill: usize) -> MData {
    for k in 0..d.words {
        s.set_word(d.start + k, fill + k);
    }
    MData {
        idx,
        start: d.start,
        words: d.words,
        fill: Some(fill),
    }
}

/// `push` of a frame with `[ret, func, calltime, retp]`.
fn apply_push(s: &Stack, m: &mut Model, words: [usize; 4]) -> Verdict {
    let top = m.top;
    let [ret, func, calltime, retp] = words;
    let r = s.push(ret, func, calltime as u64, retp);
    if top + FRAME_WORDS + 1 >= MAX_OFFSET {
        return m.overran(r.is_err(), || format!("push on {top}: {r:?}"));
    }
    ensure(r == Ok(top + FRAME_WORDS), || {
        format!("push on {top}: {r:?}")
    })?;
    m.frames.push(MFrame::building(top, words, 0));
    m.top = top + FRAME_WORDS + 1;
    Ok(())
}

/// `push_with_data` of a frame for `ret` with `words` words of data for ops `idx`, filled
/// from `fill`.
fn apply_push_with_data(
    s: &Stack,
    m: &mut Model,
    ret: usize,
    idx: usize,
    words: usize,
    fill: usize,
) -> Verdict {
    let top = m.top;
    let r = s.push_with_data(ret, !ret, 7, ret + 1, idx, words);
    let new_top = top + FRAME_WORDS + 2 + words;
    if new_top >= MAX_OFFSET {
        return m.overran(r.is_err(), || format!("push_with_data on {top}: {r:?}"));
    }
    let d = DataRef {
        start: top + FRAME_WORDS + 1,
        words,
    };
    ensure(r == Ok((top + FRAME_WORDS, d)), || {
        format!("push_with_data on {top}: {r:?}")
    })?;
    let mut f = MFrame::building(top, [ret, !ret, 7, ret + 1], 1 << idx);
    f.data.push(fill_data(s, idx, d, fill));
    m.frames.push(f);
    m.top = new_top;
    Ok(())
}

/// `reserve_data` of `bytes` for ops `idx` on the top frame, filled from `fill`.
fn apply_reserve(s: &Stack, m: &mut Model, idx: usize, bytes: usize, fill: usize) -> Verdict {
    let top = m.top;
    let r = s.reserve_data(idx, bytes);
    let words = bytes.div_ceil(8);
    let ok = (1..=MAX_DATA_BYTES).contains(&bytes)
        && idx < ARRAY_SIZE
        && m.frames
            .last()
            .is_some_and(|f| f.data.last().is_none_or(|d| d.idx != idx))
        && top + words + 1 < MAX_OFFSET;
    let what = || format!("reserve {bytes} for {idx} on {top}: {r:?}");
    if !ok {
        return ensure(r.is_none(), what);
    }
    let d = DataRef { start: top, words };
    ensure(r == Some(d), what)?;
    let data = fill_data(s, idx, d, fill);
    if let Some(f) = m.frames.last_mut() {
        f.data.push(data);
    }
    m.top = top + words + 1;
    Ok(())
}

/// `pop` of the top frame, which must be the model's.
fn apply_pop(s: &Stack, m: &mut Model) -> Verdict {
    if let Some(f) = m.frames.pop() {
        let got = s.top_frame();
        ensure(got == Some(f.frame()), || {
            format!("popping {got:?}, model {f:?}")
        })?;
        s.pop(&f.frame());
        m.top = f.start;
    }
    Ok(())
}

/// The operations that change frames already on the stack, or drop them: the model follows;
/// [`compare`] checks the result.
fn apply_edit(s: &Stack, m: &mut Model, op: Op) {
    let top = m.top;
    match op {
        Op::SetBitmap { bits } => {
            if let Some(f) = m.frames.last_mut() {
                s.set_bitmap(f.bm(), bits);
                f.bitmap = Some(bits);
            }
        }
        Op::SetBuilding => {
            if let Some(f) = m.frames.last_mut() {
                s.set_building(f.bm());
                f.bitmap = None;
            }
        }
        Op::MarkSeen { idx } => {
            if let Some(f) = m.frames.last_mut() {
                s.mark_seen(f.bm(), idx);
                f.seen |= 1 << idx;
            }
        }
        Op::SetMarks { marks } => {
            if let Some(f) = m.frames.last_mut() {
                s.set_marks(&f.frame(), marks);
                f.marks = marks;
            }
        }
        Op::SetCalltime { calltime, at_bm } => {
            if let Some(f) = m.frames.last_mut() {
                if at_bm {
                    s.set_calltime_at(f.bm(), calltime);
                } else {
                    s.set_calltime(&f.frame(), calltime);
                }
                f.calltime = calltime;
            }
        }
        Op::Unpush => {
            if let Some(f) = m.frames.pop() {
                s.unpush(f.bm());
                m.top = f.start;
            }
        }
        Op::Decline => {
            if let Some(f) = m.frames.last_mut() {
                if let Some(d) = f.data.pop() {
                    s.truncate(d.start);
                    m.top = d.start;
                }
            }
        }
        Op::DropFrames { n } => {
            let n = n % (m.frames.len() + 1);
            let keep = m.frames.len() - n;
            let new_top = m.frames.get(keep).map_or(top, |f| f.start);
            s.drop_frames(new_top, n);
            m.frames.truncate(keep);
            m.top = new_top;
        }
        Op::TaskVar { idx, value } => {
            s.task_var(idx).store(value, Relaxed);
            m.task_vars[idx] = value;
        }
        Op::ClearFrames => {
            s.clear_frames();
            m.frames.clear();
            m.top = 0;
        }
        Op::Push { .. } | Op::PushWithData { .. } | Op::Reserve { .. } | Op::Pop => {}
    }
}

/// The stack holds what the model says.
fn compare(s: &Stack, m: &Model, deep: bool) -> Verdict {
    ensure(
        s.top() == m.top && s.depth() == m.frames.len() && s.overrun() == m.overrun,
        || {
            format!(
                "top {} depth {} overrun {}, model {} {} {}",
                s.top(),
                s.depth(),
                s.overrun(),
                m.top,
                m.frames.len(),
                m.overrun
            )
        },
    )?;
    let got: Vec<Frame> = s.frames().take(W).collect();
    let want: Vec<Frame> = m.frames.iter().rev().map(MFrame::frame).collect();
    ensure(got == want, || format!("frames {got:?}, model {want:?}"))?;
    for idx in 0..ARRAY_SIZE {
        let top_data = m
            .frames
            .last()
            .and_then(|f| f.data.last())
            .filter(|d| d.idx == idx);
        let want = top_data.map(|d| DataRef {
            start: d.start,
            words: d.words,
        });
        ensure(s.data_on_top(idx) == want, || {
            format!("data on top of {idx}: {:?}", s.data_on_top(idx))
        })?;
        // The return path finds it from the top word it read with the top frame.
        let head = s.top_frame_head().and_then(|(_, h)| h.data(idx));
        ensure(head == want, || format!("head data of {idx}: {head:?}"))?;
        // The exact layout only when the top frame holds that one reservation alone.
        let alone = m
            .frames
            .last()
            .filter(|f| f.data.len() == 1 && f.data[0].idx == idx)
            .map(|f| DataRef {
                start: f.data[0].start,
                words: f.data[0].words,
            });
        let exact = want.and_then(|w| {
            s.top_frame_head()
                .and_then(|(_, h)| h.data_exact(idx, w.words))
        });
        ensure(exact == alone, || {
            format!("exact data of {idx}: {exact:?}, alone {alone:?}")
        })?;
        let depths = if deep { m.frames.len() + 1 } else { 1 };
        for depth in 0..depths {
            let want = m
                .frames
                .iter()
                .rev()
                .nth(depth)
                .and_then(|f| f.data_of(idx));
            let got = s.retrieve_data(idx, depth);
            ensure(got == want, || {
                format!("data of {idx} at depth {depth}: {got:?}, model {want:?}")
            })?;
        }
        ensure(s.task_var(idx).load(Relaxed) == m.task_vars[idx], || {
            format!("task var {idx}")
        })?;
    }
    for d in m.frames.iter().flat_map(|f| &f.data) {
        if let Some(fill) = d.fill {
            for k in 0..d.words {
                ensure(s.word(d.start + k) == fill + k, || {
                    format!("data {d:?} word {k} overwritten")
                })?;
            }
        }
    }
    // Frames stay below MAX_OFFSET: the words up to the task variables are never written.
    for i in MAX_OFFSET..W - ARRAY_SIZE {
        ensure(s.word(i) == 0, || {
            format!("word {i} at or above MAX_OFFSET written")
        })?;
    }
    Ok(())
}

fn check_ops(src: &mut Bytes<'_>) -> Result<&'static str, String> {
    let s = Box::new(Stack::new());
    let mut m = Model::default();
    let mut n = 0usize;
    let mut deepest = 0;
    while !src.is_empty() {
        let op = Op::decode(src);
        // Data words get values no other operation writes.
        apply(&s, &mut m, op, 0x1_0000 * (n + 1)).map_err(|v| format!("op {n} {op:?}: {v}"))?;
        compare(&s, &m, false).map_err(|v| format!("after op {n} {op:?}: {v}"))?;
        deepest = deepest.max(m.frames.len());
        n += 1;
    }
    compare(&s, &m, true).map_err(|v| format!("at the end: {v}"))?;
    Ok(match (deepest, m.overrun) {
        (0, _) => "ops: no frame",
        (_, 0) if deepest < 8 => "ops: shallow",
        (_, 0) => "ops: deep",
        _ => "ops: overrun",
    })
}

/// Most operations and corruptions of a corrupted-stack input.
const CORRUPT_OPS: usize = 64;
const CORRUPT_WORDS: usize = 8;

/// A stack built by operations, then a few words overwritten, mostly near the top where the
/// readers start (a data header claiming more than its frame, an offset past the frame...), and
/// perhaps `top` moved: the readers' and pushes' promises hold on it as on any image.
fn check_corrupted(src: &mut Bytes<'_>) -> Result<&'static str, String> {
    let s = Box::new(Stack::new());
    let mut m = Model::default();
    for n in 0..src.below(CORRUPT_OPS) {
        let op = Op::decode(src);
        apply(&s, &mut m, op, 0x1_0000 * (n + 1)).map_err(|v| format!("op {n} {op:?}: {v}"))?;
    }
    for _ in 0..src.below(CORRUPT_WORDS + 1) {
        let near_top = src.below(4) != 0;
        let at = if near_top && m.top > 0 {
            m.top - 1 - src.below(m.top.min(64))
        } else {
            src.below(W)
        };
        s.set_word(at, image_word(src));
    }
    let top = match src.below(4) {
        0 | 1 => m.top,
        2 => m.top.saturating_sub(1 + src.below(8)),
        _ => m.top + 1 + src.below(8),
    };
    let p = ImageParams::decode_rest(src, top, false);
    s.truncate(top);
    let image = snapshot(&s);
    let frames = check_readers(&s, &image, top, p.idx)?;
    check_pushes(&s, &image, &p)?;
    check_fgraph_find(&image, &p)?;
    Ok(if frames < m.frames.len() {
        "corrupted: walk cut short"
    } else {
        "corrupted: walk whole"
    })
}

/// A corrupted-stack input: `ops`, then `words` written at their indexes, `top` unchanged.
pub fn encode_corrupted(ops: &[Op], words: &[(usize, usize)], p: &ImageParams) -> Vec<u8> {
    let mut out = Vec::new();
    Bytes::encode_below(&mut out, MODES, 2);
    Bytes::encode_below(&mut out, CORRUPT_OPS, ops.len());
    for op in ops {
        op.encode(&mut out);
    }
    Bytes::encode_below(&mut out, CORRUPT_WORDS + 1, words.len());
    for &(at, w) in words {
        Bytes::encode_below(&mut out, 4, 0);
        Bytes::encode_below(&mut out, W, at);
        Bytes::encode_below(&mut out, WORD_KINDS, 0);
        Bytes::encode_next(&mut out, w as u64);
    }
    Bytes::encode_below(&mut out, 4, 0);
    let mut rest = p.encode(&[]);
    // The parameters after `top`: drop the image's mode, top kind and top.
    rest.drain(..1 + 1 + Bytes::width(W + 24));
    out.extend(rest);
    out
}

/// Operation sequences like the shadow stack's own tests, for seeds.
pub fn seed_sequences() -> Vec<Vec<Op>> {
    let push = |r: usize| Op::Push {
        ret: r,
        func: r + 1,
        calltime: 42,
        retp: 0x7000 + r,
    };
    let mut seqs = Vec::new();
    // push_pop_restores_everything
    seqs.push(vec![
        push(0x1111),
        Op::SetBitmap { bits: 1 << 5 },
        Op::MarkSeen { idx: 5 },
        Op::MarkSeen { idx: 15 },
        Op::Pop,
    ]);
    // push_with_data_equals_push_then_reserve
    for (idx, words) in [(0, 1), (3, 2), (15, MAX_DATA_WORDS)] {
        seqs.push(vec![
            push(0x77),
            push(0x1111),
            Op::MarkSeen { idx },
            Op::Reserve {
                idx,
                bytes: words * 8,
            },
            Op::PushWithData {
                ret: 0x1111,
                idx,
                words,
            },
            Op::SetBitmap { bits: 1 << idx },
            Op::SetCalltime {
                calltime: 77,
                at_bm: true,
            },
            Op::Unpush,
        ]);
    }
    // nested_frames_unwind_in_order, several ops' data, parent data by depth
    let mut nested = Vec::new();
    for i in 0..10 {
        nested.push(push(0x1000 + i));
        nested.push(Op::SetBitmap { bits: 1 });
        if i % 3 == 0 {
            nested.push(Op::Reserve {
                idx: 2,
                bytes: 8 * (i + 1),
            });
        }
    }
    nested.extend([Op::Pop, Op::Pop, Op::DropFrames { n: 3 }, Op::Pop]);
    seqs.push(nested);
    let mut several = vec![push(1)];
    for (idx, bytes) in [(0, 8), (1, 16), (5, 3), (9, 256), (15, 24)] {
        several.push(Op::Reserve { idx, bytes });
    }
    several.extend([
        Op::SetBitmap {
            bits: 0b1000_0010_0010_0011,
        },
        push(9),
        Op::SetBitmap { bits: 1 },
        Op::Reserve { idx: 5, bytes: 40 },
        Op::Pop,
        Op::Reserve { idx: 15, bytes: 8 },
        Op::Reserve { idx: 3, bytes: 0 },
        Op::Reserve { idx: 16, bytes: 8 },
        Op::Reserve {
            idx: 4,
            bytes: MAX_DATA_BYTES + 1,
        },
    ]);
    seqs.push(several);
    // declined_entry_discards_its_data, teardown marks, task variables
    seqs.push(vec![
        push(0),
        Op::Reserve { idx: 1, bytes: 16 },
        Op::Reserve { idx: 2, bytes: 16 },
        Op::Decline,
        Op::SetBitmap { bits: 1 << 1 },
        Op::SetMarks {
            marks: mark::PENDING,
        },
        Op::SetMarks {
            marks: mark::HANDED,
        },
        Op::MarkSeen { idx: 2 },
        Op::SetBuilding,
        Op::TaskVar { idx: 4, value: 44 },
        Op::ClearFrames,
        Op::Reserve { idx: 0, bytes: 8 },
    ]);
    // deep_recursion_overruns_without_corruption, push_with_data_refuses_when_full
    let mut deep: Vec<Op> = (0..90)
        .flat_map(|i| [push(i), Op::SetBitmap { bits: 1 }])
        .collect();
    deep.extend([
        Op::Reserve { idx: 3, bytes: 8 },
        Op::PushWithData {
            ret: 1,
            idx: 0,
            words: 4,
        },
    ]);
    deep.extend((0..5).map(|_| Op::Pop));
    deep.extend((0..20).map(|i| Op::PushWithData {
        ret: i,
        idx: i % 16,
        words: 1 + i % 32,
    }));
    seqs.push(deep);
    seqs
}

/// Images of the stacks those sequences build, with parameters around their frames, for seeds.
pub fn seed_images() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (n, seq) in seed_sequences().iter().enumerate() {
        let s = Box::new(Stack::new());
        let mut m = Model::default();
        for (i, &op) in seq.iter().enumerate() {
            if i + 2 == seq.len() {
                break; // stop with frames on the stack
            }
            apply(&s, &mut m, op, 0x1_0000 * (i + 1)).expect("seed sequence");
        }
        let top = m.top;
        let p = ImageParams {
            top,
            wild_top: false,
            idx: [0, 2, 5, 15][n % 4],
            push_words: 1 + n % MAX_DATA_WORDS,
            fg_words: W,
            fg_frame_words: FRAME_WORDS,
            fg_ret_word: 0,
            fg_retp_word: 3,
            fg_retp_at: m.frames.first().map_or(0, |f| f.start + 3),
            fg_skip_mod: 1 + n % 4,
        };
        let words: Vec<usize> = (0..top).map(|i| s.word(i)).collect();
        out.push(p.encode(&words));
    }
    out
}

/// Stacks the seed sequences build, corrupted where the readers look first: the top word
/// made a data header that claims more words than its frame holds, or an offset past the
/// stack's start; the top frame's bitmap word made a word of no type; a frame start's `ret`.
pub fn seed_corrupted() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (n, seq) in seed_sequences().iter().enumerate() {
        let ops = &seq[..seq.len().saturating_sub(2).min(CORRUPT_OPS - 1)];
        let s = Box::new(Stack::new());
        let mut m = Model::default();
        for (i, &op) in ops.iter().enumerate() {
            apply(&s, &mut m, op, 0x1_0000 * (i + 1)).expect("seed sequence");
        }
        let Some(f) = m.frames.last() else { continue };
        let top = m.top;
        let idx = f.data.last().map_or(n % ARRAY_SIZE, |d| d.idx);
        let p = ImageParams {
            top,
            idx,
            push_words: 1 + n % MAX_DATA_WORDS,
            fg_words: W,
            fg_frame_words: FRAME_WORDS,
            fg_retp_word: 3,
            fg_retp_at: f.start + 3,
            fg_skip_mod: 1,
            ..ImageParams::default()
        };
        let off = top - 1 - f.start;
        let corruptions = [
            (top - 1, word::data(idx, MAX_DATA_WORDS, off)),
            (top - 1, word::data(idx, 1, top + 3)),
            (f.start + FRAME_WORDS, 3 << 10 | FRAME_WORDS),
            (f.start, 0xdead),
        ];
        for c in corruptions {
            out.push(encode_corrupted(ops, &[c], &p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::Rng;

    #[test]
    fn seeds_keep_promises() {
        for seq in seed_sequences() {
            let bytes = encode_ops(&seq);
            // The encoding reads back as the same operations.
            let mut src = Bytes(&bytes[1..]);
            let back: Vec<Op> =
                std::iter::from_fn(|| (!src.is_empty()).then(|| Op::decode(&mut src))).collect();
            assert_eq!(back, seq);
            check(&bytes).unwrap_or_else(|e| panic!("{seq:?}: {e}"));
        }
        for img in seed_images() {
            check(&img).unwrap_or_else(|e| panic!("image: {e}"));
        }
        for c in seed_corrupted() {
            check(&c).unwrap_or_else(|e| panic!("corrupted: {e}"));
        }
    }

    /// Random images and sequences: a short deterministic run in `cargo test`.
    #[test]
    fn short_run() {
        let mut rng = Rng(3);
        for _ in 0..3000 {
            let len = rng.below(1200);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            check(&bytes).unwrap_or_else(|e| panic!("{bytes:?}: {e}"));
        }
    }
}
