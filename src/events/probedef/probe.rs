// SPDX-License-Identifier: GPL-2.0

//! Probe definitions (`f`/`t` lines): [`ProbeDef`], its parser (`__trace_fprobe_create()`) and
//! the errors only its caller can detect.

use core::fmt;

use super::args::{ArgParser, Args};
use super::argv::{self, error_pos, DentryWord, MAX_DENTRY_ARGS_LEN};
use super::btfarg::{BtfRef, FuncBtf};
use super::builder::Fail;
use super::config::{
    Config, ProbeKind, FPROBE_GROUP, MAXACTIVE_MAX, MAX_EVENT_NAME_LEN, MAX_TRACE_ARGS,
    TRACEPOINT_GROUP,
};
use super::error::{ErrCode, Errno, Error, ProbeError};
use super::eventname::{parse_event_name, EventName};
use super::expand::expand;
use super::fetch::{ArgCtx, EntryArgs};
use super::fetcharg::ArgSig;
use super::num::{is_alnum, kstrtouint};

/// What makes an fprobe an exit probe, after its symbol.
const RETURN_SUFFIX: &str = "%return";

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
    /// Where BTF arguments are looked up, when they are supported.
    btf: BtfRef<'a>,
    /// Whether `$arg*`/`$argN` were rewritten (`args` is then not in `cmd`).
    rewritten: bool,
}

impl<'a> ProbeDef<'a> {
    /// `__trace_fprobe_create()`: `head` is the first word, `place` the second, `args` the text
    /// after them; `btf` where BTF arguments are looked up, `scratch` where `$arg*` is rewritten.
    pub(super) fn parse(
        cmd: &'a str,
        cfg: &Config,
        kind: ProbeKind,
        (head, place, args): (&'a str, &'a str, &'a str),
        tracepoint_exists: &mut dyn FnMut(&str) -> bool,
        (btf, scratch): (BtfRef<'a>, &'a mut [u8]),
    ) -> Result<Self, Error> {
        let tracepoint = kind == ProbeKind::Tracepoint;
        let mut err = ErrAt {
            cmd,
            cfg,
            rewritten: false,
        };
        let colon = head.get(1..).and_then(|h| h.find(':')).map(|c| c + 1);
        let maxactive = parse_maxactive(head, colon).map_err(|code| err.inval(code, 0, 1))?;
        let (symbol, is_return) = parse_place(place, args, tracepoint, &err)?;
        if !is_return && maxactive != 0 {
            return Err(err.inval(ErrCode::BadMaxactType, 0, 1));
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
            let (g, e) =
                parse_event_name(name, c + 1).map_err(|(code, at)| err.inval(code, 0, at))?;
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
            return Err(err.inval(ErrCode::NoTracepoint, 1, 0));
        }

        let fb = FuncBtf::query(btf, symbol, tracepoint);
        let ex = expand(args, btf.0.is_some(), fb, scratch)
            .map_err(|(code, errno, i)| err.log(code, errno, i + 2, 0))?;
        let (args, rewritten) = (ex.args, ex.rewritten);
        err.rewritten = rewritten;
        let nargs = argv::words(args).count();
        if nargs > MAX_TRACE_ARGS {
            return Err(Error::TooManyArgs);
        }
        check_dentry_room(args, cfg)?;
        let parser = ArgParser::new(args, *cfg, (is_return, tracepoint), btf, symbol);
        let ctx = parse_args(parser, &err)?;
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
            entry: ctx.entry,
            size: ctx.size,
            cfg: *cfg,
            btf,
            rewritten,
        })
    }

    /// The command line the definition was parsed from.
    pub fn command(&self) -> &'a str {
        self.cmd
    }

    /// Writes the command with its `$arg*`/`$argN` rewritten as BTF said (the command itself
    /// when nothing was): what to keep to parse the definition again, which then needs no
    /// rewrite. Its words are separated by single spaces.
    ///
    /// An exit probe gets `%return` after its symbol if it was one only because an argument
    /// that the rewrite replaced mentioned `$retval`: upstream takes `$arg*` followed by
    /// anything (`$arg*x=$retval`) for `$arg*`, after the `$retval` in it made the probe an
    /// exit probe, and the parameter names that replace it do not say so.
    pub fn write_rewritten<W: fmt::Write>(&self, w: &mut W) -> fmt::Result {
        if !self.rewritten {
            return w.write_str(self.cmd);
        }
        for (i, word) in argv::words(argv::c_str(self.cmd)).take(2).enumerate() {
            w.write_str(word)?;
            if i == 1 && self.is_return && !word.ends_with(RETURN_SUFFIX) {
                w.write_str(RETURN_SUFFIX)?;
            }
            w.write_char(' ')?;
        }
        w.write_str(self.args)
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
            parser: ArgParser::new(
                self.args,
                self.cfg,
                (self.is_return, tracepoint),
                self.btf,
                self.symbol,
            ),
            left: self.nargs,
        }
    }

    /// For an exit probe, the function arguments (numbered from 0) its entry handler saves, in
    /// entry-data slot order: the `unsigned long` at slot `i` holds argument `entry_args()[i]`
    /// ([`Load::EntryArg`](super::Load::EntryArg) reads it). Empty when no `$argN` is read at exit.
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
            pos: error_pos(self.cmd, index, offset, self.shown_cfg()),
            also: None,
            expanded: !self.rewritten,
        }
    }

    /// What the error log shows of `%pd` arguments after parsing: rewritten, unless the
    /// arguments were rewritten for BTF (upstream's log then keeps the words as written).
    fn shown_cfg(&self) -> Option<&Config> {
        (!self.rewritten).then_some(&self.cfg)
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
            f.write_str(RETURN_SUFFIX)?;
        }
        for arg in self.args() {
            write!(f, " {}={}", arg.name, arg.comm)?;
        }
        Ok(())
    }
}

