// SPDX-License-Identifier: GPL-2.0

//! The word that precedes each fprobe's entry data on the shadow stack.
//!
//! All fprobes with an exit handler on one function share one reservation per call: for each
//! probe, a header word then its entry data. The header holds the probe's address and the size
//! of its data. As upstream does (v6.14 fprobe.c), the size lives in the top 4 bits of the
//! address: kernel addresses on 64-bit architectures have them all set, so they can be restored.
//!
//! ```text
//!   | size (4 bits) | fprobe address, top 4 bits dropped (60 bits) |
//!     0..=15 words    all zero: this probe's entry handler declined (skip `size` words)
//! ```

const SIZE_SHIFT: u32 = usize::BITS - 4;
const ADDR_MASK: usize = (1 << SIZE_SHIFT) - 1;

/// Most entry data an fprobe may ask for, in words (upstream: 15).
pub const MAX_DATA_WORDS: usize = 15;

/// A header for the probe at `fp` with `words` (0..=15) of data; `fp == 0` marks a skipped probe.
pub const fn encode(fp: usize, words: usize) -> usize {
    (fp & ADDR_MASK) | (words << SIZE_SHIFT)
}

/// The probe's address (`None` for a skipped probe) and its data size in words.
pub const fn decode(h: usize) -> (Option<usize>, usize) {
    let words = h >> SIZE_SHIFT;
    if h & ADDR_MASK == 0 {
        (None, words)
    } else {
        (Some(h | !ADDR_MASK), words)
    }
}

/// Whether `fp` can be encoded: a kernel address, with the top 4 bits set.
pub const fn encodable(fp: usize) -> bool {
    fp & !ADDR_MASK == !ADDR_MASK && fp & ADDR_MASK != 0
}

/// Entry data bytes rounded up to words, or `None` above the maximum.
pub const fn data_words(bytes: usize) -> Option<usize> {
    let w = bytes.div_ceil(core::mem::size_of::<usize>());
    if w > MAX_DATA_WORDS { None } else { Some(w) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_kernel_addresses() {
        for &fp in &[0xffff_8880_0123_4560usize, 0xffff_ffff_c000_0008, 0xf000_0000_0000_0008] {
            assert!(encodable(fp));
            for words in 0..=MAX_DATA_WORDS {
                assert_eq!(decode(encode(fp, words)), (Some(fp), words));
            }
        }
    }

    #[test]
    fn skipped_probe_keeps_its_size() {
        assert_eq!(decode(encode(0, 7)), (None, 7));
        assert_eq!(decode(encode(0, 0)), (None, 0));
    }

    #[test]
    fn user_addresses_are_not_encodable() {
        assert!(!encodable(0x7fff_0000_1000));
        assert!(!encodable(0));
    }

    #[test]
    fn data_size_limit() {
        assert_eq!(data_words(0), Some(0));
        assert_eq!(data_words(1), Some(1));
        assert_eq!(data_words(120), Some(15));
        assert_eq!(data_words(121), None);
    }
}
