// SPDX-License-Identifier: GPL-2.0

//! Blobs built byte by byte to break one rule each: refused alike by `measure` and `new`, or
//! answered with an error, never a panic or an endless loop.

use super::*;

#[test]
fn builder_blobs_read_back() {
    let mut b = Builder::new();
    let int = b.int("int", 4, true);
    assert_eq!(int, 1);
    let s = b.s("a");
    let st = b.t("pair", 4, 2, false, 8, &[s, int, 0, 0, int, 32]);
    assert_eq!(st, 2);
    let btf = load(leak(b.build()), None).unwrap();
    assert_eq!(btf.member(st, b"a").unwrap().byte_offset(), Some(0));
    // An anonymous member of int is skipped, not searched.
    assert_eq!(btf.member(st, b"b"), Err(Error::NotFound));
}

/// A name offset other than 0 that points at an empty string (the NUL ending another name)
/// leaves the type anonymous: not in the name index, not found by the empty name. (The fuzz
/// target's first short run found the index holding such a type.)
#[test]
fn empty_name_at_a_nonzero_offset_is_anonymous() {
    let mut b = Builder::new();
    let int = b.int("int", 4, true);
    let nul = b.strs.len() as u32 - 1;
    b.types.extend([nul, 1 << 24, 4, 1 << 24 | 32]);
    let data = leak(b.build());
    assert_eq!(Btf::measure(data, None), Ok(Sizes { types: 2, named: 1 }));
    let btf = load(data, None).unwrap();
    assert_eq!(btf.by_name(), [int]);
    assert_eq!(btf.type_name(2), Ok(&b""[..]));
    assert_eq!(btf.find(b"", Kind::Int), Err(Error::NotFound));
    assert_eq!(btf.find(b"int", Kind::Int), Ok(int));
}

#[test]
fn malformed_headers() {
    let good = {
        let mut b = Builder::new();
        b.int("int", 4, true);
        b.build()
    };
    assert!(Btf::measure(&good, None).is_ok());
    assert_eq!(refused(good[..23].to_vec()), Error::Truncated);
    assert_eq!(refused(vec![]), Error::Truncated);
    let mut v = good.clone();
    v[0] = 0x9e;
    assert_eq!(refused(v), Error::Magic);
    let mut v = good.clone();
    v[2] = 2;
    assert_eq!(refused(v), Error::Unsupported, "version 2");
    let mut v = good.clone();
    v[3] = 1;
    assert_eq!(refused(v), Error::Unsupported, "flags");
    // A header word (at its byte offset) set to a value; the error; what is wrong.
    let cases: &[(usize, u32, Error, &str)] = &[
        (4, 20, Error::Header, "hdr_len below 24"),
        (4, 0xffff_fff0, Error::Truncated, "hdr_len past the end"),
        (8, 2, Error::Header, "type_off misaligned"),
        (12, 0x1000, Error::Truncated, "type_len"),
        (16, 0xffff_fff0, Error::Truncated, "str_off wraps"),
        (20, 0x1000, Error::Truncated, "str_len"),
        (16, 4, Error::Header, "strings overlap the types"),
    ];
    for &(at, w, e, what) in cases {
        assert_eq!(refused(with_word(good.clone(), at, w)), e, "{what}");
    }
    // A longer header: fine with zeros (sections shift), not with anything else.
    let longer = |fill: u8| {
        let mut v = with_word(good.clone(), 4, 28);
        v.splice(24..24, [fill; 4]);
        v
    };
    assert!(Btf::measure(leak(longer(0)), None).is_ok());
    assert_eq!(refused(longer(1)), Error::Unsupported);
    // Sections with a gap between them: allowed.
    let mut v = with_word(good.clone(), 16, 20);
    v.splice(24 + 16..24 + 16, [0xaa; 4]);
    assert!(Btf::measure(leak(v), None).is_ok());
    // Strings not ending in NUL, not starting with the empty string, none at all.
    let mut v = good.clone();
    *v.last_mut().unwrap() = b'x';
    assert_eq!(refused(v), Error::Strings);
    let mut v = good.clone();
    v[24 + 16] = b'x';
    assert_eq!(refused(v), Error::Strings);
    assert_eq!(refused(with_word(good.clone(), 20, 0)), Error::Strings);
    // No types at all: valid, and empty.
    let empty = Builder::new().build();
    let btf = load(leak(empty), None).unwrap();
    assert_eq!((btf.first_id(), btf.end_id()), (1, 1));
    assert_eq!(btf.ty(1).err(), Some(Error::TypeId));
    assert_eq!(btf.find(b"int", Kind::Int), Err(Error::NotFound));
}

