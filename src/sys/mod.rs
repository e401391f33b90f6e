// SPDX-License-Identifier: GPL-2.0

//! The thin unsafe layer: small safe abstractions over the kernel's C API.
//!
//! Every `unsafe` block of ufgraph that touches a kernel object lives here, next to the invariant
//! that makes it sound. The layers above (`counter`, later the fgraph core and fprobe) are safe Rust.

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
