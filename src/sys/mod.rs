// SPDX-License-Identifier: GPL-2.0

//! The thin unsafe layer: small safe abstractions over the kernel's C API.
//!
//! `bindings::` (bindgen's view of the kernel's C headers) is used here and nowhere else, but in
//! the `capi.rs` files, which implement ufgraph's own exported C API and so take C's pointers,
//! and in the KUnit suites (`src/tests`), which drive that C API as a C client does. Every
//! abstraction here states its `# Invariants` or its `# Safety` contract, which the `// SAFETY:`
//! comments of its callers cite. Each subsystem uses only those below it (no import cycle):
//!
//! ```text
//!   events      kretprobe     demo
//!      \        /     |        |
//!       fprobe        |        |
//!          \          |        |
//!           fgraph (with arch/: the trampolines)
//!              |
//!             sys    (with its host-tested leaves: ksym/, rcutable/, hookers/, btf/reader/,
//!                     slice.rs)
//! ```
//!
//! The `unsafe` left above sys is of two kinds: the fgraph core's and fprobe's own data
//! structures, read lock-free under RCU or with preemption off on the hot path (each type says
//! which invariant its readers rely on), and the C API's pointers.

#[cfg(CONFIG_ARM64)]
pub mod arm64;
pub mod btf;
pub mod cabi;
pub mod debugfs;
pub mod ftrace;
pub mod global;
pub mod hookers;
#[cfg(CONFIG_X86_64)]
#[path = "hot_x86_64.rs"]
pub mod hot;
#[cfg(CONFIG_ARM64)]
#[path = "hot_arm64.rs"]
pub mod hot;
pub mod ksym;
#[cfg(ufgraph_kunit)]
pub mod ktest;
pub mod kvec;
pub mod module;
pub mod nofault;
pub mod params;
pub mod percpu;
pub mod rcuarray;
pub mod rcutable;
pub mod regs;
pub mod slice;
pub mod sync;
pub mod task;
pub mod trace_event;
pub mod tracepoint;
pub mod unwind;

use kernel::prelude::*;

/// Turns a kernel return code (0 or a negative errno) into a `Result`.
pub fn to_result(ret: core::ffi::c_int) -> Result {
    kernel::error::to_result(ret)
}
