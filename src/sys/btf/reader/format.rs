// SPDX-License-Identifier: GPL-2.0

//! The raw format: type kinds, the header and its sections, and the checks of one type entry.

use super::{Error, HEADER_LEN, MAGIC};

/// A type's kind (`BTF_KIND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Id 0 only: `void`.
    Void = 0,
    /// An integer, char or bool of 1 to 16 bytes.
    Int = 1,
    /// A pointer to its type.
    Ptr = 2,
    /// An array: element type, index type, count.
    Array = 3,
    /// A struct with its members.
    Struct = 4,
    /// A union with its members.
    Union = 5,
    /// An enum with 32-bit values.
    Enum = 6,
    /// A forward declaration of a struct or union (`kind_flag`: union).
    Fwd = 7,
    /// A typedef: a name for its type.
    Typedef = 8,
    /// `volatile` of its type.
    Volatile = 9,
    /// `const` of its type.
    Const = 10,
    /// `restrict` of its type.
    Restrict = 11,
    /// A function: `vlen` is its linkage, its type a FUNC_PROTO.
    Func = 12,
    /// A function's signature: return type and parameters.
    FuncProto = 13,
    /// A global variable.
    Var = 14,
    /// A data section's variables.
    Datasec = 15,
    /// A floating-point type.
    Float = 16,
    /// An annotation (`btf_decl_tag`) of a declaration.
    DeclTag = 17,
    /// An annotation (`btf_type_tag`, such as `__user`) of its type.
    TypeTag = 18,
    /// An enum with 64-bit values.
    Enum64 = 19,
}

impl Kind {
    /// The kind with number `k`, if BTF has one.
    pub fn from_u8(k: u8) -> Option<Kind> {
        use Kind::*;
        Some(match k {
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            _ => return None,
        })
    }

    /// A qualifier or alias that [`Btf::resolve`](super::Btf::resolve) sees through.
    pub fn is_modifier(self) -> bool {
        matches!(
            self,
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag
        )
    }

    /// Whether the third word of the entry is the type's size in bytes.
    pub fn has_size(self) -> bool {
        matches!(
            self,
            Kind::Int
                | Kind::Enum
                | Kind::Enum64
                | Kind::Struct
                | Kind::Union
                | Kind::Float
                | Kind::Datasec
        )
    }

    /// Whether the third word of the entry is a type id (else a size, or unused).
    pub(super) fn refers(self) -> bool {
        matches!(
            self,
            Kind::Ptr
                | Kind::Typedef
                | Kind::Volatile
                | Kind::Const
                | Kind::Restrict
                | Kind::Func
                | Kind::FuncProto
                | Kind::Var
                | Kind::DeclTag
                | Kind::TypeTag
        )
    }
}

/// `BTF_INT_SIGNED`, `BTF_INT_CHAR`, `BTF_INT_BOOL`: an INT's encoding bits.
pub(super) const INT_SIGNED: u32 = 1;
pub(super) const INT_CHAR: u32 = 2;
pub(super) const INT_BOOL: u32 = 4;

/// Where a blob's sections are, from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The blob is big-endian (the magic reads 0xeb9f as big-endian).
    pub big_endian: bool,
    /// The type section: start and length in the blob.
    pub types: (usize, usize),
    /// The string section: start and length in the blob.
    pub strs: (usize, usize),
}

/// The `u32` at byte `off` of `b`, in the blob's byte order.
pub(super) fn read_u32(b: &[u8], off: usize, big: bool) -> Result<u32, Error> {
    let end = off.checked_add(4).ok_or(Error::TypeTruncated)?;
    let w = b.get(off..end).ok_or(Error::TypeTruncated)?;
    let w = [w[0], w[1], w[2], w[3]];
    Ok(if big {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    })
}

