// SPDX-License-Identifier: GPL-2.0

//! ufgraph: unified function-graph return hooking for a running kernel.
//!
//! One per-task shadow stack serves function-graph users, fprobes and kretprobe-style users, as
//! upstream Linux does from v6.14 on, brought to 6.12 as a loadable module. See
//! Documentation/ for the design.
//!
//! This file is the crate root of two modules: `ufgraph.ko` and, built with
//! `--cfg ufgraph_kunit` through the `ufgraph_kunit.rs` symlink, `ufgraph_kunit.ko`, which adds
//! the KUnit suites under `tests/`.

#![allow(unexpected_cfgs)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

pub mod bindings;
pub mod counter;
pub mod pure;
pub mod sys;
#[cfg(ufgraph_kunit)]
mod tests;

use counter::{Counter, Hits};
use pure::ipcount::IpCounts;
use sys::debugfs::Dir;

#[cfg(not(ufgraph_kunit))]
module! {
    type: UfGraph,
    name: "ufgraph",
    author: "ufgraph developers",
    description: "Unified return hooking: fgraph, fprobe and kretprobe users on one shadow stack",
    license: "GPL",
}

#[cfg(ufgraph_kunit)]
module! {
    type: UfGraph,
    name: "ufgraph_kunit",
    author: "ufgraph developers",
    description: "ufgraph with its KUnit suites",
    license: "GPL",
}

struct UfGraph {
    // Dropped in this order: stop counting, then remove the files that show the counts.
    _counter: Option<Counter>,
    _debugfs: Dir<Hits>,
}

/// The `func=` module parameter, if given and not empty.
fn param_func() -> Option<&'static CStr> {
    // SAFETY: the glue returns the module parameter, NULL or a NUL-terminated string that the
    // module loader owns for the module's lifetime (it is 0444: never rewritten).
    let p = unsafe { bindings::ufg_param_func() };
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a valid NUL-terminated string (see above).
    let s = unsafe { CStr::from_char_ptr(p) };
    (!s.is_empty()).then_some(s)
}

impl kernel::Module for UfGraph {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let hits = Arc::new(Hits(IpCounts::new()), GFP_KERNEL)?;
        let name = if cfg!(ufgraph_kunit) { c_str!("ufgraph_kunit") } else { c_str!("ufgraph") };
        let mut debugfs = Dir::new(name, hits.clone())?;
        debugfs.add_file(c_str!("counts"), module, |h, m| h.show(m))?;

        let counter = match param_func() {
            None => None,
            Some(glob) => match Counter::start(glob, hits) {
                Ok(c) => Some(c),
                Err(e) => {
                    pr_err!("func={}: cannot hook it ({:?}); is it a traceable function?\n", glob, e);
                    return Err(e);
                }
            },
        };
        if let Some(glob) = param_func() {
            pr_info!("counting calls of {}\n", glob);
        }
        Ok(Self { _counter: counter, _debugfs: debugfs })
    }
}
