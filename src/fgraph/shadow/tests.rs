// SPDX-License-Identifier: GPL-2.0

//! Tests of the shadow stack: encoding, push and pop, data, overruns and corruption.

use super::*;

/// A data size of `words` (1..=32) words.
fn sz(words: usize) -> DataSize {
    DataSize::new(words).expect("a size of 1 to 32 words")
}

/// `Head::data_exact` told a size in words: `None` for a size no `DataSize` has (0, or above
/// 32), as no data can be.
trait ExactWords {
    fn data_exact_w(&self, idx: usize, words: usize) -> Option<DataRef>;
}

impl ExactWords for Head {
    fn data_exact_w(&self, idx: usize, words: usize) -> Option<DataRef> {
        DataSize::new(words).and_then(|z| self.data_exact(idx, z))
    }
}

/// A size's top word is what `word::data` encodes for it, with any index, and an index's words
/// (its one-ops bitmap word, its data header field) what `word::bitmap` and `word::data` do.
#[test]
fn precomputed_words_match_the_encoding() {
    assert_eq!(DataSize::new(0), None);
    assert_eq!(DataSize::new(MAX_DATA_WORDS + 1), None);
    for words in 1..=MAX_DATA_WORDS {
        let z = sz(words);
        assert_eq!(z.words(), words);
        for idx in 0..ARRAY_SIZE {
            assert_eq!(z.head(idx), word::data(idx, words, FRAME_WORDS + 1 + words));
        }
    }
    for idx in 0..ARRAY_SIZE {
        assert_eq!(
            word::bitmap_one(idx, FRAME_WORDS),
            word::bitmap(1 << idx, FRAME_WORDS)
        );
        let iw = IndexWords::new(idx);
        assert_eq!(iw.bitmap(), word::bitmap(1 << idx, FRAME_WORDS));
        assert_eq!(IndexWords::from_words(iw.to_words()), iw);
        for words in 1..=MAX_DATA_WORDS {
            assert_eq!(sz(words).head_of(&iw), sz(words).head(idx));
        }
    }
}

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
            .push_with_data(0x1111, 0xf00, 42, 0x6000, IndexWords::new(idx), sz(words))
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
        assert_eq!(b.top_frame_head().unwrap().1.data(idx), Some(d2));
        assert_eq!(b.top_frame_head().unwrap().1.data((idx + 1) % 16), None);
        // The one-step push's layout is recognised whole, and nothing else is.
        let head = b.top_frame_head().unwrap().1;
        assert_eq!(head.data_exact_w(idx, words), Some(d2));
        assert_eq!(head.data_exact_w(idx, words + 1), None);
        assert_eq!(head.data_exact_w((idx + 1) % 16, words), None);
        assert_eq!(head.data_exact_w(idx, 0), None);
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
    while s
        .push_with_data(1, 2, 0, 3, IndexWords::new(0), sz(4))
        .is_ok()
    {
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
    // The return path's decode finds the same from the top word it read with the frame.
    let (_, head) = s.top_frame_head().unwrap();
    assert_eq!(head.data(15), s.data_on_top(15));
    assert!(head.data(0).is_none());
    // Several reservations: the last is not the frame's only data.
    let last = s.data_on_top(15).unwrap();
    assert_eq!(head.data_exact_w(15, last.words), None);
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
    // So do several at once (the hub's joins), and bits above the 16 ops never reach them.
    s.mark_seen_bits(bm, (1 << 7) | (1 << 9) | mark::GONE);
    let f = s.top_frame().unwrap();
    assert_eq!(
        (f.seen, f.marks),
        ((1 << 15) | (1 << 2) | (1 << 7) | (1 << 9), mark::HANDED)
    );
    assert!(!f.hub);
    // The hub's own bit: beside the ops' and the marks, kept when the marks change.
    s.mark_seen_hub(bm, (1 << 3) | mark::GONE);
    let f = s.top_frame().unwrap();
    assert_eq!(
        (f.seen, f.marks, f.hub),
        (
            (1 << 15) | (1 << 2) | (1 << 7) | (1 << 9) | (1 << 3),
            mark::HANDED,
            true
        )
    );
    s.set_marks(&f, mark::GONE);
    let f = s.top_frame().unwrap();
    assert_eq!((f.marks, f.hub), (mark::GONE, true));
    // A new frame starts without it.
    let bm2 = s.push(4, 5, 0, 6).unwrap();
    assert!(!s.top_frame().unwrap().hub);
    s.unpush(bm2);
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
        if let Ok((bm, d)) = s.push_with_data(
            1,
            2,
            3,
            4,
            IndexWords::new(idx),
            sz(1 + rnd() as usize % 32),
        ) {
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

/// What the return path reads from the top word it decoded with the frame ([`Head`]), for
/// every ops index and data size, in every layout a frame can have around one ops' data: alone
/// (one-step push, or push then reserve), under or over another ops' data, on a frame without
/// data above a frame with data, after skipped frames were dropped above it, and after a nested
/// call pushed and popped over it while the head was held. `Head::data` must agree with the
/// stack's own search wherever it answers, `Head::data_exact` must answer only for data that is
/// all its frame holds (else a return would hand another ops' words, or the words of a frame
/// below, to an exit handler), and neither may name a word outside the frame.
#[test]
fn head_answers_only_for_its_own_frame() {
    fn check_in_frame(s: &S, f: &Frame, d: DataRef) {
        assert!(
            d.start > f.start + FRAME_WORDS,
            "{d:?} below the bitmap of {f:?}"
        );
        assert!(
            d.start + d.words < s.top(),
            "{d:?} over the top {}",
            s.top()
        );
    }
    for idx in 0..ARRAY_SIZE {
        let other = (idx + 7) % ARRAY_SIZE;
        for words in 1..=MAX_DATA_WORDS {
            // Alone, both ways of making it.
            for one_step in [true, false] {
                let s = stack();
                // A frame below with data of the same ops: never to be confused with ours.
                let lb = s.push(0x1, 0x2, 0, 0x3).unwrap();
                s.reserve_data(idx, 8).unwrap();
                s.set_bitmap(lb, 1 << idx);
                let d = if one_step {
                    let (bm, d) = s
                        .push_with_data(0x10, 0x20, 0, 0x30, IndexWords::new(idx), sz(words))
                        .unwrap();
                    s.set_bitmap(bm, 1 << idx);
                    d
                } else {
                    let bm = s.push(0x10, 0x20, 0, 0x30).unwrap();
                    let d = s.reserve_data(idx, words * 8).unwrap();
                    s.set_bitmap(bm, 1 << idx);
                    d
                };
                let (f, head) = s.top_frame_head().unwrap();
                assert_eq!(f.ret, 0x10);
                assert_eq!(head.data(idx), Some(d), "idx {idx} words {words}");
                assert_eq!(head.data_exact_w(idx, words), Some(d));
                check_in_frame(&s, &f, d);
                for w in 0..=MAX_DATA_WORDS + 1 {
                    if w != words {
                        assert_eq!(head.data_exact_w(idx, w), None, "words {w} for {words}");
                    }
                }
                for j in 0..ARRAY_SIZE {
                    if j != idx {
                        assert_eq!(head.data(j), None);
                        assert_eq!(head.data_exact_w(j, words), None);
                    }
                }
                // A nested call (an interrupt, a hooked call from a callback) pushes and pops
                // over it: the head read before still names the same words.
                let nb = s
                    .push_with_data(0x40, 0x50, 0, 0x60, IndexWords::new(idx), sz(3))
                    .unwrap()
                    .0;
                s.set_bitmap(nb, 1 << idx);
                let nf = s.top_frame().unwrap();
                s.pop(&nf);
                assert_eq!(s.top_frame_head().unwrap().1, head);
                // Skipped frames above it dropped: the head read again is the same.
                for k in 0..3 {
                    let b = s
                        .push_with_data(0x70 + k, 0x80, 0, 0x90, IndexWords::new(idx), sz(words))
                        .unwrap()
                        .0;
                    s.set_bitmap(b, 1 << idx);
                }
                let above = s.frames().take_while(|x| x.start != f.start).count();
                let c_top = s
                    .frames()
                    .take_while(|x| x.start != f.start)
                    .last()
                    .unwrap()
                    .start;
                s.drop_frames(c_top, above);
                assert_eq!(s.top_frame_head().unwrap(), (f, head));
                // Popped: the frame below answers for its own data only.
                s.pop(&f);
                let (fb, hb) = s.top_frame_head().unwrap();
                assert_eq!(hb.data(idx), s.retrieve_data(idx, 0));
                assert_eq!(hb.data_exact_w(idx, 1), s.retrieve_data(idx, 0));
                check_in_frame(&s, &fb, hb.data(idx).unwrap());
            }
            // Another ops' data under ours: ours is on top, but not all the frame holds.
            {
                let s = stack();
                let bm = s.push(0x10, 0x20, 0, 0x30).unwrap();
                s.reserve_data(other, 8 * (1 + words % 4)).unwrap();
                let d = s.reserve_data(idx, words * 8).unwrap();
                s.set_bitmap(bm, (1 << idx) | (1 << other));
                let (f, head) = s.top_frame_head().unwrap();
                assert_eq!(head.data(idx), Some(d));
                check_in_frame(&s, &f, d);
                for w in 0..=MAX_DATA_WORDS + 1 {
                    assert_eq!(head.data_exact_w(idx, w), None, "under: words {w}");
                    assert_eq!(head.data_exact_w(other, w), None);
                }
                assert_eq!(head.data(other), None);
                assert_eq!(s.retrieve_data(idx, 0), Some(d));
            }
            // Another ops' data over ours: the head is not ours; the search finds ours.
            {
                let s = stack();
                let (bm, d) = s
                    .push_with_data(0x10, 0x20, 0, 0x30, IndexWords::new(idx), sz(words))
                    .unwrap();
                let od = s.reserve_data(other, 8 * (1 + words % 4)).unwrap();
                s.set_bitmap(bm, (1 << idx) | (1 << other));
                let (_, head) = s.top_frame_head().unwrap();
                assert_eq!(head.data(idx), None);
                assert_eq!(head.data(other), Some(od));
                for w in 0..=MAX_DATA_WORDS + 1 {
                    assert_eq!(head.data_exact_w(idx, w), None, "over: words {w}");
                    assert_eq!(head.data_exact_w(other, w), None);
                }
                assert_eq!(s.retrieve_data(idx, 0), Some(d));
            }
            // A frame without data over a frame whose data is exactly ours: nothing.
            {
                let s = stack();
                let (bm, _) = s
                    .push_with_data(0x10, 0x20, 0, 0x30, IndexWords::new(idx), sz(words))
                    .unwrap();
                s.set_bitmap(bm, 1 << idx);
                let top = s.push(0x40, 0x50, 0, 0x60).unwrap();
                s.set_bitmap(top, (1 << idx) | (1 << other));
                let (f, head) = s.top_frame_head().unwrap();
                assert_eq!(f.ret, 0x40);
                for j in 0..ARRAY_SIZE {
                    assert_eq!(head.data(j), None);
                    for w in 0..=MAX_DATA_WORDS + 1 {
                        assert_eq!(head.data_exact_w(j, w), None, "no data: {j} {w}");
                    }
                }
            }
        }
    }
}

/// A corrupt top word whose data header claims more words than lie between its frame's bitmap
/// word and the top: the return path's head names no data (it would reach into the frame below,
/// or under the stack), and the exact test does not match it either.
#[test]
fn head_refuses_data_reaching_below_its_frame() {
    let s = stack();
    let lb = s.push(0x1, 0x2, 0, 0x3).unwrap();
    s.reserve_data(4, 64).unwrap();
    s.set_bitmap(lb, 1 << 4);
    let (bm, d) = s
        .push_with_data(0x10, 0x20, 0, 0x30, IndexWords::new(4), sz(2))
        .unwrap();
    s.set_bitmap(bm, 1 << 4);
    let top = s.top();
    // The same offset back to the frame (so the frame still decodes), 9 words claimed.
    s.set_word(top - 1, word::data(4, 9, FRAME_WORDS + 1 + 2));
    let (f, head) = s.top_frame_head().unwrap();
    assert_eq!(f.start, d.start - FRAME_WORDS - 1);
    assert_eq!(head.data(4), None);
    for w in 0..=MAX_DATA_WORDS {
        assert_eq!(head.data_exact_w(4, w), None);
    }
}

/// The return path's decode (`top_frame_ret`) is the full one less the call time and the seen
/// word, which `calltime_at` reads when a callback wants it.
#[test]
fn return_decode_is_the_full_one_less_time_and_seen() {
    let s = S::new();
    assert_eq!(s.top_frame_ret(), None);
    s.push(0x10, 0x20, 777, 0x30).unwrap();
    let (bm, _) = s
        .push_with_data(0x40, 0x50, 888, 0x60, IndexWords::new(3), sz(2))
        .unwrap();
    s.mark_seen_hub(bm, 1 << 5);
    s.set_bitmap(bm, 1 << 3 | 1 << 5);
    let (full, head) = s.top_frame_head().unwrap();
    let (ret, rhead) = s.top_frame_ret().unwrap();
    assert_eq!(rhead, head);
    assert!(full.hub && full.seen == (1 << 3 | 1 << 5) && full.calltime == 888);
    assert_eq!(
        ret,
        Frame {
            calltime: 0,
            seen: 0,
            marks: 0,
            hub: false,
            ..full
        }
    );
    assert_eq!(s.calltime_at(ret.start), 888);
    // Past the stack: 0, not a panic.
    assert_eq!(s.calltime_at(usize::MAX), 0);
}

/// A one-step frame, however it was built (in one step, or pushed and then reserved by its
/// only ops), matches the `OneStep` of its index and size, and says what the full decoding
/// says of it; popping it leaves what `pop` leaves.
#[test]
fn one_step_frame_matches_its_words() {
    for idx in [0, 5, ARRAY_SIZE - 1] {
        for words in [1, 2, 16, MAX_DATA_WORDS] {
            let iw = IndexWords::new(idx);
            let os = OneStep::new(&iw, sz(words));
            for two_steps in [false, true] {
                let s = stack();
                // A frame below, so that the one on top does not start at 0.
                let below = s.push(0x1, 0x2, 0, 0x3).unwrap();
                s.set_bitmap(below, 1 << 3);
                let top_before = s.top();
                let bm = if two_steps {
                    let bm = s.push(0x1111, 0xf00, 0, 0x6000).unwrap();
                    s.mark_seen(bm, idx);
                    s.reserve_data(idx, words * 8).unwrap();
                    bm
                } else {
                    s.push_with_data(0x1111, 0xf00, 0, 0x6000, iw, sz(words))
                        .unwrap()
                        .0
                };
                assert_eq!(s.top_one_step(&os), None, "still being built");
                s.set_bitmap_one(bm, &iw);
                let f = s.top_one_step(&os).expect("a one-step frame");
                let (full, head) = s.top_frame_head().unwrap();
                assert_eq!(f.start, top_before);
                assert_eq!(f.start, full.start);
                assert_eq!((f.ret, f.func, f.retp), (0x1111, 0xf00, 0x6000));
                assert_eq!(Some(f.data), head.data(idx));
                assert_eq!(f.frame(&os).bitmap, full.bitmap);
                let depth = s.depth();
                s.pop_one_step(&f);
                assert_eq!((s.top(), s.depth()), (top_before, depth - 1));
                assert_eq!(s.top_frame().unwrap().ret, 0x1);
            }
        }
    }
}

/// Frames of any other layout do not match: another index, another size, a second ops kept
/// or joined, more data on top, nothing on the stack, `OneStep::none()`, a corrupt top.
#[test]
fn one_step_match_refuses_other_frames() {
    let (idx, words) = (4, 3);
    let iw = IndexWords::new(idx);
    let os = OneStep::new(&iw, sz(words));
    let fresh = || {
        let s = stack();
        let (bm, _) = s
            .push_with_data(0x10, 0x20, 0, 0x30, iw, sz(words))
            .unwrap();
        (s, bm)
    };
    let s = stack();
    assert_eq!(s.top_one_step(&os), None, "empty stack");

    let (s, bm) = fresh();
    s.set_bitmap_one(bm, &iw);
    assert!(s.top_one_step(&os).is_some());
    assert_eq!(s.top_one_step(&OneStep::none()), None);
    for other in [
        OneStep::new(&IndexWords::new(idx + 1), sz(words)),
        OneStep::new(&iw, sz(words + 1)),
        OneStep::new(&iw, sz(words - 1)),
    ] {
        assert_eq!(s.top_one_step(&other), None, "{other:?}");
    }

    let (s, bm) = fresh();
    s.set_bitmap(bm, (1 << idx) | (1 << 9));
    assert_eq!(s.top_one_step(&os), None, "two ops keep it");

    let (s, bm) = fresh();
    s.set_bitmap_one(bm, &iw);
    s.reserve_data(9, 8).unwrap();
    assert_eq!(s.top_one_step(&os), None, "another ops' data on top");

    // A frame of the same layout under a bare one: only the top frame is looked at.
    let (s, bm) = fresh();
    s.set_bitmap_one(bm, &iw);
    let bm2 = s.push(0x40, 0x50, 0, 0x60).unwrap();
    s.set_bitmap_one(bm2, &iw);
    assert_eq!(s.top_one_step(&os), None, "a bare frame on top");

    // A top past MAX_OFFSET, or below the frame's length.
    let s = stack();
    for top in [1, FRAME_WORDS + 1 + words, S::MAX_OFFSET + 1, usize::MAX] {
        s.top.store(top, Relaxed);
        assert_eq!(s.top_one_step(&os), None, "top {top}");
    }
}
