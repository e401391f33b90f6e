// SPDX-License-Identifier: GPL-2.0

//! ufgraph's pure logic, built on the host.
//!
//! The files are the module's own (`src/pure/`), included by path: what `cargo test` checks
//! here is exactly what runs in the kernel.

#[path = "../../src/pure/mod.rs"]
mod pure;

pub use pure::*;
