// SPDX-License-Identifier: GPL-2.0

//! An open-addressing table from a key (a task pointer) to an entry (a pointer to that task's
//! shadow stack), for lock-free readers.
//!
//! Slots hold entry addresses; the key of an entry is read from the entry itself (`key_of`), so
//! one atomic word per slot is all a reader needs to load. Writers are serialised by the caller
//! (a spinlock); readers run concurrently with them and with nothing but atomics, from any context
//! including NMI. A removed slot becomes a tombstone, so probe chains stay intact for readers; the
//! table is rebuilt (without tombstones, usually bigger) before it gets full.
//!
//! ```text
//!   slots: [ 0 | &A | TOMB | &B | 0 | &C | ... ]   home(key) = hash(key) & (cap - 1), probe +1
//!            empty: ends a probe   tombstone: keep probing
//! ```
//!
//! Memory reclamation (an entry freed after its removal) is the caller's: it must wait until no
//! reader can still hold the entry (an RCU grace period in the kernel).
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

use core::sync::atomic::{AtomicUsize, Ordering};

/// An empty slot: ends every probe sequence.
pub const EMPTY: usize = 0;
/// A removed entry: readers probe past it, writers may reuse it.
pub const TOMBSTONE: usize = 1;

/// Occupancy of a table, kept by its (serialised) writers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Slots holding an entry.
    pub used: usize,
    /// Slots holding a tombstone.
    pub tombs: usize,
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The key is present already, with this entry.
    Exists(usize),
    /// The table is too full: it must grow first.
    Full,
}

/// The first slot probed for `key` in a table of `cap` (a power of two) slots.
pub fn home(key: usize, cap: usize) -> usize {
    // Task structs are slab objects: the low bits carry no information. Mix, take the top.
    let h = (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 32) as usize & (cap - 1)
}

// Where a probe for a key ended.
enum Probe {
    // The key's entry, at this slot.
    Found(usize, usize),
    // The key is absent: the first tombstone passed (if any), and the empty slot that ended the
    // probe (if the table was not full of other keys).
    Missing {
        tomb: Option<usize>,
        empty: Option<usize>,
    },
}

fn probe(
    slots: &[AtomicUsize],
    key: usize,
    key_of: impl Fn(usize) -> usize,
    order: Ordering,
) -> Probe {
    let cap = slots.len();
    let mut i = home(key, cap);
    let mut tomb = None;
    for _ in 0..cap {
        match slots[i].load(order) {
            EMPTY => {
                return Probe::Missing {
                    tomb,
                    empty: Some(i),
                }
            }
            TOMBSTONE => {
                tomb.get_or_insert(i);
            }
            e if key_of(e) == key => return Probe::Found(i, e),
            _ => {}
        }
        i = (i + 1) & (cap - 1);
    }
    Probe::Missing { tomb, empty: None }
}

/// Finds the entry for `key`. Safe against concurrent writers: it sees the entry either before or
/// after a concurrent insert or remove, never a torn one.
pub fn lookup(slots: &[AtomicUsize], key: usize, key_of: impl Fn(usize) -> usize) -> Option<usize> {
    match probe(slots, key, key_of, Ordering::Acquire) {
        Probe::Found(_, e) => Some(e),
        Probe::Missing { .. } => None,
    }
}

/// Whether a table of `cap` slots should be rebuilt: more than half its slots are taken,
/// counting tombstones (which lengthen probes just as entries do).
pub fn wants_rebuild(c: &Counts, cap: usize) -> bool {
    (c.used + c.tombs) * 2 > cap
}

