// SPDX-License-Identifier: GPL-2.0

//! Images: corrupt stacks, any `top` and any words; the readers, pushes and `fgraph_find` on them.

use super::*;

// ---------------------------------------------------------------------------------------------
// Images: corrupt stacks.

/// How an image's words are drawn, one choice per word.
pub(super) const WORD_KINDS: usize = 5;

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
    pub(super) fn decode_rest(src: &mut impl Source, top: usize, wild_top: bool) -> Self {
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
pub(super) fn image_word(src: &mut impl Source) -> usize {
    match src.below(WORD_KINDS) {
        0 => src.next() as usize,
        1 => word::data(src.below(16), 1 + src.below(32), src.below(1024)),
        2 => word::bitmap(src.below(1 << 16) as u16, src.below(1024)),
        3 => word::reserved(src.below(1024)),
        _ => src.below(1 << 12),
    }
}

pub(super) fn snapshot(s: &Stack) -> Vec<usize> {
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
        hub: seen & ufgraph_pure::fgraph::shadow::HUB_SEEN != 0,
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
pub(super) fn check_readers(
    s: &Stack,
    image: &[usize],
    top: usize,
    idx: usize,
) -> Result<usize, String> {
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
pub(super) fn check_pushes(s: &Stack, image: &[usize], p: &ImageParams) -> Verdict {
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
    let size = DataSize::new(words).expect("the fuzzer's sizes are 1 to 32 words");
    match s.push_with_data(0x1111, 0x2222, 0x3333, 0x4444, IndexWords::new(idx), size) {
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
                hub: false,
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
pub(super) fn check_fgraph_find(image: &[usize], p: &ImageParams) -> Verdict {
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

pub(super) fn check_image(src: &mut Bytes<'_>) -> Result<&'static str, String> {
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
