// SPDX-License-Identifier: GPL-2.0

//! The entry counter: counts calls of the functions a glob selects, per function.
//!
//! This is the simplest user of the `sys::ftrace` layer and what `make demo` shows: loaded with
//! `func=vfs_read` (or `func='vfs_*'`) it hooks those functions' entries and
//! `/sys/kernel/debug/ufgraph/counts` lists the calls seen.

use crate::demo::ipcount::IpCounts;
use crate::sys::ftrace::{Handler, Ops, Regs};
use crate::sys::sync::NoPreempt;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// How many distinct functions are counted apart; calls of more are still counted in the total.
pub const MAX_FUNCS: usize = 128;

/// The hits seen so far, shared by the ftrace callback and the readers of `counts`, and the calls
/// the recursion guard refused.
pub struct Hits(pub IpCounts<MAX_FUNCS>, pub AtomicU64);

/// The ftrace handler: the module state, whose `hits` it counts into.
pub struct EntryCounter(pub Arc<crate::State>);

impl Handler for EntryCounter {
    fn call(&self, ip: usize, _parent_ip: usize, _regs: &Regs, _np: &NoPreempt) {
        self.0.hits.0.hit(ip);
    }

    fn missed(&self, _ip: usize) {
        self.0.hits.1.fetch_add(1, Relaxed);
    }
}

impl Hits {
    /// Writes one line per function (`name count`), then `total` and `lost`.
    pub fn show(&self, m: &mut crate::sys::debugfs::SeqFile) -> fmt::Result {
        for (ip, n) in self.0.iter() {
            m.symbol(ip)?;
            writeln!(m, " {}", n)?;
        }
        writeln!(m, "total {}", self.0.total())?;
        writeln!(m, "lost {}", self.0.lost())?;
        writeln!(m, "missed {}", self.1.load(Relaxed))
    }
}

/// A registered entry counter. Dropping it stops counting; the hits stay readable.
pub struct Counter {
    ops: Ops<EntryCounter>,
}

impl Counter {
    /// Starts counting calls of the functions `glob` matches into `state.hits`.
    /// Fails with `EINVAL` when `glob` matches no traceable function.
    pub fn start(glob: &CStr, state: Arc<crate::State>) -> Result<Self> {
        let mut ops = Ops::new(EntryCounter(state), 0)?;
        ops.set_filter(glob)?;
        ops.register()?;
        Ok(Self { ops })
    }

    /// The hits this counter adds to.
    pub fn hits(&self) -> &Hits {
        &self.ops.handler().0.hits
    }
}
