// SPDX-License-Identifier: GPL-2.0

//! Per-CPU arrays: one element per possible CPU, so that hot paths on different CPUs never share
//! a cache line (the task table's per-CPU caches).

use crate::sys::task::{nr_cpu_ids, this_cpu};
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

extern "C" {
    /// Each possible CPU's offset of its per-CPU area (exported on x86_64 and arm64 SMP
    /// kernels): a per-CPU variable's copy for CPU `n` is at its address plus entry `n`.
    /// Declared at its full size (NR_CPUS), so that reading any entry stays inside the object
    /// Rust is told of.
    static __per_cpu_offset: [usize; crate::bindings::UFG_NR_CPUS];
}

/// This CPU's copy of the per-CPU variable at per-CPU address `addr`, as `this_cpu_ptr()`
/// computes it: an address, nothing is read there. The caller keeps preemption disabled (probe
/// handlers do) for the CPU to stay the same.
pub fn this_cpu_ptr(addr: usize) -> usize {
    let cpu = this_cpu();
    if cpu >= nr_cpu_ids() {
        return addr;
    }
    // SAFETY: `__per_cpu_offset` is an array of NR_CPUS entries, at least nr_cpu_ids, set up at
    // boot and never written again; `cpu` is below nr_cpu_ids.
    let off = unsafe {
        core::ptr::addr_of!(__per_cpu_offset)
            .cast::<usize>()
            .add(cpu)
            .read()
    };
    addr.wrapping_add(off)
}
