// SPDX-License-Identifier: GPL-2.0

//! BTF arguments (issue 17): a function parameter by name (`count`), a struct or union member
//! through pointers (`file->f_path.dentry`), and a typed `$retval`, resolved with the kernel's
//! type information as upstream's `parse_btf_arg()`, `parse_btf_field()` and
//! `fetch_type_from_btf_type()` (kernel/trace/trace_probe.c, 6.12) resolve them.
//!
//! The parser asks a [`BtfSource`] for the BTF that describes the probed function; it stays
//! pure: the kernel hands it vmlinux's BTF (`sys::btf`), the host tests a sample blob. Without a
//! source the parser behaves as a kernel without `CONFIG_PROBE_EVENTS_BTF_ARGS`.

use core::fmt;

use super::builder::{fail, Builder, Fail};
use super::error::{ErrCode, Errno};
use super::fetch::ArgCtx;
use super::program::{Bitfield, Deref, Load};
use super::types::FetchType;
use crate::sys::btf::reader::{Btf, Func, Kind};

/// Where the parser finds the BTF of the functions it probes.
pub trait BtfSource {
    /// The BTF that describes function `name` and its FUNC; for a tracepoint (`tracepoint`),
    /// those of its probe stub, `__probestub_NAME`, whose first parameter is the stub's dummy.
    /// `None`: no BTF describes it.
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)>;

    /// The BTF that describes the struct named `name`, and its id: what upstream's
    /// `bpf_find_btf_id(name, BTF_KIND_STRUCT)` finds for a typecast `(name)` or for
    /// `$current` (`task_struct`). Upstream searches vmlinux's BTF, then every loaded module's;
    /// ufgraph has no list of the modules, so after vmlinux's it searches the BTF of the probed
    /// function `func` (a module's split BTF holds that module's own types).
    fn structure(&self, name: &str, func: &str, tracepoint: bool) -> Option<(Btf<'_>, u32)>;
}

/// [`BtfSource::structure`] in one blob (and its base first, for split BTF).
pub fn find_struct<'x>(btf: Btf<'x>, name: &str) -> Option<(Btf<'x>, u32)> {
    Some((btf, btf.find(name.as_bytes(), Kind::Struct).ok()?))
}

/// The longest kernel symbol (`KSYM_NAME_LEN`).
const KSYM_NAME_LEN: usize = 512;

/// A tracepoint's probe stub: what upstream's `kallsyms_lookup(tpoint->probestub)` names.
const PROBESTUB: &[u8] = b"__probestub_";

/// [`BtfSource::function`] in one blob (and its base, for split BTF).
pub fn find_function<'x>(btf: Btf<'x>, name: &str, tracepoint: bool) -> Option<(Btf<'x>, Func)> {
    if !tracepoint {
        return Some((btf, btf.func(name.as_bytes()).ok()?));
    }
    let mut buf = [0u8; KSYM_NAME_LEN];
    let len = PROBESTUB.len() + name.len();
    buf.get_mut(..PROBESTUB.len())?.copy_from_slice(PROBESTUB);
    buf.get_mut(PROBESTUB.len()..len)?
        .copy_from_slice(name.as_bytes());
    Some((btf, btf.func(buf.get(..len)?).ok()?))
}

impl BtfSource for Btf<'_> {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)> {
        find_function(*self, name, tracepoint)
    }

    fn structure(&self, name: &str, _func: &str, _tracepoint: bool) -> Option<(Btf<'_>, u32)> {
        find_struct(*self, name)
    }
}

/// An optional [`BtfSource`], which a definition keeps to parse its arguments again. Two are
/// equal when both or neither are there: what a definition means does not depend on which
/// source resolved it, only on whether one did.
#[derive(Clone, Copy, Default)]
pub struct BtfRef<'a>(pub Option<&'a dyn BtfSource>);

impl fmt::Debug for BtfRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "BtfRef(Some)"
        } else {
            "BtfRef(None)"
        })
    }
}

impl PartialEq for BtfRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.is_some() == other.0.is_some()
    }
}

impl Eq for BtfRef<'_> {}

/// What the last BTF lookup of an argument found (upstream's `ctx->last_type`, `last_bitoffs`,
/// `last_bitsize`): the value's type under its modifiers, and where a bitfield lies in what the
/// store reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LastType {
    ty: u32,
    bitoffs: u32,
    bitsize: u32,
}

