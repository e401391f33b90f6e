// SPDX-License-Identifier: GPL-2.0

//! The typed abstractions over ufgraph's shared state (issue #16): a module-wide instance
//! ([`Global`]) is published once and withdrawn only by its owner, and an [`RcuTable`] hands
//! out the entries it was given, by their keys, to readers and to its own writer.

use crate::sys::global::Global;
use crate::sys::ktest::{CaseResult, Test};
use crate::sys::rcutable::{Keyed, RcuTable};
use crate::sys::sync::NoPreempt;
use crate::{kcheck, kcheck_eq, kunit_suite};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use kernel::prelude::*;

fn global_publishes_one_instance(t: &mut Test) -> CaseResult {
    // Declared before the `Global`, so they outlive it: the `publish` contract.
    let (a, b) = (AtomicUsize::new(1), AtomicUsize::new(2));
    let g: Global<AtomicUsize> = Global::new();
    kcheck!(t, g.get().is_none());
    // SAFETY: `a` and `b` outlive `g` and every reference it hands out (all local).
    kcheck!(t, unsafe { g.publish(&a) }.is_ok());
    kcheck!(t, g.get().is_some_and(|x| core::ptr::eq(x, &a)));
    // One instance: a second is refused, and the first stays.
    // SAFETY: as above.
    kcheck_eq!(t, unsafe { g.publish(&b) }, Err(EBUSY));
    kcheck!(t, g.is(&a) && !g.is(&b));
    // Only the published instance can withdraw itself.
    g.withdraw(&b);
    kcheck_eq!(t, g.get().map(|x| x.load(Relaxed)), Some(1));
    g.withdraw(&a);
    kcheck!(t, g.get().is_none());
    // SAFETY: as above.
    kcheck!(t, unsafe { g.publish(&b) }.is_ok());
    kcheck_eq!(t, g.get().map(|x| x.load(Relaxed)), Some(2));
    g.withdraw(&b);
    Ok(())
}

/// A table entry for the test: its key, and a value to tell entries of one key apart.
struct Ent {
    key: usize,
    val: usize,
}

impl Keyed for Ent {
    fn key(&self) -> usize {
        self.key
    }
}

fn rcutable_hands_out_its_entries(t: &mut Test) -> CaseResult {
    let (table, mut w) = RcuTable::<Ent>::new();
    let np = NoPreempt::new();
    kcheck!(t, table.lookup(1, &np).is_none());
    drop(np);
    table.reserve(&mut w, 40)?;
    let mut mine: KVec<*mut Ent> = KVec::new();
    for key in 1..=40 {
        let p =
            KBox::into_raw(KBox::new(Ent { key, val: key * 10 }, GFP_KERNEL).map_err(|_| ENOMEM)?);
        mine.push(p, GFP_KERNEL).map_err(|_| ENOMEM)?;
        // SAFETY: a new entry, freed below only after the table is freed (which waits for a
        // grace period) or after it was replaced or removed and a grace period has passed.
        let old = unsafe { table.upsert(&mut w, NonNull::new_unchecked(p)) }?;
        kcheck!(t, old.is_none());
    }
    kcheck_eq!(t, w.counts().used, 40);
    {
        let np = NoPreempt::new();
        for key in 1..=40 {
            kcheck_eq!(t, table.lookup(key, &np).map(|e| e.val), Some(key * 10));
        }
        kcheck!(t, table.lookup(41, &np).is_none());
    }
    kcheck_eq!(t, table.lookup_w(&w, 7).map(|e| e.val), Some(70));
    // A new entry for a key replaces the old one, which comes back to be freed.
    let p = KBox::into_raw(KBox::new(Ent { key: 7, val: 7 }, GFP_KERNEL).map_err(|_| ENOMEM)?);
    mine.push(p, GFP_KERNEL).map_err(|_| ENOMEM)?;
    // SAFETY: as above.
    let old = unsafe { table.upsert(&mut w, NonNull::new_unchecked(p)) }?;
    kcheck!(t, old.is_some_and(|o| o.as_ptr() == mine[6]));
    kcheck_eq!(t, table.lookup_w(&w, 7).map(|e| e.val), Some(7));
    // Removal hands the entry back; the others stay.
    let gone = table.remove(&mut w, 8);
    kcheck!(t, gone.is_some_and(|o| o.as_ptr() == mine[7]));
    kcheck!(t, table.lookup_w(&w, 8).is_none());
    let (mut n, mut sum) = (0, 0);
    table.for_each(&w, |e| {
        n += 1;
        sum += e.val;
    });
    kcheck_eq!(t, n, 39);
    kcheck_eq!(
        t,
        sum,
        (1..=40).map(|k| k * 10).sum::<usize>() - 70 - 80 + 7
    );
    // Frees the slots after a grace period: no reader is left for any entry then.
    table.free(&mut w);
    kcheck_eq!(t, w.counts().used, 0);
    for &p in mine.iter() {
        // SAFETY: out of the (freed) table, after a grace period; each freed once.
        drop(unsafe { KBox::from_raw(p) });
    }
    Ok(())
}

kunit_suite!(
    TYPED_SUITE,
    "ufgraph_typed",
    [
        global_publishes_one_instance,
        rcutable_hands_out_its_entries,
    ]
);
