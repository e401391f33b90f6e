// SPDX-License-Identifier: GPL-2.0

//! Per-CPU arrays: one element per possible CPU, so that hot paths on different CPUs never share
//! a cache line (the task table's per-CPU caches).

use crate::sys::task::nr_cpu_ids;
use kernel::alloc::{Flags, KVVec};
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
