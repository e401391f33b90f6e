// SPDX-License-Identifier: GPL-2.0

//! Corrupted stacks: built by operations, then a few words overwritten.

use super::*;

/// Most operations and corruptions of a corrupted-stack input.
pub(super) const CORRUPT_OPS: usize = 64;
const CORRUPT_WORDS: usize = 8;

/// A stack built by operations, then a few words overwritten, mostly near the top where the
/// readers start (a data header claiming more than its frame, an offset past the frame...), and
/// perhaps `top` moved: the readers' and pushes' promises hold on it as on any image.
pub(super) fn check_corrupted(src: &mut Bytes<'_>) -> Result<&'static str, String> {
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
