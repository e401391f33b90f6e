// SPDX-License-Identifier: GPL-2.0

//! The parser of fetch arguments: an argument's expression and type into its [`Fetch`] program
//! (upstream's `traceprobe_parse_probe_arg_body()` and the functions it calls). The last step,
//! the store, bitfield and array stages, is [`finalize`](super::finalize).

use super::argtype::parse_type;
use super::btfarg::{parse_btf_arg, BtfRef, FuncBtf, LastType};
use super::builder::{fail, Builder, Fail, LastOp};
use super::config::{MAX_ARGSTR_LEN, MAX_TRACE_ARGS};
use super::error::{ErrCode, Errno};
use super::finalize::finalize;
use super::num::{is_alpha, kstrtoll, kstrtoull, neg_kstrtoll, NumError};
use super::program::{Deref, Fetch, Load, MAX_PROBE_EVENT_SIZE};
use super::typecast::parse_typecast;
use super::types::FetchType;
use crate::sys::btf::reader::Btf;

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

/// What the argument parser needs to know about the probe, and what it accumulates over the
/// arguments of one probe.
#[derive(Clone, Debug)]
pub(super) struct ArgCtx<'a> {
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
    /// Where BTF arguments are looked up; none: they are not supported.
    pub(super) btf: BtfRef<'a>,
    /// The probed function (or tracepoint), whose BTF the arguments use.
    pub(super) func: &'a str,
    /// What the current argument's BTF lookup found last.
    pub(super) last: Option<LastType>,
    /// The BTF of the struct a typecast or `$current` named, which `last` then refers to
    /// (upstream's `ctx->struct_btf`); `None`: `last` is in the probed function's BTF.
    pub(super) cast: Option<Btf<'a>>,
    /// Typecasts and dereferences around the expression being parsed (upstream's
    /// `ctx->depth`).
    pub(super) depth: u8,
}

impl<'a> ArgCtx<'a> {
    /// A context for the arguments of a probe on `func`.
    pub(super) fn new(
        is_return: bool,
        tracepoint: bool,
        max: u16,
        btf: BtfRef<'a>,
        func: &'a str,
    ) -> Self {
        ArgCtx {
            is_return,
            tracepoint,
            max_stack_index: max,
            entry: EntryArgs::new(),
            size: 0,
            btf,
            func,
            last: None,
            cast: None,
            depth: 0,
        }
    }

    /// The struct `name` for a typecast or `$current` ([`BtfSource::structure`]).
    pub(super) fn structure(&self, name: &str) -> Option<(Btf<'a>, u32)> {
        self.btf.0?.structure(name, self.func, self.tracepoint)
    }

    /// The BTF that `last` refers to (upstream's `ctx_btf()`).
    pub(super) fn last_btf(&self) -> Option<Btf<'a>> {
        self.cast.or_else(|| self.query().map(|f| f.btf))
    }

    /// The probed function's BTF (`query_btf_context()`).
    pub(super) fn query(&self) -> Option<FuncBtf<'a>> {
        FuncBtf::query(self.btf, self.func, self.tracepoint)
    }

    /// How an argument reads function argument `n` (from 0, as the stub numbers them for a
    /// tracepoint): from the registers at entry, from the entry data at exit.
    pub(super) fn param_load(&mut self, n: u16, off: usize) -> Result<Load<&'static str>, Fail> {
        if !self.is_return {
            return Ok(Load::Arg(n));
        }
        let slot = self
            .entry
            .slot(n)
            .ok_or(fail(ErrCode::TooManyOps, off, Errno::NoSpc))?;
        Ok(Load::EntryArg { arg: n, slot })
    }
}

