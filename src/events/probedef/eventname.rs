// SPDX-License-Identifier: GPL-2.0

//! Event names: `[GRP/][EVENT]` as given, and upstream's default made from the symbol.

use super::config::{ProbeKind, MAX_EVENT_NAME_LEN};
use super::error::ErrCode;
use super::num::is_good_name;

/// An event name: given, or made from the symbol into a fixed buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventName<'a> {
    Given(&'a str),
    Generated {
        buf: [u8; MAX_EVENT_NAME_LEN],
        len: u8,
    },
}

impl<'a> EventName<'a> {
    /// Upstream's default event name (see [`ProbeDef::event`](super::ProbeDef::event)).
    pub(super) fn generated(kind: ProbeKind, symbol: &str, is_return: bool) -> Self {
        let parts = match kind {
            ProbeKind::Fprobe => [symbol, "__", if is_return { "exit" } else { "entry" }],
            ProbeKind::Tracepoint => [
                if symbol.starts_with(|c: char| c.is_ascii_digit()) {
                    "_"
                } else {
                    ""
                },
                symbol,
                "",
            ],
        };
        // snprintf() into MAX_EVENT_NAME_LEN bytes: 63 and the NUL.
        let mut buf = [0u8; MAX_EVENT_NAME_LEN];
        let room = MAX_EVENT_NAME_LEN - 1;
        let mut len = 0;
        for part in parts {
            let take = part.len().min(room - len);
            if let (Some(dst), Some(src)) =
                (buf.get_mut(len..len + take), part.as_bytes().get(..take))
            {
                crate::sys::slice::copy(dst, src);
                len += take;
            }
        }
        len = match core::str::from_utf8(&buf[..len]) {
            Ok(_) => len,
            Err(e) => e.valid_up_to(),
        };
        // sanitize_event_name() steps past the first byte before it looks.
        for c in buf.iter_mut().take(len).skip(1) {
            if matches!(*c, b':' | b'.' | b'*') {
                *c = b'_';
            }
        }
        EventName::Generated {
            buf,
            len: len as u8,
        }
    }

    pub(super) fn as_str(&self) -> &str {
        match self {
            EventName::Given(s) => s,
            EventName::Generated { buf, len } => {
                core::str::from_utf8(buf.get(..usize::from(*len)).unwrap_or(&[])).unwrap_or("")
            }
        }
    }
}

/// The group and event a definition names, if it does.
type GroupEvent<'n> = (Option<&'n str>, Option<&'n str>);

/// `traceprobe_parse_event_name()`: `[GRP/][EVENT]` (or `GRP.EVENT`) found at byte `at` of the
/// first word, into the group and event given, or the error and its offset.
pub(super) fn parse_event_name(name: &str, at: usize) -> Result<GroupEvent<'_>, (ErrCode, usize)> {
    let sep = name.find('/').or_else(|| name.find('.'));
    let (group, event, at) = match sep {
        Some(s) => {
            let group = name.get(..s).unwrap_or("");
            if group.is_empty() {
                return Err((ErrCode::NoGroupName, at));
            }
            if s + 1 > MAX_EVENT_NAME_LEN {
                return Err((ErrCode::GroupTooLong, at));
            }
            if !is_good_name(group, true) {
                return Err((ErrCode::BadGroupName, at));
            }
            (Some(group), name.get(s + 1..).unwrap_or(""), at + s + 1)
        }
        None => (None, name, at),
    };
    if event.is_empty() {
        // "GRP/" keeps the default event name; ":" alone is an error.
        return if sep.is_some() {
            Ok((group, None))
        } else {
            Err((ErrCode::NoEventName, at))
        };
    }
    if event.len() >= MAX_EVENT_NAME_LEN {
        return Err((ErrCode::EventTooLong, at));
    }
    if !is_good_name(event, false) {
        return Err((ErrCode::BadEventName, at));
    }
    Ok((group, Some(event)))
}
