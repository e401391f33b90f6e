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
//!   FETCHARG: [NAME=]EXPR[:TYPE]
//!   EXPR:     $argN $retval $stackN $stack $comm @ADDR @SYM[+|-OFFS]
//!             +|-[u]OFFS(EXPR) \IMM \"STRING"
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
//! quirks included, for a 64-bit kernel that has `CONFIG_HAVE_FUNCTION_ARG_ACCESS_API` and lacks
//! `CONFIG_PROBE_EVENTS_BTF_ARGS`. Where it cannot follow:
//!
//! - no BTF: bare names (`file`, `$arg*`) fail with `NOSUP_BTFARG`, as on such a kernel;
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

#![forbid(unsafe_code)]

mod argv;
mod error;
mod fetch;
mod num;
mod types;

#[cfg(test)]
mod tests;

use core::fmt;

pub use argv::{DentryExpansion, DentryKind, MAX_DENTRY_ARGS_LEN};
pub use error::{ErrCode, Errno, Error, ErrorLog, ProbeError};
pub use fetch::{
    split_symbol_offset, ArgSig, Bitfield, Comm, Deref, Fetch, FetchArg, Load, Store, StoreKind,
    FETCH_INSN_MAX, MAX_DEREFS, MAX_PROBE_EVENT_SIZE,
};
pub use types::FetchType;

use argv::{error_pos, BufWriter, DentryWord, Words};
use fetch::{display_eq, parse_body, ArgCtx, EntryArgs, Fail};
use num::{is_alnum, is_good_name, kstrtouint};

/// The most fetch arguments a probe takes (`MAX_TRACE_ARGS`).
pub const MAX_TRACE_ARGS: usize = 128;

/// The longest fetch expression, after `NAME=` (`MAX_ARGSTR_LEN`).
pub const MAX_ARGSTR_LEN: usize = 63;

/// The most elements of an array type (`MAX_ARRAY_LEN`).
pub const MAX_ARRAY_LEN: usize = 64;

/// The longest argument name (`MAX_ARG_NAME_LEN`).
pub const MAX_ARG_NAME_LEN: usize = 32;

/// Group and event names must be shorter than this (`MAX_EVENT_NAME_LEN`).
pub const MAX_EVENT_NAME_LEN: usize = 64;

/// The largest `MAXACTIVE` of an exit probe (`RETHOOK_MAXACTIVE_MAX`).
pub const MAXACTIVE_MAX: i32 = 4096;

/// The longest line upstream's `dynamic_events` writer passes on (`WRITE_BUFSIZE` - 1).
pub const MAX_COMMAND_LEN: usize = 4095;

/// The group of fprobe events defined without one.
pub const FPROBE_GROUP: &str = "fprobes";

/// The group of tracepoint-probe events defined without one.
pub const TRACEPOINT_GROUP: &str = "tracepoints";

/// Field names of every trace event, which arguments may not take.
const RESERVED_NAMES: [&str; 8] = [
    "common_type",
    "common_flags",
    "common_preempt_count",
    "common_pid",
    "common_tgid",
    "__probe_ip",
    "__probe_ret_ip",
    "__probe_func",
];

/// What the parser needs to know about the kernel it parses for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// The largest N of `$argN` and `$stackN`: upstream's `PARAM_MAX_STACK`,
    /// `THREAD_SIZE / sizeof(long)` (2048 for 16 KiB stacks; 16 bits hold it for stacks up to
    /// 512 KiB).
    pub max_stack_index: u16,
    /// `offsetof(struct dentry, d_name.name)`, for `%pd` and `%pD`.
    pub dentry_name_offset: u32,
    /// `offsetof(struct file, f_path.dentry)`, for `%pD`.
    pub file_dentry_offset: u32,
}

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

/// Where a probe attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// `f`: function entry or exit.
    Fprobe,
    /// `t`: a tracepoint.
    Tracepoint,
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
        head,
        place,
        words.remainder(),
        tracepoint_exists,
    )
    .map(Command::Add)
}

/// Splits what was written to `dynamic_events` into the commands upstream runs: one per line,
/// each cut at its first '#' (comments).
pub fn commands(buf: &str) -> impl Iterator<Item = &str> {
    buf.split_terminator('\n')
        .map(|line| line.split('#').next().unwrap_or(""))
}

