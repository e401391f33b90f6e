// SPDX-License-Identifier: GPL-2.0

//! The C API's structures (include/ufgraph/*.h) that the fprobe, kretprobe and rethook cores
//! keep and read in place: a C caller owns each one and registers it by address, so the cores
//! name the C type itself, not a Rust copy of it. Named here so that only `sys` (and the C API
//! files) name bindings; the cores reach their fields through raw pointers and keep the
//! argument for each access next to it.

use crate::bindings;

/// A C caller's `struct ufgraph_fprobe`: the fprobe core's registration record.
pub use bindings::ufgraph_fprobe;
/// A C caller's `struct ufgraph_kretprobe`, which the kretprobe shim turns into an fprobe.
pub use bindings::ufgraph_kretprobe;
/// The per-call `struct ufgraph_kretprobe_instance` the kretprobe API's handlers get.
pub use bindings::ufgraph_kretprobe_instance;
/// A C caller's `struct ufgraph_rethook`, which the rethook core keys its table by.
pub use bindings::ufgraph_rethook;
/// `UFGRAPH_FPROBE_FL_DISABLED`: the flag by which a caller disables its probe in place.
pub use bindings::UFGRAPH_FPROBE_FL_DISABLED;
/// `UFGRAPH_KRETPROBE_MAX_DATA`: the most entry data a kretprobe may ask for.
pub use bindings::UFGRAPH_KRETPROBE_MAX_DATA;
