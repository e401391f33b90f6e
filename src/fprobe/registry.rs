// SPDX-License-Identifier: GPL-2.0

//! Registering and unregistering probes: resolving what they hook, the tables the hot path
//! reads, the shared ops' filter, and module unload.

use super::*;
use kernel::sync::lock::{mutex::MutexBackend, Guard};

impl Fprobes {
    /// An empty core.
    pub fn new() -> impl PinInit<Self> {
        let (ips, ips_counts) = RcuTable::new();
        let (live, live_counts) = RcuTable::new();
        let (regs, regs_counts) = RcuTable::new();
        pin_init!(Self {
            ips,
            live,
            regs,
            reg <- new_mutex!(Reg {
                ips_counts,
                live_counts,
                regs_counts,
                next_id: 1,
                graph: None,
                graph_ips: 0,
                filter_stale: false,
                ops_leaked: false,
                exit_probes: 0,
                entry_probes: 0,
                garbage: KVec::new(),
                retired: None,
                modules_gen: 0,
                missed_retired: 0,
            }),
            // SAFETY: the field at `Fprobes`'s `WorkItem` offset, in its pin-initialiser.
            reaper <- unsafe { Work::new() },
        })
    }

    /// Makes this the instance handlers and the C API use. `EBUSY` if another is.
    pub fn publish(self: Pin<&Self>) -> Result {
        // Its drop withdraws it, then unregisters the shared graph ops (which waits for running
        // callbacks) and frees its tables only after grace periods; API calls come from this
        // module's users (events), dropped before it, and from clients linking against the
        // module, which keep it loaded.
        // SAFETY: pinned, so it stays where it is until dropped, and (above) nothing that
        // loaded it from `FPROBES` still uses it once its drop has withdrawn it.
        unsafe { FPROBES.publish(self.get_ref()) }
    }

    /// The ftrace locations `t` selects, sorted and without duplicates, leaving out the
    /// functions of modules that are going away (`fgraph::graph::resolve`). `ENOENT` (with a
    /// log line naming it) for an unknown symbol or an empty match, `EINVAL` for an address
    /// that is neither a traceable function's ftrace location nor its start.
    pub fn resolve(t: &Target<'_>) -> Result<KVec<usize>> {
        crate::fgraph::graph::resolve(t)
    }

    /// [`Fprobes::resolve`], with the module generation it started at.
    pub fn resolve_gen(t: &Target<'_>) -> Result<Resolved> {
        // The generation first: a module that comes or starts going later bumps it (after the
        // graph core's list of going modules has changed: `capi::on_module`), and the
        // registration notices.
        let gen = core_ref().map_or(0, |c| c.reg.lock().modules_gen);
        Ok(Resolved {
            ips: crate::fgraph::graph::resolve(t)?,
            gen,
        })
    }

    /// Registers `fp` on `t`. On failure nothing is left behind.
    ///
    /// # Safety
    ///
    /// `fp` must point to a probe that stays valid until [`Fprobes::unregister`] returns.
    pub unsafe fn register(&self, fp: *mut ufgraph_fprobe, t: &Target<'_>) -> Result {
        // SAFETY: the caller passes a valid probe.
        unsafe { Self::check(fp)? };
        // A module that comes or goes between resolution and registration makes the functions
        // stale: resolve again (each round is a module load or unload: a few are plenty).
        let mut tries = 0;
        loop {
            let r = Self::resolve_gen(t)?;
            // SAFETY: as above.
            match unsafe { self.register_checked(fp, r) } {
                Err(e) if e == EAGAIN && tries < 8 => tries += 1,
                res => return res,
            }
        }
    }

    /// Checks what registration checks of `fp` itself.
    ///
    /// # Safety
    ///
    /// `fp` must point to a valid probe.
    pub(super) unsafe fn check(fp: *mut ufgraph_fprobe) -> Result {
        // SAFETY: the caller passes a valid probe.
        check_probe(unsafe { &*fp })
    }

    /// Registers `fp` on `ips`, ftrace locations from [`Fprobes::resolve`] (sorted, without
    /// duplicates). Unlike [`Fprobes::register`] this reads no file, so callers holding locks
    /// that tracefs readers also take (the kernel's `event_mutex`) may call it: resolve first,
    /// without locks, then register.
    ///
    /// # Safety
    ///
    /// As for [`Fprobes::register`].
    pub unsafe fn register_resolved(&self, fp: *mut ufgraph_fprobe, ips: KVec<usize>) -> Result {
        // SAFETY: as for this function.
        unsafe { self.register_ips(fp, ips, None) }
    }