/// A probe definition: `f`/`t` lines.
///
/// Borrows the command line. [`fmt::Display`] writes it as upstream lists it in
/// `dynamic_events`, every default made explicit; parsing that gives the same definition,
/// except where upstream's own listing does not parse either: a default event name that is no
/// identifier, as a glob's (`f vfs_rea?` lists as `f:fprobes/vfs_rea?__entry vfs_rea?`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeDef<'a> {
    cmd: &'a str,
    kind: ProbeKind,
    group: &'a str,
    event: EventName<'a>,
    symbol: &'a str,
    is_return: bool,
    maxactive: i32,
    /// The command from the first fetch argument on.
    args: &'a str,
    nargs: usize,
    entry: EntryArgs,
    size: usize,
    cfg: Config,
}

impl<'a> ProbeDef<'a> {
    /// `__trace_fprobe_create()`: `head` is the first word, `place` the second, `args` the text
    /// after them.
    fn parse(
        cmd: &'a str,
        cfg: &Config,
        kind: ProbeKind,
        head: &'a str,
        place: &'a str,
        args: &'a str,
        tracepoint_exists: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Self, Error> {
        let tracepoint = kind == ProbeKind::Tracepoint;
        let log = |code, errno, index, offset, expanded: bool| {
            Error::Probe(ProbeError {
                code,
                errno,
                index,
                offset,
                pos: error_pos(cmd, index, offset, expanded.then_some(cfg)),
                also: None,
                expanded,
            })
        };
        let inval = |code, index, offset| log(code, Errno::Inval, index, offset, false);

        // f[MAXACTIVE]: digits right after the type letter. Anything else there is ignored.
        let colon = head.get(1..).and_then(|h| h.find(':')).map(|c| c + 1);
        let mut maxactive = 0;
        if head.as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
            let digits = head.get(1..colon.unwrap_or(head.len())).unwrap_or("");
            if digits.len() > MAX_EVENT_NAME_LEN - 1 {
                return Err(inval(ErrCode::BadMaxact, 0, 1));
            }
            // Upstream reads an unsigned int into an int: from 2^31 on the number is negative,
            // passes the "too big" check, and only fails when the probe is registered.
            maxactive = match kstrtouint(digits, 0) {
                Ok(n) if n != 0 => n as i32,
                _ => return Err(inval(ErrCode::BadMaxact, 0, 1)),
            };
            if maxactive > MAXACTIVE_MAX {
                return Err(inval(ErrCode::MaxactTooBig, 0, 1));
            }
        }

        // SYM[%return] (parse_symbol_and_return()).
        let (symbol, mut is_return) = match place.find('%') {
            Some(p) if !tracepoint && place.get(p..) == Some("%return") => {
                (place.get(..p).unwrap_or(""), true)
            }
            Some(p) => return Err(inval(ErrCode::BadAddrSuffix, 1, p)),
            None => (place, false),
        };
        if !is_return {
            if tracepoint {
                if let Some(bad) = symbol.bytes().position(|c| !is_alnum(c) && c != b'_') {
                    return Err(inval(ErrCode::BadTpName, 1, bad));
                }
            }
            // "$retval" makes an exit probe of an fprobe, wherever it is, unless an identifier
            // character follows. Only the first one of each word counts.
            for (i, word) in argv::words(args).enumerate() {
                let Some(p) = word.find("$retval") else {
                    continue;
                };
                let next = word.as_bytes().get(p + 7).copied().unwrap_or(0);
                if !is_alnum(next) && next != b'_' {
                    if tracepoint {
                        return Err(inval(ErrCode::RetvalOnProbe, i + 2, p));
                    }
                    is_return = true;
                    break;
                }
            }
        }
        if !is_return && maxactive != 0 {
            return Err(inval(ErrCode::BadMaxactType, 0, 1));
        }

        // :[GRP/][EVENT]
        let mut group = if tracepoint {
            TRACEPOINT_GROUP
        } else {
            FPROBE_GROUP
        };
        let mut event = None;
        if let Some(c) = colon {
            let name = head.get(c + 1..).unwrap_or("");
            let (g, e) = parse_event_name(name, c + 1).map_err(|(code, at)| inval(code, 0, at))?;
            group = g.unwrap_or(group);
            event = e;
        }
        let event = match event {
            Some(e) => EventName::Given(e),
            None => EventName::generated(kind, symbol, is_return),
        };

        // find_tracepoint(): upstream looks the tracepoint up here, and refuses an unknown one
        // (from v6.14; 6.12 took it as a tracepoint of a module not loaded yet) at index 1.
        if tracepoint && !tracepoint_exists(symbol) {
            return Err(inval(ErrCode::NoTracepoint, 1, 0));
        }

        // traceprobe_expand_meta_args(): "$arg*" stands for all arguments, which needs BTF. The
        // error points at the last word starting with "$arg", where upstream's log index stays.
        let (mut nargs, mut star, mut last_arg) = (0, false, 0);
        for (i, word) in argv::words(args).enumerate() {
            nargs += 1;
            if !word.starts_with("$arg") {
                continue;
            }
            last_arg = i + 2;
            match word.as_bytes().get(4) {
                Some(c) if c.is_ascii_digit() => {}
                Some(b'*') if star => return Err(inval(ErrCode::DoubleArgs, i + 2, 0)),
                Some(b'*') => star = true,
                _ => return Err(inval(ErrCode::BadVar, i + 2, 0)),
            }
        }
        if star {
            return Err(log(
                ErrCode::NosupBtfarg,
                Errno::OpNotSupp,
                last_arg,
                0,
                false,
            ));
        }
        if nargs > MAX_TRACE_ARGS {
            return Err(Error::TooManyArgs);
        }

        // traceprobe_expand_dentry_args(): all rewrites share one fixed buffer.
        let mut used = 0;
        for word in argv::words(args) {
            if let Some(d) = DentryWord::of(word, cfg) {
                let len = d.len();
                if len >= MAX_DENTRY_ARGS_LEN - used {
                    return Err(Error::DentryArgsTooLong);
                }
                used += len + 1;
            }
        }

        let mut parser = ArgParser::new(args, *cfg, is_return, tracepoint);
        while let Some(arg) = parser.next_arg() {
            if let Err((i, f)) = arg {
                return Err(Error::Probe(ProbeError {
                    code: f.code,
                    errno: f.errno,
                    index: i + 2,
                    offset: f.offset,
                    pos: error_pos(cmd, i + 2, f.offset, Some(cfg)),
                    also: f.also,
                    expanded: true,
                }));
            }
        }

        Ok(ProbeDef {
            cmd,
            kind,
            group,
            event,
            symbol,
            is_return,
            maxactive,
            args,
            nargs,
            entry: parser.ctx.entry,
            size: parser.ctx.size,
            cfg: *cfg,
        })
    }

