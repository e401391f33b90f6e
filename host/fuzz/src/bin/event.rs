// SPDX-License-Identifier: GPL-2.0

//! Mutation fuzzer for the event record layer (`src/events/program/`), on stable Rust.
//!
//! ```sh
//! cargo run --release -p ufgraph-fuzz --bin event -- [ITERATIONS [SEED]]
//! ```
//!
//! Deterministic: the same seed runs the same inputs. Each input is a definition mutated as the
//! `probedef` target mutates them; the ones that parse are compiled and hit against random fake
//! memories, and must keep the layer's promises (`ufgraph_fuzz::event`). On a violation it
//! prints the input and exits with status 1.

use std::process::ExitCode;

use ufgraph_fuzz::common::{mutation_fuzzer, Rng, Source, SEEDS};
use ufgraph_fuzz::event::{check, EVENT_SEEDS};

fn main() -> ExitCode {
    mutation_fuzzer(
        "event",
        0x0e5e_47ab,
        EVENT_SEEDS
            .iter()
            .chain(SEEDS.iter())
            .map(|s| s.to_string())
            .collect(),
        0,
        // Each input gets its own memories, from a generator the input does not disturb.
        |rng, input| check(&mut Rng(rng.next()), input),
        // Keep hits to mutate further, those that stored strings most.
        |rng, label| match label {
            "hit: strings stored" => rng.below(2) == 0,
            l if l.starts_with("hit") => rng.below(8) == 0,
            _ => false,
        },
    )
}