/// Builds the errors of one command at upstream's positions.
#[derive(Clone, Copy)]
struct ErrAt<'c> {
    cmd: &'c str,
    cfg: &'c Config,
    /// The arguments were rewritten for BTF: the log shows them as written.
    rewritten: bool,
}

impl ErrAt<'_> {
    /// `code` with `errno` at byte `offset` of word `index`, found before the `%pd` rewrites.
    fn log(&self, code: ErrCode, errno: Errno, index: usize, offset: usize) -> Error {
        Error::Probe(ProbeError {
            code,
            errno,
            index,
            offset,
            pos: error_pos(self.cmd, index, offset, None),
            also: None,
            expanded: false,
        })
    }

    /// [`ErrAt::log`] with `-EINVAL`.
    fn inval(&self, code: ErrCode, index: usize, offset: usize) -> Error {
        self.log(code, Errno::Inval, index, offset)
    }

    /// The failure of fetch argument `i` (from 0), found in the rewritten command.
    fn arg(&self, i: usize, f: Fail) -> Error {
        Error::Probe(ProbeError {
            code: f.code,
            errno: f.errno,
            index: i + 2,
            offset: f.offset,
            pos: error_pos(
                self.cmd,
                i + 2,
                f.offset,
                (!self.rewritten).then_some(self.cfg),
            ),
            also: f.also,
            expanded: !self.rewritten,
        })
    }
}

/// `f[MAXACTIVE]`: digits right after the type letter of `head`, up to its ':' at `colon`.
/// Anything else there is ignored. 0 when there are none.
fn parse_maxactive(head: &str, colon: Option<usize>) -> Result<i32, ErrCode> {
    if !head.as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
        return Ok(0);
    }
    let digits = head.get(1..colon.unwrap_or(head.len())).unwrap_or("");
    if digits.len() > MAX_EVENT_NAME_LEN - 1 {
        return Err(ErrCode::BadMaxact);
    }
    // Upstream reads an unsigned int into an int: from 2^31 on the number is negative,
    // passes the "too big" check, and only fails when the probe is registered.
    let maxactive = match kstrtouint(digits, 0) {
        Ok(n) if n != 0 => n as i32,
        _ => return Err(ErrCode::BadMaxact),
    };
    if maxactive > MAXACTIVE_MAX {
        return Err(ErrCode::MaxactTooBig);
    }
    Ok(maxactive)
}

/// SYM[%return] (parse_symbol_and_return()): the symbol or tracepoint `place` names, and
/// whether the probe is an exit probe, which a `$retval` among the fetch arguments `args` also
/// makes it.
fn parse_place<'a>(
    place: &'a str,
    args: &str,
    tracepoint: bool,
    err: &ErrAt<'_>,
) -> Result<(&'a str, bool), Error> {
    let symbol = match place.find('%') {
        Some(p) if !tracepoint && place.get(p..) == Some(RETURN_SUFFIX) => {
            return Ok((place.get(..p).unwrap_or(""), true));
        }
        Some(p) => return Err(err.inval(ErrCode::BadAddrSuffix, 1, p)),
        None => place,
    };
    if tracepoint {
        if let Some(bad) = symbol.bytes().position(|c| !is_alnum(c) && c != b'_') {
            return Err(err.inval(ErrCode::BadTpName, 1, bad));
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
                return Err(err.inval(ErrCode::RetvalOnProbe, i + 2, p));
            }
            return Ok((symbol, true));
        }
    }
    Ok((symbol, false))
}

/// traceprobe_expand_dentry_args(): all the `%pd`/`%pD` rewrites of `args` share one fixed
/// buffer, which they must fit.
fn check_dentry_room(args: &str, cfg: &Config) -> Result<(), Error> {
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
    Ok(())
}

/// Parses every fetch argument of `args` once, to refuse the definition at the first bad one;
/// what they accumulate (entry slots, record size) is the definition's.
fn parse_args<'a>(mut parser: ArgParser<'a>, err: &ErrAt<'_>) -> Result<ArgCtx<'a>, Error> {
    while let Some(arg) = parser.next_arg() {
        if let Err((i, f)) = arg {
            return Err(err.arg(i, f));
        }
    }
    Ok(parser.ctx)
}
