// SPDX-License-Identifier: GPL-2.0

//! The fgraph core: per-task shadow stacks shared by up to 16 graph ops.
//!
//! - [`tasks`]: finding and owning each task's shadow stack;
//! - [`graph`]: the ops array, the entry callback, the return handler, module pinning;
//! - `hub`: the one `ftrace_ops` of every graph ops whose functions the core knows;
//! - [`ops`]: [`GraphOps`], the owner type for Rust users.
//!
//! The shadow stack's layout is in `fgraph::shadow`, the architectures' code (the
//! return trampolines in assembly beside it) in [`arch`].

pub mod arch;
pub mod capi;
pub mod graph;
mod hub;
pub mod lru;
pub mod ops;
pub mod shadow;
pub mod tasks;

pub use graph::{Entry, FirstEntry, FirstReturn, GraphHandler, OneStepPush, Return};
pub use ops::GraphOps;
pub use shadow::{DataSize, IndexWords, OneStep};
