// SPDX-License-Identifier: GPL-2.0

//! Errors: upstream's error codes and messages, errnos, and error positions.
//!
//! Upstream reports a bad definition twice: an errno returned by the write, and an entry in
//! tracefs `error_log` naming the error and pointing a caret at the offending byte:
//!
//! ```text
//! [   12.345678] trace_fprobe: error: Invalid argument number
//!   Command: f vfs_read $arg10000
//!                       ^
//! ```
//!
//! [`ProbeError`] carries both; [`ErrorLog`](super::ErrorLog) (errlog.rs) renders the entry
//! exactly as `tracing_err_log_seq_show()` (kernel/trace/trace.c) prints it.
//!
//! This file depends on nothing else of the parser: every other part may return its errors.

use core::fmt;

macro_rules! errors {
    ($($variant:ident, $name:ident, $msg:literal;)*) => {
        /// An upstream probe-event error: the `ERRORS` list of kernel/trace/trace_probe.h, in its
        /// order. Each variant's documentation is the message upstream logs for it.
        ///
        /// The list is complete, so that callers can report the errors only they can detect
        /// (registration failures, clashes with existing events) in the same terms; the parser
        /// itself only produces the ones that a definition's text alone decides.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrCode {
            $(
                #[doc = $msg]
                $variant,
            )*
        }

        impl ErrCode {
            /// Every error code, in upstream's order.
            pub const ALL: &'static [ErrCode] = &[$(ErrCode::$variant,)*];

            /// Upstream's name of the error (`TP_ERR_` + this), e.g. `"BAD_ARG_NUM"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(ErrCode::$variant => stringify!($name),)*
                }
            }

            /// The message upstream logs, e.g. `"Invalid argument number"`.
            pub const fn message(self) -> &'static str {
                match self {
                    $(ErrCode::$variant => $msg,)*
                }
            }
        }
    };
}

