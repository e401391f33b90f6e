// SPDX-License-Identifier: GPL-2.0

//! Fetch programs: how to read one probe argument (see [`Fetch`]), and the parser of fetch
//! arguments that builds them.

use core::fmt;

use super::argv::DentryExpansion;
use super::error::{ErrCode, Errno};
use super::num::{
    is_alpha, kstrtoll, kstrtouint, kstrtoull, neg_kstrtoll, simple_strtoul, NumError,
};
use super::types::FetchType;
use super::{MAX_ARGSTR_LEN, MAX_ARRAY_LEN, MAX_TRACE_ARGS};

/// Upstream's instruction budget per argument (`FETCH_INSN_MAX`), end marker included.
pub const FETCH_INSN_MAX: usize = 16;

/// The most dereferences a [`Fetch`] holds: the budget less the end marker and the load.
pub const MAX_DEREFS: usize = FETCH_INSN_MAX - 2;

/// The largest event record upstream accepts for the fixed part of the arguments
/// (`MAX_PROBE_EVENT_SIZE`), in bytes.
pub const MAX_PROBE_EVENT_SIZE: usize = 3072;

/// The index of upstream's end marker, the one instruction slot nothing else may take.
const END_SLOT: usize = FETCH_INSN_MAX - 1;

/// Stage 1 of a [`Fetch`]: where the value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Load<'a> {
    /// `$argN` on function entry: function argument `n` (from 0) of `ftrace_regs`. For a
    /// tracepoint probe, `n` is N: the stub probed takes a dummy first parameter.
    Arg(u16),
    /// `$argN` on function exit: argument `arg` (from 0), saved at entry in entry-data `slot`.
    EntryArg {
        /// Argument number, from 0.
        arg: u16,
        /// Index of the `unsigned long` in the entry data that holds it.
        slot: u8,
    },
    /// `$retval`: the return value.
    Retval,
    /// `$stackN`: the `n`th `unsigned long` on the stack at the probe.
    Stack(u16),
    /// `$stack`: the stack pointer.
    StackPointer,
    /// `$comm`: the address of the current task's `comm`.
    Comm,
    /// `\IMM`, or the address of `@ADDR`: a constant.
    Imm(u64),
    /// `\"STR"`: the address of the string (the text between the quotes, kept by the probe).
    ImmStr(&'a str),
    /// `@SYM[+|-OFFS]`: the address of a symbol, written as is; see [`split_symbol_offset`].
    Symbol(&'a str),
}

/// Stage 2 of a [`Fetch`]: one pointer dereference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Deref {
    /// Added to the address before reading (upstream keeps it in an `int`).
    pub offset: i32,
    /// Read user memory (`+uOFFS(...)`) instead of kernel memory.
    pub user: bool,
}

/// How stage 3 of a [`Fetch`] produces the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// The value itself (`FETCH_OP_ST_RAW`).
    Raw,
    /// Kernel memory at value + offset (`FETCH_OP_ST_MEM`).
    Mem,
    /// User memory at value + offset (`FETCH_OP_ST_UMEM`).
    UserMem,
    /// The kernel string at value + offset (`FETCH_OP_ST_STRING`).
    String,
    /// The user string at value + offset (`FETCH_OP_ST_USTRING`).
    UserString,
    /// The symbol name of address value + offset (`FETCH_OP_ST_SYMSTR`).
    SymString,
}

/// Stage 3 of a [`Fetch`]: producing the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Store {
    /// What to store.
    pub kind: StoreKind,
    /// Size of the field in bytes (4, a `__data_loc`, for strings).
    pub size: u8,
    /// Added to the value before reading memory (0 for `Raw`). The last dereference an argument
    /// writes becomes this offset, as upstream folds it into the store.
    pub offset: i32,
}

/// Stage 4 of a [`Fetch`]: extracting a bitfield from the stored value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bitfield {
    /// Size of the container in bytes (1, 2, 4 or 8).
    pub basesize: u8,
    /// Left shift first: container bits - (width + offset).
    pub lshift: u8,
    /// Then right shift: container bits - width.
    pub rshift: u8,
}

