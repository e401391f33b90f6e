// SPDX-License-Identifier: GPL-2.0

//! The return path's view of an exit probe's entry data: the only exit probe at every data size,
//! probes registered and unregistered during a call, and a frame shared with another ops.

use super::*;
use data::on_exit_zeroed;
use fused::{first_ways, first_ways_since};

/// The only exit probe, for every entry data size (0..=15 words): the return path's one-step
/// compare (`Return::data_exact`) must hand the exit handler exactly the words its entry wrote,
/// at every size, and a null pointer without data (`on_entry`/`on_exit` check both). The same
/// with a second exit probe registered elsewhere (no single probe: the general search), and
/// for an exit-only probe with data, which gets zeros.
pub(super) fn single_exit_probe_every_data_size(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    // The sizes at the ends of the range and between (every size ran once, in review: 16
    // sizes made this case the suite's slowest).
    for words in [0usize, 1, 2, 7, 14, 15] {
        for second in [false, true] {
            reset();
            let mut fp = probe(true, true, words * 8);
            reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
            let mut other = probe(true, true, 8);
            if second {
                reg(t, &mut other, Target::Syms(&[c_str!("ufg_test_mul")]))?;
            }
            for i in 0..4 {
                kcheck_eq!(t, add(i, words as i32), i + words as i32);
            }
            kcheck_eq!(
                t,
                (
                    words,
                    second,
                    ENTRIES.load(Relaxed),
                    EXITS.load(Relaxed),
                    BAD.load(Relaxed)
                ),
                (words, second, 4, 4, 0)
            );
            t.check_ok(cr.unregister(&mut *fp), "unregister")?;
            if second {
                t.check_ok(cr.unregister(&mut *other), "unregister other")?;
            }
        }
        // Exit-only with data: zeros at every size (after the runs above left patterns).
        reset();
        let mut bare = probe(false, true, words * 8);
        bare.exit_handler = Some(on_exit_zeroed);
        reg(t, &mut bare, Target::Syms(&[c_str!("ufg_test_add")]))?;
        for i in 0..3 {
            kcheck_eq!(t, add(i, 2), i + 2);
        }
        kcheck_eq!(
            t,
            (words, EXITS.load(Relaxed), BAD.load(Relaxed)),
            (words, 3, 0)
        );
        t.check_ok(cr.unregister(&mut *bare), "unregister exit-only")?;
    }
    Ok(())
}

// Probes A and B of `exit_probe_changes_during_a_call` are the tagged probes 0 and 1 (`tag`).
// What `change_in_call` does inside the call, in order: 0 nothing, 1 register B, 2 unregister
// B, 3 unregister A.
static CHANGES: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// Called by `ufg_test_call` inside its frame: registers or unregisters A and B as
/// [`CHANGES`] says.
///
/// # Safety
///
/// Only from `ufg_test_call`, in `exit_probe_changes_during_a_call`.
unsafe extern "C" fn change_in_call(x: kernel::ffi::c_long) -> kernel::ffi::c_long {
    let Some(c) = fprobes() else {
        BAD.fetch_add(1, Relaxed);
        return x * 2;
    };
    for ch in CHANGES.iter() {
        let (which, on) = match ch.swap(0, Relaxed) {
            1 => (1, true),
            2 => (1, false),
            3 => (0, false),
            _ => continue,
        };
        let fp = TAGGED[which].load(Relaxed) as *mut ufgraph_fprobe;
        let r = if on {
            // SAFETY: the test's probe, unregistered before the test returns.
            unsafe { c.register(fp, &Target::Syms(&[c_str!("ufg_test_call")])) }
        } else {
            c.unregister(fp)
        };
        if r.is_err() {
            BAD.fetch_add(1, Relaxed);
        }
    }
    x * 2
}

