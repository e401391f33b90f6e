// SPDX-License-Identifier: GPL-2.0

//! The return counter: a graph user that counts entries and returns per function.
//!
//! Loaded with `graph=GLOB`, ufgraph hooks the entry *and the return* of the functions `GLOB`
//! selects through the fgraph core, and `/sys/kernel/debug/ufgraph/graph` lists, per function,
//! how many calls entered and how many returned. For functions that do not sleep, both agree
//! once the workload stops; a task sleeping inside one shows as entered-not-returned.

use crate::demo::ipcount::IpCounts;
use crate::fgraph::{Entry, GraphHandler, GraphOps, Return};
use core::fmt::{self, Write};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// Entries and returns per function.
pub struct RetHits {
    /// Entries seen, by function.
    pub entries: IpCounts<{ crate::demo::counter::MAX_FUNCS }>,
    /// Returns seen, by function.
    pub returns: IpCounts<{ crate::demo::counter::MAX_FUNCS }>,
}

impl Default for RetHits {
    fn default() -> Self {
        Self::new()
    }
}

impl RetHits {
    /// Nothing counted yet.
    pub const fn new() -> Self {
        Self {
            entries: IpCounts::new(),
            returns: IpCounts::new(),
        }
    }

    /// Writes `name entries returns` per function, then totals.
    pub fn show(&self, m: &mut crate::sys::debugfs::SeqFile) -> fmt::Result {
        for (ip, n) in self.entries.iter() {
            m.symbol(ip)?;
            writeln!(m, " {} {}", n, self.returns.get(ip))?;
        }
        writeln!(m, "total {} {}", self.entries.total(), self.returns.total())
    }
}

/// The handler: wants every return.
pub struct RetCounter(pub Arc<crate::State>);

impl GraphHandler for RetCounter {
    // Counts only: no clock reads.
    const WANTS_TIMES: bool = false;

    fn entry(&self, e: &mut Entry<'_>) -> bool {
        self.0.ret.entries.hit(e.func);
        true
    }

    fn ret(&self, r: &mut Return<'_>) {
        self.0.ret.returns.hit(r.func);
    }
}

/// Starts counting entries and returns of the functions `glob` matches.
pub fn start(glob: &CStr, state: Arc<crate::State>) -> Result<GraphOps<RetCounter>> {
    let mut ops = GraphOps::new(RetCounter(state))?;
    ops.set_filter(glob)?;
    ops.register()?;
    Ok(ops)
}