/// The program that reads one probe argument.
///
/// Upstream compiles each fetch argument into an array of `struct fetch_insn` run in fixed
/// stages (kernel/trace/trace_probe_tmpl.h). A [`Fetch`] is that array with the stages made
/// explicit, so that the interpreter is straight-line code:
///
/// ```text
///   1. load     val = <Load>                        exactly one
///   2. derefs   for d in derefs:                    zero or more
///                   lval = val
///                   val  = read_ulong(val + d.offset)          (user memory if d.user)
///   3. store    write the field at `dest` from val, by store.kind:
///                 Raw        the low store.size bytes of val
///                 Mem        store.size bytes at val + store.offset   (UserMem: user memory)
///                 String     the NUL-terminated string at val + store.offset (UserString: user)
///                 SymString  the "symbol+off/size" text of address val + store.offset
///   4. bitfield if Some(b): x = stored value (b.basesize bytes);
///                 x = (x << b.lshift) >> b.rshift, in b.basesize-byte arithmetic
///   5. array    if count > 0, repeat 3-4 for elements 1..count:
///                 non-strings: dest += store.size; val += store.size
///                 strings:     val = lval + 8 * i, then redo the last deref of stage 2
///                              (an array of string pointers; fails if there is no deref)
/// ```
///
/// [`Load`] maps to upstream's first-stage ops: `Arg(n)` is `regs_get_kernel_argument(n)` (for
/// tracepoint probes n is already shifted past the stub's dummy first parameter), `EntryArg`
/// reads slot `slot` (8 bytes each) of the entry data a return probe saved at function entry
/// (see [`ProbeDef::entry_args`](super::ProbeDef::entry_args)), `Comm` is the address of
/// `current->comm`, `ImmStr` the address of a copy of the string, and `Symbol` the address
/// `kallsyms` gives the symbol (resolved when the probe is registered: see
/// [`split_symbol_offset`]).
///
/// All memory reads are nofault reads. A failed dereference ends the argument's fetch, as it
/// ends upstream's `process_fetch_insn_bottom()`; failed string reads store what upstream's
/// `fetch_store_string()` stores.
///
/// Shift amounts and offsets keep upstream's C types: a dereference offset is parsed as a
/// `long` and kept as an `int` (so it wraps the same way), and a bitfield's shifts are computed
/// in `unsigned long` and kept in a `u8`. An interpreter must not trap on a shift of the full
/// width or more (use `checked_shl(..).unwrap_or(0)`).
///
/// # The limits
///
/// Upstream gives each argument 16 instructions, the last one reserved for its end marker; a
/// symbol load takes two. The parser counts instructions the same way, so that it refuses
/// exactly the nestings upstream refuses, with the same error (`TOO_MANY_OPS`, or
/// `BAD_BITFIELD` when only the bitfield does not fit).
#[derive(Clone, Copy, Debug, Eq, Hash)]
pub struct Fetch<'a> {
    /// Stage 1.
    pub load: Load<'a>,
    derefs: [Deref; MAX_DEREFS],
    nderefs: u8,
    /// Stage 3.
    pub store: Store,
    /// Stage 4, if the type is a bitfield.
    pub bitfield: Option<Bitfield>,
    /// Stage 5: the number of array elements, 0 for a scalar.
    pub count: u8,
}

impl<'a> Fetch<'a> {
    /// Stage 2: the dereferences, innermost first.
    pub fn derefs(&self) -> &[Deref] {
        self.derefs.get(..usize::from(self.nderefs)).unwrap_or(&[])
    }

    /// The same program with the text of its load replaced through `f`.
    pub(super) fn map_text<'b>(self, f: impl FnOnce(&'a str) -> &'b str) -> Fetch<'b> {
        let load = match self.load {
            Load::ImmStr(s) => Load::ImmStr(f(s)),
            Load::Symbol(s) => Load::Symbol(f(s)),
            Load::Arg(n) => Load::Arg(n),
            Load::EntryArg { arg, slot } => Load::EntryArg { arg, slot },
            Load::Retval => Load::Retval,
            Load::Stack(n) => Load::Stack(n),
            Load::StackPointer => Load::StackPointer,
            Load::Comm => Load::Comm,
            Load::Imm(v) => Load::Imm(v),
        };
        Fetch {
            load,
            derefs: self.derefs,
            nderefs: self.nderefs,
            store: self.store,
            bitfield: self.bitfield,
            count: self.count,
        }
    }
}

impl PartialEq for Fetch<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.load == other.load
            && self.derefs() == other.derefs()
            && self.store == other.store
            && self.bitfield == other.bitfield
            && self.count == other.count
    }
}

/// `traceprobe_split_symbol_offset()`: splits the text of a [`Load::Symbol`] into the symbol and
/// the offset to add to its address, as upstream does when it registers the probe.
///
/// The offset starts at the first '+' or '-' and must be a whole number; upstream fails the
/// registration otherwise (with `FAIL_REG_PROBE`).
pub fn split_symbol_offset(text: &str) -> Result<(&str, i64), Errno> {
    match text.find(['+', '-']) {
        Some(at) => {
            let offset = kstrtoll(text.get(at..).unwrap_or(""), 0).map_err(NumError::errno)?;
            Ok((text.get(..at).unwrap_or(""), offset))
        }
        None => Ok((text, 0)),
    }
}

