// SPDX-License-Identifier: GPL-2.0

//! Operation sequences, run on a stack and on a model of it, compared after each operation.

use super::*;

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
    pub(super) fn decode(src: &mut impl Source) -> Op {
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
pub(super) struct MData {
    pub(super) idx: usize,
    pub(super) start: usize,
    pub(super) words: usize,
    /// What its words hold (`None`: not written yet, whatever was there).
    fill: Option<usize>,
}

#[derive(Clone, Debug)]
pub(super) struct MFrame {
    pub(super) start: usize,
    pub(super) ret: usize,
    pub(super) func: usize,
    pub(super) calltime: u64,
    pub(super) retp: usize,
    /// `None` while the frame is being built.
    pub(super) bitmap: Option<u16>,
    seen: u16,
    marks: usize,
    pub(super) data: Vec<MData>,
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
            hub: false,
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
pub(super) struct Model {
    pub(super) frames: Vec<MFrame>,
    pub(super) top: usize,
    pub(super) overrun: usize,
    task_vars: [usize; ARRAY_SIZE],
}

/// Runs `op` on the stack and the model.
pub(super) fn apply(s: &Stack, m: &mut Model, op: Op, fill: usize) -> Verdict {
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
    let size = DataSize::new(words).expect("the fuzzer's sizes are 1 to 32 words");
    let r = s.push_with_data(ret, !ret, 7, ret + 1, IndexWords::new(idx), size);
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
        compare_data(s, m, idx, deep)?;
    }
    compare_words(s, m)
}

/// The data reservations of array index `idx`, as every reader finds them (at the top, from
/// the top frame's head, at each depth when `deep`), and its task variable.
fn compare_data(s: &Stack, m: &Model, idx: usize, deep: bool) -> Verdict {
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
            .and_then(|(_, h)| DataSize::new(w.words).and_then(|z| h.data_exact(idx, z)))
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
    Ok(())
}

/// The words the model knows: data filled with known values is intact, nothing written at or
/// above MAX_OFFSET.
fn compare_words(s: &Stack, m: &Model) -> Verdict {
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

pub(super) fn check_ops(src: &mut Bytes<'_>) -> Result<&'static str, String> {
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