/// Exit probes registered and unregistered between a call's entry and its return: the only
/// exit probe A (3 words, entry and return through the one-step paths) is joined by B (the
/// same size, so the frame's layout matches B's too: only the header's registration tells them
/// apart), or replaced by it, or B comes and goes within the call. The return runs A's exit
/// with A's data when A is still registered, never B's for a call B did not enter, and never
/// one with the other's words.
pub(super) fn exit_probe_changes_during_a_call(t: &mut Test) -> CaseResult {
    let call = |x: kernel::ffi::c_long| {
        // SAFETY: a plain C fixture; `change_in_call` needs nothing but process context.
        unsafe { bindings::ufg_test_call(Some(change_in_call), x) }
    };
    // (what happens in the call, A's and B's exits for it, whether A is then still registered)
    // B registered before A goes keeps the shared graph ops (and its index) throughout: the
    // frame's header then matches B's layout but not its registration. A gone first takes the
    // ops with it (the return finds no slot), and B comes back on another.
    let cases: [(&[usize], usize, usize, bool); 5] = [
        (&[], 1, 0, true),
        (&[1], 1, 0, true),
        (&[1, 2], 1, 0, true),
        (&[1, 3], 0, 0, false),
        (&[3, 1], 0, 0, false),
    ];
    let cr = core(t)?;
    for (n, &(changes, a_exits, b_exits, a_stays)) in cases.iter().enumerate() {
        reset();
        let mut a = tagged_probe(24);
        let mut b = tagged_probe(24);
        tag([&mut a, &mut b]);
        reg(t, &mut a, Target::Syms(&[c_str!("ufg_test_call")]))?;
        for (ch, &v) in CHANGES.iter().zip(changes) {
            ch.store(v, Relaxed);
        }
        // `ufg_test_call` returns fn(x) + 1.
        kcheck_eq!(t, call(5), 11);
        kcheck_eq!(
            t,
            (n, tagged_exits(0), tagged_exits(1), BAD.load(Relaxed)),
            (n, a_exits, b_exits, 0)
        );
        kcheck_eq!(t, cr.is_registered(&mut a.0), a_stays);
        // The next call is entered by whoever is registered now, and each gets its own.
        let (a_now, b_now) = (
            cr.is_registered(&mut a.0) as usize,
            cr.is_registered(&mut b.0) as usize,
        );
        kcheck_eq!(t, call(3), 7);
        kcheck_eq!(
            t,
            (n, tagged_exits(0), tagged_exits(1), BAD.load(Relaxed)),
            (n, a_exits + a_now, b_exits + b_now, 0)
        );
        // Unregistered in place (a `drop` would move them first): `TAGGED` names them only
        // while they are registered.
        for p in [&mut a, &mut b] {
            if cr.is_registered(&mut p.0) {
                t.check_ok(cr.unregister(&mut p.0), "unregister")?;
            }
        }
        untag();
    }
    Ok(())
}

/// A graph ops beside fprobe on the same calls: reserves `words` words (none for 0) holding a
/// pattern of its own and the call's first argument, and checks them at the return.
struct Beside {
    words: usize,
    returns: AtomicUsize,
    bad: AtomicUsize,
}

impl Beside {
    fn pattern(arg: usize, i: usize) -> usize {
        0xbe51_de00 ^ (arg << 8) ^ i
    }
}

impl crate::fgraph::GraphHandler for Beside {
    fn entry(&self, e: &mut crate::fgraph::Entry<'_>) -> bool {
        if self.words == 0 {
            return true;
        }
        let arg = e.regs.arg(0);
        match e.reserve(self.words * 8) {
            Some(w) => {
                for (i, x) in w.iter_mut().enumerate() {
                    *x = Self::pattern(arg, i);
                }
                // Word 0 holds the argument itself, for the return (which no longer has it).
                w[0] = arg;
            }
            None => {
                self.bad.fetch_add(1, Relaxed);
            }
        }
        true
    }

    fn ret(&self, r: &mut crate::fgraph::Return<'_>) {
        self.returns.fetch_add(1, Relaxed);
        if self.words == 0 {
            return;
        }
        let ok = matches!(r.data(), Some(w) if w.len() == self.words
            && w.iter().enumerate().skip(1).all(|(i, &x)| x == Self::pattern(w[0], i)));
        if !ok {
            self.bad.fetch_add(1, Relaxed);
        }
    }
}

/// The only exit probe sharing its calls' frames with another graph ops, registered before or
/// after it (so entering first or second), reserving nothing or data of its own: the frame then
/// has two ops, and fprobe's data is all the frame holds (the other reserved nothing), or lies
/// under or over the other's. Every exit handler gets its own words at every size, and so does
/// the other ops.
pub(super) fn single_exit_probe_shares_its_frame(t: &mut Test) -> CaseResult {
    let cr = core(t)?;
    // Sizes at the ends of the range (each combination registers two hooks and waits for grace
    // periods: the review's 30 combinations took 12 s under TCG, several times that on the
    // debug kernel).
    for words in [0usize, 1, 15] {
        for other in [0usize, 3] {
            for fprobe_first in [false, true] {
                reset();
                let mut ops = t.check_ok(
                    crate::fgraph::GraphOps::new(Beside {
                        words: other,
                        returns: AtomicUsize::new(0),
                        bad: AtomicUsize::new(0),
                    }),
                    "GraphOps::new",
                )?;
                t.check_ok(ops.set_filter(c_str!("ufg_test_add")), "set_filter")?;
                let mut fp = probe(true, true, words * 8);
                if fprobe_first {
                    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
                }
                t.check_ok(ops.register(), "register ops")?;
                if !fprobe_first {
                    reg(t, &mut fp, Target::Syms(&[c_str!("ufg_test_add")]))?;
                }
                let w = first_ways();
                for i in 0..4 {
                    kcheck_eq!(t, add(i, 3), i + 3);
                }
                // Two ops on every frame: never the single probe's own return.
                kcheck_eq!(t, (words, other, first_ways_since(w).1), (words, other, 0));
                let h = ops.handler();
                kcheck_eq!(
                    t,
                    (
                        words,
                        other,
                        fprobe_first,
                        ENTRIES.load(Relaxed),
                        EXITS.load(Relaxed),
                        BAD.load(Relaxed),
                        h.returns.load(Relaxed),
                        h.bad.load(Relaxed)
                    ),
                    (words, other, fprobe_first, 4, 4, 0, 4, 0)
                );
                t.check_ok(cr.unregister(&mut *fp), "unregister")?;
                t.check_ok(ops.unregister(), "unregister ops")?;
            }
        }
    }
    Ok(())
}