/// The text of a fetch argument as upstream shows and compares it (its `comm`): as written,
/// or, for a `%pd`/`%pD` argument, as rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Comm<'a> {
    text: &'a str,
    dentry: Option<DentryExpansion>,
}

impl<'a> Comm<'a> {
    /// A comm for the expression `text` (what follows `NAME=`), rewritten by `dentry` if set.
    pub(super) fn new(text: &'a str, dentry: Option<DentryExpansion>) -> Self {
        Comm { text, dentry }
    }

    /// The expression as written in the command.
    pub fn as_written(&self) -> &'a str {
        self.text
    }

    /// The `%pd`/`%pD` rewrite applied, if any.
    pub fn dentry(&self) -> Option<DentryExpansion> {
        self.dentry
    }

    /// Whether the comm, as displayed, equals `s` (upstream compares comms with `strcmp()`).
    pub fn eq_str(&self, s: &str) -> bool {
        display_eq(self, s)
    }
}

impl fmt::Display for Comm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.dentry {
            None => f.write_str(self.text),
            Some(d) => {
                let inner = self
                    .text
                    .get(..self.text.len().saturating_sub(4))
                    .unwrap_or("");
                d.write_prefix(f)?;
                f.write_str(inner)?;
                d.write_suffix(f)
            }
        }
    }
}

/// Whether `d` displays as exactly `s`, without allocating.
pub(super) fn display_eq(d: &impl fmt::Display, s: &str) -> bool {
    struct Cmp<'s>(&'s str);
    impl fmt::Write for Cmp<'_> {
        fn write_str(&mut self, part: &str) -> fmt::Result {
            self.0 = self.0.strip_prefix(part).ok_or(fmt::Error)?;
            Ok(())
        }
    }
    let mut cmp = Cmp(s);
    fmt::write(&mut cmp, format_args!("{}", d)).is_ok() && cmp.0.is_empty()
}

/// One parsed fetch argument: the field it defines and how to fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FetchArg<'a> {
    /// The field name: as given before '=', else upstream's default `argN` (N from 1).
    pub name: &'a str,
    /// The expression.
    pub comm: Comm<'a>,
    /// The field type (a bitfield's container type).
    pub ty: FetchType,
    /// Offset of the field among the argument fields of the event record (upstream's
    /// `parg->offset`), in bytes.
    pub offset: u16,
    /// How to read the value.
    pub fetch: Fetch<'a>,
}

impl<'a> FetchArg<'a> {
    /// The number of array elements, 0 for a scalar.
    pub fn count(&self) -> u8 {
        self.fetch.count
    }

    /// Bytes the field takes in the fixed part of the record.
    pub fn size(&self) -> usize {
        self.ty.size() * usize::from(self.count().max(1))
    }

    /// Whether the field is (an array of) `__data_loc` strings with data after the fixed part.
    pub fn is_dynamic(&self) -> bool {
        self.ty.is_string()
    }

    /// What upstream compares between probes of one event.
    pub fn sig(&self) -> ArgSig<'a> {
        ArgSig {
            name: self.name,
            ty: self.ty,
            count: self.count(),
        }
    }
}

/// The part of an argument that must match across the probes of one event
/// (`trace_probe_compare_arg_type()`): name, type and array size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgSig<'s> {
    /// The field name.
    pub name: &'s str,
    /// The field type.
    pub ty: FetchType,
    /// Array elements, 0 for a scalar.
    pub count: u8,
}

/// The function arguments a return probe saves at entry, in entry-data slot order
/// (upstream's `probe_entry_arg`: one `unsigned long` each, shared by every `$argN` reading it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct EntryArgs {
    args: [u16; MAX_TRACE_ARGS],
    len: u8,
}

impl EntryArgs {
    pub(super) const fn new() -> Self {
        EntryArgs {
            args: [0; MAX_TRACE_ARGS],
            len: 0,
        }
    }

    /// The slot holding argument `arg`, taking the next free one on first use. `None` when full,
    /// which cannot happen: each fetch argument reads at most one `$argN`.
    fn slot(&mut self, arg: u16) -> Option<u8> {
        let len = usize::from(self.len);
        if let Some(i) = self.as_slice().iter().position(|&a| a == arg) {
            return u8::try_from(i).ok();
        }
        *self.args.get_mut(len)? = arg;
        self.len += 1;
        u8::try_from(len).ok()
    }

