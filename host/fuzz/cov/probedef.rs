// SPDX-License-Identifier: GPL-2.0

//! Coverage-guided target `probedef` (see `ufgraph_fuzz::cov::probedef`); run by scripts/fuzz.sh.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ufgraph_fuzz::cov::run(
    ufgraph_fuzz::cov::probedef,
    data
));
