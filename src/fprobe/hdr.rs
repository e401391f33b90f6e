// SPDX-License-Identifier: GPL-2.0

//! The word that precedes each fprobe's entry data on the shadow stack.
//!
//! All fprobes with an exit handler on one function share one reservation per call: for each
//! probe, a header word then its entry data. The header names the probe's *registration* (not
//! the probe's address: a probe unregistered while one of its calls is in flight, then another
//! registered at the same address, must not get the first one's return with its entry data) and
//! the size of its data:
//!
//! ```text
//!   | size (4 bits) | registration id (60 bits)                    |
//!     0..=15 words    0: this probe's entry handler declined (skip `size` words)
//! ```
//!
//! Ids come from a counter that never wraps in practice (2^60 registrations) and are never
//! reused, so a return can tell whether the registration that made its entry still exists.
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

const SIZE_SHIFT: u32 = usize::BITS - 4;
const ID_MASK: usize = (1 << SIZE_SHIFT) - 1;

/// Most entry data an fprobe may ask for, in words (upstream: 15).
pub const MAX_DATA_WORDS: usize = 15;

/// The largest registration id.
pub const MAX_ID: usize = ID_MASK;

/// A header for registration `id` with `words` (0..=15) of data; `id == 0` marks a skipped
/// probe.
pub const fn encode(id: usize, words: usize) -> usize {
    (id & ID_MASK) | (words << SIZE_SHIFT)
}

/// The registration (`None` for a skipped probe) and its data size in words.
pub const fn decode(h: usize) -> (Option<usize>, usize) {
    let words = h >> SIZE_SHIFT;
    if h & ID_MASK == 0 {
        (None, words)
    } else {
        (Some(h & ID_MASK), words)
    }
}

/// The id after `id`, or `None` when ids are exhausted (after 2^60 registrations).
pub const fn next_id(id: usize) -> Option<usize> {
    if id >= MAX_ID {
        None
    } else {
        Some(id + 1)
    }
}

/// Entry data bytes rounded up to words, or `None` above the maximum.
pub const fn data_words(bytes: usize) -> Option<usize> {
    let w = bytes.div_ceil(core::mem::size_of::<usize>());
    if w > MAX_DATA_WORDS {
        None
    } else {
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_ids() {
        for &id in &[1usize, 2, 0x1234_5678, MAX_ID] {
            for words in 0..=MAX_DATA_WORDS {
                assert_eq!(decode(encode(id, words)), (Some(id), words));
            }
        }
    }

    #[test]
    fn skipped_probe_keeps_its_size() {
        assert_eq!(decode(encode(0, 7)), (None, 7));
        assert_eq!(decode(encode(0, 0)), (None, 0));
        // An all-zero word (reserved room nobody used) is a skip of size 0.
        assert_eq!(decode(0), (None, 0));
    }

    #[test]
    fn ids_end_rather_than_wrap() {
        assert_eq!(next_id(1), Some(2));
        assert_eq!(next_id(MAX_ID - 1), Some(MAX_ID));
        assert_eq!(next_id(MAX_ID), None);
    }

    #[test]
    fn data_size_limit() {
        assert_eq!(data_words(0), Some(0));
        assert_eq!(data_words(1), Some(1));
        assert_eq!(data_words(120), Some(15));
        assert_eq!(data_words(121), None);
    }
}