    /// Argument numbers (from 0), by slot.
    pub(super) fn as_slice(&self) -> &[u16] {
        self.args.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

/// A failure in one argument: the error and its offset in the argument's word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fail {
    pub(super) code: ErrCode,
    pub(super) offset: usize,
    pub(super) errno: Errno,
    pub(super) also: Option<ErrCode>,
}

const fn fail(code: ErrCode, offset: usize, errno: Errno) -> Fail {
    Fail {
        code,
        offset,
        errno,
        also: None,
    }
}

/// What the argument parser needs to know about the probe, and what it accumulates over the
/// arguments of one probe.
#[derive(Clone, Debug)]
pub(super) struct ArgCtx {
    /// A function-exit probe (`$retval` allowed; `$argN` read from entry data).
    pub(super) is_return: bool,
    /// A tracepoint probe (`$argN` skips the stub's first parameter).
    pub(super) tracepoint: bool,
    /// Largest `N` of `$argN`/`$stackN` (upstream's `PARAM_MAX_STACK`).
    pub(super) max_stack_index: u16,
    /// Arguments saved at entry so far.
    pub(super) entry: EntryArgs,
    /// Size of the argument fields so far (upstream's `tp->size`).
    pub(super) size: usize,
}

/// Upstream's last-written instruction, which several checks look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastOp {
    Arg,
    EntryData,
    Retval,
    Stack,
    StackPointer,
    Comm,
    Imm,
    Data,
    Deref,
    UserDeref,
}

/// A program under construction, with upstream's instruction count.
struct Builder<'t> {
    load: Option<Load<'t>>,
    derefs: [Deref; MAX_DEREFS],
    nderefs: usize,
    /// Instruction slots upstream would have used so far.
    slots: usize,
}

impl<'t> Builder<'t> {
    fn new() -> Self {
        Builder {
            load: None,
            derefs: [Deref::default(); MAX_DEREFS],
            nderefs: 0,
            slots: 0,
        }
    }

    /// Sets the load. It is the innermost operand, so upstream writes it at slot 0 (a symbol
    /// takes slots 0 and 1: an unresolved-symbol holder, then the immediate it resolves into).
    fn set_load(&mut self, load: Load<'t>) {
        self.slots = if matches!(load, Load::Symbol(_)) {
            2
        } else {
            1
        };
        self.load = Some(load);
    }

    fn last_op(&self) -> Option<LastOp> {
        if let Some(d) = self.nderefs.checked_sub(1).and_then(|i| self.derefs.get(i)) {
            return Some(if d.user {
                LastOp::UserDeref
            } else {
                LastOp::Deref
            });
        }
        Some(match self.load? {
            Load::Arg(_) => LastOp::Arg,
            Load::EntryArg { .. } => LastOp::EntryData,
            Load::Retval => LastOp::Retval,
            Load::Stack(_) => LastOp::Stack,
            Load::StackPointer => LastOp::StackPointer,
            Load::Comm => LastOp::Comm,
            Load::Imm(_) | Load::Symbol(_) => LastOp::Imm,
            Load::ImmStr(_) => LastOp::Data,
        })
    }

    /// Appends a dereference (upstream: `if (++code == end) TOO_MANY_OPS`).
    fn push_deref(&mut self, d: Deref, at: usize) -> Result<(), Fail> {
        let too_many = fail(ErrCode::TooManyOps, at, Errno::Inval);
        if self.slots == END_SLOT {
            return Err(too_many);
        }
        *self.derefs.get_mut(self.nderefs).ok_or(too_many)? = d;
        self.nderefs += 1;
        self.slots += 1;
        Ok(())
    }
}

/// `traceprobe_parse_probe_arg_body()`: parses the expression `body` of an argument, found at
/// byte `at` of its word, into the field's type, its offset and its program.
pub(super) fn parse_body<'t>(
    body: &'t str,
    at: usize,
    ctx: &mut ArgCtx,
) -> Result<(FetchType, u16, Fetch<'t>), Fail> {
    if body.len() > MAX_ARGSTR_LEN {
        return Err(fail(ErrCode::ArgTooLong, at, Errno::TooBig));
    }
    if body.is_empty() {
        return Err(fail(ErrCode::NoArgBody, at, Errno::Inval));
    }
    let spec = parse_type(body, at)?;

    let mut off = at;
    let mut b = Builder::new();
    parse_probe_arg(spec.expr, &mut off, ctx, &mut b)?;

    let field_offset = ctx.size;
    ctx.size += spec.ty.size() * spec.count.max(1) as usize;
    if ctx.size > MAX_PROBE_EVENT_SIZE {
        return Err(fail(ErrCode::EventTooBig, off, Errno::TooBig));
    }
    let fetch = finalize(b, &spec, off)?;
    // The offset is at most MAX_PROBE_EVENT_SIZE.
    Ok((
        spec.ty,
        u16::try_from(field_offset).unwrap_or(u16::MAX),
        fetch,
    ))
}

