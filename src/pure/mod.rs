// SPDX-License-Identifier: GPL-2.0

//! Pure logic: no kernel dependency, only `core`.
//!
//! Everything under this folder builds twice: inside the module, and on the host as the
//! `ufgraph-pure` crate (`host/`), where `cargo test` and the fuzz targets exercise it. Keep it free
//! of `kernel::` and `std::` (tests may use `std`).

pub mod btf;
pub mod event;
pub mod fprobe_hdr;
pub mod funclist;
pub mod handback;
pub mod ipcount;
pub mod ksymname;
pub mod lru;
pub mod probedef;
pub mod shadow;
pub mod slice;
pub mod tasktable;
