// SPDX-License-Identifier: GPL-2.0

//! Coverage-guided target `shadow` (see `ufgraph_fuzz::cov::shadow`); run by scripts/fuzz.sh.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ufgraph_fuzz::cov::run(ufgraph_fuzz::cov::shadow, data));