/// The parts of an argument's expression around its type.
struct TypeSpec<'t> {
    /// The fetch expression, before the first ':'.
    expr: &'t str,
    /// The type text, without an array suffix.
    name: Option<&'t str>,
    /// Where the type text starts in the expression (0 when there is none).
    from: usize,
    ty: FetchType,
    count: u32,
}

/// `parse_probe_arg_type()`: splits `body` (at byte `at` of its word) at its first ':' and reads
/// the type and array size after it.
fn parse_type(body: &str, at: usize) -> Result<TypeSpec<'_>, Fail> {
    let inval = |code, offset| fail(code, offset, Errno::Inval);
    let (expr, type_from) = match body.find(':') {
        Some(colon) => (body.get(..colon).unwrap_or(""), Some(colon + 1)),
        None => (body, None),
    };
    let mut name = type_from.and_then(|t| body.get(t..));
    let mut count = 0;
    if let (Some(t), Some(text)) = (type_from, name) {
        if let Some(open) = text.find('[') {
            let num_from = t + open + 1;
            let num_text = body.get(num_from..).unwrap_or("");
            let Some(close) = num_text.find(']') else {
                return Err(inval(ErrCode::ArrayNoClose, at + body.len()));
            };
            let num_end = num_from + close;
            if num_end + 1 != body.len() {
                return Err(inval(ErrCode::BadArraySuffix, at + num_end + 1));
            }
            count = match kstrtouint(num_text.get(..close).unwrap_or(""), 0) {
                Ok(n) if n != 0 => n,
                _ => return Err(inval(ErrCode::BadArrayNum, at + num_from)),
            };
            if count > MAX_ARRAY_LEN as u32 {
                return Err(inval(ErrCode::ArrayTooBig, at + num_from));
            }
            name = text.get(..open);
        }
    }
    let type_at = at + type_from.unwrap_or(0);
    // $comm and immediate strings are strings whatever one writes; only "string" may be written.
    let ty = if expr == "$comm" || expr == "$COMM" || expr.starts_with("\\\"") {
        if count != 0 || name.is_some_and(|n| n != "string") {
            return Err(inval(ErrCode::NeedStringType, type_at));
        }
        FetchType::String
    } else {
        FetchType::find(name).ok_or(inval(ErrCode::BadType, type_at))?
    };
    Ok(TypeSpec {
        expr,
        name,
        from: type_from.unwrap_or(0),
        ty,
        count,
    })
}

/// `parse_probe_arg()`: parses a fetch expression at byte `*off` of its word. Nested
/// dereferences move `*off` as upstream moves `ctx->offset`.
fn parse_probe_arg<'t>(
    arg: &'t str,
    off: &mut usize,
    ctx: &mut ArgCtx,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    // Every branch starts with an ASCII byte, so `arg.get(1..)` is the rest of the expression.
    let rest = arg.get(1..).unwrap_or("");
    match arg.as_bytes().first().copied() {
        Some(b'$') => {
            b.set_load(parse_var(rest, *off, ctx)?);
            Ok(())
        }
        // fprobes have no registers. Upstream logs BAD_VAR but goes on, finds no instruction
        // written and logs BAD_FETCH_ARG too.
        Some(b'%') => Err(Fail {
            also: Some(ErrCode::BadFetchArg),
            ..fail(ErrCode::BadVar, *off, Errno::Inval)
        }),
        Some(b'@') => {
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                let addr =
                    kstrtoull(rest, 0).map_err(|e| fail(ErrCode::BadMemAddr, *off, e.errno()))?;
                b.set_load(Load::Imm(addr));
            } else if rest.starts_with('+') {
                return Err(fail(ErrCode::FileOnKprobe, *off, Errno::Inval));
            } else {
                b.set_load(Load::Symbol(rest));
            }
            b.push_deref(
                Deref {
                    offset: 0,
                    user: false,
                },
                *off,
            )
        }
        Some(sign @ (b'+' | b'-')) => parse_deref(arg, sign, off, ctx, b),
        Some(b'\\') => {
            b.set_load(parse_imm(rest, *off)?);
            Ok(())
        }
        // A bare name is a BTF argument, which needs BTF support we do not have.
        Some(c) if is_alpha(c) || c == b'_' => {
            Err(fail(ErrCode::NosupBtfarg, *off, Errno::OpNotSupp))
        }
        _ => Err(fail(ErrCode::BadFetchArg, *off, Errno::Inval)),
    }
}