/// A type entry: kind, vlen, kind_flag, third word, trailing words.
type Entry = (u32, u32, bool, u32, &'static [u32]);

/// A blob whose only type is `entry`.
fn one((kind, vlen, flag, third, extra): Entry) -> Vec<u8> {
    let mut b = Builder::new();
    b.types
        .extend([0, kind << 24 | vlen | u32::from(flag) << 31, third]);
    b.types.extend_from_slice(extra);
    b.build()
}

/// Type entries with one thing wrong, the error each gives, and what is wrong.
const BAD_ENTRIES: &[(Entry, Error, &str)] = &[
    ((1, 0, false, 3, &[24]), Error::BadType, "3-byte INT"),
    (
        (1, 0, false, 4, &[33]),
        Error::BadType,
        "33 bits in 4 bytes",
    ),
    ((1, 0, false, 4, &[0]), Error::BadType, "0 bits"),
    (
        (1, 0, false, 4, &[3 << 24 | 32]),
        Error::BadType,
        "signed and char",
    ),
    (
        (1, 0, false, 4, &[0x100 | 8]),
        Error::BadType,
        "unused INT bits",
    ),
    ((1, 1, false, 4, &[32]), Error::BadType, "vlen on an INT"),
    (
        (1, 0, true, 4, &[32]),
        Error::BadType,
        "kind_flag on an INT",
    ),
    ((20, 0, false, 0, &[]), Error::BadType, "kind 20"),
    (
        (0, 0, false, 0, &[]),
        Error::BadType,
        "kind 0 (void is id 0 only)",
    ),
    ((2, 0, false, 2, &[]), Error::TypeId, "PTR to id 2 of 1"),
    (
        (3, 0, false, 0, &[1, 9, 4]),
        Error::TypeId,
        "ARRAY index type",
    ),
    ((4, 1, false, 4, &[0, 5, 0]), Error::TypeId, "member type"),
    (
        (4, 1, false, 4, &[999, 0, 0]),
        Error::NameOffset,
        "member name",
    ),
    (
        (4, 2, false, 4, &[0, 0, 0]),
        Error::TypeTruncated,
        "2 members, room for 1",
    ),
    ((6, 1, false, 3, &[0, 0]), Error::BadType, "3-byte ENUM"),
    (
        (6, 1, false, 4, &[77, 0]),
        Error::NameOffset,
        "enumerator name",
    ),
    ((12, 3, false, 0, &[]), Error::BadType, "FUNC linkage 3"),
    ((13, 1, false, 0, &[0, 8]), Error::TypeId, "parameter type"),
    ((13, 1, false, 8, &[0, 0]), Error::TypeId, "return type"),
    ((14, 0, false, 0, &[3]), Error::BadType, "VAR linkage 3"),
    (
        (15, 1, false, 0, &[4, 0, 0]),
        Error::TypeId,
        "DATASEC variable",
    ),
];

#[test]
fn malformed_types() {
    assert!(Btf::measure(&one((1, 0, false, 4, &[32])), None).is_ok());
    for &(entry, e, what) in BAD_ENTRIES {
        assert_eq!(refused(one(entry)), e, "{what}");
    }
    let mut v = one((2, 0, false, 0, &[]));
    v[24 + 6] = 1;
    assert_eq!(refused(v), Error::BadType, "info bits 16-23");
    assert!(
        Btf::measure(&one((2, 0, false, 1, &[])), None).is_ok(),
        "PTR to itself: valid BTF"
    );
    let mut v = one((2, 0, false, 0, &[]));
    v[24] = 50;
    assert_eq!(refused(v), Error::NameOffset, "type name");
    // A type cut short by the end of the section.
    let v = one((1, 0, false, 4, &[32]));
    let cut = with_word(with_word(v.clone(), 12, 12), 16, 12);
    let mut cut = cut;
    cut.drain(24 + 12..24 + 16);
    assert_eq!(refused(cut), Error::TypeTruncated);
}

#[test]
fn storage_of_the_wrong_size() {
    let s = Btf::measure(SAMPLE, None).unwrap();
    assert!(s.types > 20 && s.named > 10 && s.named < s.types);
    let mut o = vec![0u32; s.types];
    let mut n = vec![0u32; s.named];
    assert!(Btf::new(SAMPLE, None, &mut o, &mut n).is_ok());
    let mut o = vec![0u32; s.types - 1];
    assert_eq!(
        Btf::new(SAMPLE, None, &mut o, &mut n).err(),
        Some(Error::Storage)
    );
    let mut o = vec![0u32; s.types + 1];
    assert_eq!(
        Btf::new(SAMPLE, None, &mut o, &mut n).err(),
        Some(Error::Storage)
    );
    let mut o = vec![0u32; s.types];
    let mut n = vec![0u32; s.named + 1];
    assert_eq!(
        Btf::new(SAMPLE, None, &mut o, &mut n).err(),
        Some(Error::Storage)
    );
}

#[test]
fn from_parts_reads_what_new_built() {
    let s = Btf::measure(SAMPLE, None).unwrap();
    let mut o = vec![0u32; s.types];
    let mut n = vec![0u32; s.named];
    let f = Btf::new(SAMPLE, None, &mut o, &mut n)
        .unwrap()
        .func(b"vfs_read")
        .unwrap();
    let view = Btf::from_parts(SAMPLE, None, &o, &n).unwrap();
    assert_eq!(view.func(b"vfs_read"), Ok(f));
    // Parts of another blob: errors or wrong answers, no panic.
    let garbage: Vec<u32> = (0..s.types as u32)
        .map(|i| i.wrapping_mul(0x9e37_79b9))
        .collect();
    let view = Btf::from_parts(SAMPLE, None, &garbage, &garbage[..s.named]).unwrap();
    for id in 0..view.end_id() + 2 {
        let _ = (
            view.ty(id),
            view.resolve(id),
            view.size(id),
            view.scalar(id),
            view.member(id, b"f_mode"),
        );
    }
    let _ = view.func(b"vfs_read");
    let too_many = vec![0u32; s.types + 1];
    assert_eq!(
        Btf::from_parts(SAMPLE, None, &o, &too_many).err(),
        Some(Error::Storage)
    );
}

#[test]
fn loops_end_in_errors() {
    let mut b = Builder::new();
    // 1, 2: typedefs of each other.
    b.t("a", 8, 0, false, 2, &[]);
    b.t("b", 8, 0, false, 1, &[]);
    // 3: a const of itself.
    b.t("", 10, 0, false, 3, &[]);
    // 4: an array of itself, 5: its index type.
    b.t("", 3, 0, false, 0, &[4, 5, 2]);
    let int = b.int("int", 4, false);
    // 6: a struct whose anonymous members are itself, twice: the search would never end.
    b.t("self", 4, 2, false, 8, &[0, 6, 0, 0, 6, 32]);
    // 7: a FUNC whose type is not a FUNC_PROTO.
    b.t("f", 12, 1, false, int, &[]);
    // 8: a struct of 1000 anonymous members of itself: over the budget.
    let mut members = Vec::new();
    for i in 0..1000 {
        members.extend([0, 8, i]);
    }
    b.t("wide", 4, 1000, false, 4, &members);
    let btf = load(leak(b.build()), None).unwrap();
    assert_eq!(btf.resolve(1), Err(Error::Limit));
    assert_eq!(btf.resolve(3), Err(Error::Limit));
    assert_eq!(btf.size(1), Err(Error::Limit));
    assert_eq!(btf.size(4), Err(Error::Limit));
    assert_eq!(btf.scalar(2), Err(Error::Limit));
    assert_eq!(btf.member(1, b"x"), Err(Error::Limit));
    assert_eq!(btf.member(6, b"x"), Err(Error::Limit));
    assert_eq!(btf.member(8, b"x"), Err(Error::Limit));
    assert_eq!(btf.func(b"f"), Err(Error::Kind));
    assert_eq!(btf.resolve(int), Ok(int));
}
