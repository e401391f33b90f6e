// SPDX-License-Identifier: GPL-2.0

//! The running kernel's BTF (`sys::btf`) as the definition parser's [`BtfSource`]: where the
//! parser finds a function's (or a tracepoint's) prototype for BTF arguments.
//!
//! Here, not in `sys::btf`, so that sys depends on nothing above it: it reads and indexes the
//! blobs, the events decide what a name means in them.

use crate::events::probedef::{find_function, find_struct, BtfSource};
use crate::sys::btf::reader::{Btf, Func};
use crate::sys::btf::{KernelBtf, Source};

impl BtfSource for KernelBtf {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)> {
        find_function(self.btf(None).ok()?, name, tracepoint)
    }

    fn structure(&self, name: &str, _func: &str, _tracepoint: bool) -> Option<(Btf<'_>, u32)> {
        find_struct(self.btf(None).ok()?, name)
    }
}

/// vmlinux's BTF first, then the split BTF of the module that has the function, as upstream's
/// `bpf_find_btf_id()` searches the modules' BTF after vmlinux's.
impl BtfSource for Source<'_> {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)> {
        if let Some(f) = find_function(self.base(), name, tracepoint) {
            return Some(f);
        }
        find_function(self.module_btf(name, tracepoint)?, name, tracepoint)
    }

    fn structure(&self, name: &str, func: &str, tracepoint: bool) -> Option<(Btf<'_>, u32)> {
        // vmlinux's first; then the probed function's module, whose split BTF looks in
        // vmlinux's again (a miss) and then in the module's own types.
        find_struct(self.base(), name).or_else(|| {
            let (btf, _) = self.function(func, tracepoint)?;
            find_struct(btf, name)
        })
    }
}
