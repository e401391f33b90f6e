// SPDX-License-Identifier: GPL-2.0

//! Fuzzing ufgraph's host-testable files (`host/src/lib.rs` lists them).
//!
//! The promises each input must keep are here, one module per piece of logic, shared by two
//! kinds of fuzzer:
//!
//! - the deterministic mutation fuzzers (`src/bin/probedef.rs`, `src/bin/event.rs`): plain
//!   binaries on stable Rust, seeded, mutating a corpus of definitions with the grammar's
//!   tokens ([`common::mutate`]);
//! - the coverage-guided targets (`cov/`, a crate and workspace of their own, since libFuzzer
//!   comes from crates.io): libFuzzer drives them through [`cov`], steered by the coverage of
//!   the instrumented code; `scripts/fuzz.sh` builds and runs them (`make check` for a bounded
//!   number of inputs each, `make fuzz` longer).
//!
//! `cargo test` runs every committed seed (`seeds/TARGET/`) through its target's checks.

pub mod btf;
pub mod common;
pub mod cov;
pub mod event;
pub mod probedef;
pub mod shadow;
pub mod symbols;