/// `parse_probe_vars()`: `$` followed by `var`, at byte `off` of its word.
fn parse_var(var: &str, off: usize, ctx: &mut ArgCtx) -> Result<Load<'static>, Fail> {
    let bad = |code| Err(fail(code, off, Errno::Inval));
    let max = u64::from(ctx.max_stack_index);
    // A prefix is enough: on a return probe "$retvalue" is "$retval".
    if var.starts_with("retval") {
        if !ctx.is_return {
            return bad(ErrCode::RetvalOnProbe);
        }
        return Ok(Load::Retval);
    }
    if let Some(num) = var.strip_prefix("stack") {
        if num.is_empty() {
            return Ok(Load::StackPointer);
        }
        if !num.starts_with(|c: char| c.is_ascii_digit()) {
            return bad(ErrCode::BadVar);
        }
        return match kstrtoull(num, 10) {
            Err(_) => bad(ErrCode::BadVar),
            Ok(n) if n > max => bad(ErrCode::BadStackNum),
            // n <= max_stack_index, a u16.
            Ok(n) => Ok(Load::Stack(n as u16)),
        };
    }
    if var == "comm" || var == "COMM" {
        return Ok(Load::Comm);
    }
    if let Some(num) = var.strip_prefix("arg") {
        let n = match kstrtoull(num, 10) {
            Err(_) => return bad(ErrCode::BadVar),
            Ok(n) if n == 0 || n > max => return bad(ErrCode::BadArgNum),
            // n <= max_stack_index, a u16.
            Ok(n) => (n - 1) as u16,
        };
        return Ok(if ctx.is_return {
            // Read at exit what the entry handler saved.
            let slot = ctx
                .entry
                .slot(n)
                .ok_or(fail(ErrCode::TooManyOps, off, Errno::NoSpc))?;
            Load::EntryArg { arg: n, slot }
        } else {
            // A tracepoint probe attaches to a stub whose first parameter is a dummy.
            Load::Arg(n + u16::from(ctx.tracepoint))
        });
    }
    bad(ErrCode::BadVar)
}

/// `\` followed by `imm`, at byte `off` of its word: an immediate value or string.
fn parse_imm(imm: &str, off: usize) -> Result<Load<'_>, Fail> {
    if let Some(s) = imm.strip_prefix('"') {
        // The string runs to the end of the word, which must be the closing quote.
        return match s.strip_suffix('"') {
            Some(text) => Ok(Load::ImmStr(text)),
            None => Err(fail(
                ErrCode::ImmstrNoClose,
                off + 2 + s.len(),
                Errno::Inval,
            )),
        };
    }
    // str_to_immediate(): a number, or a signed one.
    let value = match imm.as_bytes().first() {
        Some(c) if c.is_ascii_digit() => kstrtoull(imm, 0),
        Some(b'-') => kstrtoll(imm, 0).map(|v| v as u64),
        Some(b'+') => kstrtoll(imm.get(1..).unwrap_or(""), 0).map(|v| v as u64),
        _ => Err(NumError::Invalid),
    };
    value
        .map(Load::Imm)
        .map_err(|e| fail(ErrCode::BadImm, off + 1, e.errno()))
}

/// `+|-[u]OFFS(EXPR)` at byte `*off` of its word, `sign` being its first byte.
fn parse_deref<'t>(
    arg: &'t str,
    sign: u8,
    off: &mut usize,
    ctx: &mut ArgCtx,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    let bytes = arg.as_bytes();
    let user = bytes.get(1) == Some(&b'u');
    // Upstream drops the 'u' by copying the sign over it and stepping past it, then steps past a
    // '+' (kstrtol() takes a '-' but the code skips '+' itself). `from` is where the offset's
    // text starts here; `neg` says a '-' stands (where the 'u' was) before that text; `cur` is
    // where upstream's cursor stands in the word once it is done, which its position arithmetic
    // counts from.
    let (from, neg, cur) = match (sign, user) {
        (b'+', false) => (1, false, 1),
        (b'+', true) => (2, false, 2),
        (_, false) => (0, false, 0),
        (_, true) => (2, true, 1),
    };
    let Some(open) = arg.find('(') else {
        return Err(fail(ErrCode::DerefNeedBrace, *off, Errno::Inval));
    };
    let text = arg.get(from..open).unwrap_or("");
    let offset = if neg {
        neg_kstrtoll(text.as_bytes(), 0)
    } else {
        kstrtoll(text, 0)
    };
    let offset = offset.map_err(|e| fail(ErrCode::BadDerefOffs, *off, e.errno()))?;

    // `ctx->offset += (tmp + 1 - arg) + (arg[0] != '-' ? 1 : 0)`: the '+ 1' makes up for a
    // skipped '+', so the cursor lands after '('; except when the 'u' shifted the cursor, or
    // the offset itself starts with a '-' after a '+': then it lands one byte short.
    let head = if neg {
        b'-'
    } else {
        bytes.get(cur).copied().unwrap_or(0)
    };
    *off += (open + 1).saturating_sub(cur) + usize::from(head != b'-');

    let inside = arg.get(open + 1..).unwrap_or("");
    // The expression ends at the last ')'; upstream ignores anything after it.
    let Some(close) = inside.rfind(')') else {
        return Err(fail(
            ErrCode::DerefOpenBrace,
            *off + inside.len(),
            Errno::Inval,
        ));
    };
    let here = *off;
    parse_probe_arg(inside.get(..close).unwrap_or(""), off, ctx, b)?;
    *off = here;
    if matches!(b.last_op(), Some(LastOp::Comm | LastOp::Data)) {
        return Err(fail(ErrCode::CommCantDeref, *off, Errno::Inval));
    }
    // Upstream keeps the offset in an int.
    b.push_deref(
        Deref {
            offset: offset as i32,
            user,
        },
        *off,
    )
}

