// SPDX-License-Identifier: GPL-2.0

//! The entry counter on real ftrace: hits counted per function, none after it stops.

use crate::bindings;
use crate::demo::counter::Counter;
use crate::sys::ktest::{CaseResult, Test};
use crate::State;
use crate::{kcheck, kcheck_eq, kunit_suite};
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

fn new_hits(t: &Test) -> Result<Arc<State>, crate::sys::ktest::Failed> {
    t.check_ok(State::new_arc(), "State::new_arc")
}

fn counts_every_call(t: &mut Test) -> CaseResult {
    let hits = new_hits(t)?;
    let counter = t.check_ok(
        Counter::start(c_str!("ufg_test_add"), hits.clone()),
        "Counter::start",
    )?;
    let mut sum = 0i64;
    for i in 0..100 {
        // SAFETY: a plain C function of ours (src/testfns.c) with no preconditions.
        sum += unsafe { bindings::ufg_test_add(i, 1) } as i64;
    }
    kcheck_eq!(t, sum, 5050);
    kcheck_eq!(t, counter.hits().0.total(), 100);
    kcheck_eq!(t, counter.hits().0.iter().count(), 1);
    drop(counter);
    // SAFETY: as above.
    unsafe { bindings::ufg_test_add(1, 2) };
    kcheck_eq!(t, hits.hits.0.total(), 100,);
    Ok(())
}

fn glob_counts_functions_apart(t: &mut Test) -> CaseResult {
    let hits = new_hits(t)?;
    let counter = t.check_ok(
        Counter::start(c_str!("ufg_test_*"), hits.clone()),
        "Counter::start",
    )?;
    for i in 0..7 {
        // SAFETY: plain C functions of ours with no preconditions.
        unsafe {
            bindings::ufg_test_add(i, i);
            if i % 2 == 0 {
                bindings::ufg_test_mul(i as _, 3);
            }
        }
    }
    drop(counter);
    // Addresses as runtime values: at -O2 `mul + 16` would otherwise become a relocation into
    // the middle of the function, which objtool (IBT) rejects.
    let add = core::hint::black_box(bindings::ufg_test_add as *const () as usize);
    let mul = core::hint::black_box(bindings::ufg_test_mul as *const () as usize);
    // ftrace reports the function's ip, which may sit a few bytes past the symbol (IBT's endbr).
    let near = |f: usize| {
        hits.hits
            .0
            .iter()
            .filter(|&(ip, _)| ip >= f && ip < f + 16)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    kcheck_eq!(t, near(add), 7);
    kcheck_eq!(t, near(mul), 4);
    kcheck_eq!(t, hits.hits.0.total(), 11);
    Ok(())
}

fn unknown_function_is_einval(t: &mut Test) -> CaseResult {
    let hits = new_hits(t)?;
    match Counter::start(c_str!("ufg_no_such_function_anywhere"), hits) {
        Ok(_) => Err(t.fail(format_args!("a filter matching nothing was accepted"))),
        Err(e) => {
            kcheck!(t, e == EINVAL, "got {:?}", e);
            Ok(())
        }
    }
}

kunit_suite!(
    COUNTER_SUITE,
    "ufgraph_counter",
    [
        counts_every_call,
        glob_counts_functions_apart,
        unknown_function_is_einval,
    ]
);
