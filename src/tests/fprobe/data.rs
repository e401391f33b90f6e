// SPDX-License-Identifier: GPL-2.0

//! Entry data: each probe's own, of its own size, on a call several probes share, and zeroed
//! when there is no entry handler to fill it.

use super::*;

/// The probe [`unregister_in_call`] unregisters.
static UNREG: core::sync::atomic::AtomicPtr<ufgraph_fprobe> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// Called by `ufg_test_call` inside its frame: unregisters the probe in [`UNREG`].
///
/// # Safety
///
/// Only from `ufg_test_call`, in a test.
unsafe extern "C" fn unregister_in_call(x: kernel::ffi::c_long) -> kernel::ffi::c_long {
    let fp = UNREG.swap(core::ptr::null_mut(), Relaxed);
    if let (false, Some(c)) = (fp.is_null(), fprobes()) {
        if c.unregister(fp).is_err() {
            BAD.fetch_add(1, Relaxed);
        }
    }
    x * 2
}

/// A call entered while two exit probes were registered (one reservation, both probes' data)
/// returns after one of them went: the one left is now the only exit probe, whose return path
/// compares the data's first word and length with its registration's; neither matches the
/// shared data as a whole, so it goes through the full walk: the one left gets its own data,
/// the one gone nothing. The next call is the single probe's alone.
pub(super) fn single_exit_probe_after_a_shared_call(t: &mut Test) -> CaseResult {
    let call = |x: kernel::ffi::c_long| {
        // SAFETY: a plain C fixture; `unregister_in_call` needs nothing but process context.
        unsafe { bindings::ufg_test_call(Some(unregister_in_call), x) }
    };
    for gone_first in [false, true] {
        reset();
        // P (tagged probe 0): 2 words of data, Q (1): 3; P registered first, so its record
        // comes first.
        let mut p = tagged_probe(16);
        let mut q = tagged_probe(24);
        tag([&mut p, &mut q]);
        reg(t, &mut p, Target::Syms(&[c_str!("ufg_test_call")]))?;
        reg(t, &mut q, Target::Syms(&[c_str!("ufg_test_call")]))?;
        // The probe unregistered in the call, the one that stays, and their tagged indexes.
        let (gone, stays, gi, si): (&mut TestProbe, &mut TestProbe, usize, usize) = if gone_first {
            (&mut p, &mut q, 0, 1)
        } else {
            (&mut q, &mut p, 1, 0)
        };
        UNREG.store(&mut gone.0, Relaxed);
        // `ufg_test_call` returns fn(x) + 1.
        kcheck_eq!(t, call(5), 11);
        kcheck!(
            t,
            UNREG.load(Relaxed).is_null(),
            "unregistered inside the call"
        );
        kcheck_eq!(
            t,
            (tagged_exits(si), tagged_exits(gi), BAD.load(Relaxed)),
            (1, 0, 0)
        );
        // Alone now: the single-probe paths, entry and return.
        kcheck_eq!(t, call(3), 7);
        kcheck_eq!(
            t,
            (tagged_exits(si), tagged_exits(gi), BAD.load(Relaxed)),
            (2, 0, 0)
        );
        kcheck_eq!(t, ENTRIES.load(Relaxed), 3);
        t.check_ok(core(t)?.unregister(&mut stays.0), "unregister")?;
        untag();
    }
    Ok(())
}

/// A callback C calls: the exit handler of a probe with entry data and no entry handler,
/// which must find its data zeroed; counts the words that are not in `BAD`.
///
/// # Safety
///
/// As for [`on_exit`].
pub(super) unsafe extern "C" fn on_exit_zeroed(
    fp: *mut ufgraph_fprobe,
    _ip: c_ulong,
    _ret_ip: c_ulong,
    _fregs: *mut bindings::ftrace_regs,
    data: *mut c_void,
) {
    EXITS.fetch_add(1, Relaxed);
    // SAFETY: as above.
    let words = unsafe { (*fp).entry_data_size } / 8;
    for i in 0..words {
        // SAFETY: the probe's `entry_data_size` bytes for this call.
        if unsafe { data.cast::<usize>().add(i).read() } != 0 {
            BAD.fetch_add(1, Relaxed);
        }
    }
}

/// A probe with entry data but no entry handler gets zeroed data at its exit, not what an
/// earlier call left in those shadow-stack words: alone (the single-probe path), and beside a
/// probe whose entry handler fills its own data in the same call (the shared path).
pub(super) fn entry_data_without_entry_handler_is_zeroed(t: &mut Test) -> CaseResult {
    reset();
    let cr = core(t)?;
    // Leave a pattern in the words the next probe's data will occupy.
    let mut filler = probe(true, true, 16);
    reg(t, &mut filler, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..5 {
        kcheck_eq!(t, add(i, 1), i + 1);
    }
    t.check_ok(cr.unregister(&mut *filler), "unregister filler")?;
    kcheck_eq!(t, BAD.load(Relaxed), 0);
    let mut bare = probe(false, true, 16);
    bare.exit_handler = Some(on_exit_zeroed);
    reg(t, &mut bare, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..5 {
        kcheck_eq!(t, add(i, 2), i + 2);
    }
    kcheck_eq!(t, (EXITS.load(Relaxed), BAD.load(Relaxed)), (10, 0));
    // Both at once: one reservation for the two, the filler's words written by its entry.
    reg(t, &mut filler, Target::Syms(&[c_str!("ufg_test_add")]))?;
    for i in 0..5 {
        kcheck_eq!(t, add(i, 3), i + 3);
    }
    kcheck_eq!(t, (EXITS.load(Relaxed), BAD.load(Relaxed)), (20, 0));
    t.check_ok(cr.unregister(&mut *filler), "unregister filler (2)")?;
    t.check_ok(cr.unregister(&mut *bare), "unregister")?;
    Ok(())
}