/// Inserts `entry` under `key`. Refuses past three quarters full, so probes stay short and an
/// empty slot always ends them. Writers only.
pub fn insert(
    slots: &[AtomicUsize],
    c: &mut Counts,
    key: usize,
    entry: usize,
    key_of: impl Fn(usize) -> usize,
) -> Result<(), InsertError> {
    debug_assert!(entry > TOMBSTONE);
    if (c.used + c.tombs + 1) * 4 > slots.len() * 3 {
        return Err(InsertError::Full);
    }
    let slot = match probe(slots, key, key_of, Ordering::Relaxed) {
        Probe::Found(_, e) => return Err(InsertError::Exists(e)),
        Probe::Missing { tomb: Some(t), .. } => {
            c.tombs -= 1;
            t
        }
        Probe::Missing {
            tomb: None,
            empty: Some(i),
        } => i,
        Probe::Missing {
            tomb: None,
            empty: None,
        } => return Err(InsertError::Full),
    };
    // Release: a reader that sees the address sees the entry's initialised contents.
    slots[slot].store(entry, Ordering::Release);
    c.used += 1;
    Ok(())
}

/// Removes and returns the entry for `key`. Writers only.
pub fn remove(
    slots: &[AtomicUsize],
    c: &mut Counts,
    key: usize,
    key_of: impl Fn(usize) -> usize,
) -> Option<usize> {
    let Probe::Found(i, e) = probe(slots, key, key_of, Ordering::Relaxed) else {
        return None;
    };
    slots[i].store(TOMBSTONE, Ordering::Release);
    c.used -= 1;
    c.tombs += 1;
    Some(e)
}

/// Replaces the entry for `key` with `entry` and returns the old one. Writers only.
pub fn replace(
    slots: &[AtomicUsize],
    key: usize,
    entry: usize,
    key_of: impl Fn(usize) -> usize,
) -> Option<usize> {
    let Probe::Found(i, e) = probe(slots, key, key_of, Ordering::Relaxed) else {
        return None;
    };
    slots[i].store(entry, Ordering::Release);
    Some(e)
}

/// Whether `n` more inserts fit in a table of `cap` slots without refusal.
pub fn has_room(c: &Counts, cap: usize, n: usize) -> bool {
    (c.used + c.tombs + n) * 4 <= cap * 3
}

/// Calls `f` on every entry.
pub fn for_each(slots: &[AtomicUsize], mut f: impl FnMut(usize)) {
    for s in slots {
        let e = s.load(Ordering::Acquire);
        if e > TOMBSTONE {
            f(e);
        }
    }
}

/// Copies every entry of `from` into the empty table `to` (which must be big enough), leaving
/// tombstones behind. Writers only; `from` stays valid for readers until the caller retires it.
pub fn rebuild(
    from: &[AtomicUsize],
    to: &[AtomicUsize],
    key_of: impl Fn(usize) -> usize + Copy,
) -> Result<Counts, InsertError> {
    let mut c = Counts::default();
    let mut err = Ok(());
    for_each(from, |e| {
        if err.is_ok() {
            err = insert(to, &mut c, key_of(e), e, key_of);
        }
    });
    err.map(|()| c)
}