errors! {
    FileNotFound, FILE_NOT_FOUND, "Failed to find the given file";
    NoRegularFile, NO_REGULAR_FILE, "Not a regular file";
    BadRefcnt, BAD_REFCNT, "Invalid reference counter offset";
    RefcntOpenBrace, REFCNT_OPEN_BRACE, "Reference counter brace is not closed";
    BadRefcntSuffix, BAD_REFCNT_SUFFIX, "Reference counter has wrong suffix";
    BadUprobeOffs, BAD_UPROBE_OFFS, "Invalid uprobe offset";
    BadMaxactType, BAD_MAXACT_TYPE, "Maxactive is only for function exit";
    BadMaxact, BAD_MAXACT, "Invalid maxactive number";
    MaxactTooBig, MAXACT_TOO_BIG, "Maxactive is too big";
    BadProbeAddr, BAD_PROBE_ADDR, "Invalid probed address or symbol";
    NonUniqSymbol, NON_UNIQ_SYMBOL, "The symbol is not unique";
    BadRetprobe, BAD_RETPROBE, "Retprobe address must be an function entry";
    NoTracepoint, NO_TRACEPOINT, "Tracepoint is not found";
    BadTpName, BAD_TP_NAME, "Invalid character in tracepoint name";
    BadAddrSuffix, BAD_ADDR_SUFFIX, "Invalid probed address suffix";
    NoGroupName, NO_GROUP_NAME, "Group name is not specified";
    GroupTooLong, GROUP_TOO_LONG, "Group name is too long";
    BadGroupName, BAD_GROUP_NAME, "Group name must follow the same rules as C identifiers";
    NoEventName, NO_EVENT_NAME, "Event name is not specified";
    EventTooLong, EVENT_TOO_LONG, "Event name is too long";
    BadEventName, BAD_EVENT_NAME, "Event name must follow the same rules as C identifiers";
    EventExist, EVENT_EXIST, "Given group/event name is already used by another event";
    RetvalOnProbe, RETVAL_ON_PROBE, "$retval is not available on probe";
    NoRetval, NO_RETVAL, "This function returns 'void' type";
    BadStackNum, BAD_STACK_NUM, "Invalid stack number";
    BadArgNum, BAD_ARG_NUM, "Invalid argument number";
    BadVar, BAD_VAR, "Invalid $-variable specified";
    BadRegName, BAD_REG_NAME, "Invalid register name";
    BadMemAddr, BAD_MEM_ADDR, "Invalid memory address";
    BadImm, BAD_IMM, "Invalid immediate value";
    ImmstrNoClose, IMMSTR_NO_CLOSE, "String is not closed with '\"'";
    FileOnKprobe, FILE_ON_KPROBE, "File offset is not available with kprobe";
    BadFileOffs, BAD_FILE_OFFS, "Invalid file offset value";
    SymOnUprobe, SYM_ON_UPROBE, "Symbol is not available with uprobe";
    TooManyOps, TOO_MANY_OPS, "Dereference is too much nested";
    DerefNeedBrace, DEREF_NEED_BRACE, "Dereference needs a brace";
    BadDerefOffs, BAD_DEREF_OFFS, "Invalid dereference offset";
    DerefOpenBrace, DEREF_OPEN_BRACE, "Dereference brace is not closed";
    CommCantDeref, COMM_CANT_DEREF, "$comm can not be dereferenced";
    BadFetchArg, BAD_FETCH_ARG, "Invalid fetch argument";
    ArrayNoClose, ARRAY_NO_CLOSE, "Array is not closed";
    BadArraySuffix, BAD_ARRAY_SUFFIX, "Array has wrong suffix";
    BadArrayNum, BAD_ARRAY_NUM, "Invalid array size";
    ArrayTooBig, ARRAY_TOO_BIG, "Array number is too big";
    BadType, BAD_TYPE, "Unknown type is specified";
    BadString, BAD_STRING, "String accepts only memory argument";
    BadSymstring, BAD_SYMSTRING, "Symbol String doesn't accept data/userdata";
    BadBitfield, BAD_BITFIELD, "Invalid bitfield";
    ArgNameTooLong, ARG_NAME_TOO_LONG, "Argument name is too long";
    NoArgName, NO_ARG_NAME, "Argument name is not specified";
    BadArgName, BAD_ARG_NAME, "Argument name must follow the same rules as C identifiers";
    UsedArgName, USED_ARG_NAME, "This argument name is already used";
    ArgTooLong, ARG_TOO_LONG, "Argument expression is too long";
    NoArgBody, NO_ARG_BODY, "No argument expression";
    BadInsnBndry, BAD_INSN_BNDRY, "Probe point is not an instruction boundary";
    FailRegProbe, FAIL_REG_PROBE, "Failed to register probe event";
    DiffProbeType, DIFF_PROBE_TYPE, "Probe type is different from existing probe";
    DiffArgType, DIFF_ARG_TYPE, "Argument type or name is different from existing probe";
    SameProbe, SAME_PROBE, "There is already the exact same probe event";
    NoEventInfo, NO_EVENT_INFO, "This requires both group and event name to attach";
    BadAttachEvent, BAD_ATTACH_EVENT, "Attached event does not exist";
    BadAttachArg, BAD_ATTACH_ARG, "Attached event does not have this field";
    NoEpFilter, NO_EP_FILTER, "No filter rule after 'if'";
    NosupBtfarg, NOSUP_BTFARG, "BTF is not available or not supported";
    NoBtfarg, NO_BTFARG, "This variable is not found at this probe point";
    NoBtfEntry, NO_BTF_ENTRY, "No BTF entry for this probe point";
    BadVarArgs, BAD_VAR_ARGS, "$arg* must be an independent parameter without name etc.";
    NofentryArgs, NOFENTRY_ARGS, "$arg* can be used only on function entry or exit";
    DoubleArgs, DOUBLE_ARGS, "$arg* can be used only once in the parameters";
    Args2long, ARGS_2LONG, "$arg* failed because the argument list is too long";
    Argidx2big, ARGIDX_2BIG, "$argN index is too big";
    NoPtrStrct, NO_PTR_STRCT, "This is not a pointer to union/structure.";
    NosupDatArg, NOSUP_DAT_ARG, "Non pointer structure/union argument is not supported.";
    BadHyphen, BAD_HYPHEN, "Failed to parse single hyphen. Forgot '>'?";
    NoBtfField, NO_BTF_FIELD, "This field is not found.";
    BadBtfTid, BAD_BTF_TID, "Failed to get BTF type info.";
    BadType4str, BAD_TYPE4STR, "This type does not fit for string.";
    NeedStringType, NEED_STRING_TYPE, "$comm and immediate-string only accepts string type";
    EventTooBig, EVENT_TOO_BIG, "Event too big (too many fields?)";
    // Upstream's later additions (typecasts, Linux 7.x), after 6.12's list.
    TooManyNested, TOO_MANY_NESTED, "Too many nested typecasts/dereferences";
    TypecastBadArrow, TYPECAST_BAD_ARROW, "Typecast field option does not support -> operator";
    TypecastNotAligned, TYPECAST_NOT_ALIGNED, "Typecast field option is not byte-aligned";
    TypecastReqField, TYPECAST_REQ_FIELD, "Typecast requires a field access";
    TypecastSymOffset, TYPECAST_SYM_OFFSET, "@SYM+/-OFFSET with typecast needs parentheses";
}

