// SPDX-License-Identifier: GPL-2.0

//! Taking events down: `-:` commands, `dynamic_events` opened with `O_TRUNC`, and module exit.
//! See the lock order in the module documentation: the registry lock is not held while the
//! kernel removes an event.

use super::{as_str, Entry, Events, EVENTS};
use crate::events::probedef::RemoveDef;
use crate::sys::kvec;
use crate::sys::trace_event::{self, EventMutex};
use core::pin::Pin;
use core::sync::atomic::Ordering::*;
use kernel::prelude::*;

impl Events {
    /// Takes an entry down: the event first (fails while enabled), then its probes (none is
    /// registered once nothing uses the event).
    fn teardown(&self, g: &trace_event::EventMutexGuard, entry: &mut Entry) -> Result {
        entry.event.as_mut().unregister(g)?;
        // The event is out of the kernel's hands: the registry lock may be taken now.
        let mut reg = self.reg.lock();
        for s in entry.probes.iter_mut() {
            Self::disarm_slot(&mut reg.stubs, s);
        }
        Ok(())
    }

    /// [`Events::teardown`] of an entry taken out of the registry, without its lock: the kernel
    /// removes the event under its `trace_types_lock`, which it also holds when it disables
    /// events removing an instance (calling our `reg`, which takes the registry lock). Under
    /// `event_mutex` nobody else changes the entries meanwhile. On failure the entry goes back
    /// where it was (`at`), and is leaked if it cannot (never freed while the kernel has it).
    fn take_down(&self, g: &trace_event::EventMutexGuard, mut e: Entry, at: usize) -> Result {
        let Err(err) = self.teardown(g, &mut e) else {
            return Ok(());
        };
        // Room: it was taken out just before.
        if let Err(e) = kvec::insert(&mut self.reg.lock().entries, at, e) {
            core::mem::forget(e);
        }
        Err(err)
    }

    #[inline(never)]
    pub(super) fn remove(&self, rd: &RemoveDef<'_>) -> Result {
        let g = EventMutex::lock()?;
        let matches = |e: &Entry| {
            e.probes.iter().any(|p| {
                let src = self.stored_source(p.btf.as_ref());
                let Some(d) = self.reparse(&p.cmd, &src) else {
                    return false;
                };
                rd.matches(
                    as_str(&e.group),
                    as_str(&e.name),
                    d.symbol(),
                    d.args().map(|a| (a.name, a.comm)),
                )
            })
        };
        let mut found = false;
        loop {
            // The next match (those before it were taken down already, or do not match).
            let taken = {
                let mut reg = self.reg.lock();
                reg.entries
                    .iter()
                    .position(&matches)
                    .and_then(|i| kvec::remove(&mut reg.entries, i).map(|e| (e, i)))
            };
            let Some((e, at)) = taken else { break };
            found = true;
            self.take_down(&g, e, at)?;
        }
        if found {
            Ok(())
        } else {
            Err(ENOENT)
        }
    }

    /// Removes every event (`O_TRUNC`): `EBUSY`, and nothing removed, if one is enabled.
    pub fn clear(&self) -> Result {
        let g = EventMutex::lock()?;
        if self.reg.lock().entries.iter().any(|e| {
            !e.event.ops().files.load(Acquire).is_null()
                || e.event.ops().perf_users.load(Relaxed) != 0
        }) {
            return Err(EBUSY);
        }
        loop {
            let (taken, at) = {
                let mut reg = self.reg.lock();
                let at = reg.entries.len().saturating_sub(1);
                (kvec::pop(&mut reg.entries), at)
            };
            let Some(e) = taken else { return Ok(()) };
            self.take_down(&g, e, at)?;
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Events {
    fn drop(self: Pin<&mut Self>) {
        EVENTS.withdraw(&self);
        let Ok(g) = EventMutex::lock() else { return };
        // Not under the registry lock: see `take_down`.
        loop {
            let Some(mut e) = kvec::pop(&mut self.reg.lock().entries) else {
                break;
            };
            if let Err(err) = self.teardown(&g, &mut e) {
                // Only possible if an event is enabled while the module goes, which the module
                // reference taken on enable prevents. Never free what the kernel points to.
                pr_err!(
                    "event {}/{} still in use at unload ({:?}): leaking it\n",
                    as_str(&e.group),
                    as_str(&e.name),
                    err
                );
                core::mem::forget(e);
            }
        }
    }
}
