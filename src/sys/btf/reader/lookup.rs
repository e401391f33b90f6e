// SPDX-License-Identifier: GPL-2.0

//! Lookups in an indexed blob: types by id and name, functions and their parameters, what a
//! type resolves to, sizes, scalars and struct members.

use super::format::{extra_len, read_u32, Kind, INT_BOOL, INT_CHAR, INT_SIGNED};
use super::*;

impl<'a> Btf<'a> {
    /// The string at offset `off` of the string space (the base's, then this blob's).
    pub fn str_at(&self, off: u32) -> Result<&'a [u8], Error> {
        if off < self.first_str {
            return self.base.ok_or(Error::NameOffset)?.str_at(off);
        }
        let s = self
            .strs
            .get((off - self.first_str) as usize..)
            .ok_or(Error::NameOffset)?;
        let nul = s.iter().position(|&c| c == 0).ok_or(Error::NameOffset)?;
        Ok(&s[..nul])
    }

    /// The type with id `id` (0 is void).
    pub fn ty(&self, id: u32) -> Result<Type<'a>, Error> {
        if id == 0 {
            return Ok(Type {
                id,
                kind: Kind::Void,
                name_off: 0,
                vlen: 0,
                kind_flag: false,
                size_or_type: 0,
                extra: &[],
                big: self.big,
            });
        }
        if id < self.first_id {
            return self.base.ok_or(Error::TypeId)?.ty(id);
        }
        let off = *self
            .offsets
            .get((id - self.first_id) as usize)
            .ok_or(Error::TypeId)? as usize;
        let info = read_u32(
            self.types,
            off.checked_add(4).ok_or(Error::TypeTruncated)?,
            self.big,
        )?;
        let kind = Kind::from_u8(((info >> 24) & 0x1f) as u8).ok_or(Error::BadType)?;
        let start = off + 12;
        let extra = self
            .types
            .get(start..start + extra_len(kind, info as u16))
            .ok_or(Error::TypeTruncated)?;
        Ok(Type {
            id,
            kind,
            name_off: read_u32(self.types, off, self.big)?,
            vlen: info as u16,
            kind_flag: info >> 31 != 0,
            size_or_type: read_u32(self.types, off + 8, self.big)?,
            extra,
            big: self.big,
        })
    }

    /// A type's name (empty for anonymous types and void).
    pub fn type_name(&self, id: u32) -> Result<&'a [u8], Error> {
        let t = self.ty(id)?;
        self.str_at(t.name_off)
    }

    /// The lowest id of a type named `name` of kind `kind`, in the base first, then here.
    pub fn find(&self, name: &[u8], kind: Kind) -> Result<u32, Error> {
        if let Some(b) = self.base {
            match b.find(name, kind) {
                Err(Error::NotFound) => {}
                r => return r,
            }
        }
        if name.is_empty() {
            return Err(Error::NotFound);
        }
        // The first index entry whose name is not below `name`.
        let (mut lo, mut hi) = (0, self.by_name.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.type_name(self.by_name[mid])? < name {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        for &id in &self.by_name[lo..] {
            let t = self.ty(id)?;
            if self.str_at(t.name_off)? != name {
                break;
            }
            if t.kind == kind {
                return Ok(id);
            }
        }
        Err(Error::NotFound)
    }

    /// The FUNC_PROTO `id`.
    pub fn proto(&self, id: u32) -> Result<Proto, Error> {
        let t = self.ty(id)?;
        if t.kind != Kind::FuncProto {
            return Err(Error::Kind);
        }
        // `...` is a last parameter without name or type.
        let variadic = match t.vlen.checked_sub(1) {
            Some(last) => {
                t.word(2 * usize::from(last))? == 0 && t.word(2 * usize::from(last) + 1)? == 0
            }
            None => false,
        };
        Ok(Proto {
            id,
            ret: t.size_or_type,
            params: t.vlen - u16::from(variadic),
            variadic,
        })
    }

    /// The function named `name` (`Kind::Func`), with its prototype.
    pub fn func(&self, name: &[u8]) -> Result<Func, Error> {
        let id = self.find(name, Kind::Func)?;
        let t = self.ty(id)?;
        Ok(Func {
            id,
            linkage: t.vlen,
            proto: self.proto(t.size_or_type)?,
        })
    }

    /// Parameter `i` (from 0; `$arg1` is 0) of the FUNC_PROTO `proto`.
    pub fn param(&self, proto: u32, i: usize) -> Result<Param<'a>, Error> {
        let p = self.proto(proto)?;
        if i >= usize::from(p.params) {
            return Err(Error::NotFound);
        }
        let t = self.ty(proto)?;
        Ok(Param {
            name: self.str_at(t.word(2 * i)?)?,
            ty: t.word(2 * i + 1)?,
        })
    }

    /// The index (from 0) of the parameter named `name` of the FUNC_PROTO `proto`.
    pub fn param_index(&self, proto: u32, name: &[u8]) -> Result<usize, Error> {
        let p = self.proto(proto)?;
        for i in 0..usize::from(p.params) {
            if !name.is_empty() && self.param(proto, i)?.name == name {
                return Ok(i);
            }
        }
        Err(Error::NotFound)
    }

    /// The type under `id`'s typedefs and qualifiers (const, volatile, restrict, type tags).
    pub fn resolve(&self, mut id: u32) -> Result<u32, Error> {
        for _ in 0..=MAX_DEPTH {
            let t = self.ty(id)?;
            if !t.kind.is_modifier() {
                return Ok(id);
            }
            id = t.size_or_type;
        }
        Err(Error::Limit)
    }

    /// The size in bytes of the type `id` (resolved): of a scalar, a struct or union, an
    /// array (element size times count). Void, functions and forward declarations have none.
    pub fn size(&self, id: u32) -> Result<u32, Error> {
        let mut id = id;
        let mut times: u32 = 1;
        for _ in 0..=MAX_DEPTH {
            let t = self.ty(self.resolve(id)?)?;
            let size = match t.kind {
                k if k.has_size() => t.size_or_type,
                Kind::Ptr => POINTER_SIZE,
                Kind::Array => {
                    times = times.checked_mul(t.word(2)?).ok_or(Error::Limit)?;
                    id = t.word(0)?;
                    continue;
                }
                _ => return Err(Error::Kind),
            };
            return size.checked_mul(times).ok_or(Error::Limit);
        }
        Err(Error::Limit)
    }

    /// The scalar under `id`'s typedefs and qualifiers: what a fetch of it reads.
    pub fn scalar(&self, id: u32) -> Result<Scalar, Error> {
        let id = self.resolve(id)?;
        let t = self.ty(id)?;
        let (kind, size, signed) = match t.kind {
            Kind::Int => {
                let enc = t.word(0)? >> 24;
                let kind = match enc {
                    INT_BOOL => ScalarKind::Bool,
                    INT_CHAR => ScalarKind::Char,
                    _ => ScalarKind::Int,
                };
                (kind, t.size_or_type, enc == INT_SIGNED)
            }
            Kind::Ptr => (ScalarKind::Ptr, POINTER_SIZE, false),
            // kind_flag on an enum: its values are signed (kernel 6.0 and later).
            Kind::Enum | Kind::Enum64 => (ScalarKind::Enum, t.size_or_type, t.kind_flag),
            Kind::Float => (ScalarKind::Float, t.size_or_type, true),
            _ => return Err(Error::Kind),
        };
        Ok(Scalar {
            id,
            kind,
            size,
            signed,
        })
    }

    /// The member named `name` of the struct or union `id` (typedefs and qualifiers resolved),
    /// also inside its anonymous struct and union members, as upstream's
    /// `btf_find_struct_member()` searches: each struct's named members first, then its
    /// anonymous ones, up to [`ANON_STACK`] of them pending. The offset is from `id`'s start.
    pub fn member(&self, id: u32, name: &[u8]) -> Result<Member, Error> {
        if name.is_empty() {
            return Err(Error::NotFound);
        }
        let id = self.resolve(id)?;
        if !matches!(self.ty(id)?.kind, Kind::Struct | Kind::Union) {
            return Err(Error::Kind);
        }
        let mut stack = [(0u32, 0u32); ANON_STACK];
        stack[0] = (id, 0);
        let mut top = 1;
        let mut budget = MEMBER_BUDGET;
        while top > 0 {
            top -= 1;
            let (sid, base_off) = stack[top];
            let t = self.ty(sid)?;
            for i in 0..usize::from(t.vlen) {
                budget = budget.checked_sub(1).ok_or(Error::Limit)?;
                let m = self.member_at(&t, i)?;
                let bit_offset = base_off.checked_add(m.bit_offset).ok_or(Error::Limit)?;
                let mname = self.str_at(t.word(3 * i)?)?;
                if mname.is_empty() {
                    let inner = self.resolve(m.ty)?;
                    if matches!(self.ty(inner)?.kind, Kind::Struct | Kind::Union)
                        && top < ANON_STACK
                    {
                        stack[top] = (inner, bit_offset);
                        top += 1;
                    }
                } else if mname == name {
                    return Ok(Member { bit_offset, ..m });
                }
            }
        }
        Err(Error::NotFound)
    }

    /// Member `i` of the struct or union `t`, its offset from `t`'s start. A bitfield is
    /// either marked in the member (the struct's kind_flag: size in the offset's top byte) or,
    /// in older BTF, in the member's INT type (bits and bit offset of the INT).
    pub fn member_at(&self, t: &Type<'_>, i: usize) -> Result<Member, Error> {
        if !matches!(t.kind, Kind::Struct | Kind::Union) {
            return Err(Error::Kind);
        }
        if i >= usize::from(t.vlen) {
            return Err(Error::NotFound);
        }
        let ty = t.word(3 * i + 1)?;
        let off = t.word(3 * i + 2)?;
        if t.kind_flag {
            return Ok(Member {
                ty,
                bit_offset: off & 0x00ff_ffff,
                bitfield_size: off >> 24,
            });
        }
        let r = self.ty(self.resolve(ty)?)?;
        if r.kind == Kind::Int {
            let v = r.word(0)?;
            let (int_off, bits) = ((v >> 16) & 0xff, v & 0xff);
            if int_off != 0 || bits != r.size_or_type.saturating_mul(8) {
                return Ok(Member {
                    ty,
                    bit_offset: off.checked_add(int_off).ok_or(Error::Limit)?,
                    bitfield_size: bits,
                });
            }
        }
        Ok(Member {
            ty,
            bit_offset: off,
            bitfield_size: 0,
        })
    }
}
