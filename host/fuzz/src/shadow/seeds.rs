// SPDX-License-Identifier: GPL-2.0

//! Seeds: operation sequences like the shadow stack's own tests, images and corrupted stacks.

use super::*;

/// Operation sequences like the shadow stack's own tests, for seeds.
pub fn seed_sequences() -> Vec<Vec<Op>> {
    let mut seqs = vec![push_pop()];
    seqs.extend(push_with_data());
    seqs.push(nested());
    seqs.push(several());
    seqs.push(declined());
    seqs.push(deep());
    seqs
}

/// A push of a frame returning to `r`.
fn push(r: usize) -> Op {
    Op::Push {
        ret: r,
        func: r + 1,
        calltime: 42,
        retp: 0x7000 + r,
    }
}

/// push_pop_restores_everything
fn push_pop() -> Vec<Op> {
    vec![
        push(0x1111),
        Op::SetBitmap { bits: 1 << 5 },
        Op::MarkSeen { idx: 5 },
        Op::MarkSeen { idx: 15 },
        Op::Pop,
    ]
}

/// push_with_data_equals_push_then_reserve
fn push_with_data() -> Vec<Vec<Op>> {
    [(0, 1), (3, 2), (15, MAX_DATA_WORDS)]
        .into_iter()
        .map(|(idx, words)| {
            vec![
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
            ]
        })
        .collect()
}

/// nested_frames_unwind_in_order
fn nested() -> Vec<Op> {
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
    nested
}

/// Several ops' data, parent data by depth.
fn several() -> Vec<Op> {
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
    several
}

/// declined_entry_discards_its_data, teardown marks, task variables
fn declined() -> Vec<Op> {
    vec![
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
    ]
}

/// deep_recursion_overruns_without_corruption, push_with_data_refuses_when_full
fn deep() -> Vec<Op> {
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
    deep
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