    /// The command line the definition was parsed from.
    pub fn command(&self) -> &'a str {
        self.cmd
    }

    /// Function or tracepoint probe.
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }

    /// The event's group: as given, else [`FPROBE_GROUP`] or [`TRACEPOINT_GROUP`].
    pub fn group(&self) -> &'a str {
        self.group
    }

    /// The event's name: as given, else upstream's default: `SYM__entry` or `SYM__exit` for an
    /// fprobe, the tracepoint's name (prefixed with '_' if it starts with a digit) for a
    /// tracepoint probe; cut to 63 bytes, with ':', '.' and '*' after the first byte made '_'.
    pub fn event(&self) -> &str {
        self.event.as_str()
    }

    /// Whether the event name was given (rather than made from the symbol).
    pub fn event_given(&self) -> bool {
        matches!(self.event, EventName::Given(_))
    }

    /// The function or the tracepoint. For an fprobe it is what upstream passes to
    /// `register_fprobe()` as its filter: a glob (the kernel's `glob_match()`: `*`, `?`,
    /// `[...]`, `\`) over the names of traceable functions, a plain name being a glob that
    /// matches itself. The parser takes any word here, as upstream does; what it matches is the
    /// caller's business ([`ProbeDef::registration_error`] logs an empty match).
    pub fn symbol(&self) -> &'a str {
        self.symbol
    }

    /// Whether this probes function exit: `%return`, or an fprobe reading `$retval`.
    pub fn is_return(&self) -> bool {
        self.is_return
    }

    /// `MAXACTIVE` as given, 0 for the default. Upstream keeps it in an `int`: numbers from 2^31
    /// on come out negative, as they do upstream, where registering such a probe fails.
    pub fn maxactive(&self) -> i32 {
        self.maxactive
    }

    /// The number of fetch arguments.
    pub fn nargs(&self) -> usize {
        self.nargs
    }

    /// The fetch arguments, in order.
    pub fn args(&self) -> Args<'a> {
        let tracepoint = self.kind == ProbeKind::Tracepoint;
        Args {
            parser: ArgParser::new(self.args, self.cfg, self.is_return, tracepoint),
            left: self.nargs,
        }
    }

    /// For an exit probe, the function arguments (numbered from 0) its entry handler saves, in
    /// entry-data slot order: the `unsigned long` at slot `i` holds argument `entry_args()[i]`
    /// ([`Load::EntryArg`] reads it). Empty when no `$argN` is read at exit.
    pub fn entry_args(&self) -> &[u16] {
        self.entry.as_slice()
    }

    /// Bytes of entry data an exit probe needs per call (upstream's `entry_data_size`).
    pub fn entry_data_size(&self) -> usize {
        self.entry_args().len() * core::mem::size_of::<u64>()
    }

    /// Bytes the argument fields take in the fixed part of the event record.
    pub fn args_size(&self) -> usize {
        self.size
    }

    /// An error at byte `offset` of word `index` of this definition's command, as upstream logs
    /// errors found after the fetch arguments are parsed.
    pub fn error_at(&self, code: ErrCode, errno: Errno, index: usize, offset: usize) -> ProbeError {
        ProbeError {
            code,
            errno,
            index,
            offset,
            pos: error_pos(self.cmd, index, offset, Some(&self.cfg)),
            also: None,
            expanded: true,
        }
    }

    /// The error upstream logs when registering the probe fails with `errno` (negative, as the
    /// kernel returns it): `BAD_INSN_BNDRY` for `-EILSEQ`, `BAD_PROBE_ADDR` for `-ENOENT`, none
    /// for `-ENOMEM` and `-EEXIST`, `FAIL_REG_PROBE` for the rest.
    ///
    /// A symbol or glob that matches no traceable function is `-ENOENT` here, as in upstream
    /// from v6.14 (its `register_fprobe()` matches the glob itself). 6.12's hands the glob to
    /// `ftrace_set_filter()`, which fails with `-EINVAL` on an empty match, and so logs
    /// `FAIL_REG_PROBE`, at the same place.
    pub fn registration_error(&self, errno: i32) -> Option<ProbeError> {
        const EILSEQ: i32 = -84;
        let errno = Errno::from_kernel(errno);
        let code = match errno {
            Errno::Other(EILSEQ) => ErrCode::BadInsnBndry,
            Errno::NoEnt => ErrCode::BadProbeAddr,
            Errno::NoMem | Errno::Exist => return None,
            _ => ErrCode::FailRegProbe,
        };
        Some(self.error_at(code, errno, 1, 0))
    }

    /// When an event of this group and name exists: `DIFF_PROBE_TYPE` unless it is of the same
    /// kind (entry/exit, function/tracepoint) as this definition.
    pub fn diff_probe_type(
        &self,
        existing_is_return: bool,
        existing_kind: ProbeKind,
    ) -> Option<ProbeError> {
        (existing_is_return != self.is_return || existing_kind != self.kind)
            .then(|| self.error_at(ErrCode::DiffProbeType, Errno::Exist, 0, 0))
    }

    /// When an event of this group and name exists: `DIFF_ARG_TYPE` at the first argument whose
    /// name, type or array size differs from the existing event's `existing` arguments, or past
    /// the shorter list when the counts differ (`trace_probe_compare_arg_type()`).
    pub fn diff_arg_types<'x, I>(&self, existing: I) -> Option<ProbeError>
    where
        I: IntoIterator<Item = ArgSig<'x>>,
        I::IntoIter: ExactSizeIterator,
    {
        let existing = existing.into_iter();
        let theirs = existing.len();
        // The differing argument, numbered from 1.
        let differs = if self.nargs != theirs {
            Some(self.nargs.min(theirs) + 1)
        } else {
            self.args()
                .zip(existing)
                .position(|(a, b)| a.sig() != b)
                .map(|i| i + 1)
        }?;
        // Arguments start at word 2.
        Some(self.error_at(ErrCode::DiffArgType, Errno::Exist, differs + 1, 0))
    }

    /// When an event of this group and name exists and has a probe on `symbol` with argument
    /// texts `comms` (as shown in `dynamic_events`): `SAME_PROBE` if they all equal this
    /// definition's, which would duplicate that probe (`trace_fprobe_has_same_fprobe()`).
    pub fn same_probe<'x, I>(&self, symbol: &str, comms: I) -> Option<ProbeError>
    where
        I: IntoIterator<Item = &'x str>,
    {
        let mut ours = self.args();
        let same = symbol == self.symbol
            && comms
                .into_iter()
                .all(|c| ours.next().is_some_and(|a| a.comm.eq_str(c)))
            && ours.next().is_none();
        same.then(|| self.error_at(ErrCode::SameProbe, Errno::Exist, 0, 0))
    }
}