/// A function's BTF as the parser uses it: the blob, the FUNC, and how many of its parameters
/// the definition sees (a tracepoint's stub hides its first).
#[derive(Clone, Copy, Debug)]
pub(super) struct FuncBtf<'a> {
    pub(super) btf: Btf<'a>,
    func: Func,
    /// Parameters hidden at the front: 1 for a tracepoint stub.
    skip: usize,
}

impl<'a> FuncBtf<'a> {
    /// `query_btf_context()`.
    pub(super) fn query(src: BtfRef<'a>, name: &str, tracepoint: bool) -> Option<Self> {
        let (btf, func) = src.0?.function(name, tracepoint)?;
        Some(FuncBtf {
            btf,
            func,
            skip: usize::from(tracepoint),
        })
    }

    /// The parameters the definition sees.
    pub(super) fn nr_params(&self) -> usize {
        usize::from(self.func.proto.params).saturating_sub(self.skip)
    }

    /// The name of visible parameter `i` (from 0).
    pub(super) fn param_name(&self, i: usize) -> Option<&'a str> {
        let p = self.btf.param(self.func.proto.id, i + self.skip).ok()?;
        core::str::from_utf8(p.name).ok()
    }
}

/// A name, and where what follows it starts: its offset, its text, whether after `->`.
type Split<'v> = (&'v str, Option<(usize, &'v str, bool)>);

/// `split_next_field()`: where `var` (at byte `off` of its word) continues after its first
/// name: `Some((at, rest, arrow))` for `->rest` (`arrow`) or `.rest` starting at byte `at`.
fn split_field(var: &str, off: usize) -> Result<Split<'_>, Fail> {
    let Some(p) = var.find(['.', '-']) else {
        return Ok((var, None));
    };
    let head = var.get(..p).unwrap_or("");
    if var.get(p..p + 2) == Some("->") {
        return Ok((head, Some((p + 2, var.get(p + 2..).unwrap_or(""), true))));
    }
    if var.get(p..p + 1) == Some(".") {
        return Ok((head, Some((p + 1, var.get(p + 1..).unwrap_or(""), false))));
    }
    Err(fail(ErrCode::BadHyphen, off + p, Errno::Inval))
}

/// `parse_btf_arg()`: a parameter name or `$retval` (`var`, at byte `*off` of its word),
/// optionally followed by members. Moves `*off` to the members as upstream moves its cursor.
pub(super) fn parse_btf_arg<'t>(
    var: &'t str,
    off: &mut usize,
    ctx: &mut ArgCtx<'_>,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    let (head, field) = split_field(var, *off)?;
    if let Some((at, _, false)) = field {
        return Err(fail(ErrCode::NosupDatArg, *off + at, Errno::OpNotSupp));
    }
    if head == "$current" {
        return parse_current(field, off, ctx, b);
    }
    let fb = ctx.query();
    let tid = if ctx.is_return && head == "$retval" {
        b.set_load(Load::Retval);
        let Some(fb) = fb else {
            return match field {
                Some((at, _, _)) => Err(fail(ErrCode::NoBtfEntry, *off + at, Errno::NoEnt)),
                None => Ok(()),
            };
        };
        if fb.func.proto.ret == 0 {
            return Err(fail(ErrCode::NoRetval, *off, Errno::NoEnt));
        }
        fb.func.proto.ret
    } else {
        let fb = fb.filter(|f| f.nr_params() > 0).ok_or(fail(
            ErrCode::NoBtfEntry,
            *off,
            Errno::NoEnt,
        ))?;
        let i = (0..fb.nr_params())
            .find(|&i| fb.param_name(i) == Some(head))
            .ok_or(fail(ErrCode::NoBtfarg, *off, Errno::NoEnt))?;
        let (btf, proto) = (fb.btf, fb.func.proto.id);
        let n = i + fb.skip;
        let tid = btf
            .param(proto, n)
            .map_err(|_| fail(ErrCode::BadBtfTid, *off, Errno::Inval))?
            .ty;
        // At most 0xffff parameters: a u16.
        b.set_load(ctx.param_load(n as u16, *off)?);
        tid
    };
    let Some(fb) = ctx.query() else {
        return Ok(());
    };
    let ty = fb
        .btf
        .resolve(tid)
        .map_err(|_| fail(ErrCode::BadBtfTid, *off, Errno::Inval))?;
    ctx.last = Some(LastType {
        ty,
        bitoffs: 0,
        bitsize: 0,
    });
    match field {
        Some((at, rest, _)) => {
            *off += at;
            parse_btf_field(rest, ty, &fb.btf, Start::Pointer, off, ctx, b)
        }
        None => Ok(()),
    }
}