/// `finalize_fetch_insn()`: the store, bitfield and array stages for the type of `spec`, `off`
/// being where upstream's cursor stands.
fn finalize<'t>(b: Builder<'t>, spec: &TypeSpec<'_>, off: usize) -> Result<Fetch<'t>, Fail> {
    let (ty, count) = (spec.ty, spec.count);
    // Upstream points type errors found here at the type's offset in the expression counted from
    // its cursor, which a dereference has moved past the expression's start: the caret lands
    // that much to the right of the type (possibly past the end of the command).
    let at_type = off + spec.from;
    let Some(load) = b.load else {
        return Err(fail(ErrCode::BadFetchArg, off, Errno::Inval));
    };
    let last = b.last_op();
    let mut derefs = b.derefs;
    let mut nderefs = b.nderefs;
    let mut slots = b.slots;
    // Folds the last dereference into the store, as upstream rewrites that instruction in place.
    let mut fold = || {
        nderefs = nderefs.saturating_sub(1);
        core::mem::take(&mut derefs[nderefs.min(MAX_DEREFS - 1)])
    };
    let size = ty.size() as u8;

    let store = if ty.is_string() {
        if ty == FetchType::SymStr {
            if !matches!(
                last,
                Some(LastOp::Stack | LastOp::Retval | LastOp::Arg | LastOp::Deref)
            ) {
                return Err(fail(ErrCode::BadSymstring, at_type, Errno::Inval));
            }
        } else if !matches!(
            last,
            Some(LastOp::Deref | LastOp::UserDeref | LastOp::Imm | LastOp::Comm | LastOp::Data)
        ) {
            return Err(fail(ErrCode::BadString, at_type, Errno::Inval));
        }
        // The store gets a new instruction when the value is itself the address (symstr, an
        // immediate, $comm, a string constant) or, for arrays, the address of the first pointer;
        // otherwise it replaces the final dereference.
        let own_slot = ty == FetchType::SymStr
            || matches!(last, Some(LastOp::Imm | LastOp::Comm | LastOp::Data))
            || count > 0;
        let folded = if own_slot {
            if slots == END_SLOT {
                return Err(fail(ErrCode::TooManyOps, off, Errno::Inval));
            }
            slots += 1;
            Deref::default()
        } else {
            fold()
        };
        let kind = if ty == FetchType::UString || folded.user {
            StoreKind::UserString
        } else if ty == FetchType::SymStr {
            StoreKind::SymString
        } else {
            StoreKind::String
        };
        Store {
            kind,
            size,
            offset: folded.offset,
        }
    } else if let Some(LastOp::Deref | LastOp::UserDeref) = last {
        let d = fold();
        Store {
            kind: if d.user {
                StoreKind::UserMem
            } else {
                StoreKind::Mem
            },
            size,
            offset: d.offset,
        }
    } else {
        if slots == END_SLOT {
            return Err(fail(ErrCode::TooManyOps, off, Errno::TooBig));
        }
        slots += 1;
        Store {
            kind: StoreKind::Raw,
            size,
            offset: 0,
        }
    };

    let bitfield = match spec.name.and_then(|n| n.strip_prefix('b')) {
        Some(bf) => {
            let bad = fail(ErrCode::BadBitfield, at_type, Errno::Inval);
            let bf = bf.as_bytes();
            let (width, end) = simple_strtoul(bf, 0);
            if width == 0 || bf.get(end) != Some(&b'@') {
                return Err(bad);
            }
            let at_offset = bf.get(end + 1..).unwrap_or(&[]);
            let (shift, end) = simple_strtoul(at_offset, 0);
            if end == 0 || at_offset.get(end) != Some(&b'/') {
                return Err(bad);
            }
            if slots == END_SLOT {
                return Err(bad);
            }
            slots += 1;
            // In unsigned long, then kept in a u8, as upstream does; a field that does not fit
            // its container is refused, but only after the sum has wrapped.
            let bits = 8 * ty.size() as u64;
            let span = width.wrapping_add(shift);
            if bits < span {
                return Err(bad);
            }
            Some(Bitfield {
                basesize: size,
                lshift: bits.wrapping_sub(span) as u8,
                rshift: bits.wrapping_sub(width) as u8,
            })
        }
        None => None,
    };

    if count > 0 {
        if !matches!(
            store.kind,
            StoreKind::Mem | StoreKind::String | StoreKind::UserString
        ) {
            return Err(fail(ErrCode::BadString, at_type, Errno::Inval));
        }
        if slots == END_SLOT {
            return Err(fail(ErrCode::TooManyOps, off, Errno::TooBig));
        }
    }

    Ok(Fetch {
        load,
        derefs,
        // At most MAX_DEREFS.
        nderefs: nderefs as u8,
        store,
        bitfield,
        count: count as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(is_return: bool) -> ArgCtx {
        ArgCtx {
            is_return,
            tracepoint: false,
            max_stack_index: 2048,
            entry: EntryArgs::new(),
            size: 0,
        }
    }

    fn body(s: &str) -> Result<(FetchType, Fetch<'_>), Fail> {
        parse_body(s, 0, &mut ctx(false)).map(|(t, _, f)| (t, f))
    }

    #[test]
    fn symbol_offsets_split_like_upstream() {
        assert_eq!(split_symbol_offset("jiffies"), Ok(("jiffies", 0)));
        assert_eq!(split_symbol_offset("jiffies+0x10"), Ok(("jiffies", 16)));
        assert_eq!(split_symbol_offset("jiffies-8"), Ok(("jiffies", -8)));
        assert_eq!(split_symbol_offset("a-b+1"), Err(Errno::Inval));
        assert_eq!(split_symbol_offset(""), Ok(("", 0)));
    }

    #[test]
    fn derefs_fold_into_the_store() {
        let (ty, f) = body("+8(+16($arg2)):u32").unwrap();
        assert_eq!(ty, FetchType::U32);
        assert_eq!(f.load, Load::Arg(1));
        assert_eq!(
            f.derefs(),
            &[Deref {
                offset: 16,
                user: false
            }]
        );
        assert_eq!(
            f.store,
            Store {
                kind: StoreKind::Mem,
                size: 4,
                offset: 8
            }
        );
    }

    #[test]
    fn deref_offset_keeps_c_int() {
        let (_, f) = body("+0x100000008($stack):u8").unwrap();
        assert_eq!(f.store.offset, 8);
        assert_eq!(f.load, Load::StackPointer);
    }

    #[test]
    fn entry_slots_are_shared() {
        let mut c = ctx(true);
        let a = parse_body("$arg3", 0, &mut c).unwrap().2;
        let b = parse_body("+0($arg1)", 0, &mut c).unwrap().2;
        let d = parse_body("$arg3:u8", 0, &mut c).unwrap().2;
        assert_eq!(a.load, Load::EntryArg { arg: 2, slot: 0 });
        assert_eq!(b.load, Load::EntryArg { arg: 0, slot: 1 });
        assert_eq!(d.load, Load::EntryArg { arg: 2, slot: 0 });
        assert_eq!(c.entry.as_slice(), &[2, 0]);
        assert_eq!(c.size, 8 + 8 + 1);
    }

    #[test]
    fn fetch_equality_ignores_unused_slots() {
        let (_, a) = body("+8(+16($arg2)):u32").unwrap();
        let mut b = a;
        b.derefs[5] = Deref {
            offset: 99,
            user: true,
        };
        assert_eq!(a, b);
    }

    #[test]
    fn comm_displays_rewrite() {
        let exp = DentryExpansion {
            kind: super::super::DentryKind::File,
            name_offset: 0x28,
            file_offset: 0x48,
        };
        let c = Comm::new("$arg1:%pD", Some(exp));
        assert!(c.eq_str("+0x0(+0x28(+0x48($arg1))):string"));
        assert!(!c.eq_str("+0x0(+0x28(+0x48($arg1))):strin"));
        assert!(!c.eq_str("+0x0(+0x28(+0x48($arg1))):stringx"));
        assert_eq!(c.as_written(), "$arg1:%pD");
        assert!(Comm::new("$arg1", None).eq_str("$arg1"));
    }
}