    /// [`Fprobes::register_resolved`] on functions from [`Fprobes::resolve_gen`]: `EAGAIN`, and
    /// nothing registered, if a module came or went since they were resolved and some of them
    /// are not functions of the kernel image (a module's may go; the image's never do).
    ///
    /// # Safety
    ///
    /// As for [`Fprobes::register`].
    pub unsafe fn register_checked(&self, fp: *mut ufgraph_fprobe, r: Resolved) -> Result {
        // SAFETY: as for this function.
        unsafe { self.register_ips(fp, r.ips, Some(r.gen)) }
    }

    /// The current module generation (see [`Resolved`]).
    pub fn modules_gen(&self) -> u64 {
        self.reg.lock().modules_gen
    }

    /// # Safety
    ///
    /// As for [`Fprobes::register`].
    pub(super) unsafe fn register_ips(
        &self,
        fp: *mut ufgraph_fprobe,
        ips: KVec<usize>,
        gen: Option<u64>,
    ) -> Result {
        // SAFETY: the caller passes a valid probe.
        unsafe { Self::check(fp)? };
        // SAFETY: as above.
        let has_exit = unsafe { (*fp).exit_handler.is_some() };
        let mut reg = self.reg.lock();
        if self.live.lookup_w(&reg.live_counts, fp as usize).is_some() {
            return Err(EBUSY);
        }
        // Checked under `reg`, which the module notifier takes to drop a going module's
        // functions: either it has not run yet (and will drop them from this probe too), or
        // the generation moved. A moved generation matters only to a module's functions: under
        // module churn (a client loaded and unloaded in a loop) probes on the kernel's own are
        // never refused.
        if gen.is_some_and(|g| g != reg.modules_gen) && crate::fgraph::graph::in_modules(&ips) {
            return Err(EAGAIN);
        }
        // A module gone live: its init functions, which ftrace lists until the loader frees
        // them, after the notifiers. The notifier takes them out of the location list first,
        // then (under `reg`) out of every probe (`module_live`): either that has not happened
        // yet (and takes them out of this probe too), or they are left out here. A probe left
        // with none finds no function, as for a glob that matches none.
        let mut ips = ips;
        let asked = ips.len();
        crate::sys::ksym::keep_listed(&mut ips);
        if asked > 0 && ips.is_empty() {
            return Err(ENOENT);
        }
        let id = reg.next_id;
        let Some(next_id) = hdr::next_id(id) else {
            return Err(ENOSPC);
        };
        // The shared ops gives tasks no shadow stack until a probe needs one (an exit probe).
        if has_exit {
            crate::fgraph::graph::graph().ok_or(ENODEV)?.need_stacks()?;
        }
        // Everything that can fail first: the new entries, room in the tables, the records.
        // Then the filter update (which can fail too, and is undone by not publishing).
        // SAFETY: as above.
        let new = unsafe { self.prepare(&mut reg, fp, id, has_exit, ips)? };
        let idle = reg.no_probes();
        self.clear_shortcuts(has_exit, !new.path_new.is_empty(), idle);
        if let Err(e) = reg.update_filter(&new.path_new, false) {
            self.settle(&reg);
            return Err(e);
        }

        // A registration starts its count of misses at 0, as upstream's `register_fprobe()`
        // does: what it missed before was added to `missed_retired` when it was unregistered,
        // and would be counted again (an `f:` event's probes are registered at every enable).
        // No handler of `fp` runs before it is published below.
        // SAFETY: the caller's valid probe; `nmissed` is only ever updated atomically.
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp).nmissed).cast()) }
            .store(0, Relaxed);
        // SAFETY: the caller's probe, valid until it is unregistered (the contract of
        // `register`), and `new` was prepared for it.
        let old_entries = unsafe { self.publish_new(&mut reg, fp, new) };
        reg.next_id = next_id;
        if has_exit {
            reg.exit_probes += 1
        } else {
            reg.entry_probes += 1
        }
        self.settle(&reg);
        self.free_replaced(reg, old_entries);
        Ok(())
    }

    /// Allocates all a registration of `fp` (as registration `id`) on `ips` needs, changing
    /// nothing that readers see: the entries to publish, room in the three tables, its `Live`
    /// and `Private`, and room for the entries it will replace.
    ///
    /// # Safety
    ///
    /// `fp` must point to a valid probe.
    unsafe fn prepare(
        &self,
        reg: &mut Reg,
        fp: *mut ufgraph_fprobe,
        id: usize,
        has_exit: bool,
        ips: KVec<usize>,
    ) -> Result<Prepared> {
        let mut fresh: KVec<KBox<IpEntry>> = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        // The functions new to the filter.
        let mut path_new: KVec<usize> = KVec::new();
        for &ip in ips.iter() {
            let old = self.ips.lookup_w(&reg.ips_counts, ip);
            if old.is_none() {
                path_new.push(ip, GFP_KERNEL)?;
            }
            fresh.push(IpEntry::with_probe(old, ip, fp, id, has_exit)?, GFP_KERNEL)?;
        }
        let Reg {
            ips_counts,
            live_counts,
            regs_counts,
            ..
        } = reg;
        // Room for the functions new to the table: the others' entries are replaced in place
        // (a second probe on hooked functions needs none).
        self.ips.reserve(ips_counts, path_new.len())?;
        self.live.reserve(live_counts, 1)?;
        self.regs.reserve(regs_counts, 1)?;
        // SAFETY: `fp` is valid (caller). Its size was checked (`check`): never E2BIG here.
        let words = hdr::data_words(unsafe { (*fp).entry_data_size }).ok_or(E2BIG)?;
        // At most 16 words (15 of data and the header): always a size the stack takes.
        let size = crate::fgraph::DataSize::new(1 + words).ok_or(E2BIG)?;
        let live = KBox::new(
            Live {
                id,
                fp,
                hdr: hdr::encode(id, words),
                size,
                one_step: crate::fgraph::OneStep::none()
                    .to_words()
                    .map(AtomicUsize::new),
            },
            GFP_KERNEL,
        )?;
        let gone = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        let dead = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
        let private = KBox::new(
            Private {
                ips,
                exit: has_exit,
                live: core::ptr::null_mut(),
                gone,
                dead,
            },
            GFP_KERNEL,
        )?;
        let old_entries = KVec::with_capacity(fresh.len(), GFP_KERNEL)?;
        Ok(Prepared {
            fresh,
            path_new,
            live,
            private,
            old_entries,
        })
    }

    /// Clears the shortcuts a new probe (`has_exit`: one with an exit handler) makes wrong,
    /// before the filter grows (`grows`: the probe hooks a function new to it). `idle`: no
    /// probe is registered.
    fn clear_shortcuts(&self, has_exit: bool, grows: bool, idle: bool) {
        if idle {
            // Nothing is published (the last `settle` found no probe), so nothing a callback
            // may be acting on could be wrong for the functions the filter gains. Until
            // `settle` publishes this probe, callbacks return at once: the filter update
            // patches every function it gains, and on a mass attach the kernel code doing it
            // calls thousands of them (a fifth of the attach, in instructions).
            DISPATCH.store(IDLE, Release);
            return;
        }
        // The shortcuts this probe makes wrong: the single entry-only probe (any new probe),
        // no lookup (a first entry-only probe), the single exit probe (a second one). LOOKUP
        // is right for any filter. A callback may have read the old word and be about to act
        // on it for a function the filter is about to gain: wait for those callbacks before it
        // grows. A probe on functions hooked already does not grow it: no need to wait.
        let d = DISPATCH.load(Relaxed);
        let mut changed = false;
        if d != 0 || !has_exit {
            changed |= DISPATCH.swap(LOOKUP, AcqRel) != LOOKUP;
        }
        if has_exit {
            changed |= !SINGLE_EXIT.swap(core::ptr::null_mut(), AcqRel).is_null();
        }
        if changed && grows {
            synchronize_rcu();
        }
    }

    /// Publishes what [`Fprobes::prepare`] made for `fp`: its entries in `ips`, the probe in
    /// `live`, its `Live` in `regs`, its `Private` in the probe. Returns the entries replaced.
    ///
    /// # Safety
    ///
    /// `fp` must be the probe `new` was prepared for, valid until it is unregistered.
    unsafe fn publish_new(
        &self,
        reg: &mut Reg,
        fp: *mut ufgraph_fprobe,
        new: Prepared,
    ) -> KVec<usize> {
        let Prepared {
            fresh,
            live,
            mut private,
            mut old_entries,
            ..
        } = new;
        // Publish: nothing below can fail (`prepare` reserved room, capacity too).
        for e in fresh.into_iter() {
            let ip = e.ip;
            let raw = KBox::into_raw(e);
            // Freed a grace period after it leaves the table (`reap_now`, `unregister`,
            // `drop_module`), changed only through its atomics meanwhile.
            // SAFETY: `raw` is a new entry (`KBox::into_raw` never returns null) that lives as
            // `IpEntry`'s invariants require (above).
            match unsafe {
                self.ips
                    .upsert(&mut reg.ips_counts, NonNull::new_unchecked(raw))
            } {
                Ok(Some(old)) => {
                    // Within the capacity `prepare` reserved: does not allocate.
                    let _ = old_entries.push(old.as_ptr() as usize, GFP_ATOMIC);
                }
                Ok(None) => {}
                Err(_) => {
                    // Cannot happen after `reserve`; keep the entry (leaked) rather than race.
                    pr_err!("fprobe: ip table refused {:#x} after reserving room\n", ip);
                }
            }
        }
        // Unregistration takes it out of the table; the table reaches it only through raw
        // pointers (`RegisteredProbe`).
        // SAFETY: the caller's probe (non-null), valid until it is unregistered: the contract
        // of `register`.
        let _ = unsafe {
            self.live.upsert(
                &mut reg.live_counts,
                NonNull::new_unchecked(fp.cast::<RegisteredProbe>()),
            )
        };
        let live = KBox::into_raw(live);
        // SAFETY: a new `Live` (`KBox::into_raw` never returns null), immutable, freed by
        // `unregister` a grace period after it leaves the table (`Live`'s invariants).
        let _ = unsafe {
            self.regs
                .upsert(&mut reg.regs_counts, NonNull::new_unchecked(live))
        };
        private.live = live;
        // SAFETY: the probe is ours to annotate while registered (the field is private to us).
        unsafe { (*fp).hlist_array = KBox::into_raw(private).cast() };
        old_entries
    }

    /// Frees the entries a registration replaced (`old`) after a grace period, without the
    /// registration waiting for it (a second probe on 10000 hooked functions replaces 10000
    /// entries): the reaper does. If they cannot join its list, waits here, `reg` released.
    fn free_replaced(&self, mut reg: Guard<'_, Reg, MutexBackend>, old: KVec<usize>) {
        if old.is_empty() {
            return;
        }
        if reg.garbage.extend_from_slice(&old, GFP_KERNEL).is_ok() {
            self.reaper.schedule();
            return;
        }
        drop(reg);
        synchronize_rcu();
        for &o in old.iter() {
            // SAFETY: unpublished; readers are gone after the grace period (`IpEntry`'s
            // invariants).
            drop(unsafe { KBox::from_raw(o as *mut IpEntry) });
        }
    }

    /// Whether `fp` is registered.
    pub fn is_registered(&self, fp: *mut ufgraph_fprobe) -> bool {
        let reg = self.reg.lock();
        self.live.lookup_w(&reg.live_counts, fp as usize).is_some()
    }

    /// Unregisters `fp`: when this returns, neither handler runs any more. `EINVAL` if it is not
    /// registered.
    // `fp` is dereferenced only once the registry has it: a registered probe is valid until it is
    // unregistered (the contract of `register`). Any other pointer is only compared.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn unregister(&self, fp: *mut ufgraph_fprobe) -> Result {
        let mut reg = self.reg.lock();
        if self
            .live
            .remove(&mut reg.live_counts, fp as usize)
            .is_none()
        {
            return Err(EINVAL);
        }
        // SAFETY: registered probes carry our private record.
        let mut private = unsafe { KBox::from_raw((*fp).hlist_array.cast::<Private>()) };
        // SAFETY: as above.
        unsafe { (*fp).hlist_array = core::ptr::null_mut() };
        // Freed after the grace period below: the return side may be reading it.
        // SAFETY: the record of a probe just taken out of `live`, and `live` is dropped after
        // the grace period below.
        let live = unsafe { self.withdraw_live(&mut reg, &private) };
        if reg.no_probes() {
            // The last probe: from now on callbacks have nothing to run (its handlers are
            // not reached any more), and they return at once while the filter update below
            // unpatches its functions. `settle` replaces this.
            DISPATCH.store(IDLE, Release);
        }
        let (path_gone, dead) = self.clear_from_entries(&mut reg, fp, &mut private);
        // The shared ops went with the filter's last function: its unregistration came after
        // everything above and waited for every callback (`Unhooked`), so nothing needs waiting
        // for again (on a mass detach, a grace period of about 9 million instructions).
        let unhooked = match reg.update_filter(&path_gone, true) {
            Ok(Unhooked(u)) => u,
            Err(e) => {
                // The probe is gone from every entry: a stale filter only costs callbacks that
                // find nothing.
                pr_warn!("fprobe: filter update on unregister failed: {:?}\n", e);
                false
            }
        };
        // Whether `settle` below may publish a shortcut (one probe left of a kind, none of the
        // other), which says every function in the filter is its probe's.
        let shortcut = matches!((reg.entry_probes, reg.exit_probes), (1, 0) | (0, 1));
        let mut dead = dead;
        if unhooked {
            // The last probe went, and with it the shared ops (left for the reaper to free).
            // Its entries go to the reaper too: on a mass detach, 18165 frees (about 5 million
            // instructions) the caller need not wait for.
            if reg.garbage.extend_from_slice(&dead, GFP_KERNEL).is_ok() {
                dead = KVec::new();
            }
            self.reaper.schedule();
        }
        drop(reg);
        if !unhooked {
            wait_unhooked(shortcut, &path_gone);
        }
        for &d in dead.iter() {
            // SAFETY: unpublished, readers gone (`IpEntry`'s invariants).
            drop(unsafe { KBox::from_raw(d as *mut IpEntry) });
        }
        drop(live);
        // The filter has settled: publish the shortcuts that are true again.
        let mut reg = self.reg.lock();
        // Handlers that could count a miss for `fp` are gone (the grace periods above): its
        // misses join the core's total, which stays monotonic when probes come and go (an
        // event's probes are unregistered each time it is disabled).
        // SAFETY: the caller's probe, valid for the call; `nmissed` is only updated atomically.
        reg.missed_retired +=
            unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp).nmissed).cast()) }
                .load(Relaxed);
        self.settle(&reg);
        Ok(())
    }

    /// Takes the registration whose record is `private` out of `regs`, `SINGLE_EXIT` and
    /// `DISPATCH` and out of the probe counts, and returns its `Live`.
    ///
    /// # Safety
    ///
    /// `private` must be the record of a probe just taken out of `live` (so this runs once per
    /// registration), and the `Live` returned dropped only a grace period later (the return
    /// side may be reading it).
    unsafe fn withdraw_live(&self, reg: &mut Reg, private: &Private) -> KBox<Live> {
        // SAFETY: the registration's `Live`, allocated at registration and freed only by
        // `unregister` (the caller).
        let id = unsafe { (*private.live).id };
        // Not the single probe any more: callbacks look it up (and find it gone) from now on.
        if private.exit {
            let _ =
                SINGLE_EXIT.compare_exchange(private.live, core::ptr::null_mut(), AcqRel, Relaxed);
        } else {
            let _ = DISPATCH.compare_exchange(private.live as usize, LOOKUP, AcqRel, Relaxed);
        }
        if private.exit {
            reg.exit_probes -= 1
        } else {
            reg.entry_probes -= 1
        }
        self.regs.remove(&mut reg.regs_counts, id);
        // The box goes back to the caller, which drops it only after a grace period (`Live`'s
        // invariants): readers that loaded the pointer before are done with it by then.
        // SAFETY: from `KBox::into_raw` at registration; out of every table now, freed only here.
        unsafe { KBox::from_raw(private.live) }
    }

    /// Takes the probe `fp` (whose record is `private`) out of the entries of its functions,
    /// and the entries left without probes out of `ips`. Returns the functions that leave the
    /// filter and the entries to free after a grace period.
    fn clear_from_entries(
        &self,
        reg: &mut Reg,
        fp: *mut ufgraph_fprobe,
        private: &mut Private,
    ) -> (KVec<usize>, KVec<usize>) {
        // Within the capacity reserved at registration: the pushes below do not allocate.
        let mut path_gone = core::mem::replace(&mut private.gone, KVec::new());
        let mut dead = core::mem::replace(&mut private.dead, KVec::new());
        for &ip in private.ips.iter() {
            let Some(ent) = self.ips.lookup_w(&reg.ips_counts, ip) else {
                continue;
            };
            for p in ent.probes.iter() {
                if p.fp.load(Relaxed) == fp {
                    p.fp.store(core::ptr::null_mut(), Release);
                }
            }
            let n = if private.exit {
                &ent.exit
            } else {
                &ent.entry_only
            };
            n.fetch_sub(1, Relaxed);
            if ent.exit.load(Relaxed) == 0 && ent.entry_only.load(Relaxed) == 0 {
                let _ = path_gone.push(ip, GFP_KERNEL);
                if let Some(e) = self.ips.remove(&mut reg.ips_counts, ip) {
                    let _ = dead.push(e.as_ptr() as usize, GFP_KERNEL);
                }
            }
        }
        (path_gone, dead)
    }

    // Publishes the dispatch words (see the module's diagram) that the registered probes make
    // true. Under `reg`, with the filter holding exactly the registered probes' functions (and
    // no callback still acting on a larger filter: after a grace period if it shrank), or more
    // after a failed removal (`Reg::filter_stale`: then no single-probe shortcut).
    pub(super) fn settle(&self, reg: &Reg) {
        let (mut exit, mut entry) = (core::ptr::null_mut(), core::ptr::null_mut());
        if reg.exit_probes == 1 || reg.entry_probes == 1 {
            self.live.for_each(&reg.live_counts, |fp| {
                // SAFETY: registered probes carry our private record, and we hold `reg`.
                let p = unsafe { &*(*fp.fp()).hlist_array.cast::<Private>() };
                if p.exit {
                    exit = p.live
                } else {
                    entry = p.live
                }
            });
        }
        let exit = if reg.exit_probes == 1 && !reg.filter_stale {
            exit
        } else {
            core::ptr::null_mut()
        };
        if !exit.is_null() {
            // The words by which the return path tells this probe's frames, for the shared ops
            // registered now (or none).
            // SAFETY: the `Live` of a registered probe (we hold `reg`), freed only by its
            // unregistration, which takes `reg`.
            let live = unsafe { &*exit };
            let words = reg.one_step(live.size).to_words();
            if live.one_step().to_words() != words {
                // Readers see the words it was published with: a `Live` published with other
                // words (a shared ops registered since, for a probe whose functions all went
                // with their modules) is withdrawn first, and its readers waited for.
                if SINGLE_EXIT.load(Relaxed) == exit {
                    SINGLE_EXIT.store(core::ptr::null_mut(), Release);
                    synchronize_rcu();
                }
                for (w, v) in live.one_step.iter().zip(words) {
                    w.store(v, Relaxed);
                }
            }
        }
        SINGLE_EXIT.store(exit, Release);
        let d = match (reg.entry_probes, reg.exit_probes) {
            (0, _) => 0,
            (1, 0) if !reg.filter_stale => entry as usize,
            _ => LOOKUP,
        };
        DISPATCH.store(d, Release);
    }

    /// Calls probes missed, all together (`nmissed`: no shadow stack, a full one, or the
    /// recursion guard refused the call): the registered probes' and those unregistered since
    /// the core started.
    pub fn missed(&self) -> usize {
        let reg = self.reg.lock();
        let mut n = reg.missed_retired;
        self.live.for_each(&reg.live_counts, |fp| {
            // SAFETY: registered probes (we hold `reg`, which unregistration takes); `nmissed`
            // is only ever updated atomically.
            n += unsafe {
                AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*fp.fp()).nmissed).cast())
            }
            .load(Relaxed);
        });
        n
    }

    /// Tests only: marks the shared ops' filter stale, as a failed removal does
    /// (`Reg::filter_stale`), and publishes what is then true.
    #[cfg(ufgraph_kunit)]
    pub fn test_mark_filter_stale(&self) {
        let mut reg = self.reg.lock();
        reg.filter_stale = true;
        self.settle(&reg);
    }

    /// Tests only: which single-probe shortcuts are published: the only probe's `Live` in
    /// `DISPATCH` (entry-only), and `SINGLE_EXIT`.
    #[cfg(ufgraph_kunit)]
    pub fn test_shortcuts(&self) -> (bool, bool) {
        let _reg = self.reg.lock();
        let d = DISPATCH.load(Relaxed);
        (
            !matches!(d, 0 | LOOKUP | IDLE),
            !SINGLE_EXIT.load(Relaxed).is_null(),
        )
    }

    /// Tests only: whether the single exit probe is published (`None`: it is not), and if so,
    /// whether the words its returns are matched with (`Live::one_step`) are those of the
    /// shared ops registered now (none: `OneStep::none()`'s).
    #[cfg(ufgraph_kunit)]
    pub fn test_one_step_words(&self) -> Option<bool> {
        let reg = self.reg.lock();
        let single = SINGLE_EXIT.load(Relaxed);
        if single.is_null() {
            return None;
        }
        // SAFETY: published, so a registered probe's `Live` (we hold `reg`).
        let live = unsafe { &*single };
        Some(live.one_step() == reg.one_step(live.size))
    }

    /// Tests only: the shared ops' index while it is registered.
    #[cfg(ufgraph_kunit)]
    pub fn test_shared_ops_index(&self) -> Option<usize> {
        self.reg.lock().graph.as_ref().and_then(|o| o.idx())
    }

    /// Tests only: the functions in the shared ops' filter.
    #[cfg(ufgraph_kunit)]
    pub fn test_filter_functions(&self) -> usize {
        self.reg.lock().graph_ips
    }

    /// How many distinct functions carry probes, and how many probes are registered.
    pub fn counts(&self) -> (usize, usize) {
        let reg = self.reg.lock();
        (reg.ips_counts.counts().used, reg.live_counts.counts().used)
    }

    /// A module came: functions resolved before are stale.
    pub fn module_coming(&self) {
        self.reg.lock().modules_gen += 1;
    }

    /// A module is going away: functions resolved before are stale, and every address inside
    /// it (`within`) is dropped from the probes.
    pub fn module_going(&self, within: impl Fn(usize) -> bool) {
        self.reg.lock().modules_gen += 1;
        if let Err(e) = self.drop_module(within, "of a module going away") {
            pr_warn!("fprobe: filter update for a going module failed: {:?}\n", e);
        }
    }

    /// A module went live: the loader frees its init text after the notifiers, and ftrace its
    /// records of it. Functions resolved before are stale, and its init functions (`within`)
    /// leave the probes now, while ftrace still knows them: once it has dropped them, no filter
    /// can let go of them (ftrace refuses to remove a function it does not know, and refuses a
    /// whole removal for one such function), and a filter that keeps one would hook whatever
    /// module's function is loaded at its address later.
    /// An error: ftrace refused to take them out of the filter (the probes let go of them all
    /// the same: callbacks there find none).
    pub fn module_live(&self, within: impl Fn(usize) -> bool) -> Result {
        self.reg.lock().modules_gen += 1;
        self.drop_module(within, "in the init text of a module gone live")
    }

    /// Drops every address `within` says from the probes (a module's, going away, or its init
    /// text's); `what` says which, in the log. An error: the filter update failed.
    pub(super) fn drop_module(&self, within: impl Fn(usize) -> bool, what: &str) -> Result {
        let mut reg = self.reg.lock();
        // The functions to drop.
        let mut doomed: KVec<usize> = KVec::new();
        self.ips.for_each(&reg.ips_counts, |e| {
            if within(e.ip) {
                let _ = doomed.push(e.ip, GFP_KERNEL);
            }
        });
        if doomed.is_empty() {
            return Ok(());
        }
        let mut dead: KVec<usize> = KVec::new();
        for &ip in doomed.iter() {
            let Some(ent) = self.ips.lookup_w(&reg.ips_counts, ip) else {
                continue;
            };
            for p in ent.probes.iter() {
                let fp = p.fp.load(Relaxed);
                if fp.is_null() {
                    continue;
                }
                // SAFETY: registered probes carry our private record; we hold `reg`.
                let private = unsafe { &mut *(*fp).hlist_array.cast::<Private>() };
                // In place, without allocating: a copy that lost an ip to a failed allocation
                // would leave that function's entry naming the probe after its unregistration
                // (which visits only the ips listed here), and its next call would run a freed
                // probe.
                while let Some(i) = private.ips.iter().position(|&x| x == ent.ip) {
                    crate::sys::kvec::remove(&mut private.ips, i);
                }
            }
            if let Some(e) = self.ips.remove(&mut reg.ips_counts, ip) {
                // Out of memory: the entry is leaked rather than freed under readers.
                let _ = dead.push(e.as_ptr() as usize, GFP_KERNEL);
            }
        }
        // The module held the filter's last functions: the shared ops went (`Reg::retired`),
        // for the reaper to free.
        let updated = reg.update_filter(&doomed, true);
        match &updated {
            Ok(Unhooked(true)) => {
                self.reaper.schedule();
            }
            // The filter may keep functions no probe has now: no single-probe shortcut.
            Err(_) => self.settle(&reg),
            Ok(Unhooked(false)) => {}
        }
        drop(reg);
        synchronize_rcu();
        for &e in dead.iter() {
            // SAFETY: unpublished, readers gone (`IpEntry`'s invariants).
            drop(unsafe { KBox::from_raw(e as *mut IpEntry) });
        }
        pr_info!(
            "fprobe: dropped {} probed functions {}\n",
            doomed.len(),
            what
        );
        updated.map(|_| ())
    }
}

