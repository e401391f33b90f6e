// SPDX-License-Identifier: GPL-2.0

//! The fgraph core on real functions: return values, data slots, the 16-ops limit, LRU index
//! reuse, deep recursion, parent data and task variables, unwinding.
//!
//! One suite (`ufgraph_fgraph`), its cases by concept in the files here; this file holds what
//! they share (the `Rec` handler, the fixtures' wrappers) and the suite's list, in its order.

use crate::bindings;
use crate::fgraph::graph::{self, graph, trampoline};
use crate::fgraph::shadow::ARRAY_SIZE;
use crate::fgraph::{Entry, GraphHandler, GraphOps, Return};
use crate::sys::ktest::{CaseResult, Failed, Test};
use crate::{kcheck, kcheck_eq, kunit_suite};
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use kernel::alloc::{KBox, KVec};
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;

mod capi;
mod data;
mod fork;
mod hub;
mod join;
mod ops;
mod unwind;

use capi::{
    c_ops_share_one_call, c_ret_sees_overrun, c_set_filter_racing_a_going_module, c_shared_filter,
    hub_slot_gone_mid_call, hub_tail_call_after_a_decline,
    hub_tail_call_ops_arrives_between_entries,
};
use data::{parent_data_and_task_var, task_vars_start_at_zero};
use fork::forks_with_an_empty_pool;
use hub::{
    hub_and_own_ops_in_every_order, hub_callback_recursion, hub_filter_list_follows_the_ops,
    hub_refusals_leave_nothing, hub_shares_one_ftrace_ops, shared_frame_outlives_its_ops,
};
use join::hub_join_all_callbacks;
use ops::{
    call_times_on_the_hub_for_a_frame_pushed_without, call_times_on_the_hub_when_joined,
    call_times_only_when_wanted, deep_recursion_counts_overrun, lru_reuses_released_index_last,
    multiple_storage, return_values_and_counts, seventeenth_ops_is_enospc,
};
use unwind::{kernel_unwinder_sees_the_caller, unwinding_shows_the_real_caller};

/// Counts entries and returns; optionally reserves `bytes` per entry holding a pattern derived
/// from `tag` and the first argument, and checks it (and, for `ufg_test_add`, the return value)
/// at the return.
struct Rec {
    entries: AtomicUsize,
    returns: AtomicUsize,
    bad: AtomicUsize,
    bytes: usize,
    tag: usize,
    check_sum: bool,
}

impl Rec {
    fn new(bytes: usize, tag: usize, check_sum: bool) -> Self {
        Self {
            entries: AtomicUsize::new(0),
            returns: AtomicUsize::new(0),
            bad: AtomicUsize::new(0),
            bytes,
            tag,
            check_sum,
        }
    }

    fn pattern(&self, arg: usize, i: usize) -> usize {
        self.tag.wrapping_mul(0x1000_0001) ^ (arg << 8) ^ i
    }
}

impl GraphHandler for Rec {
    fn entry(&self, e: &mut Entry<'_>) -> bool {
        self.entries.fetch_add(1, Relaxed);
        if self.bytes > 0 {
            let arg = e.regs.arg(0);
            let sum = e.regs.arg(0).wrapping_add(e.regs.arg(1)) as u32 as usize;
            match e.reserve(self.bytes) {
                Some(w) => {
                    for (i, x) in w.iter_mut().enumerate() {
                        *x = self.pattern(arg, i);
                    }
                    if self.check_sum {
                        w[0] = sum;
                    }
                }
                None => {
                    self.bad.fetch_add(1, Relaxed);
                }
            }
        }
        true
    }

    fn ret(&self, r: &mut Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
        if self.bytes == 0 {
            return;
        }
        let ok = match r.data() {
            Some(w) if w.len() == self.bytes.div_ceil(8) => {
                if self.check_sum {
                    w[0] == r.retval() as u32 as usize
                } else {
                    // The first argument is gone at return: recover it from word 1's pattern.
                    let arg = (w.get(1).map_or(w[0], |&x| x ^ 1)
                        ^ self.tag.wrapping_mul(0x1000_0001))
                        >> 8;
                    w.iter()
                        .enumerate()
                        .all(|(i, &x)| x == self.pattern(arg, i))
                }
            }
            _ => false,
        };
        if !ok {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

fn ops_on(t: &Test, glob: &CStr, h: Rec) -> Result<GraphOps<Rec>, Failed> {
    let mut ops = t.check_ok(GraphOps::new(h), "GraphOps::new")?;
    t.check_ok(ops.set_filter(glob), "set_filter")?;
    Ok(ops)
}

/// An ops for the hub: its filter given as addresses.
fn hub_ops<H: GraphHandler>(t: &Test, ips: &[usize], h: H) -> Result<GraphOps<H>, Failed> {
    let mut ops = t.check_ok(GraphOps::new(h), "GraphOps::new")?;
    t.check_ok(ops.set_filter_ips(ips, false, false), "set_filter_ips")?;
    Ok(ops)
}

fn core_is_idle(t: &Test) -> CaseResult {
    let g = graph().ok_or_else(|| t.fail(format_args!("no graph core")))?;
    kcheck_eq!(t, g.registered(), 0);
    Ok(())
}

fn add(a: i32, b: i32) -> i32 {
    // SAFETY: a plain C fixture (testfns.c) with no preconditions.
    unsafe { bindings::ufg_test_add(a, b) }
}

fn mul(a: i64, b: i64) -> i64 {
    // SAFETY: a plain C fixture with no preconditions.
    unsafe { bindings::ufg_test_mul(a as _, b as _) as i64 }
}

fn fill(t: &Test, n: usize) -> Result<KVec<GraphOps<Rec>>, Failed> {
    let mut v = KVec::new();
    for _ in 0..n {
        let mut ops = ops_on(t, c_str!("ufg_test_mul"), Rec::new(0, 0, false))?;
        t.check_ok(ops.register(), "register")?;
        t.check_ok(v.push(ops, GFP_KERNEL).map_err(Into::into), "push")?;
    }
    Ok(v)
}

// ftrace reports a function by its patched call site, a few bytes into it (after ENDBR).
fn near(ip: usize, sym: usize) -> bool {
    ip >= sym && ip < sym + 16
}

kunit_suite!(
    FGRAPH_SUITE,
    "ufgraph_fgraph",
    [
        forks_with_an_empty_pool,
        task_vars_start_at_zero,
        return_values_and_counts,
        hub_shares_one_ftrace_ops,
        hub_refusals_leave_nothing,
        hub_filter_list_follows_the_ops,
        c_shared_filter,
        c_ops_share_one_call,
        hub_tail_call_after_a_decline,
        hub_tail_call_ops_arrives_between_entries,
        hub_slot_gone_mid_call,
        c_set_filter_racing_a_going_module,
        shared_frame_outlives_its_ops,
        hub_and_own_ops_in_every_order,
        hub_callback_recursion,
        hub_join_all_callbacks,
        call_times_only_when_wanted,
        call_times_on_the_hub_when_joined,
        call_times_on_the_hub_for_a_frame_pushed_without,
        multiple_storage,
        seventeenth_ops_is_enospc,
        lru_reuses_released_index_last,
        deep_recursion_counts_overrun,
        c_ret_sees_overrun,
        parent_data_and_task_var,
        unwinding_shows_the_real_caller,
        kernel_unwinder_sees_the_caller,
    ]
);
