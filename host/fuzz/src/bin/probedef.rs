// SPDX-License-Identifier: GPL-2.0

//! Mutation fuzzer for the fprobe definition parser (`src/events/probedef/`), on stable Rust.
//!
//! ```sh
//! cargo run --release -p ufgraph-fuzz -- [ITERATIONS [SEED]]
//! ```
//!
//! Deterministic: the same seed runs the same inputs. Each input is a corpus entry (valid and
//! invalid definitions, upstream's selftest cases) mutated by a few random edits: bytes, parser
//! tokens, boundary numbers, splices, repetitions. Inputs that parse are added to the corpus, so
//! the mutations reach deeper into valid definitions as the run goes. Every input must keep the
//! parser's promises (`ufgraph_fuzz::probedef`); on a violation it prints the input and exits
//! with status 1.

use std::process::ExitCode;

use ufgraph_fuzz::common::{mutation_fuzzer, Source, SEEDS};
use ufgraph_fuzz::probedef::check;

fn main() -> ExitCode {
    mutation_fuzzer(
        "probedef",
        0x0f9b_0be5,
        SEEDS.iter().map(|s| s.to_string()).collect(),
        1,
        |_, input| check(input),
        // Keep some definitions and a few failures to mutate further, replacing older finds
        // when full: definitions lead deeper, failures keep the mix varied.
        |rng, label| {
            if label == "defined" {
                rng.below(4) == 0
            } else {
                rng.below(32) == 0
            }
        },
    )
}
