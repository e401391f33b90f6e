// SPDX-License-Identifier: GPL-2.0

//! Typecasts (issue 17, upstream's later BTF syntax, Linux 7.x): `(STRUCT)EXPR->MEMBER...` reads
//! the members of the struct named STRUCT at the address EXPR gives, whatever EXPR's type (a
//! parameter, `$retval`, `$current`, `$argN`, `@SYM`, a dereference, another typecast).
//! `(STRUCT,FIELD)EXPR->MEMBER...` takes EXPR for the address of member FIELD (`a.b` allowed)
//! inside a STRUCT, as `container_of()` does: the first member's offset is counted from the
//! struct's start, FIELD's offset taken off.
//!
//! The forms EXPR can take, and where the members start, are upstream's (`handle_typecast()`,
//! kernel/trace/trace_probe.c):
//!
//! ```text
//!   (S)NAME->M          NAME up to the first '-', which must start "->"
//!   (S)(EXPR)->M        a parenthesized expression, to its matching ')'
//!   (S)+OFFS(EXPR)->M   a dereference (also -OFFS, +uOFFS, this_cpu_ptr(EXPR),
//!                       this_cpu_read(EXPR)), to the ')' matching its '('
//!   (S)@SYM->M          a symbol without +/-OFFS (write (S)(@SYM+8)->M)
//! ```
//!
//! The expression is parsed first, as any argument's, then STRUCT and FIELD are looked up and
//! the members resolved in the BTF that describes STRUCT (see `BtfSource::structure`), as
//! upstream unwinds its parse stack. The errors, their carets and errnos are upstream's.

use super::btfarg::{member_chain, parse_btf_field, Start};
use super::builder::{fail, Builder, Fail};
use super::error::{ErrCode, Errno};
use super::fetch::{parse_probe_arg, ArgCtx, THIS_CPU_PTR, THIS_CPU_READ};

/// The most typecasts and dereferences upstream nests (`TRACEPROBE_MAX_NESTED_LEVEL`). Here
/// only a typecast checks it: nested dereferences alone keep 6.12's limit (`TOO_MANY_OPS`).
const MAX_NESTED: u8 = 8;

/// `find_matched_close_paren()`: the index of the ')' that closes the '(' `s` starts with.
fn matched_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where a typecast's pieces lie in its text (indices into the argument).
struct Parts {
    /// The inner expression, `inner.0..inner.1`.
    inner: (usize, usize),
    /// Where the members after `->` start.
    members: usize,
    /// Upstream's cursor when it goes on to parse the inner expression.
    inner_off: usize,
}

/// `handle_typecast()`: splits `arg` (a typecast at byte `o` of its word) into its pieces.
fn split(arg: &str, o: usize) -> Result<Parts, Fail> {
    let inval = |code, at| Err(fail(code, at, Errno::Inval));
    let Some(cast_end) = arg.find(')') else {
        return inval(ErrCode::DerefOpenBrace, o + arg.len());
    };
    let start = cast_end + 1;
    let tmp = arg.get(start..).unwrap_or("");
    let cur = o + start;
    let arrow_at = |i: usize| tmp.get(i..i + 2) == Some("->");
    if tmp.starts_with('(') {
        let Some(close) = matched_close(tmp) else {
            return inval(ErrCode::DerefOpenBrace, cur);
        };
        if !arrow_at(close + 1) {
            return inval(ErrCode::TypecastReqField, cur + close + 1);
        }
        return Ok(Parts {
            inner: (start + 1, start + close),
            members: start + close + 3,
            inner_off: cur + 1,
        });
    }
    if tmp.starts_with(['+', '-'])
        || tmp.starts_with(THIS_CPU_PTR)
        || tmp.starts_with(THIS_CPU_READ)
    {
        // The dereference may hold members of its own: its end is the ')' matching its '('.
        let Some(open) = tmp.get(1..).and_then(|t| t.find('(')).map(|i| i + 1) else {
            return inval(ErrCode::DerefNeedBrace, cur);
        };
        let Some(close) = matched_close(tmp.get(open..).unwrap_or("")) else {
            return inval(ErrCode::DerefOpenBrace, cur + tmp.len());
        };
        let after = open + close + 1;
        if !arrow_at(after) {
            return inval(ErrCode::TypecastReqField, cur + after);
        }
        return Ok(Parts {
            inner: (start, start + after),
            members: start + after + 2,
            inner_off: cur,
        });
    }
    if tmp.starts_with('@') {
        // `@SYM+8->m` would be ambiguous: the offset must be inside parentheses.
        let b = tmp.as_bytes();
        if let Some(p) = tmp.find(['+', '-']) {
            if b.get(p + 1).is_some_and(u8::is_ascii_digit) {
                return inval(ErrCode::TypecastSymOffset, cur);
            }
        }
    }
    // A name (or variable) runs to the first '-', which must start the "->".
    match tmp.find('-') {
        Some(p) if arrow_at(p) => Ok(Parts {
            inner: (start, start + p),
            members: start + p + 2,
            inner_off: cur,
        }),
        _ => inval(ErrCode::TypecastReqField, cur + tmp.len()),
    }
}

/// A typecast `arg` at byte `*off` of its word: the inner expression, then the struct's
/// members. Leaves `*off` where the members' parse left it, as upstream leaves its cursor.
pub(super) fn parse_typecast<'t>(
    arg: &'t str,
    off: &mut usize,
    ctx: &mut ArgCtx<'_>,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    let o = *off;
    if ctx.depth >= MAX_NESTED {
        return Err(fail(ErrCode::TooManyNested, o, Errno::TooBig));
    }
    // Without BTF, as upstream without CONFIG_PROBE_EVENTS_BTF_ARGS.
    if ctx.btf.0.is_none() {
        return Err(fail(ErrCode::NosupBtfarg, o, Errno::OpNotSupp));
    }
    let p = split(arg, o)?;
    let text = |from: usize, to: usize| arg.get(from..to).unwrap_or("");

    *off = p.inner_off;
    ctx.depth += 1;
    let inner = parse_probe_arg(text(p.inner.0, p.inner.1), off, ctx, b);
    ctx.depth -= 1;
    inner?;

    // `parse_btf_casttype()`: STRUCT, and FIELD after a ','.
    let cast = text(1, arg.find(')').unwrap_or(1));
    let (name, field) = match cast.split_once(',') {
        Some((n, f)) => (n, Some(f)),
        None => (cast, None),
    };
    ctx.cast = None;
    let (btf, id) = ctx
        .structure(name)
        .ok_or(fail(ErrCode::NoPtrStrct, o + 1, Errno::Inval))?;
    let mut prefix = 0;
    if let Some(field) = field {
        // Upstream's cursor, which the errors point at: at FIELD's last name, or past a "->".
        let mut at = o + 2 + name.len();
        let c = member_chain(field, id, &btf, &mut at)?;
        // Upstream's check: FIELD must start on a byte. A bitfield that does is taken, at that
        // byte, as upstream takes it (a definition that works there works here).
        if c.bitoffs % 8 != 0 {
            return Err(fail(ErrCode::TypecastNotAligned, at, Errno::Inval));
        }
        if c.rest.is_some() {
            // `at` is past the "->".
            return Err(fail(ErrCode::TypecastBadArrow, at - 2, Errno::Inval));
        }
        prefix = c.bitoffs / 8;
    }
    ctx.cast = Some(btf);
    *off = o + p.members;
    parse_btf_field(
        text(p.members, arg.len()),
        id,
        &btf,
        Start::Struct { prefix },
        off,
        ctx,
        b,
    )
}
