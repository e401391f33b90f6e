// SPDX-License-Identifier: GPL-2.0

//! Validating a blob and building its index: the offset of every type by id, and the named
//! types sorted by name.

use super::format::{check_type, extra_len, layout, read_u32, Kind, Layout};
use super::{Btf, Error, MAX_TYPES};

/// How much index a blob needs ([`Btf::measure`]): one `u32` per type for the offsets, one per
/// named type for the name index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Types in the blob (its own, not its base's).
    pub types: usize,
    /// Those with a name (not empty).
    pub named: usize,
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

/// The string space a blob's names must point into: the base's, then its own.
struct Names<'s, 'b> {
    base: Option<&'s Btf<'b>>,
    strs: &'s [u8],
    first_str: u32,
    end_str: u32,
}

impl Names<'_, '_> {
    /// Whether the name at `name_off` is not empty (an offset other than 0 may point at an
    /// empty string).
    fn non_empty(&self, name_off: u32) -> bool {
        if name_off < self.first_str {
            self.base
                .is_some_and(|b| b.str_at(name_off).is_ok_and(|n| !n.is_empty()))
        } else {
            self.strs
                .get((name_off - self.first_str) as usize)
                .is_some_and(|&c| c != 0)
        }
    }
}

/// Checks the string section `strs` of a blob whose strings start at offset `first_str`
/// (`split` over a base): NUL-terminated; a base blob's first one empty (name offset 0 is "no
/// name"). A split blob may have no strings of its own. Returns the first offset past them.
fn check_strings(strs: &[u8], split: bool, first_str: u32) -> Result<u32, Error> {
    if (!split || !strs.is_empty()) && strs.last() != Some(&0) {
        return Err(Error::Strings);
    }
    if !split && strs.first() != Some(&0) {
        return Err(Error::Strings);
    }
    u32::try_from(strs.len())
        .ok()
        .and_then(|n| first_str.checked_add(n))
        .ok_or(Error::TooBig)
}

/// How many type entries the section `types` holds, each whole (at most [`MAX_TYPES`]).
fn count_types(types: &[u8], big: bool) -> Result<u32, Error> {
    let mut count: u32 = 0;
    let mut off = 0usize;
    while off < types.len() {
        let info = read_u32(types, off + 4, big)?;
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
    Ok(count)
}

/// Checks the entry at byte `off` of `types` (whole, as [`count_types`] found), whose ids must
/// be below `end` and names in `names`: its length, and whether it has a name.
fn check_entry(
    types: &[u8],
    off: usize,
    big: bool,
    end: u32,
    names: &Names<'_, '_>,
) -> Result<(usize, bool), Error> {
    let name_off = read_u32(types, off, big)?;
    let info = read_u32(types, off + 4, big)?;
    let third = read_u32(types, off + 8, big)?;
    // Bits 16-23 and 29-30 are unused: the kernel refuses them set.
    if info & 0x60ff_0000 != 0 {
        return Err(Error::BadType);
    }
    let kind = Kind::from_u8(((info >> 24) & 0x1f) as u8).ok_or(Error::BadType)?;
    let vlen = info as u16;
    let extra = &types[off + 12..off + 12 + extra_len(kind, vlen)];
    check_type(kind, vlen, info >> 31 != 0, third, extra, big, end)?;
    if name_off >= names.end_str {
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
            if read_u32(extra, j * stride + at, big)? >= names.end_str {
                return Err(Error::NameOffset);
            }
        }
    }
    Ok((12 + extra.len(), names.non_empty(name_off)))
}

/// Sorts the ids `names` of `btf`'s types by (name, id). The sort compares names where they
/// lie, up to the first difference: no NUL search first, no decoding of the whole entry
/// (vmlinux: 30,000 names or more).
fn sort_by_name(btf: &Btf<'_>, names: &mut [u32]) {
    let tail = |id: u32| -> &[u8] {
        let name_off = btf
            .offsets
            .get(id.wrapping_sub(btf.first_id) as usize)
            .and_then(|&o| read_u32(btf.types, o as usize, btf.big).ok())
            .unwrap_or(0);
        btf.str_tail(name_off)
    };
    crate::sys::slice::sort_by(names, |&x, &y| match cmp_cstr(tail(x), tail(y)) {
        core::cmp::Ordering::Equal => x < y,
        o => o.is_lt(),
    });
}

impl<'a> Btf<'a> {
    /// Walks `data`'s types, checking each, and hands each one's index and whether it has a
    /// name to `each`: what [`Btf::measure`] and [`Btf::new`] share.
    pub(super) fn walk(
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
        let end_str = check_strings(strs, base.is_some(), first_str)?;
        // Count first: ids referred to may be further on.
        let count = count_types(types, l.big_endian)?;
        let end = first_id.checked_add(count).ok_or(Error::TooBig)?;
        let names = Names {
            base,
            strs,
            first_str,
            end_str,
        };
        let mut off = 0usize;
        let mut named = 0usize;
        for i in 0..count as usize {
            let (len, has_name) = check_entry(types, off, l.big_endian, end, &names)?;
            named += usize::from(has_name);
            each(i, off as u32, has_name)?;
            off += len;
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
        let first_id = base.map_or(1, |b| b.end_id());
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
        let mut btf = Btf::view(data, &l, base, offsets, &[]);
        sort_by_name(&btf, names);
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
        if offsets.len() > MAX_TYPES as usize || names.len() > offsets.len() {
            return Err(Error::Storage);
        }
        Ok(Btf::view(data, &l, base, offsets, names))
    }

    /// The blob `data`, laid out as `l`, over `base`, with the index `offsets` and `by_name`.
    fn view(
        data: &'a [u8],
        l: &Layout,
        base: Option<&'a Btf<'a>>,
        offsets: &'a [u32],
        by_name: &'a [u32],
    ) -> Btf<'a> {
        let (first_id, first_str) = base.map_or((1, 0), |b| (b.end_id(), b.end_str()));
        Btf {
            base,
            big: l.big_endian,
            types: &data[l.types.0..l.types.0 + l.types.1],
            strs: &data[l.strs.0..l.strs.0 + l.strs.1],
            first_id,
            first_str,
            offsets,
            by_name,
        }
    }

    /// The strings from offset `off` of the string space to the end of the section it is in
    /// (empty if `off` is outside): the name there and what follows its NUL.
    pub(super) fn str_tail(&self, off: u32) -> &'a [u8] {
        if off < self.first_str {
            return self.base.map_or(&[][..], |b| b.str_tail(off));
        }
        self.strs
            .get((off - self.first_str) as usize..)
            .unwrap_or(&[])
    }
}
