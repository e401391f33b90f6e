// SPDX-License-Identifier: GPL-2.0

//! A reader of BTF, the kernel's type information, as the kernel exposes it in
//! `/sys/kernel/btf/vmlinux` and `/sys/kernel/btf/MODULE` (issue 17: BTF arguments for `f:`
//! events).
//!
//! The raw format (include/uapi/linux/btf.h):
//!
//! ```text
//!   header:  magic 0xeb9f (u16) | version 1 (u8) | flags 0 (u8) | hdr_len (u32)
//!            type_off | type_len | str_off | str_len    (u32 each, offsets from the header's end)
//!   types:   one entry per type, ids 1, 2, ... in order (id 0 is void):
//!            name_off (u32) | info (u32: vlen 0-15, kind 24-28, kind_flag 31) | size or type (u32)
//!            then data that depends on the kind: INT one u32, ARRAY 12 bytes, STRUCT/UNION
//!            12 bytes per member, ENUM 8 per value, ENUM64 12, FUNC_PROTO 8 per parameter,
//!            VAR 4, DATASEC 12 per variable, DECL_TAG 4
//!   strings: NUL-terminated names, the first one empty; a name_off is an offset in here
//! ```
//!
//! A module's BTF is *split*: its type ids continue the base's (vmlinux's: a module's first type
//! is vmlinux's last id + 1) and so do its string offsets (an offset below the base's string
//! length is a base string), and its types refer freely to the base's.
//!
//! What the events need: a function's parameters by name ([`Btf::func`], [`Btf::param`]), the
//! type under typedefs and qualifiers ([`Btf::resolve`]), the size and signedness of a scalar
//! ([`Btf::scalar`]), a struct or union member's offset by name, through anonymous members
//! ([`Btf::member`]), and a function's return type ([`Proto::ret`]).
//!
//! Nothing allocates: [`Btf::measure`] validates a blob and says how much room its index takes,
//! the caller allocates it (two `u32` per type at most: in the kernel, a vmalloc'ed buffer) and
//! [`Btf::new`] validates again while filling it: the offset of every type's entry (lookup by id
//! in O(1)) and the ids of the named types sorted by name (lookup by name in O(log n); vmlinux
//! has about 100,000 types). Building is O(n log n), lookups read only what they need.
//!
//! Input is untrusted (a fuzz target checks these promises): every offset, length and type id is
//! checked when the blob is validated, and again on every read, so a malformed blob or an index
//! that does not belong to it gives an [`Error`], never a panic or an out-of-bounds read; every
//! chain a lookup follows (typedefs, nested arrays, anonymous members) is bounded, so a blob whose
//! types refer to themselves gives [`Error::Limit`], never an endless loop.

#![forbid(unsafe_code)]

#[cfg(test)]
mod tests;

/// BTF's magic number, in the blob's byte order.
pub const MAGIC: u16 = 0xeb9f;
/// The size of the header this reader knows; a longer one must have zeros past it.
pub const HEADER_LEN: usize = 24;
/// The most types a blob may have, as the kernel's `BTF_MAX_TYPE`.
pub const MAX_TYPES: u32 = 0x000f_ffff;
/// The most steps through typedefs, qualifiers and nested arrays, as the kernel's
/// `MAX_RESOLVE_DEPTH`.
pub const MAX_DEPTH: usize = 32;
/// The most anonymous struct/union members a member lookup keeps to search next, as the
/// kernel's `BTF_ANON_STACK_MAX` (kernel/trace/trace_btf.c).
pub const ANON_STACK: usize = 16;
/// The most members one member lookup reads: far more than any real struct has with all its
/// anonymous members (vmlinux's largest have a few hundred), a bound for blobs whose anonymous
/// members contain themselves (the kernel refuses such BTF; this reader finds out only when
/// a lookup runs into it). With the resolution of each anonymous member's type, a lookup reads
/// at most a few million words.
pub const MEMBER_BUDGET: usize = 1 << 16;
/// The size of a pointer. BTF does not record it; the kernels ufgraph runs on (x86_64, arm64)
/// and BPF are 64-bit.
pub const POINTER_SIZE: u32 = 8;