/// `$current->MEMBER...`: the members of the current task_struct, found in the BTF that
/// describes `task_struct` (upstream: vmlinux's), the first one at the task's own address.
fn parse_current<'t>(
    field: Option<(usize, &'t str, bool)>,
    off: &mut usize,
    ctx: &mut ArgCtx<'_>,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    b.set_load(Load::Current);
    let (btf, id) =
        ctx.structure("task_struct")
            .ok_or(fail(ErrCode::NoBtfEntry, *off, Errno::NoEnt))?;
    ctx.cast = Some(btf);
    ctx.last = Some(LastType {
        ty: id,
        bitoffs: 0,
        bitsize: 0,
    });
    match field {
        Some((at, rest, _)) => {
            *off += at;
            parse_btf_field(rest, id, &btf, Start::Struct { prefix: 0 }, off, ctx, b)
        }
        None => Ok(()),
    }
}

/// What [`member_chain`] found: the bit offset of the last member from the start of the
/// struct, its bitfield width (0: none), its type under modifiers, and what follows a `->`.
pub(super) struct Chain<'t> {
    pub(super) bitoffs: u32,
    pub(super) bitsize: u32,
    pub(super) ty: u32,
    pub(super) rest: Option<&'t str>,
}

/// `get_bitoffset_of_field()`: the members `name` of the struct or union `ty`, joined by `.`,
/// up to the end or a `->`. Moves `*off` to each name as it goes, past the `->` when one
/// follows; at the end it stays at the last name, as upstream's does from the typecast series
/// on (6.12's went astray there, moving back by the name's offset).
pub(super) fn member_chain<'t>(
    mut name: &'t str,
    mut ty: u32,
    btf: &Btf<'_>,
    off: &mut usize,
) -> Result<Chain<'t>, Fail> {
    let mut bitoffs = 0u32;
    loop {
        let (cur, next) = split_field(name, *off)?;
        let m = btf.member(ty, cur.as_bytes()).map_err(|e| match e {
            crate::sys::btf::reader::Error::NotFound => {
                fail(ErrCode::NoBtfField, *off, Errno::NoEnt)
            }
            _ => fail(ErrCode::BadBtfTid, *off, Errno::Inval),
        })?;
        bitoffs = bitoffs.wrapping_add(m.bit_offset);
        ty = btf
            .resolve(m.ty)
            .map_err(|_| fail(ErrCode::BadBtfTid, *off, Errno::Inval))?;
        let chain = |rest| Chain {
            bitoffs,
            bitsize: m.bitfield_size,
            ty,
            rest,
        };
        match next {
            None => return Ok(chain(None)),
            Some((at, rest, arrow)) => {
                *off += at;
                name = rest;
                if arrow {
                    return Ok(chain(Some(rest)));
                }
            }
        }
    }
}

/// How [`parse_btf_field`] starts: from a pointer (a parameter, `$retval`), or from the struct
/// itself (a typecast, `$current`), whose first member's offset then drops `prefix` bytes
/// (a typecast's field option, `(STRUCT,FIELD)`: the value points at FIELD in a STRUCT).
#[derive(Clone, Copy)]
pub(super) enum Start {
    Pointer,
    Struct { prefix: u32 },
}

/// `parse_btf_field()`: the members `name` of what `ty` points to (or of `ty` itself, see
/// [`Start`]), each `->` a dereference, each `.` a member of a member.
pub(super) fn parse_btf_field<'t>(
    mut name: &'t str,
    mut ty: u32,
    btf: &Btf<'_>,
    mut from: Start,
    off: &mut usize,
    ctx: &mut ArgCtx<'_>,
    b: &mut Builder<'t>,
) -> Result<(), Fail> {
    loop {
        let prefix = match from {
            Start::Struct { prefix } => prefix,
            Start::Pointer => {
                let t = btf
                    .ty(ty)
                    .map_err(|_| fail(ErrCode::BadBtfTid, *off, Errno::Inval))?;
                if t.kind != Kind::Ptr {
                    return Err(fail(ErrCode::NoPtrStrct, *off, Errno::Inval));
                }
                ty = btf
                    .resolve(t.size_or_type)
                    .map_err(|_| fail(ErrCode::BadBtfTid, *off, Errno::Inval))?;
                0
            }
        };
        let c = member_chain(name, ty, btf, off)?;
        ty = c.ty;
        let deref = Deref {
            // Struct offsets are far below 2^31 bytes; a blob that says otherwise wraps, as
            // upstream's `code->offset = bitoffs / 8` does.
            offset: ((c.bitoffs / 8) as i32).wrapping_sub(prefix as i32),
            user: false,
            cpu: false,
        };
        b.push_deref(deref, *off)?;
        ctx.last = Some(LastType {
            ty,
            bitoffs: c.bitoffs % 8,
            bitsize: c.bitsize,
        });
        from = Start::Pointer;
        match c.rest {
            Some(rest) => name = rest,
            None => return Ok(()),
        }
    }
}