impl fmt::Display for ProbeDef<'_> {
    /// `trace_fprobe_show()`, without the newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.kind == ProbeKind::Tracepoint {
            "t"
        } else {
            "f"
        })?;
        if self.is_return && self.maxactive != 0 {
            write!(f, "{}", self.maxactive)?;
        }
        write!(f, ":{}/{} {}", self.group, self.event(), self.symbol)?;
        if self.is_return {
            f.write_str("%return")?;
        }
        for arg in self.args() {
            write!(f, " {}={}", arg.name, arg.comm)?;
        }
        Ok(())
    }
}

/// The fetch arguments of a [`ProbeDef`], parsed again from its command line.
#[derive(Clone, Debug)]
pub struct Args<'a> {
    parser: ArgParser<'a>,
    /// Arguments not yet returned.
    left: usize,
}

impl<'a> Iterator for Args<'a> {
    type Item = FetchArg<'a>;

    fn next(&mut self) -> Option<FetchArg<'a>> {
        self.left = self.left.checked_sub(1)?;
        // The definition was parsed with these very steps, so no argument fails here; should one
        // fail anyway, end rather than skip it.
        let arg = self.parser.next_arg().and_then(Result::ok);
        if arg.is_none() {
            self.left = 0;
        }
        arg
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Args<'_> {}

/// A removal: `-:[GRP/][EVENT] [SYM [NAME=FETCHARG...]]` (or `!` and anything up to ':').
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveDef<'a> {
    group: Option<&'a str>,
    event: &'a str,
    rest: &'a str,
}