/// Why a blob was refused, or a lookup failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Shorter than its header, or a section past its end.
    Truncated,
    /// Not BTF: the magic number is wrong (in both byte orders).
    Magic,
    /// A version or flags this reader does not know, or a header with non-zero bytes past
    /// the fields it knows.
    Unsupported,
    /// The header's length, or its sections' offsets, do not make sense (misaligned, overlapping).
    Header,
    /// The string section is not NUL-terminated, or (for a base blob) does not start with the
    /// empty string.
    Strings,
    /// A split blob's byte order is not its base's.
    ByteOrder,
    /// A name offset outside the strings.
    NameOffset,
    /// A type entry runs past the type section.
    TypeTruncated,
    /// A type entry with an unknown kind, info bits that must be zero, or values its kind
    /// does not allow (an INT of 3 bytes, a FUNC linkage of 7...).
    BadType,
    /// More types than [`MAX_TYPES`], or string offsets past 4 GiB.
    TooBig,
    /// A type id that no type has.
    TypeId,
    /// The index storage handed to [`Btf::new`] does not have the sizes [`Btf::measure`] gave.
    Storage,
    /// No type of that name and kind; no member of that name; no parameter at that index.
    NotFound,
    /// The type is not of a kind the question applies to (the members of an INT, the size of
    /// a FUNC, a FUNC whose type is not a FUNC_PROTO).
    Kind,
    /// A chain of types longer than [`MAX_DEPTH`] (or a loop), a member lookup over
    /// [`MEMBER_BUDGET`], or an offset or size that overflows.
    Limit,
}

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

    /// A qualifier or alias that [`Btf::resolve`] sees through.
    pub fn is_modifier(self) -> bool {
        matches!(
            self,
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag
        )
    }

    /// Whether the third word of the entry is a type id (else a size, or unused).
    fn refers(self) -> bool {
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
const INT_SIGNED: u32 = 1;
const INT_CHAR: u32 = 2;
const INT_BOOL: u32 = 4;

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

/// How much index a blob needs ([`Btf::measure`]): one `u32` per type for the offsets, one per
/// named type for the name index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Types in the blob (its own, not its base's).
    pub types: usize,
    /// Those with a name (not empty).
    pub named: usize,
}

fn read_u32(b: &[u8], off: usize, big: bool) -> Result<u32, Error> {
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

/// A blob's BTF with its index: every lookup by id or name. `base` is set for split BTF (a
/// module's), and lookups fall through to it.
#[derive(Clone, Copy, Debug)]
pub struct Btf<'a> {
    base: Option<&'a Btf<'a>>,
    big: bool,
    types: &'a [u8],
    strs: &'a [u8],
    /// The id of this blob's first type: 1, or the base's end.
    first_id: u32,
    /// Where this blob's strings start in the string offsets: 0, or the base's end.
    first_str: u32,
    /// Per type of this blob, its entry's offset in `types`.
    offsets: &'a [u32],
    /// The ids of this blob's named types, sorted by (name, id).
    by_name: &'a [u32],
}

/// One type's entry, as read from the blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Type<'a> {
    /// The type's id.
    pub id: u32,
    /// Its kind.
    pub kind: Kind,
    /// Its name's offset in the strings (0: anonymous).
    pub name_off: u32,
    /// Members, values or parameters; a FUNC's linkage.
    pub vlen: u16,
    /// A bitfield struct, a union FWD, a signed ENUM, a DECL_TAG on an attribute.
    pub kind_flag: bool,
    /// The third word: a size (INT, ENUM, STRUCT, UNION, DATASEC, FLOAT, ENUM64) or a type id.
    pub size_or_type: u32,
    /// The data after the first three words (its length follows from the kind and vlen).
    pub extra: &'a [u8],
    big: bool,
}

impl<'a> Type<'a> {
    /// Word `i` of the entry's trailing data.
    pub fn word(&self, i: usize) -> Result<u32, Error> {
        read_u32(
            self.extra,
            i.checked_mul(4).ok_or(Error::TypeTruncated)?,
            self.big,
        )
    }
}

/// How long a type's trailing data is, and what it must satisfy, checked as it is read.
fn extra_len(kind: Kind, vlen: u16) -> usize {
    let n = usize::from(vlen);
    match kind {
        Kind::Int | Kind::Var | Kind::DeclTag => 4,
        Kind::Array => 12,
        Kind::Struct | Kind::Union | Kind::Enum64 | Kind::Datasec => 12 * n,
        Kind::Enum | Kind::FuncProto => 8 * n,
        _ => 0,
    }
}