/// An INT's encoding bits and its width in bits, when `ty` is an INT.
fn int_bits(btf: &Btf<'_>, ty: u32) -> Option<(u32, u32)> {
    let t = btf.ty(ty).ok()?;
    if t.kind != Kind::Int {
        return None;
    }
    let v = t.word(0).ok()?;
    Some(((v >> 24) & 0x0f, v & 0xff))
}

/// An unsigned 8-bit INT under modifiers: what upstream reads as a string's character.
fn is_uchar(btf: &Btf<'_>, ty: u32) -> bool {
    let Ok(ty) = btf.resolve(ty) else {
        return false;
    };
    matches!(int_bits(btf, ty), Some((enc, 8)) if enc & 1 == 0)
}

impl ArgCtx<'_> {
    /// `fetch_type_from_btf_type()`: the type of a field whose type was not written, and the
    /// bitfield stage it needs (`parse_btf_bitfield()`). `None`: no BTF type was found (the
    /// default type).
    pub(super) fn btf_type(&self) -> Option<(FetchType, Option<Bitfield>)> {
        let last = self.last?;
        let btf = self.last_btf()?;
        let t = btf.ty(last.ty).ok()?;
        let (mut bitsize, mut bitoffs) = (last.bitsize, last.bitoffs);
        let ty = match t.kind {
            Kind::Enum => FetchType::S32,
            Kind::Enum64 => FetchType::S64,
            Kind::Ptr => FetchType::X64,
            Kind::Int => {
                let (enc, bits) = int_bits(&btf, last.ty)?;
                let v = t.word(0).ok()?;
                match (enc & 1 != 0, bits) {
                    (true, 8) => FetchType::S8,
                    (true, 16) => FetchType::S16,
                    (true, 32) => FetchType::S32,
                    (true, 64) => FetchType::S64,
                    (true, _) => return None,
                    (false, 8) => FetchType::U8,
                    (false, 16) => FetchType::U16,
                    (false, 32) => FetchType::U32,
                    (false, 64) => FetchType::U64,
                    (false, _) => {
                        // A member's lookup (`Btf::member_at`) counted the INT's own bit
                        // offset already when it made it a bitfield; a parameter or
                        // `$retval` of such an INT has not.
                        if bitsize == 0 {
                            bitoffs = bitoffs.wrapping_add((v >> 16) & 0xff);
                        }
                        bitsize = bits;
                        FetchType::U64
                    }
                }
            }
            _ => return None,
        };
        if bitsize % 8 == 0 && bitoffs == 0 {
            return Some((ty, None));
        }
        // Upstream shifts in 64 bits but stores the field's own size; here the container is
        // the field (the same bits for a bitfield that fits it, nothing written past it).
        let bits = 8 * ty.size() as u32;
        let span = bitsize.saturating_add(bitoffs).min(bits);
        Some((
            ty,
            Some(Bitfield {
                basesize: ty.size() as u8,
                lshift: (bits - span) as u8,
                rshift: bits.saturating_sub(bitsize) as u8,
            }),
        ))
    }

    /// `check_prepare_btf_string_fetch()`: a string type written for a BTF value. A `char`
    /// array is read where it is; a `char *` is followed (a user pointer for `ustring`);
    /// anything else is `BAD_TYPE4STR`.
    pub(super) fn btf_string(
        &self,
        user: bool,
        off: usize,
        b: &mut Builder<'_>,
    ) -> Result<(), Fail> {
        let (Some(last), Some(btf)) = (self.last, self.last_btf()) else {
            return Ok(());
        };
        let btf = &btf;
        let Ok(t) = btf.ty(last.ty) else {
            return Err(fail(ErrCode::BadType4str, off, Errno::Inval));
        };
        match t.kind {
            Kind::Array if t.word(0).is_ok_and(|elem| is_uchar(btf, elem)) => Ok(()),
            Kind::Ptr if is_uchar(btf, t.size_or_type) => b
                .push_deref(
                    Deref {
                        offset: 0,
                        user,
                        cpu: false,
                    },
                    off,
                )
                .map_err(|f| Fail {
                    errno: Errno::TooBig,
                    ..f
                }),
            _ => Err(fail(ErrCode::BadType4str, off, Errno::Inval)),
        }
    }
}
