// SPDX-License-Identifier: GPL-2.0

//! fprobe event definitions: a parser for upstream's `dynamic_events` syntax.
//!
//! Upstream defines fprobe events by writing lines like these to tracefs `dynamic_events`
//! (Documentation/trace/fprobetrace.rst):
//!
//! ```text
//!   f[:[GRP/][EVENT]] SYM [FETCHARGS]                    probe on function entry
//!   f[MAXACTIVE][:[GRP/][EVENT]] SYM%return [FETCHARGS]  probe on function exit
//!   t[:[GRP/][EVENT]] TRACEPOINT [FETCHARGS]             probe on a tracepoint
//!   -:[GRP/][EVENT] [SYM [NAME=FETCHARG...]]             remove matching events
//!
//!   SYM:      a function name, or a glob of them: vfs_read*, vfs_rea?, vfs_[rw]*
//!   FETCHARG: [NAME=]EXPR[:TYPE], or $arg* (with BTF: every parameter by name)
//!   EXPR:     $argN $retval $stackN $stack $comm @ADDR @SYM[+|-OFFS]
//!             +|-[u]OFFS(EXPR) \IMM \"STRING"
//!             with BTF: PARAM[->MEMBER[.MEMBER...]...] $retval[->MEMBER...]
//!   TYPE:     u8..u64 s8..s64 x8..x64 char string ustring symbol symstr %pd %pD
//!             b<WIDTH>@<OFFSET>/<CONTAINER>, any of them followed by [N]
//! ```
//!
//! [`parse`] reads one such line into a [`Command`]. A definition ([`ProbeDef`]) borrows from the
//! line; its fetch arguments come out one at a time from [`ProbeDef::args`], each with a small
//! fixed-size [`Fetch`] program. Nothing allocates, and the definition stays under half a
//! kilobyte whatever its arguments (128 parsed arguments would take ~27 KiB, too much for a
//! kernel stack): the arguments are validated once when the line is parsed and parsed again
//! from the line on iteration.
//!
//! Errors are upstream's: the same [`ErrCode`], the same caret position in the same rebuilt
//! command, the same errno; [`ProbeError::log`] renders the `error_log` entry. Every case of
//! upstream's selftest (tools/testing/selftests/ftrace/test.d/dynevent/fprobe_syntax_errors.tc)
//! is a test here.
//!
//! The parser follows upstream 6.12 (kernel/trace/trace_fprobe.c and trace_probe.c) step by step,
//! quirks included, for a 64-bit kernel that has `CONFIG_HAVE_FUNCTION_ARG_ACCESS_API`, and
//! `CONFIG_PROBE_EVENTS_BTF_ARGS` when [`parse_btf`] is given a [`BtfSource`] (parameter names,
//! members, typed `$retval`, `$arg*`: `btfarg` and `expand`); without one, bare names and
//! `$arg*` fail with `NOSUP_BTFARG`, as on a kernel without it. Where it cannot follow:
//!
//! - the cursor upstream moves past the last member name of a BTF argument goes astray (it
//!   adds a NULL pointer's difference); here it stays at the name's end, where later errors of
//!   that argument (`BAD_TYPE4STR`, `TOO_MANY_OPS`) point;
//! - errors that depend on the running system are the caller's (a symbol or glob that matches
//!   no traceable function, an unknown tracepoint, a clash with existing events):
//!   [`ProbeDef::registration_error`],
//!   [`ProbeDef::diff_probe_type`], [`ProbeDef::diff_arg_types`] and [`ProbeDef::same_probe`]
//!   build them at upstream's positions;
//! - the line is a `&str`: byte 0xa0, which the kernel's `isspace()` counts as a separator, is
//!   not one here (in UTF-8 it only occurs inside a character); a default event name cut at 63
//!   bytes is cut at a character boundary;
//! - the line ends at its first NUL, and may be [`MAX_COMMAND_LEN`] bytes long, as what
//!   upstream's writer hands its parsers.
//!
//! # Files
//!
//! One concept each, in layers: a file uses only the ones above it in this list (no cycles;
//! none uses this one but the tests).
//!
//! ```text
//!   error      error codes, errnos, ProbeError, Error           (depends on nothing)
//!   config     limits, Config, ProbeKind                        (nothing)
//!   num        the kernel's number conversions, character classes
//!   types      the fetch types
//!   program    the Fetch program: Load, Deref, Store, Bitfield
//!   argv       words, %pd/%pD rewrites, error positions
//!   btfarg     BTF arguments: parameters by name, members, typed $retval (uses fetch's ArgCtx)
//!   errlog     the error_log entry
//!   builder    a program under construction, Fail
//!   argtype    an argument's type
//!   finalize   the store, bitfield and array stages
//!   fetch      the expression parser
//!   typecast   typecasts (STRUCT[,FIELD])EXPR->MEMBER (uses btfarg)
//!   fetcharg   FetchArg, Comm, ArgSig
//!   args       argument names, the argument parser, Args
//!   eventname  group and event names
//!   expand     $arg* and $argN rewritten to BTF parameter names
//!   probe      ProbeDef
//!   remove     RemoveDef
//! ```
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

#![forbid(unsafe_code)]

