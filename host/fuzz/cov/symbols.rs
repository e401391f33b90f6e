// SPDX-License-Identifier: GPL-2.0

//! Coverage-guided target `symbols` (see `ufgraph_fuzz::cov::symbols`); run by scripts/fuzz.sh.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ufgraph_fuzz::cov::run(ufgraph_fuzz::cov::symbols, data));