/// Waits, after a probe's unregistration took `path_gone` out of the filter, until no callback
/// can still run it; `shortcut`: the next `settle` may publish a shortcut.
fn wait_unhooked(shortcut: bool, path_gone: &[usize]) {
    synchronize_rcu();
    // A call of a function the filter just lost may still be on its way to our callback:
    // in ftrace's trampoline, before the callback takes the recursion guard, where a
    // preemptible kernel can preempt it. The grace period above does not wait for it; were
    // a shortcut published next, it would run the remaining probe on that function. RCU
    // Tasks waits for it, as ftrace waits for its trampolines (on a kernel without
    // preemption the wait above covers it).
    #[cfg(CONFIG_PREEMPTION)]
    if shortcut && !path_gone.is_empty() {
        crate::sys::sync::synchronize_rcu_tasks();
    }
    #[cfg(not(CONFIG_PREEMPTION))]
    let _ = (shortcut, path_gone);
}

/// What a registration allocates before it changes anything ([`Fprobes::prepare`]), so that
/// publishing it cannot fail.
struct Prepared {
    /// The entries to publish, one per function: its probes so far and the new one.
    fresh: KVec<KBox<IpEntry>>,
    /// The functions new to the filter.
    path_new: KVec<usize>,
    live: KBox<Live>,
    private: KBox<Private>,
    /// Room for the entries `fresh` replaces (one each at most).
    old_entries: KVec<usize>,
}