/// Reads and checks the header of `data`, as the kernel's `btf_parse_hdr()` and
/// `btf_check_sec_info()` do (except that gaps between the sections are allowed, as libbpf
/// allows them).
pub fn layout(data: &[u8]) -> Result<Layout, Error> {
    if data.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    let big = match [data[0], data[1]] {
        m if u16::from_le_bytes(m) == MAGIC => false,
        m if u16::from_be_bytes(m) == MAGIC => true,
        _ => return Err(Error::Magic),
    };
    if data[2] != 1 || data[3] != 0 {
        return Err(Error::Unsupported);
    }
    let word = |i: usize| {
        read_u32(data, 4 + 4 * i, big)
            .map(|w| w as usize)
            .map_err(|_| Error::Truncated)
    };
    let hdr_len = word(0)?;
    if hdr_len < HEADER_LEN {
        return Err(Error::Header);
    }
    let hdr = data.get(..hdr_len).ok_or(Error::Truncated)?;
    if hdr[HEADER_LEN..].iter().any(|&b| b != 0) {
        return Err(Error::Unsupported);
    }
    let (type_off, type_len, str_off, str_len) = (word(1)?, word(2)?, word(3)?, word(4)?);
    if type_off % 4 != 0 {
        return Err(Error::Header);
    }
    let section = |off: usize, len: usize| -> Result<(usize, usize), Error> {
        let start = hdr_len.checked_add(off).ok_or(Error::Truncated)?;
        let end = start.checked_add(len).ok_or(Error::Truncated)?;
        if end > data.len() {
            return Err(Error::Truncated);
        }
        Ok((start, len))
    };
    let types = section(type_off, type_len)?;
    let strs = section(str_off, str_len)?;
    // Overlapping sections: the kernel refuses them.
    if types.1 > 0 && strs.1 > 0 && types.0 < strs.0 + strs.1 && strs.0 < types.0 + types.1 {
        return Err(Error::Header);
    }
    Ok(Layout {
        big_endian: big,
        types,
        strs,
    })
}

/// How long a type's trailing data is, and what it must satisfy, checked as it is read.
pub(super) fn extra_len(kind: Kind, vlen: u16) -> usize {
    let n = usize::from(vlen);
    match kind {
        Kind::Int | Kind::Var | Kind::DeclTag => 4,
        Kind::Array => 12,
        Kind::Struct | Kind::Union | Kind::Enum64 | Kind::Datasec => 12 * n,
        Kind::Enum | Kind::FuncProto => 8 * n,
        _ => 0,
    }
}

/// The ids a type refers to (one, two for an ARRAY, one per member or parameter...) are
/// checked against `end`, the first id past the last type.
pub(super) fn check_type(
    kind: Kind,
    vlen: u16,
    kind_flag: bool,
    third: u32,
    extra: &[u8],
    big: bool,
    end: u32,
) -> Result<(), Error> {
    let id = |t: u32| if t < end { Ok(()) } else { Err(Error::TypeId) };
    let w = |i: usize| read_u32(extra, 4 * i, big);
    let n = usize::from(vlen);
    if kind.refers() {
        id(third)?;
    }
    check_flags(kind, vlen, kind_flag)?;
    match kind {
        Kind::Int => check_int(w(0)?, third)?,
        Kind::Array => {
            id(w(0)?)?;
            id(w(1)?)?;
        }
        Kind::Struct | Kind::Union => {
            for i in 0..n {
                id(w(3 * i + 1)?)?;
            }
        }
        Kind::Enum | Kind::Enum64 if !matches!(third, 1 | 2 | 4 | 8) => {
            return Err(Error::BadType);
        }
        Kind::Func if vlen > 2 => {
            return Err(Error::BadType);
        }
        Kind::FuncProto => {
            for i in 0..n {
                id(w(2 * i + 1)?)?;
            }
        }
        Kind::Datasec => {
            for i in 0..n {
                id(w(3 * i)?)?;
            }
        }
        Kind::Var if w(0)? > 2 => {
            return Err(Error::BadType);
        }
        _ => {}
    }
    Ok(())
}

/// vlen and kind_flag mean something only for some kinds; elsewhere the kernel wants 0.
fn check_flags(kind: Kind, vlen: u16, kind_flag: bool) -> Result<(), Error> {
    let vlen_ok = matches!(
        kind,
        Kind::Struct
            | Kind::Union
            | Kind::Enum
            | Kind::Enum64
            | Kind::FuncProto
            | Kind::Datasec
            | Kind::Func
    ) || vlen == 0;
    // Tags with kind_flag: attributes (`btf_type_tag`/`btf_decl_tag` written as attributes,
    // kernel 6.14 and later: the running kernel's BTF has them).
    let flag_ok = matches!(
        kind,
        Kind::Struct
            | Kind::Union
            | Kind::Enum
            | Kind::Enum64
            | Kind::Fwd
            | Kind::DeclTag
            | Kind::TypeTag
    ) || !kind_flag;
    if !vlen_ok || !flag_ok {
        return Err(Error::BadType);
    }
    Ok(())
}

/// An INT's word `v` (encoding, bit offset, bits) for an INT of `size` bytes.
fn check_int(v: u32, size: u32) -> Result<(), Error> {
    let (enc, off, bits) = (v >> 24, (v >> 16) & 0xff, v & 0xff);
    let size_ok = matches!(size, 1 | 2 | 4 | 8 | 16);
    if v & 0xf000_ff00 != 0 || !size_ok || bits == 0 || bits > 128 || off + bits > size * 8 {
        return Err(Error::BadType);
    }
    if !matches!(enc, 0 | INT_SIGNED | INT_CHAR | INT_BOOL) {
        return Err(Error::BadType);
    }
    Ok(())
}
