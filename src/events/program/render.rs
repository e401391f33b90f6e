// SPDX-License-Identifier: GPL-2.0

//! Showing records: upstream's `trace_probe_print_args()` and `print_type_*()` for the `trace`
//! file, and `__set_print_fmt()` for the `format` file (kernel/trace/trace_probe.c).

use core::fmt::{self, Write};

use super::super::probedef::FetchType;
use super::compile::Program;
use super::split_data_loc;

/// What upstream shows for a string that could not be read (`FAULT_STRING`).
pub const FAULT_STRING: &str = "(fault)";

/// Where a record is rendered: the kernel implements it over a `trace_seq`.
pub trait Out: Write {
    /// Writes `addr` as printk's `%pS` does ("func+0x12/0x80", or the address in hex).
    fn symbol(&mut self, addr: u64) -> fmt::Result;

    /// Writes bytes of a string or a `char` field as `%s` and `%c` copy them: raw. A `trace_seq`
    /// takes any byte; this default, for sinks that take only UTF-8, shows bytes that are not
    /// UTF-8 as U+FFFD.
    fn bytes(&mut self, bytes: &[u8]) -> fmt::Result {
        for chunk in bytes.utf8_chunks() {
            self.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                self.write_char(char::REPLACEMENT_CHARACTER)?;
            }
        }
        Ok(())
    }
}

/// Renders `" name=value"` for each argument of the record `rec` (whole, from its
/// `trace_entry` on; its head takes `head` bytes), as upstream's `trace` file shows them.
///
/// Values are printed as upstream's `print_type_*()` print them: `u*` and `s*` in decimal
/// (sign-extended from their size), `x*` as `0x` and lowercase hex of the field's bytes, `char`
/// as `'c'` (the raw byte), `symbol` through [`Out::symbol`], strings as `"text"` or
/// [`FAULT_STRING`], arrays as `{a,b,c}`. A field that lies outside `rec`, or a `__data_loc`
/// pointing outside it, shows as [`FAULT_STRING`]: a corrupt record never makes this fail or
/// read out of bounds.
pub fn render_args(progs: &[Program], rec: &[u8], head: usize, out: &mut impl Out) -> fmt::Result {
    for p in progs {
        write!(out, " {}=", p.name())?;
        let base = head.saturating_add(p.offset());
        let (ty, count) = (p.ty(), usize::from(p.count()));
        if count == 0 {
            print_value(ty, rec, base, out)?;
            continue;
        }
        out.write_char('{')?;
        for j in 0..count {
            print_value(ty, rec, base.saturating_add(j * ty.size()), out)?;
            out.write_char(if j + 1 == count { '}' } else { ',' })?;
        }
    }
    Ok(())
}

/// `print_type_<ty>()` of the field at `rec[at..]`.
fn print_value(ty: FetchType, rec: &[u8], at: usize, out: &mut impl Out) -> fmt::Result {
    let size = ty.size();
    let mut raw = [0u8; 8];
    let (Some(field), Some(word)) = (rec.get(at..at.saturating_add(size)), raw.get_mut(..size))
    else {
        return out.write_str(FAULT_STRING);
    };
    crate::sys::slice::copy(word, field);
    let v = u64::from_le_bytes(raw);
    match ty {
        FetchType::U8 | FetchType::U16 | FetchType::U32 | FetchType::U64 => write!(out, "{v}"),
        FetchType::S8 => write!(out, "{}", v as u8 as i8),
        FetchType::S16 => write!(out, "{}", v as u16 as i16),
        FetchType::S32 => write!(out, "{}", v as u32 as i32),
        FetchType::S64 => write!(out, "{}", v as i64),
        FetchType::X8 | FetchType::X16 | FetchType::X32 | FetchType::X64 => write!(out, "0x{v:x}"),
        FetchType::Char => {
            out.write_char('\'')?;
            out.bytes(&[v as u8])?;
            out.write_char('\'')
        }
        FetchType::Symbol => out.symbol(v),
        FetchType::String | FetchType::UString | FetchType::SymStr => {
            print_string(rec, v as u32, out)
        }
    }
}

/// `print_type_string()`: the string a `__data_loc` points at, up to its NUL.
///
/// Upstream reads up to the NUL whatever the length says; here the string must also lie within
/// its length and the record, or it is a fault.
fn print_string(rec: &[u8], loc: u32, out: &mut impl Out) -> fmt::Result {
    let (len, offset) = split_data_loc(loc);
    let data = match rec.get(offset..offset + len) {
        Some(data) if len > 0 => data,
        _ => return out.write_str(FAULT_STRING),
    };
    let text = data.split(|&c| c == 0).next().unwrap_or(&[]);
    out.write_char('"')?;
    out.bytes(text)?;
    out.write_char('"')
}

/// Writes the event's print format, as the `format` file shows it after `print fmt: `
/// (`__set_print_fmt()`, `PROBE_PRINT_NORMAL` or `PROBE_PRINT_RETURN`).
///
/// ```text
///   "(%lx) a=0x%Lx s=\"%s\" v={%u,%u}", REC->__probe_ip, REC->a, __get_str(s), REC->v[0], REC->v[1]
///   "(%lx <- %lx) r=%d", REC->__probe_func, REC->__probe_ret_ip, REC->r
/// ```
pub fn write_print_fmt(progs: &[Program], is_return: bool, w: &mut impl Write) -> fmt::Result {
    let (fmt, args) = if is_return {
        ("(%lx <- %lx)", ", REC->__probe_func, REC->__probe_ret_ip")
    } else {
        ("(%lx)", ", REC->__probe_ip")
    };
    write!(w, "\"{fmt}")?;
    for p in progs {
        let f = p.ty().print_fmt();
        write!(w, " {}=", p.name())?;
        if p.count() == 0 {
            w.write_str(f)?;
            continue;
        }
        write!(w, "{{{f}")?;
        for _ in 1..p.count() {
            write!(w, ",{f}")?;
        }
        w.write_char('}')?;
    }
    write!(w, "\"{args}")?;
    for p in progs {
        let string = p.ty().is_string();
        if p.count() == 0 {
            if string {
                write!(w, ", __get_str({})", p.name())?;
            } else {
                write!(w, ", REC->{}", p.name())?;
            }
            continue;
        }
        for j in 0..p.count() {
            if string {
                write!(w, ", __get_str({}[{j}])", p.name())?;
            } else {
                write!(w, ", REC->{}[{j}]", p.name())?;
            }
        }
    }
    Ok(())
}