impl IpEntry {
    /// A new entry for `ip`: the probes of `old` (its current entry, if any) and `fp`, as
    /// registration `id` (`exit`: a probe with an exit handler).
    fn with_probe(
        old: Option<&IpEntry>,
        ip: usize,
        fp: *mut ufgraph_fprobe,
        id: usize,
        exit: bool,
    ) -> Result<KBox<IpEntry>> {
        let new = ProbeRef {
            fp: AtomicPtr::new(fp),
            id,
        };
        let (mut exits, mut entry_only) = (0, 0);
        // The probes still on the function (unregistration nulls them in place), then `fp`.
        let probes = match old {
            None => Probes {
                first: new,
                more: KVec::new(),
            },
            Some(o) => {
                exits = o.exit.load(Relaxed);
                entry_only = o.entry_only.load(Relaxed);
                let mut left = o.probes.iter().filter_map(|p| {
                    let q = p.fp.load(Relaxed);
                    (!q.is_null()).then(|| ProbeRef {
                        fp: AtomicPtr::new(q),
                        id: p.id,
                    })
                });
                match left.next() {
                    None => Probes {
                        first: new,
                        more: KVec::new(),
                    },
                    Some(first) => {
                        let mut more = KVec::new();
                        for p in left {
                            more.push(p, GFP_KERNEL)?;
                        }
                        more.push(new, GFP_KERNEL)?;
                        Probes { first, more }
                    }
                }
            }
        };
        if exit {
            exits += 1
        } else {
            entry_only += 1
        }
        Ok(KBox::new(
            IpEntry {
                ip,
                exit: AtomicU32::new(exits),
                entry_only: AtomicU32::new(entry_only),
                probes,
            },
            GFP_KERNEL,
        )?)
    }
}

/// What registration checks of a probe itself (handlers, entry data size), without
/// registering it: `EINVAL` or `E2BIG` as [`Fprobes::register`] would fail.
fn check_probe(fp: &ufgraph_fprobe) -> Result {
    let (has_entry, has_exit, size) = (
        fp.entry_handler.is_some(),
        fp.exit_handler.is_some(),
        fp.entry_data_size,
    );
    if !has_entry && !has_exit {
        return Err(EINVAL);
    }
    if hdr::data_words(size).is_none() {
        return Err(E2BIG);
    }
    Ok(())
}