/// A function ([`Btf::func`]): its FUNC type and what its FUNC_PROTO says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Func {
    /// The FUNC's id.
    pub id: u32,
    /// 0 static, 1 global, 2 extern.
    pub linkage: u16,
    /// Its FUNC_PROTO.
    pub proto: Proto,
}

/// A FUNC_PROTO: a function's signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proto {
    /// The FUNC_PROTO's id.
    pub id: u32,
    /// The return type's id (0: void).
    pub ret: u32,
    /// Named or unnamed parameters, not counting `...`.
    pub params: u16,
    /// The last parameter is `...`.
    pub variadic: bool,
}

/// A function parameter ([`Btf::param`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// Empty if the prototype does not name it.
    pub name: &'a [u8],
    /// Its type's id.
    pub ty: u32,
}

/// A struct or union member found by name ([`Btf::member`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's type id.
    pub ty: u32,
    /// Its offset in bits from the start of the outer struct (through anonymous members).
    pub bit_offset: u32,
    /// Its width in bits if it is a bitfield, else 0.
    pub bitfield_size: u32,
}

impl Member {
    /// The offset in bytes of a member that is not a bitfield and starts on a byte; `None`
    /// for a bitfield (read its containing word).
    pub fn byte_offset(&self) -> Option<u32> {
        (self.bitfield_size == 0 && self.bit_offset.is_multiple_of(8))
            .then_some(self.bit_offset / 8)
    }
}

/// What a scalar is, for fetching it ([`Btf::scalar`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// An integer.
    Int,
    /// A char (BTF_INT_CHAR).
    Char,
    /// A bool (BTF_INT_BOOL).
    Bool,
    /// A pointer.
    Ptr,
    /// An enum or enum64.
    Enum,
    /// A floating-point number.
    Float,
}

/// A scalar type under its typedefs and qualifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scalar {
    /// The resolved type's id.
    pub id: u32,
    /// What it is.
    pub kind: ScalarKind,
    /// In bytes: 1, 2, 4, 8 or 16 (an INT or FLOAT), 1 to 8 (an enum), [`POINTER_SIZE`].
    pub size: u32,
    /// Whether it is read as signed.
    pub signed: bool,
}

/// Compares the NUL-terminated strings at the starts of `a` and `b` (a slice's end counts as
/// a NUL) as their bytes before the NUL compare.
fn cmp_cstr(a: &[u8], b: &[u8]) -> core::cmp::Ordering {
    let mut i = 0;
    loop {
        let (x, y) = (
            a.get(i).copied().unwrap_or(0),
            b.get(i).copied().unwrap_or(0),
        );
        if x != y || x == 0 {
            return x.cmp(&y);
        }
        i += 1;
    }
}