/// The errno upstream returns for a failed definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Errno {
    /// `EINVAL`: malformed definition.
    Inval,
    /// `E2BIG`: an argument, the argument list or the event record is too long.
    TooBig,
    /// `ERANGE`: a number does not fit.
    Range,
    /// `ENOENT`: something named does not exist.
    NoEnt,
    /// `ENOMEM`: out of memory, or upstream's fixed buffers are too small for the command.
    NoMem,
    /// `ENOSPC`: no room left for entry data.
    NoSpc,
    /// `EOPNOTSUPP`: a feature (BTF arguments) is not available.
    OpNotSupp,
    /// `ECANCELED`: the command is not for this parser (upstream tries the next one).
    Canceled,
    /// `EEXIST`: clashes with an existing event or probe.
    Exist,
    /// Another errno, as the kernel returns it (negative): what a failed registration returned.
    Other(i32),
}

impl Errno {
    /// The errno of a kernel return value (a negated errno number): [`Errno::Other`] for those
    /// without a variant.
    pub const fn from_kernel(value: i32) -> Errno {
        match value {
            -22 => Errno::Inval,
            -7 => Errno::TooBig,
            -34 => Errno::Range,
            -2 => Errno::NoEnt,
            -12 => Errno::NoMem,
            -28 => Errno::NoSpc,
            -95 => Errno::OpNotSupp,
            -125 => Errno::Canceled,
            -17 => Errno::Exist,
            other => Errno::Other(other),
        }
    }

    /// The kernel return value: the negated errno number (`-22` for `EINVAL`).
    pub const fn to_kernel(self) -> i32 {
        match self {
            Errno::Inval => -22,
            Errno::TooBig => -7,
            Errno::Range => -34,
            Errno::NoEnt => -2,
            Errno::NoMem => -12,
            Errno::NoSpc => -28,
            Errno::OpNotSupp => -95,
            Errno::Canceled => -125,
            Errno::Exist => -17,
            Errno::Other(e) => e,
        }
    }
}

/// A definition error as upstream logs it: what, where, and the errno of the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeError {
    /// The error.
    pub code: ErrCode,
    /// What upstream returns for it.
    pub errno: Errno,
    /// The word of the command it is in: 0 for `f[N][:GROUP/EVENT]`, 1 for the symbol, 2 and up
    /// for the fetch arguments.
    pub index: usize,
    /// Byte offset in that word, as upstream computes it (it has quirks: it counts in the
    /// `%pd`-rewritten word, and is one byte short after a `+u`/`-u` dereference).
    pub offset: usize,
    /// Where the caret goes: the byte position in the command as the log shows it (words joined
    /// by single spaces, `%pd` arguments rewritten when `expanded`).
    pub pos: usize,
    /// A second error upstream logs at the same position after this one. Only a register
    /// (`%ax`) does that: `BAD_VAR`, then `BAD_FETCH_ARG`.
    pub also: Option<ErrCode>,
    /// Whether the `%pd`/`%pD` arguments were already rewritten when upstream logged the error
    /// (from the parsing of fetch arguments on): the log then shows the rewritten command.
    pub expanded: bool,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}) at {}",
            self.code.message(),
            self.code.name(),
            self.pos
        )
    }
}