mod args;
mod argtype;
mod argv;
mod btfarg;
mod builder;
mod config;
mod errlog;
mod error;
mod eventname;
mod expand;
mod fetch;
mod fetcharg;
mod finalize;
mod num;
mod probe;
mod program;
mod remove;
mod typecast;
mod types;

#[cfg(test)]
mod tests;

pub use args::Args;
pub use argv::{DentryExpansion, DentryKind, MAX_DENTRY_ARGS_LEN};
pub use btfarg::{find_function, find_struct, BtfRef, BtfSource};
pub use config::{
    Config, ProbeKind, FPROBE_GROUP, MAXACTIVE_MAX, MAX_ARGSTR_LEN, MAX_ARG_NAME_LEN,
    MAX_ARRAY_LEN, MAX_COMMAND_LEN, MAX_EVENT_NAME_LEN, MAX_TRACE_ARGS, TRACEPOINT_GROUP,
};
pub use errlog::ErrorLog;
pub use error::{ErrCode, Errno, Error, ProbeError};
pub use expand::{EXPAND_ROOM, MAX_BTF_ARGS_LEN};
pub use fetcharg::{ArgSig, Comm, FetchArg};
pub use probe::ProbeDef;
pub use program::{
    split_symbol_offset, Bitfield, Deref, Fetch, Load, NoSymbol, Store, StoreKind, FETCH_INSN_MAX,
    MAX_DEREFS, MAX_PROBE_EVENT_SIZE,
};
pub use remove::RemoveDef;
pub use types::FetchType;

/// One parsed `dynamic_events` line.
// A definition is ~430 bytes (mostly its entry-argument table) and there is no heap to box it in
// here; that is small enough to return by value, even on a kernel stack.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// A blank line: nothing to do (upstream accepts it).
    Empty,
    /// Define a probe (or add one to an existing event of the same group and name).
    Add(ProbeDef<'a>),
    /// Remove the matching events.
    Remove(RemoveDef<'a>),
}

/// Parses one `dynamic_events` line (without its newline; see [`commands`]).
///
/// `Err` says why upstream would refuse it; [`Error::probe`] is what it would log.
pub fn parse<'a>(cmd: &'a str, cfg: &Config) -> Result<Command<'a>, Error> {
    parse_with(cmd, cfg, &mut |_| true)
}

/// [`parse`], asking `tracepoint_exists` whether the kernel has the tracepoint a `t` definition
/// names, where upstream looks it up (`find_tracepoint()`): after the event name, before the
/// fetch arguments. A tracepoint it does not know is `NO_TRACEPOINT` (`-EINVAL`) with the caret
/// under the name, so that a definition with both an unknown tracepoint and a bad argument logs
/// what upstream logs. It is not called for `f` definitions, nor for lines refused before.
pub fn parse_with<'a>(
    cmd: &'a str,
    cfg: &Config,
    tracepoint_exists: &mut dyn FnMut(&str) -> bool,
) -> Result<Command<'a>, Error> {
    parse_btf(cmd, cfg, tracepoint_exists, BtfRef(None), &mut [])
}

/// [`parse_with`] on a kernel with BTF arguments (`CONFIG_PROBE_EVENTS_BTF_ARGS`): `btf` says
/// where the probed functions' BTF is. With `BtfRef(None)`, a kernel without them. The
/// definition keeps `btf` to parse its arguments again ([`ProbeDef::args`]): parse a stored
/// command with the same source, or its arguments may not parse.
///
/// `$arg*` and `$argN` are rewritten to parameter names in `scratch`, which needs
/// `cmd.len() + EXPAND_ROOM` bytes; keep [`ProbeDef::write_rewritten`] to parse the definition
/// again (it needs no rewrite, so no scratch).
pub fn parse_btf<'a>(
    cmd: &'a str,
    cfg: &Config,
    tracepoint_exists: &mut dyn FnMut(&str) -> bool,
    btf: BtfRef<'a>,
    scratch: &'a mut [u8],
) -> Result<Command<'a>, Error> {
    let cmd = argv::c_str(cmd);
    if cmd.len() > MAX_COMMAND_LEN {
        return Err(Error::CommandTooLong);
    }
    // Upstream looks at the very first byte, before any whitespace is skipped.
    if cmd.starts_with(['-', '!']) {
        return RemoveDef::parse(cmd).map(Command::Remove);
    }
    let mut words = argv::words(cmd);
    let Some(head) = words.next() else {
        return Ok(Command::Empty);
    };
    // Anything else is another kind of dynamic event, or a probe without a place.
    let kind = match head.as_bytes().first() {
        Some(b'f') => ProbeKind::Fprobe,
        Some(b't') => ProbeKind::Tracepoint,
        _ => return Err(Error::NotFprobe),
    };
    let Some(place) = words.next() else {
        return Err(Error::NotFprobe);
    };
    ProbeDef::parse(
        cmd,
        cfg,
        kind,
        (head, place, words.remainder()),
        tracepoint_exists,
        (btf, scratch),
    )
    .map(Command::Add)
}

/// Splits what was written to `dynamic_events` into the commands upstream runs: one per line,
/// each cut at its first '#' (comments).
pub fn commands(buf: &str) -> impl Iterator<Item = &str> {
    buf.split_terminator('\n')
        .map(|line| line.split('#').next().unwrap_or(""))
}