/// The ids a type refers to (one, two for an ARRAY, one per member or parameter...) are
/// checked against `end`, the first id past the last type.
fn check_type(
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
    // vlen and kind_flag mean something only for some kinds; elsewhere the kernel wants 0.
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
    match kind {
        Kind::Int => {
            let v = w(0)?;
            let (enc, off, bits) = (v >> 24, (v >> 16) & 0xff, v & 0xff);
            let size_ok = matches!(third, 1 | 2 | 4 | 8 | 16);
            if v & 0xf000_ff00 != 0 || !size_ok || bits == 0 || bits > 128 || off + bits > third * 8
            {
                return Err(Error::BadType);
            }
            if !matches!(enc, 0 | INT_SIGNED | INT_CHAR | INT_BOOL) {
                return Err(Error::BadType);
            }
        }
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

impl<'a> Btf<'a> {
    /// The first id past this blob's types (past the base's too): the next split blob's first.
    pub fn end_id(&self) -> u32 {
        // Bounded by MAX_TYPES per blob when built; saturating for hand-made parts.
        self.first_id.saturating_add(self.offsets.len() as u32)
    }

    /// The id of this blob's first type (1 for a base blob).
    pub fn first_id(&self) -> u32 {
        self.first_id
    }

    /// The first string offset past this blob's strings.
    fn end_str(&self) -> u32 {
        self.first_str.saturating_add(self.strs.len() as u32)
    }

    /// The base blob, for split BTF.
    pub fn base(&self) -> Option<&'a Btf<'a>> {
        self.base
    }

    /// Walks `data`'s types, checking each, and hands each one's index and whether it has a
    /// name to `each`: what [`Btf::measure`] and [`Btf::new`] share.
    fn walk(
        data: &[u8],
        base: Option<&Btf<'_>>,
        mut each: impl FnMut(usize, u32, bool) -> Result<(), Error>,
    ) -> Result<(Layout, Sizes), Error> {
        let l = layout(data)?;
        let types = &data[l.types.0..l.types.0 + l.types.1];
        let strs = &data[l.strs.0..l.strs.0 + l.strs.1];
        let (first_id, first_str) = match base {
            Some(b) => {
                if b.big != l.big_endian {
                    return Err(Error::ByteOrder);
                }
                (b.end_id(), b.end_str())
            }
            None => (1, 0),
        };
        // Strings: NUL-terminated; a base blob's first one empty (name offset 0 is "no name").
        // A split blob may have no strings of its own.
        if (base.is_none() || !strs.is_empty()) && strs.last() != Some(&0) {
            return Err(Error::Strings);
        }
        if base.is_none() && strs.first() != Some(&0) {
            return Err(Error::Strings);
        }
        let end_str = u32::try_from(strs.len())
            .ok()
            .and_then(|n| first_str.checked_add(n))
            .ok_or(Error::TooBig)?;
        // Count first: ids referred to may be further on.
        let mut count: u32 = 0;
        let mut off = 0usize;
        while off < types.len() {
            let info = read_u32(types, off + 4, l.big_endian)?;
            let kind = Kind::from_u8(((info >> 24) & 0x1f) as u8).ok_or(Error::BadType)?;
            let len = 12 + extra_len(kind, info as u16);
            if len > types.len() - off {
                return Err(Error::TypeTruncated);
            }
            off += len;
            count += 1;
            if count > MAX_TYPES {
                return Err(Error::TooBig);
            }
        }
        let end = first_id.checked_add(count).ok_or(Error::TooBig)?;
        let mut off = 0usize;
        let mut named = 0usize;
        for i in 0..count as usize {
            let name_off = read_u32(types, off, l.big_endian)?;
            let info = read_u32(types, off + 4, l.big_endian)?;
            let third = read_u32(types, off + 8, l.big_endian)?;
            // Bits 16-23 and 29-30 are unused: the kernel refuses them set.
            if info & 0x60ff_0000 != 0 {
                return Err(Error::BadType);
            }
            let kind = Kind::from_u8(((info >> 24) & 0x1f) as u8).ok_or(Error::BadType)?;
            let vlen = info as u16;
            let extra = &types[off + 12..off + 12 + extra_len(kind, vlen)];
            check_type(kind, vlen, info >> 31 != 0, third, extra, l.big_endian, end)?;
            if name_off >= end_str {
                return Err(Error::NameOffset);
            }
            // The names of members, values, parameters.
            let (stride, name_at) = match kind {
                Kind::Struct | Kind::Union | Kind::Enum64 => (12, Some(0)),
                Kind::Enum | Kind::FuncProto => (8, Some(0)),
                _ => (0, None),
            };
            if let Some(at) = name_at {
                for j in 0..usize::from(vlen) {
                    if read_u32(extra, j * stride + at, l.big_endian)? >= end_str {
                        return Err(Error::NameOffset);
                    }
                }
            }
            // Named: a non-empty name (an offset other than 0 may point at an empty string).
            let has_name = if name_off < first_str {
                base.is_some_and(|b| b.str_at(name_off).is_ok_and(|n| !n.is_empty()))
            } else {
                strs.get((name_off - first_str) as usize)
                    .is_some_and(|&c| c != 0)
            };
            named += usize::from(has_name);
            each(i, off as u32, has_name)?;
            off += 12 + extra.len();
        }
        Ok((
            l,
            Sizes {
                types: count as usize,
                named,
            },
        ))
    }

    /// Validates `data` (a base blob, or split over `base`) and says how much index it needs.
    pub fn measure(data: &[u8], base: Option<&Btf<'_>>) -> Result<Sizes, Error> {
        Btf::walk(data, base, |_, _, _| Ok(())).map(|(_, s)| s)
    }

    /// Validates `data` and builds its index in `offsets` and `names`, which must have the
    /// sizes [`Btf::measure`] gave (else [`Error::Storage`]).
    pub fn new(
        data: &'a [u8],
        base: Option<&'a Btf<'a>>,
        offsets: &'a mut [u32],
        names: &'a mut [u32],
    ) -> Result<Btf<'a>, Error> {
        let (first_id, first_str) = base.map_or((1, 0), |b| (b.end_id(), b.end_str()));
        let mut n = 0;
        let (l, sizes) = Btf::walk(data, base, |i, off, has_name| {
            *offsets.get_mut(i).ok_or(Error::Storage)? = off;
            if has_name {
                // The type's id for now; sorted below.
                *names.get_mut(n).ok_or(Error::Storage)? = first_id + i as u32;
                n += 1;
            }
            Ok(())
        })?;
        if sizes.types != offsets.len() || sizes.named != names.len() {
            return Err(Error::Storage);
        }
        let mut btf = Btf {
            base,
            big: l.big_endian,
            types: &data[l.types.0..l.types.0 + l.types.1],
            strs: &data[l.strs.0..l.strs.0 + l.strs.1],
            first_id,
            first_str,
            offsets,
            by_name: &[],
        };
        {
            // The sort compares names where they lie, up to the first difference: no NUL
            // search first, no decoding of the whole entry (vmlinux: 30,000 names or more).
            let b = &btf;
            let tail = |id: u32| -> &[u8] {
                let name_off = b
                    .offsets
                    .get(id.wrapping_sub(b.first_id) as usize)
                    .and_then(|&o| read_u32(b.types, o as usize, b.big).ok())
                    .unwrap_or(0);
                b.str_tail(name_off)
            };
            super::slice::sort_by(names, |&x, &y| match cmp_cstr(tail(x), tail(y)) {
                core::cmp::Ordering::Equal => x < y,
                o => o.is_lt(),
            });
        }
        btf.by_name = names;
        Ok(btf)
    }

    /// A view of a blob [`Btf::new`] already indexed, from the same data and the index it
    /// filled: O(1), only the header is read again. Parts that do not belong together give
    /// wrong answers or errors, never a panic.
    pub fn from_parts(
        data: &'a [u8],
        base: Option<&'a Btf<'a>>,
        offsets: &'a [u32],
        names: &'a [u32],
    ) -> Result<Btf<'a>, Error> {
        let l = layout(data)?;
        let (first_id, first_str) = base.map_or((1, 0), |b| (b.end_id(), b.end_str()));
        if offsets.len() > MAX_TYPES as usize || names.len() > offsets.len() {
            return Err(Error::Storage);
        }
        Ok(Btf {
            base,
            big: l.big_endian,
            types: &data[l.types.0..l.types.0 + l.types.1],
            strs: &data[l.strs.0..l.strs.0 + l.strs.1],
            first_id,
            first_str,
            offsets,
            by_name: names,
        })
    }

    /// The strings from offset `off` of the string space to the end of the section it is in
    /// (empty if `off` is outside): the name there and what follows its NUL.
    fn str_tail(&self, off: u32) -> &'a [u8] {
        if off < self.first_str {
            return self.base.map_or(&[][..], |b| b.str_tail(off));
        }
        self.strs
            .get((off - self.first_str) as usize..)
            .unwrap_or(&[])
    }

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
                Kind::Int
                | Kind::Enum
                | Kind::Enum64
                | Kind::Struct
                | Kind::Union
                | Kind::Float
                | Kind::Datasec => t.size_or_type,
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

    /// This blob's own types' ids (not the base's).
    pub fn own_ids(&self) -> core::ops::Range<u32> {
        self.first_id..self.end_id()
    }

    /// Per type of this blob, the offset of its entry in the type section (the index by id).
    pub fn offsets(&self) -> &'a [u32] {
        self.offsets
    }

    /// This blob's named types' ids, sorted by name (the name index).
    pub fn by_name(&self) -> &'a [u32] {
        self.by_name
    }
}