/// Why a command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A definition error upstream logs in `error_log`.
    Probe(ProbeError),
    /// Not an `f`/`t` definition, or one without a symbol: upstream's fprobe parser declines
    /// (`-ECANCELED`) and, no other parser taking it, the write fails with `-EINVAL`. Nothing is
    /// logged.
    NotFprobe,
    /// More than [`MAX_TRACE_ARGS`](super::MAX_TRACE_ARGS) fetch arguments: `-E2BIG`, not logged.
    TooManyArgs,
    /// The `%pd`/`%pD` rewrites do not fit upstream's
    /// [`MAX_DENTRY_ARGS_LEN`](super::MAX_DENTRY_ARGS_LEN) buffer: `-ENOMEM`, not logged.
    DentryArgsTooLong,
    /// A malformed removal (`-` not followed by ':', or no group nor event): `-EINVAL`, not
    /// logged.
    BadRemove,
    /// A line longer than [`MAX_COMMAND_LEN`](super::MAX_COMMAND_LEN): upstream's writer refuses
    /// it with `-EINVAL` and a warning in the kernel log.
    CommandTooLong,
}

impl Error {
    /// What the write returns.
    pub const fn errno(&self) -> Errno {
        match self {
            Error::Probe(e) => e.errno,
            Error::NotFprobe | Error::BadRemove | Error::CommandTooLong => Errno::Inval,
            Error::TooManyArgs => Errno::TooBig,
            Error::DentryArgsTooLong => Errno::NoMem,
        }
    }

    /// The error to log, if upstream logs one.
    pub const fn probe(&self) -> Option<&ProbeError> {
        match self {
            Error::Probe(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ProbeError> for Error {
    fn from(e: ProbeError) -> Self {
        Error::Probe(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Probe(e) => e.fmt(f),
            Error::NotFprobe => f.write_str("not an fprobe definition"),
            Error::TooManyArgs => f.write_str("too many arguments"),
            Error::DentryArgsTooLong => f.write_str("%pd/%pD arguments too long"),
            Error::BadRemove => f.write_str("malformed removal"),
            Error::CommandTooLong => f.write_str("command too long"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_upstream_list() {
        assert_eq!(ErrCode::ALL.len(), 84);
        assert_eq!(ErrCode::ALL[0], ErrCode::FileNotFound);
        assert_eq!(ErrCode::BadArgNum.name(), "BAD_ARG_NUM");
        assert_eq!(ErrCode::BadArgNum.message(), "Invalid argument number");
        assert_eq!(
            ErrCode::ImmstrNoClose.message(),
            "String is not closed with '\"'"
        );
        assert_eq!(ErrCode::EventTooBig.name(), "EVENT_TOO_BIG");
        let mut names: std::vec::Vec<_> = ErrCode::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrCode::ALL.len());
    }

    #[test]
    fn errnos() {
        for e in -200..0 {
            assert_eq!(Errno::from_kernel(e).to_kernel(), e);
        }
        assert_eq!(Errno::from_kernel(-2), Errno::NoEnt);
        assert_eq!(Errno::from_kernel(-16), Errno::Other(-16));
        assert_eq!(Error::NotFprobe.errno().to_kernel(), -22);
        assert_eq!(Error::TooManyArgs.errno(), Errno::TooBig);
        assert_eq!(Error::DentryArgsTooLong.errno().to_kernel(), -12);
    }
}