/// `traceprobe_parse_probe_arg_body()`: parses the expression `body` of an argument, found at
/// byte `at` of its word, into the field's type, its offset and its program.
pub(super) fn parse_body<'t>(
    body: &'t str,
    at: usize,
    ctx: &mut ArgCtx<'_>,
) -> Result<(FetchType, u16, Fetch<'t>), Fail> {
    if body.len() > MAX_ARGSTR_LEN {
        return Err(fail(ErrCode::ArgTooLong, at, Errno::TooBig));
    }
    if body.is_empty() {
        return Err(fail(ErrCode::NoArgBody, at, Errno::Inval));
    }
    let mut spec = parse_type(body, at)?;

    let mut off = at;
    let mut b = Builder::new();
    ctx.last = None;
    ctx.cast = None;
    ctx.depth = 0;
    parse_probe_arg(spec.expr, &mut off, ctx, &mut b)?;
    // The type BTF says, unless one was written; a string written for a BTF value.
    match spec.name {
        None => {
            if let Some((ty, bitfield)) = ctx.btf_type() {
                spec.ty = ty;
                spec.btf_bitfield = bitfield;
            }
        }
        Some(t) if t.contains("string") => ctx.btf_string(t.starts_with('u'), off, &mut b)?,
        Some(_) => {}
    }

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

/// `parse_probe_arg()`: parses a fetch expression at byte `*off` of its word. Nested
/// dereferences move `*off` as upstream moves `ctx->offset`.
pub(super) fn parse_probe_arg<'t>(
    arg: &'t str,
    off: &mut usize,
    ctx: &mut ArgCtx<'_>,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    // Every branch starts with an ASCII byte, so `arg.get(1..)` is the rest of the expression.
    let rest = arg.get(1..).unwrap_or("");
    match arg.as_bytes().first().copied() {
        // With BTF, an exit probe's `$retval` is typed, and may have members.
        Some(b'$') if ctx.is_return && ctx.btf.0.is_some() && rest.starts_with("retval") => {
            parse_btf_arg(arg, off, ctx, b)
        }
        // With BTF, `$current->member` is a member of the current task_struct.
        Some(b'$') if ctx.btf.0.is_some() && rest.starts_with("current-") => {
            parse_btf_arg(arg, off, ctx, b)
        }
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
                    cpu: false,
                },
                *off,
            )
        }
        Some(sign @ (b'+' | b'-')) => parse_deref(arg, sign, off, ctx, b),
        Some(b'(') => parse_typecast(arg, off, ctx, b),
        Some(b'\\') => {
            b.set_load(parse_imm(rest, *off)?);
            Ok(())
        }
        Some(b't') if arg.starts_with(THIS_CPU_PTR) || arg.starts_with(THIS_CPU_READ) => {
            parse_this_cpu(arg, off, ctx, b)
        }
        // A bare name is a BTF argument: a parameter, maybe with members.
        Some(c) if (is_alpha(c) || c == b'_') && ctx.btf.0.is_some() => {
            parse_btf_arg(arg, off, ctx, b)
        }
        Some(c) if is_alpha(c) || c == b'_' => {
            Err(fail(ErrCode::NosupBtfarg, *off, Errno::OpNotSupp))
        }
        _ => Err(fail(ErrCode::BadFetchArg, *off, Errno::Inval)),
    }
}

