// SPDX-License-Identifier: GPL-2.0

//! Removals: `-:[GRP/][EVENT] [SYM [NAME=FETCHARG...]]` lines (`dyn_event_release()`).

use core::fmt;

use super::argv;
use super::config::MAX_ARGSTR_LEN;
use super::error::Error;
use super::fetcharg::display_eq;

/// A removal: `-:[GRP/][EVENT] [SYM [NAME=FETCHARG...]]` (or `!` and anything up to ':').
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveDef<'a> {
    group: Option<&'a str>,
    event: &'a str,
    rest: &'a str,
}

impl<'a> RemoveDef<'a> {
    /// `dyn_event_release()`.
    pub(super) fn parse(cmd: &'a str) -> Result<Self, Error> {
        let mut words = argv::words(cmd);
        let head = words.next().unwrap_or("");
        let name = match head.strip_prefix('-') {
            Some(rest) => rest.strip_prefix(':').ok_or(Error::BadRemove)?,
            None => head.split_once(':').ok_or(Error::BadRemove)?.1,
        };
        let (group, event) = match name.split_once('/') {
            Some((g, e)) => (Some(g), e),
            None => (None, name),
        };
        if group.is_none() && event.is_empty() {
            return Err(Error::BadRemove);
        }
        Ok(RemoveDef {
            group,
            event,
            rest: words.remainder(),
        })
    }

    /// The group to match; `None` matches any.
    pub fn group(&self) -> Option<&'a str> {
        self.group
    }

    /// The event to match; "" matches any.
    pub fn event(&self) -> &'a str {
        self.event
    }

    /// The further words: the symbol, then `NAME=FETCHARG` words, each of which must match.
    pub fn words(&self) -> impl Iterator<Item = &'a str> {
        argv::words(self.rest)
    }

    /// `trace_fprobe_match()`: whether the probe of `group`/`event` on `symbol`, with arguments
    /// `args` (name and text, as shown in `dynamic_events`), is to be removed.
    pub fn matches<'x, C, I>(&self, group: &str, event: &str, symbol: &str, args: I) -> bool
    where
        C: fmt::Display,
        I: IntoIterator<Item = (&'x str, C)>,
    {
        if !self.event.is_empty() && self.event != event {
            return false;
        }
        if self.group.is_some_and(|g| g != group) {
            return false;
        }
        let mut words = self.words();
        let Some(sym) = words.next() else {
            return true;
        };
        // Upstream compares a copy of the symbol cut to MAX_ARGSTR_LEN bytes.
        let cut = &symbol.as_bytes()[..symbol.len().min(MAX_ARGSTR_LEN)];
        if cut != sym.as_bytes() {
            return false;
        }
        let mut args = args.into_iter();
        words.all(|w| {
            args.next().is_some_and(|(name, comm)| {
                w.strip_prefix(name)
                    .and_then(|r| r.strip_prefix('='))
                    .is_some_and(|c| display_eq(&comm, c))
            })
        })
    }
}
