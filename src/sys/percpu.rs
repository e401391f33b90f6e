// SPDX-License-Identifier: GPL-2.0

//! Counters split per CPU, so that hot paths on different CPUs never share a cache line.
//!
//! A counter is incremented on the CPU that runs the event and may be decremented on another
//! (a frame pushed on one CPU can be popped after migration): each per-CPU value may go negative,
//! only the sum means something.

use crate::sys::task::{nr_cpu_ids, this_cpu};
use core::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use kernel::alloc::{flags::{GFP_KERNEL, __GFP_NOWARN}, Flags, KVVec};
use kernel::prelude::*;

/// One `init()` per possible CPU, indexed by CPU number.
pub fn per_cpu_vec<T>(gfp: Flags, init: impl Fn() -> T) -> Result<KVVec<T>> {
    let n = nr_cpu_ids();
    let mut v = KVVec::with_capacity(n, gfp)?;
    for _ in 0..n {
        v.push(init(), gfp)?;
    }
    Ok(v)
}

#[repr(C, align(64))]
struct Line(AtomicIsize);

/// A counter with one cache line per possible CPU.
pub struct PerCpuCounter {
    lines: KVVec<Line>,
}

impl PerCpuCounter {
    /// A zeroed counter.
    pub fn new() -> Result<Self> {
        Ok(Self { lines: per_cpu_vec(GFP_KERNEL | __GFP_NOWARN, || Line(AtomicIsize::new(0)))? })
    }

    /// Adds `v` on this CPU's line.
    #[inline(always)]
    pub fn add(&self, v: isize) {
        // An out-of-range CPU cannot happen (nr_cpu_ids bounds every CPU number); fall back to
        // line 0 rather than panic in a hot path.
        let line = self.lines.get(this_cpu()).unwrap_or(&self.lines[0]);
        line.0.fetch_add(v, Relaxed);
    }

    /// Adds `v` on this CPU's line with a load and a store, no locked instruction: for a caller
    /// with preemption disabled. An NMI that adds to the same line between the two is lost: for
    /// counters that may be off by such a rare count (statistics), on hot paths.
    #[inline(always)]
    pub fn add_local(&self, v: isize) {
        let line = self.lines.get(this_cpu()).unwrap_or(&self.lines[0]);
        line.0.store(line.0.load(Relaxed).wrapping_add(v), Relaxed);
    }

    /// The sum over all CPUs. Exact when nothing adds concurrently.
    pub fn sum(&self) -> isize {
        self.lines.iter().map(|l| l.0.load(Relaxed)).sum()
    }
}