/// `parse_probe_vars()`: `$` followed by `var`, at byte `off` of its word.
fn parse_var(var: &str, off: usize, ctx: &mut ArgCtx<'_>) -> Result<Load<&'static str>, Fail> {
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
    // `parse_probe_var_current()`. `$current->...` went to the BTF parser if there is BTF.
    if let Some(tail) = var.strip_prefix("current") {
        if !tail.is_empty() {
            return bad(ErrCode::BadVar);
        }
        return Ok(Load::Current);
    }
    if let Some(num) = var.strip_prefix("arg") {
        let n = match kstrtoull(num, 10) {
            Err(_) => return bad(ErrCode::BadVar),
            Ok(n) if n == 0 || n > max => return bad(ErrCode::BadArgNum),
            // n <= max_stack_index, a u16.
            Ok(n) => (n - 1) as u16,
        };
        // At exit, read what the entry handler saved. A tracepoint probe attaches to a stub
        // whose first parameter is a dummy.
        return ctx.param_load(n + u16::from(ctx.tracepoint), off);
    }
    bad(ErrCode::BadVar)
}

/// `this_cpu_ptr(EXPR)`: this CPU's copy of the per-CPU variable at EXPR.
pub(super) const THIS_CPU_PTR: &str = "this_cpu_ptr(";
/// `this_cpu_read(EXPR)`: the `unsigned long` in this CPU's copy of it.
pub(super) const THIS_CPU_READ: &str = "this_cpu_read(";

/// `parse_this_cpu()` and its unwinding: `this_cpu_ptr(EXPR)` or `this_cpu_read(EXPR)` at byte
/// `*off` of its word (upstream's later addition, with the typecasts). EXPR's value is taken
/// as a per-CPU address (`@SYM`: the symbol's address itself, not what is there) and made this
/// CPU's; `this_cpu_read()` then reads there.
fn parse_this_cpu<'t>(
    arg: &'t str,
    off: &mut usize,
    ctx: &mut ArgCtx<'_>,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    let read = arg.starts_with(THIS_CPU_READ);
    let prefix = if read { THIS_CPU_READ } else { THIS_CPU_PTR };
    *off += prefix.len();
    let inside = arg.get(prefix.len()..).unwrap_or("");
    // As a dereference's: to the last ')', anything after it ignored.
    let Some(close) = inside.rfind(')') else {
        return Err(fail(
            ErrCode::DerefOpenBrace,
            *off + inside.len(),
            Errno::Inval,
        ));
    };
    let inner = inside.get(..close).unwrap_or("");
    let here = *off;
    ctx.depth = ctx.depth.saturating_add(1);
    let r = parse_probe_arg(inner, off, ctx, b);
    ctx.depth -= 1;
    r?;
    *off = here;
    ctx.last = None;
    if matches!(b.last_op(), Some(LastOp::Comm | LastOp::Data)) {
        return Err(fail(ErrCode::CommCantDeref, *off, Errno::Inval));
    }
    let cpu = Deref {
        offset: 0,
        user: false,
        cpu: true,
    };
    // `@SYM` read the symbol's memory last: the conversion takes that read's place.
    if !(inner.starts_with('@') && b.replace_last_deref(cpu)) {
        b.push_deref(cpu, *off)?;
    }
    if read {
        let word = Deref {
            offset: 0,
            user: false,
            cpu: false,
        };
        b.push_deref(word, *off)?;
    }
    Ok(())
}

/// `\` followed by `imm`, at byte `off` of its word: an immediate value or string.
fn parse_imm(imm: &str, off: usize) -> Result<Load<&str>, Fail> {
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
    ctx: &mut ArgCtx<'_>,
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
    ctx.depth = ctx.depth.saturating_add(1);
    let inner = parse_probe_arg(inside.get(..close).unwrap_or(""), off, ctx, b);
    ctx.depth -= 1;
    inner?;
    *off = here;
    // What is read through the dereference has no BTF type.
    ctx.last = None;
    if matches!(b.last_op(), Some(LastOp::Comm | LastOp::Data)) {
        return Err(fail(ErrCode::CommCantDeref, *off, Errno::Inval));
    }
    // Upstream keeps the offset in an int.
    b.push_deref(
        Deref {
            offset: offset as i32,
            user,
            cpu: false,
        },
        *off,
    )
}

#[cfg(test)]
mod tests {
    use super::super::program::{Store, StoreKind};
    use super::*;

    fn ctx(is_return: bool) -> ArgCtx<'static> {
        ArgCtx::new(is_return, false, 2048, BtfRef(None), "f")
    }

    fn body(s: &str) -> Result<(FetchType, Fetch<'_>), Fail> {
        parse_body(s, 0, &mut ctx(false)).map(|(t, _, f)| (t, f))
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
                user: false,
                cpu: false
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
            cpu: false,
        };
        assert_eq!(a, b);
    }
}
