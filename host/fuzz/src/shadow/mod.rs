// SPDX-License-Identifier: GPL-2.0

//! The promises of the shadow stack (`src/fgraph/shadow/`) and of the reader of upstream's
//! function_graph stack (`sys::hookers::stacks::fgraph_find`), on stacks an input describes.
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
//!
//! The checks of each kind are in [`image`], [`ops`] and [`corrupted`] (operations, then
//! corrupted words), the seeds in [`seeds`].

use std::sync::atomic::Ordering::Relaxed;

use crate::common::{Bytes, Source};
use ufgraph_pure::fgraph::shadow::{
    mark, word, DataRef, DataSize, Frame, IndexWords, ShadowStack, WordType, ARRAY_SIZE,
    FRAME_WORDS, MAX_DATA_BYTES, MAX_DATA_WORDS,
};
use ufgraph_pure::sys::hookers::stacks::fgraph_find;

/// Words of a stack: the kernel's (`STACK_WORDS`, src/fgraph/tasks.rs).
pub const W: usize = 506;
type Stack = ShadowStack<W>;
const MAX_OFFSET: usize = Stack::MAX_OFFSET;

use crate::common::{ensure, Verdict};

mod corrupted;
mod image;
mod ops;
mod seeds;

pub use corrupted::*;
pub use image::*;
pub use ops::*;
pub use seeds::*;

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
