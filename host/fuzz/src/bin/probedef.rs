// SPDX-License-Identifier: GPL-2.0

//! Mutation fuzzer for the fprobe definition parser (`src/pure/probedef/`), on stable Rust.
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

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;

use ufgraph_fuzz::common::{mutate, Rng, Source, SEEDS};
use ufgraph_fuzz::probedef::check;
use ufgraph_pure::probedef::MAX_COMMAND_LEN;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let iterations: u64 =
        argv.next().map_or(Ok(1_000_000), |a| a.replace('_', "").parse()).unwrap_or_else(|_| {
            eprintln!("usage: probedef [ITERATIONS [SEED]]");
            std::process::exit(2)
        });
    let seed: u64 = argv.next().and_then(|a| a.parse().ok()).unwrap_or(0x0f9b_0be5);
    let mut rng = Rng(seed);
    let mut corpus: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    let base = corpus.len();
    const CORPUS_MAX: usize = 4096;
    let mut stats: BTreeMap<&'static str, u64> = BTreeMap::new();

    // Quiet panics: we report the input ourselves.
    panic::set_hook(Box::new(|_| {}));
    for i in 0..iterations {
        let mut bytes = rng.pick(&corpus).clone().into_bytes();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut bytes, &corpus);
        }
        bytes.truncate(2 * MAX_COMMAND_LEN);
        let input = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        match panic::catch_unwind(AssertUnwindSafe(|| check(&input))) {
            Ok(Ok(label)) => {
                *stats.entry(label).or_default() += 1;
                // Keep some definitions and a few failures to mutate further, replacing older
                // finds when full: definitions lead deeper, failures keep the mix varied.
                let keep = if label == "defined" { rng.below(4) == 0 } else { rng.below(32) == 0 };
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
                eprintln!("probedef: input {i} (seed {seed}) breaks an invariant: {why}\ninput: {input:?}");
                return ExitCode::FAILURE;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned());
                eprintln!(
                    "probedef: input {i} (seed {seed}) panics: {}\ninput: {input:?}",
                    msg.unwrap_or_default()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("probedef: {iterations} inputs run (seed {seed}), no panic, no invariant broken");
    let mut by_count: Vec<_> = stats.into_iter().collect();
    by_count.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    for (label, n) in by_count {
        println!("  {n:>9}  {label}");
    }
    ExitCode::SUCCESS
}