impl<'a> RemoveDef<'a> {
    /// `dyn_event_release()`.
    fn parse(cmd: &'a str) -> Result<Self, Error> {
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

/// An event name: given, or made from the symbol into a fixed buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventName<'a> {
    Given(&'a str),
    Generated {
        buf: [u8; MAX_EVENT_NAME_LEN],
        len: u8,
    },
}

impl<'a> EventName<'a> {
    /// Upstream's default event name (see [`ProbeDef::event`]).
    fn generated(kind: ProbeKind, symbol: &str, is_return: bool) -> Self {
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
                crate::pure::slice::copy(dst, src);
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

    fn as_str(&self) -> &str {
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
fn parse_event_name(name: &str, at: usize) -> Result<GroupEvent<'_>, (ErrCode, usize)> {
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

/// "arg1".."arg128": upstream's names for unnamed arguments, kept static so that every
/// argument name is a `&str` that outlives the definition.
static DEFAULT_NAMES: [[u8; 6]; MAX_TRACE_ARGS] = default_names();

const fn default_names() -> [[u8; 6]; MAX_TRACE_ARGS] {
    let mut names = [[0u8; 6]; MAX_TRACE_ARGS];
    let mut i = 0;
    while i < MAX_TRACE_ARGS {
        let n = i + 1;
        let name = &mut names[i];
        name[0] = b'a';
        name[1] = b'r';
        name[2] = b'g';
        let mut at = 3;
        if n >= 100 {
            name[at] = b'0' + (n / 100) as u8;
            at += 1;
        }
        if n >= 10 {
            name[at] = b'0' + (n / 10 % 10) as u8;
            at += 1;
        }
        name[at] = b'0' + (n % 10) as u8;
        i += 1;
    }
    names
}

/// The default name of argument `i` (from 0).
fn default_name(i: usize) -> &'static str {
    let Some(name) = DEFAULT_NAMES.get(i) else {
        return "";
    };
    let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    core::str::from_utf8(&name[..len]).unwrap_or("")
}

/// An argument word's name (given before '=', else the default) and where its expression starts.
fn arg_name(word: &str, i: usize) -> (&str, Option<usize>) {
    match word.find('=') {
        Some(eq) => (word.get(..eq).unwrap_or(""), Some(eq + 1)),
        None => (default_name(i), None),
    }
}

/// Parses the fetch arguments of one probe in order (`traceprobe_parse_probe_arg()` for each).
#[derive(Clone, Debug)]
struct ArgParser<'a> {
    /// All the argument words.
    all: &'a str,
    words: Words<'a>,
    index: usize,
    cfg: Config,
    ctx: ArgCtx,
}

impl<'a> ArgParser<'a> {
    fn new(args: &'a str, cfg: Config, is_return: bool, tracepoint: bool) -> Self {
        ArgParser {
            all: args,
            words: argv::words(args),
            index: 0,
            cfg,
            ctx: ArgCtx {
                is_return,
                tracepoint,
                max_stack_index: cfg.max_stack_index,
                entry: EntryArgs::new(),
                size: 0,
            },
        }
    }

    /// The next argument, or its index (from 0) and failure.
    fn next_arg(&mut self) -> Option<Result<FetchArg<'a>, (usize, Fail)>> {
        let word = self.words.next()?;
        let i = self.index;
        self.index += 1;
        Some(self.parse(i, word).map_err(|f| (i, f)))
    }

    fn parse(&mut self, i: usize, word: &'a str) -> Result<FetchArg<'a>, Fail> {
        let Some(d) = DentryWord::of(word, &self.cfg) else {
            let (name, at, ty, offset, fetch) = self.parse_text(i, word)?;
            let comm = fetch::Comm::new(word.get(at..).unwrap_or(""), None);
            return Ok(FetchArg {
                name,
                comm,
                ty,
                offset,
                fetch,
            });
        };
        // Upstream parses the rewritten word. Rewrite it into a buffer, parse, and point what
        // the argument borrows back into the command: the name and the wrapped expression are
        // copied verbatim, and the text of a load always lies in the wrapped expression.
        let mut buf = [0u8; MAX_DENTRY_ARGS_LEN];
        let mut w = BufWriter::new(&mut buf);
        // ProbeDef::parse() checked that every rewrite fits.
        let _ = d.write(&mut w);
        let text = w.into_str();
        let (_, _, ty, offset, fetch) = self.parse_text(i, text)?;
        let name = arg_name(word, i).0;
        let comm = fetch::Comm::new(word.get(d.head.len()..).unwrap_or(""), Some(d.exp));
        let inner_at = d.inner_at();
        let fetch = fetch.map_text(|s| {
            let at = (s.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
            match at.checked_sub(inner_at) {
                Some(rel) if rel + s.len() <= d.inner.len() => word
                    .get(d.head.len() + rel..d.head.len() + rel + s.len())
                    .unwrap_or(""),
                _ => "",
            }
        });
        Ok(FetchArg {
            name,
            comm,
            ty,
            offset,
            fetch,
        })
    }

    /// Parses argument `i` written `text`: its name, where its expression starts, its type, the
    /// offset of its field and its program.
    #[allow(clippy::type_complexity)]
    fn parse_text<'t>(
        &mut self,
        i: usize,
        text: &'t str,
    ) -> Result<(&'t str, usize, FetchType, u16, Fetch<'t>), Fail> {
        let inval = |code| Fail {
            code,
            offset: 0,
            errno: Errno::Inval,
            also: None,
        };
        let (name, body_at) = arg_name(text, i);
        if let Some(at) = body_at {
            if at - 1 > MAX_ARG_NAME_LEN {
                return Err(inval(ErrCode::ArgNameTooLong));
            }
            if at == 1 {
                return Err(inval(ErrCode::NoArgName));
            }
        }
        if !is_good_name(name, false) {
            return Err(inval(ErrCode::BadArgName));
        }
        let used = RESERVED_NAMES.contains(&name)
            || argv::words(self.all)
                .take(i)
                .enumerate()
                .any(|(j, w)| arg_name(w, j).0 == name);
        if used {
            return Err(inval(ErrCode::UsedArgName));
        }
        let at = body_at.unwrap_or(0);
        let (ty, offset, fetch) = parse_body(text.get(at..).unwrap_or(""), at, &mut self.ctx)?;
        Ok((name, at, ty, offset, fetch))
    }
}
