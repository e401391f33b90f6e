// SPDX-License-Identifier: GPL-2.0

//! Decoding and encoding of single words, exactly as upstream's fgraph.c.

use super::*;

/// The offset back to the start of the word's frame.
pub const fn offset(w: usize) -> usize {
    w & OFFSET_MASK
}

/// The word's type.
pub const fn kind(w: usize) -> WordType {
    match (w >> TYPE_SHIFT) & TYPE_MASK {
        0 => WordType::Reserved,
        1 => WordType::Bitmap,
        2 => WordType::Data,
        _ => WordType::Invalid,
    }
}

/// A reserved word at `offset` from its frame's start.
pub const fn reserved(offset: usize) -> usize {
    offset & OFFSET_MASK
}

/// A bitmap word for ops `bits`, `offset` words above its frame's start.
pub const fn bitmap(bits: u16, offset: usize) -> usize {
    ((bits as usize) << INDEX_SHIFT) | (1 << TYPE_SHIFT) | (offset & OFFSET_MASK)
}

/// [`bitmap`] of the one ops `idx` (below 16).
#[inline(always)]
pub const fn bitmap_one(idx: usize, offset: usize) -> usize {
    ((1 << INDEX_SHIFT) << (idx % ARRAY_SIZE)) | (1 << TYPE_SHIFT) | (offset & OFFSET_MASK)
}

/// The ops bitmap of a bitmap word.
pub const fn bitmap_bits(w: usize) -> u16 {
    ((w >> INDEX_SHIFT) & INDEX_MASK) as u16
}

/// A data header for `words` words (1..=32) of ops `idx`, `offset` words above its frame's start.
pub const fn data(idx: usize, words: usize, offset: usize) -> usize {
    ((idx & DATA_INDEX_MASK) << DATA_INDEX_SHIFT)
        | (((words - 1) & DATA_MASK) << DATA_SHIFT)
        | (2 << TYPE_SHIFT)
        | (offset & OFFSET_MASK)
}

/// The ops index of a data header.
pub const fn data_index(w: usize) -> usize {
    (w >> DATA_INDEX_SHIFT) & DATA_INDEX_MASK
}

/// The size in words of the data under a data header.
pub const fn data_words(w: usize) -> usize {
    ((w >> DATA_SHIFT) & DATA_MASK) + 1
}
