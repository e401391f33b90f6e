// SPDX-License-Identifier: GPL-2.0

//! Mutation fuzzer for the event record layer (`src/pure/event/`), on stable Rust.
//!
//! ```sh
//! cargo run --release -p ufgraph-fuzz --bin event -- [ITERATIONS [SEED]]
//! ```
//!
//! Deterministic: the same seed runs the same inputs. Each input is a definition mutated as the
//! `probedef` target mutates them; the ones that parse are compiled and hit against random fake
//! memories, and must keep the layer's promises (`ufgraph_fuzz::event`). On a violation it
//! prints the input and exits with status 1.

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;

use ufgraph_fuzz::common::{mutate, Rng, Source, SEEDS};
use ufgraph_fuzz::event::{check, EVENT_SEEDS};
use ufgraph_pure::probedef::MAX_COMMAND_LEN;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let iterations: u64 =
        argv.next().map_or(Ok(1_000_000), |a| a.replace('_', "").parse()).unwrap_or_else(|_| {
            eprintln!("usage: event [ITERATIONS [SEED]]");
            std::process::exit(2)
        });
    let seed: u64 = argv.next().and_then(|a| a.parse().ok()).unwrap_or(0x0e5e_47ab);
    let mut rng = Rng(seed);
    let mut corpus: Vec<String> =
        EVENT_SEEDS.iter().chain(SEEDS.iter()).map(|s| s.to_string()).collect();
    let base = corpus.len();
    const CORPUS_MAX: usize = 4096;
    let mut stats: BTreeMap<&'static str, u64> = BTreeMap::new();

    panic::set_hook(Box::new(|_| {}));
    for i in 0..iterations {
        let mut bytes = rng.pick(&corpus).clone().into_bytes();
        for _ in 0..rng.below(4) {
            mutate(&mut rng, &mut bytes, &corpus);
        }
        bytes.truncate(2 * MAX_COMMAND_LEN);
        let input = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        // Each input gets its own memories, from a generator the input does not disturb.
        let mut hit_rng = Rng(rng.next());
        match panic::catch_unwind(AssertUnwindSafe(|| check(&mut hit_rng, &input))) {
            Ok(Ok(label)) => {
                *stats.entry(label).or_default() += 1;
                // Keep hits to mutate further, those that stored strings most.
                let keep = match label {
                    "hit: strings stored" => rng.below(2) == 0,
                    l if l.starts_with("hit") => rng.below(8) == 0,
                    _ => false,
                };
                if keep {
                    if corpus.len() < CORPUS_MAX {
                        corpus.push(input);
                    } else {
                        let slot = base + rng.below(CORPUS_MAX - base);
                        corpus[slot] = input;
                    }
                }
            }
            Ok(Err(why)) => {
                eprintln!(
                    "event: input {i} (seed {seed}) breaks an invariant: {why}\ninput: {input:?}"
                );
                return ExitCode::FAILURE;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned());
                eprintln!(
                    "event: input {i} (seed {seed}) panics: {}\ninput: {input:?}",
                    msg.unwrap_or_default()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("event: {iterations} inputs run (seed {seed}), no panic, no invariant broken");
    let mut by_count: Vec<_> = stats.into_iter().collect();
    by_count.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    for (label, n) in by_count {
        println!("  {n:>9}  {label}");
    }
    ExitCode::SUCCESS
}
