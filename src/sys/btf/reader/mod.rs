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
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

#![forbid(unsafe_code)]

mod format;
mod index;
mod lookup;
#[cfg(test)]
pub(crate) mod tests;

use format::read_u32;
pub use format::{layout, Kind, Layout};
pub use index::Sizes;

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