/// The capacity (a power of two, at least 64) for `n` entries: load at most a quarter, so the
/// table absorbs many inserts (forks) before it must be rebuilt again.
pub fn capacity_for(n: usize) -> usize {
    (n.max(16) * 4).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    // Entries are indexes into a Vec of keys, offset past EMPTY/TOMBSTONE.
    struct World {
        keys: Vec<usize>,
    }
    impl World {
        fn key_of(&self) -> impl Fn(usize) -> usize + Copy + '_ {
            move |e| self.keys[e - 2]
        }
    }

    fn table(cap: usize) -> Vec<AtomicUsize> {
        (0..cap).map(|_| AtomicUsize::new(0)).collect()
    }

    #[test]
    fn insert_lookup_remove() {
        let w = World {
            keys: (0..40).map(|i| 0xffff_8880_0000_0000 + i * 0x1c0).collect(),
        };
        let t = table(64);
        let mut c = Counts::default();
        for e in 0..40 {
            let r = insert(&t, &mut c, w.keys[e], e + 2, w.key_of());
            if e < 47 && (c.used + c.tombs) * 4 <= 48 * 4 {
                r.unwrap();
            }
        }
        assert_eq!(c.used, 40);
        for e in 0..40 {
            assert_eq!(lookup(&t, w.keys[e], w.key_of()), Some(e + 2));
        }
        assert_eq!(
            insert(&t, &mut c, w.keys[3], 99, w.key_of()),
            Err(InsertError::Exists(5))
        );
        assert_eq!(remove(&t, &mut c, w.keys[3], w.key_of()), Some(5));
        assert_eq!(lookup(&t, w.keys[3], w.key_of()), None);
        assert_eq!(remove(&t, &mut c, w.keys[3], w.key_of()), None);
        // Others are still found past the tombstone.
        for e in (0..40).filter(|&e| e != 3) {
            assert_eq!(lookup(&t, w.keys[e], w.key_of()), Some(e + 2));
        }
        assert_eq!(c, Counts { used: 39, tombs: 1 });
        // The tombstone is reused.
        insert(&t, &mut c, w.keys[3], 5, w.key_of()).unwrap();
        assert_eq!(c, Counts { used: 40, tombs: 0 });
    }

    #[test]
    fn refuses_past_three_quarters() {
        let w = World {
            keys: (1..=64).map(|i| i * 64).collect(),
        };
        let t = table(64);
        let mut c = Counts::default();
        let mut ok = 0;
        for e in 0..64 {
            match insert(&t, &mut c, w.keys[e], e + 2, w.key_of()) {
                Ok(()) => ok += 1,
                Err(InsertError::Full) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(ok, 48);
        assert!(wants_rebuild(&c, 64));
        let big = table(capacity_for(c.used));
        let c2 = rebuild(&t, &big, w.key_of()).unwrap();
        assert_eq!(c2.used, 48);
        assert!(!wants_rebuild(&c2, big.len()));
        for e in 0..48 {
            assert_eq!(lookup(&big, w.keys[e], w.key_of()), Some(e + 2));
        }
    }

    #[test]
    fn replace_swaps_in_place() {
        let w = World {
            keys: vec![0x100, 0x200, 0x300],
        };
        let t = table(16);
        let mut c = Counts::default();
        insert(&t, &mut c, 0x100, 2, w.key_of()).unwrap();
        // Entry 3 (key 0x200) is not in: nothing to replace.
        assert_eq!(replace(&t, 0x200, 3, w.key_of()), None);
        // An entry with the same key (index 2 again, standing for a new copy) replaces it.
        assert_eq!(replace(&t, 0x100, 2, w.key_of()), Some(2));
        assert_eq!(c.used, 1);
        assert!(has_room(&c, 16, 11));
        assert!(!has_room(&c, 16, 12));
    }

    // A model check against HashMap under random inserts and removes.
    #[test]
    fn behaves_like_a_map() {
        let w = World {
            keys: (0..500).map(|i| 0x1000 + i * 0x40).collect(),
        };
        let mut t = table(64);
        let mut c = Counts::default();
        let mut model = HashMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let e = (x % 500) as usize;
            let k = w.keys[e];
            if x & 0x100 != 0 {
                match insert(&t, &mut c, k, e + 2, w.key_of()) {
                    Ok(()) => assert!(model.insert(k, e + 2).is_none()),
                    Err(InsertError::Exists(v)) => assert_eq!(model.get(&k), Some(&v)),
                    Err(InsertError::Full) => panic!("should have been rebuilt"),
                }
            } else {
                assert_eq!(remove(&t, &mut c, k, w.key_of()), model.remove(&k));
            }
            if wants_rebuild(&c, t.len()) {
                let n = table(capacity_for(c.used));
                c = rebuild(&t, &n, w.key_of()).unwrap();
                t = n;
            }
            assert_eq!(c.used, model.len());
        }
        for (k, v) in &model {
            assert_eq!(lookup(&t, *k, w.key_of()), Some(*v));
        }
    }
}
