// SPDX-License-Identifier: GPL-2.0

//! ufgraph's own bindings to the kernel's C API.
//!
//! The 6.12 kernel crate binds no ftrace, debugfs or tracepoint function, so Kbuild runs bindgen over
//! `bindings_helper.h` (with the kernel's own bindgen flags and `bindgen_parameters`) and the result is
//! included here. These are raw and unsafe; only the `sys` layer uses them.

#![allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    clippy::all,
    // Generated code (bitfield accessors), as in the kernel's own rust/bindings/lib.rs.
    clippy::undocumented_unsafe_blocks
)]

use kernel::ffi;

// Blocklisted in bindgen_parameters (as in the kernel's own bindings) so that they map to
// Rust's pointer-sized integers, not to `c_ulong`/`c_long`.
pub type __kernel_size_t = usize;
pub type __kernel_ssize_t = isize;
pub type __kernel_ptrdiff_t = isize;

include!("bindings_generated.rs");
