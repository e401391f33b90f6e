// SPDX-License-Identifier: GPL-2.0

//! Host tests of the BTF reader: blobs clang-19 and pahole wrote (testdata/, with their C
//! sources and the commands that made them), blobs built here byte by byte to break one rule
//! each, and the kernel's own BTF when there is one to read.

extern crate std;

use super::*;
use std::boxed::Box;
use std::string::String;
use std::vec;
use std::vec::Vec;

/// clang-19 -target bpf of testdata/sample.c.
const SAMPLE: &[u8] = include_bytes!("testdata/sample.btf");
/// pahole -J of testdata/split-base.c, and of split-mod.c split over it.
const SPLIT_BASE: &[u8] = include_bytes!("testdata/split-base.btf");
const SPLIT_MOD: &[u8] = include_bytes!("testdata/split-mod.btf");

/// Validates and indexes `data` with storage that lives as long as the test.
fn load(data: &'static [u8], base: Option<&'static Btf<'static>>) -> Result<Btf<'static>, Error> {
    let s = Btf::measure(data, base)?;
    let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
    let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
    let btf = Btf::new(data, base, offsets, names);
    // measure() and new() agree.
    assert_eq!(
        btf.as_ref().err(),
        None,
        "measure accepted what new refused"
    );
    btf
}

fn leak(v: Vec<u8>) -> &'static [u8] {
    Box::leak(v.into_boxed_slice())
}

fn sample() -> Btf<'static> {
    load(SAMPLE, None).unwrap()
}

fn name(btf: &Btf<'_>, id: u32) -> String {
    String::from_utf8_lossy(btf.type_name(id).unwrap()).into_owned()
}

#[test]
fn header_of_the_sample() {
    let l = layout(SAMPLE).unwrap();
    assert!(!l.big_endian);
    assert_eq!(l.types.0, HEADER_LEN);
    assert_eq!(l.strs.0, l.types.0 + l.types.1);
    assert_eq!(l.strs.0 + l.strs.1, SAMPLE.len());
}

#[test]
fn functions_and_their_parameters() {
    let btf = sample();
    let f = btf.func(b"vfs_read").unwrap();
    assert_eq!(f.linkage, 1, "global");
    assert_eq!(f.proto.params, 4);
    assert!(!f.proto.variadic);
    let names: Vec<&[u8]> = (0..4)
        .map(|i| btf.param(f.proto.id, i).unwrap().name)
        .collect();
    assert_eq!(names, [&b"file"[..], b"buf", b"count", b"pos"]);
    assert_eq!(btf.param(f.proto.id, 4), Err(Error::NotFound));
    assert_eq!(btf.param_index(f.proto.id, b"count"), Ok(2));
    assert_eq!(btf.param_index(f.proto.id, b"nope"), Err(Error::NotFound));
    assert_eq!(btf.param_index(f.proto.id, b""), Err(Error::NotFound));

    // file: a pointer to struct file.
    let file = btf.param(f.proto.id, 0).unwrap().ty;
    assert_eq!(btf.ty(file).unwrap().kind, Kind::Ptr);
    let pointee = btf.ty(file).unwrap().size_or_type;
    assert_eq!(btf.ty(pointee).unwrap().kind, Kind::Struct);
    assert_eq!(name(&btf, pointee), "file");
    assert_eq!(
        btf.scalar(file).unwrap(),
        Scalar {
            id: file,
            kind: ScalarKind::Ptr,
            size: 8,
            signed: false
        }
    );
    // count: unsigned long.
    let count = btf.param(f.proto.id, 2).unwrap().ty;
    assert_eq!(btf.scalar(count).unwrap().size, 8);
    assert!(!btf.scalar(count).unwrap().signed);
    // Returns long.
    let ret = btf.scalar(f.proto.ret).unwrap();
    assert_eq!((ret.kind, ret.size, ret.signed), (ScalarKind::Int, 8, true));
    assert_eq!(name(&btf, ret.id), "long");

    let f = btf.func(b"no_args").unwrap();
    assert_eq!(
        (f.proto.params, f.proto.ret, f.proto.variadic),
        (0, 0, false),
        "void no_args(void)"
    );

    let f = btf.func(b"local_fn").unwrap();
    assert_eq!(f.linkage, 0, "static");
    let ret = btf.scalar(f.proto.ret).unwrap();
    assert_eq!((ret.kind, ret.size, ret.signed), (ScalarKind::Int, 2, true));
    // x: cvs32, a typedef of const volatile s32, a typedef of int.
    let x = btf.param(f.proto.id, 0).unwrap();
    assert_eq!(x.name, b"x");
    assert_eq!(btf.ty(x.ty).unwrap().kind, Kind::Typedef);
    let r = btf.resolve(x.ty).unwrap();
    assert_eq!(name(&btf, r), "int");
    assert_eq!(
        btf.scalar(x.ty).unwrap(),
        Scalar {
            id: r,
            kind: ScalarKind::Int,
            size: 4,
            signed: true
        }
    );
    // c: enum color, which has a negative value.
    let c = btf.param(f.proto.id, 1).unwrap();
    assert_eq!(btf.scalar(c.ty).unwrap().kind, ScalarKind::Enum);
    assert_eq!(btf.scalar(c.ty).unwrap().size, 4);
    assert!(btf.scalar(c.ty).unwrap().signed);
    let b = btf.param(f.proto.id, 2).unwrap();
    assert_eq!(btf.scalar(b.ty).unwrap().kind, ScalarKind::Bool);
    assert_eq!(btf.scalar(b.ty).unwrap().size, 1);

    assert_eq!(btf.func(b"vfs_write"), Err(Error::NotFound));
    assert_eq!(btf.func(b""), Err(Error::NotFound));
    // A name that is a struct's, not a function's.
    assert_eq!(btf.func(b"file"), Err(Error::NotFound));
}

#[test]
fn find_by_name_and_kind() {
    let btf = sample();
    let file = btf.find(b"file", Kind::Struct).unwrap();
    assert_eq!(btf.ty(file).unwrap().kind, Kind::Struct);
    assert_eq!(
        btf.find(b"dentry", Kind::Fwd)
            .map(|id| btf.ty(id).unwrap().kind),
        Ok(Kind::Fwd)
    );
    assert_eq!(btf.find(b"dentry", Kind::Struct), Err(Error::NotFound));
    assert!(btf.find(b"u64", Kind::Typedef).is_ok());
    assert!(btf.find(b"color", Kind::Enum).is_ok());
    assert!(btf.find(b"counter", Kind::Var).is_ok());
    // Names below the first and past the last in the index.
    assert_eq!(btf.find(b"\x01", Kind::Int), Err(Error::NotFound));
    assert_eq!(btf.find(b"\xff", Kind::Int), Err(Error::NotFound));
    // Every named type is found by its name and kind, as the lowest id with both.
    for id in btf.own_ids() {
        let t = btf.ty(id).unwrap();
        if btf.type_name(id).unwrap().is_empty() {
            continue;
        }
        let n = btf.type_name(id).unwrap();
        let first = btf
            .own_ids()
            .find(|&j| btf.ty(j).unwrap().kind == t.kind && btf.type_name(j).unwrap() == n);
        assert_eq!(btf.find(n, t.kind).ok(), first, "{}", name(&btf, id));
    }
}

#[test]
fn members_bitfields_and_anonymous_members() {
    let btf = sample();
    let file = btf.find(b"file", Kind::Struct).unwrap();
    assert_eq!(btf.size(file), Ok(88));
    let m = |n: &[u8]| btf.member(file, n).unwrap();
    assert_eq!(
        (m(b"f_flags").bit_offset, m(b"f_flags").bitfield_size),
        (0, 3)
    );
    assert_eq!(
        (m(b"f_mode").bit_offset, m(b"f_mode").bitfield_size),
        (3, 13)
    );
    assert_eq!(m(b"f_mode").byte_offset(), None);
    assert_eq!(m(b"f_char").byte_offset(), Some(2));
    assert!(btf.scalar(m(b"f_char").ty).unwrap().signed);
    assert_eq!(m(b"f_name").byte_offset(), Some(8));
    assert_eq!(m(b"f_dentry").byte_offset(), Some(24));
    // In an anonymous union.
    assert_eq!(m(b"f_long").byte_offset(), Some(32));
    assert_eq!(m(b"f_pair").byte_offset(), Some(32));
    assert_eq!(m(b"f_color").byte_offset(), Some(40));
    assert_eq!(m(b"f_big").byte_offset(), Some(48));
    assert_eq!(m(b"f_count").byte_offset(), Some(56));
    assert_eq!(m(b"f_buf").byte_offset(), Some(60));
    assert_eq!(btf.size(m(b"f_buf").ty), Ok(16));
    assert_eq!(m(b"f_ok").byte_offset(), Some(76));
    assert_eq!(m(b"f_float").byte_offset(), Some(80));
    assert_eq!(
        btf.scalar(m(b"f_float").ty).unwrap().kind,
        ScalarKind::Float
    );
    // enum big has a 64-bit value: ENUM64, unsigned.
    let big = btf.resolve(m(b"f_big").ty).unwrap();
    assert_eq!(btf.ty(big).unwrap().kind, Kind::Enum64);
    assert_eq!(
        btf.scalar(big).unwrap(),
        Scalar {
            id: big,
            kind: ScalarKind::Enum,
            size: 8,
            signed: false
        }
    );
    // const volatile int through two typedefs.
    assert_eq!(btf.scalar(m(b"f_count").ty).unwrap().size, 4);

    // Through the pair: a struct member of a member, from the inner struct's type.
    let pair = m(b"f_pair").ty;
    assert_eq!(btf.member(pair, b"hi").unwrap().byte_offset(), Some(2));
    assert_eq!(btf.size(pair), Ok(4));

    // struct qstr: len is in an anonymous struct in an anonymous union.
    let qstr = btf.resolve(m(b"f_name").ty).unwrap();
    assert_eq!(btf.size(qstr), Ok(16));
    assert_eq!(btf.member(qstr, b"hash").unwrap().byte_offset(), Some(0));
    assert_eq!(btf.member(qstr, b"len").unwrap().byte_offset(), Some(4));
    assert_eq!(
        btf.member(qstr, b"hash_len").unwrap().byte_offset(),
        Some(0)
    );
    assert_eq!(btf.member(qstr, b"name").unwrap().byte_offset(), Some(8));
    assert_eq!(
        btf.scalar(btf.member(qstr, b"len").unwrap().ty)
            .unwrap()
            .size,
        4
    );

    assert_eq!(
        btf.member(file, b"len"),
        Err(Error::NotFound),
        "not through a named member"
    );
    assert_eq!(btf.member(file, b"nope"), Err(Error::NotFound));
    assert_eq!(btf.member(file, b""), Err(Error::NotFound));
    assert_eq!(btf.member(m(b"f_count").ty, b"x"), Err(Error::Kind));
    let dentry = btf.find(b"dentry", Kind::Fwd).unwrap();
    assert_eq!(btf.member(dentry, b"d_name"), Err(Error::Kind));
    assert_eq!(btf.size(dentry), Err(Error::Kind));
    assert_eq!(btf.size(0), Err(Error::Kind), "void");
    assert_eq!(btf.scalar(file), Err(Error::Kind));
}

#[test]
fn variadic_prototype() {
    let btf = sample();
    let ops = btf.find(b"ops", Kind::Struct).unwrap();
    let log = btf.member(ops, b"log").unwrap();
    let proto = btf.ty(log.ty).unwrap().size_or_type;
    let p = btf.proto(proto).unwrap();
    assert_eq!((p.params, p.variadic), (1, true));
    assert_eq!(
        btf.param(proto, 0).unwrap().name,
        b"",
        "unnamed in a pointer's prototype"
    );
    assert_eq!(
        btf.param(proto, 1),
        Err(Error::NotFound),
        "... is no parameter"
    );
    assert_eq!(btf.proto(ops), Err(Error::Kind));
}

#[test]
fn split_btf_continues_the_base() {
    let base: &'static Btf<'static> = Box::leak(Box::new(load(SPLIT_BASE, None).unwrap()));
    let m = load(SPLIT_MOD, Some(base)).unwrap();
    assert_eq!(m.first_id(), base.end_id());
    assert!(m.end_id() > m.first_id());
    // Without its base, the module's blob is refused: its first string is not empty, or its
    // ids point past its own types.
    assert!(Btf::measure(SPLIT_MOD, None).is_err());

    let f = m.func(b"mydev_open").unwrap();
    assert!(f.id >= m.first_id(), "the module's own function");
    assert!(f.proto.variadic);
    assert_eq!(f.proto.params, 2);
    let dev = m.param(f.proto.id, 0).unwrap();
    let inode = m.param(f.proto.id, 1).unwrap();
    assert_eq!((dev.name, inode.name), (&b"dev"[..], &b"inode"[..]));
    // struct mydev is the module's, struct inode the base's.
    let mydev = m.ty(dev.ty).unwrap().size_or_type;
    assert!(mydev >= m.first_id());
    assert_eq!(m.member(mydev, b"id").unwrap().byte_offset(), Some(8));
    let inode_struct = m.ty(inode.ty).unwrap().size_or_type;
    assert!(inode_struct < m.first_id(), "deduplicated against the base");
    assert_eq!(m.type_name(inode_struct).unwrap(), b"inode");
    assert_eq!(
        m.member(inode_struct, b"i_size").unwrap().byte_offset(),
        Some(8)
    );
    assert_eq!(
        m.scalar(m.member(inode_struct, b"i_ino").unwrap().ty)
            .unwrap()
            .size,
        4
    );
    let ret = m.scalar(f.proto.ret).unwrap();
    assert_eq!((ret.size, ret.signed), (4, true));
    // The base's functions through the module's BTF, not the module's through the base's.
    assert!(m.func(b"vfs_read").unwrap().id < m.first_id());
    assert_eq!(base.func(b"mydev_open"), Err(Error::NotFound));
    assert_eq!(base.ty(m.first_id()).err(), Some(Error::TypeId));
    // A split blob over a base of the other byte order.
    let big_base: &'static Btf<'static> =
        Box::leak(Box::new(load(leak(swap(SPLIT_BASE)), None).unwrap()));
    assert_eq!(
        Btf::measure(SPLIT_MOD, Some(big_base)),
        Err(Error::ByteOrder)
    );
    let big_mod = load(leak(swap(SPLIT_MOD)), Some(big_base)).unwrap();
    assert_eq!(big_mod.func(b"mydev_open").unwrap(), f);
}

/// `data` in the other byte order: the magic, the header's words, every word of the types.
fn swap(data: &[u8]) -> Vec<u8> {
    let l = layout(data).unwrap();
    let mut v = data.to_vec();
    v.swap(0, 1);
    let mut words = |from: usize, to: usize| {
        for w in v[from..to].chunks_exact_mut(4) {
            w.reverse();
        }
    };
    words(4, HEADER_LEN);
    words(l.types.0, l.types.0 + l.types.1);
    v
}

#[test]
fn big_endian_gives_the_same_answers() {
    let big = load(leak(swap(SAMPLE)), None).unwrap();
    assert!(layout(&swap(SAMPLE)).unwrap().big_endian);
    let little = sample();
    assert_eq!(big.end_id(), little.end_id());
    for id in 0..little.end_id() {
        assert_eq!(big.type_name(id), little.type_name(id));
        assert_eq!(big.ty(id).unwrap().kind, little.ty(id).unwrap().kind);
        assert_eq!(big.resolve(id), little.resolve(id));
        assert_eq!(big.size(id), little.size(id));
        assert_eq!(big.scalar(id), little.scalar(id));
    }
    assert_eq!(big.func(b"vfs_read"), little.func(b"vfs_read"));
    let file = little.find(b"file", Kind::Struct).unwrap();
    assert_eq!(big.member(file, b"f_mode"), little.member(file, b"f_mode"));
}

/// Writes blobs type by type, for the rules no compiler breaks.
struct Builder {
    types: Vec<u32>,
    strs: Vec<u8>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            types: Vec::new(),
            strs: vec![0],
        }
    }
    fn s(&mut self, s: &str) -> u32 {
        let off = self.strs.len() as u32;
        self.strs.extend_from_slice(s.as_bytes());
        self.strs.push(0);
        off
    }
    /// A type entry: name, kind, vlen, kind_flag, third word, trailing words. Returns its id.
    fn t(
        &mut self,
        name: &str,
        kind: u32,
        vlen: u32,
        flag: bool,
        third: u32,
        extra: &[u32],
    ) -> u32 {
        let n = if name.is_empty() { 0 } else { self.s(name) };
        self.types
            .extend([n, kind << 24 | vlen | u32::from(flag) << 31, third]);
        self.types.extend_from_slice(extra);
        // Ids: count the entries so far by walking them.
        let blob = self.build();
        Btf::walk(&blob, None, |_, _, _| Ok(()))
            .map(|(_, s)| s.types as u32)
            .unwrap_or(0)
    }
    fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
        self.t(
            name,
            1,
            0,
            false,
            size,
            &[(u32::from(signed) << 24) | (size * 8)],
        )
    }
    fn build(&self) -> Vec<u8> {
        let type_len = self.types.len() as u32 * 4;
        let mut v = Vec::new();
        v.extend(MAGIC.to_le_bytes());
        v.extend([1, 0]);
        for w in [
            HEADER_LEN as u32,
            0,
            type_len,
            type_len,
            self.strs.len() as u32,
        ] {
            v.extend(w.to_le_bytes());
        }
        for w in &self.types {
            v.extend(w.to_le_bytes());
        }
        v.extend(&self.strs);
        v
    }
}

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

/// What a blob with one thing wrong gives: refused by measure() and new() alike.
fn refused(data: Vec<u8>) -> Error {
    let data = leak(data);
    let e = Btf::measure(data, None).unwrap_err();
    let mut o = [0u32; 64];
    let mut n = [0u32; 64];
    assert_eq!(Btf::new(data, None, &mut o, &mut n).err(), Some(e));
    e
}

fn with_word(mut v: Vec<u8>, at: usize, w: u32) -> Vec<u8> {
    v[at..at + 4].copy_from_slice(&w.to_le_bytes());
    v
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
    assert_eq!(
        refused(with_word(good.clone(), 4, 20)),
        Error::Header,
        "hdr_len below 24"
    );
    assert_eq!(
        refused(with_word(good.clone(), 4, 0xffff_fff0)),
        Error::Truncated,
        "hdr_len past the end"
    );
    // A longer header: fine with zeros (sections shift), not with anything else.
    let longer = |fill: u8| {
        let mut v = with_word(good.clone(), 4, 28);
        v.splice(24..24, [fill; 4]);
        v
    };
    assert!(Btf::measure(leak(longer(0)), None).is_ok());
    assert_eq!(refused(longer(1)), Error::Unsupported);
    assert_eq!(
        refused(with_word(good.clone(), 8, 2)),
        Error::Header,
        "type_off misaligned"
    );
    assert_eq!(
        refused(with_word(good.clone(), 12, 0x1000)),
        Error::Truncated,
        "type_len"
    );
    assert_eq!(
        refused(with_word(good.clone(), 16, 0xffff_fff0)),
        Error::Truncated,
        "str_off wraps"
    );
    assert_eq!(
        refused(with_word(good.clone(), 20, 0x1000)),
        Error::Truncated,
        "str_len"
    );
    assert_eq!(
        refused(with_word(good.clone(), 16, 4)),
        Error::Header,
        "strings overlap the types"
    );
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

#[test]
fn malformed_types() {
    let one = |kind: u32, vlen: u32, flag: bool, third: u32, extra: &[u32]| {
        let mut b = Builder::new();
        b.types
            .extend([0, kind << 24 | vlen | u32::from(flag) << 31, third]);
        b.types.extend_from_slice(extra);
        b.build()
    };
    assert!(Btf::measure(&one(1, 0, false, 4, &[32]), None).is_ok());
    assert_eq!(
        refused(one(1, 0, false, 3, &[24])),
        Error::BadType,
        "3-byte INT"
    );
    assert_eq!(
        refused(one(1, 0, false, 4, &[33])),
        Error::BadType,
        "33 bits in 4 bytes"
    );
    assert_eq!(refused(one(1, 0, false, 4, &[0])), Error::BadType, "0 bits");
    assert_eq!(
        refused(one(1, 0, false, 4, &[3 << 24 | 32])),
        Error::BadType,
        "signed and char"
    );
    assert_eq!(
        refused(one(1, 0, false, 4, &[0x100 | 8])),
        Error::BadType,
        "unused INT bits"
    );
    assert_eq!(
        refused(one(1, 1, false, 4, &[32])),
        Error::BadType,
        "vlen on an INT"
    );
    assert_eq!(
        refused(one(1, 0, true, 4, &[32])),
        Error::BadType,
        "kind_flag on an INT"
    );
    assert_eq!(
        refused(one(20, 0, false, 0, &[])),
        Error::BadType,
        "kind 20"
    );
    assert_eq!(
        refused(one(0, 0, false, 0, &[])),
        Error::BadType,
        "kind 0 (void is id 0 only)"
    );
    let mut v = one(2, 0, false, 0, &[]);
    v[24 + 6] = 1;
    assert_eq!(refused(v), Error::BadType, "info bits 16-23");
    assert_eq!(
        refused(one(2, 0, false, 2, &[])),
        Error::TypeId,
        "PTR to id 2 of 1"
    );
    assert!(
        Btf::measure(&one(2, 0, false, 1, &[]), None).is_ok(),
        "PTR to itself: valid BTF"
    );
    assert_eq!(
        refused(one(3, 0, false, 0, &[1, 9, 4])),
        Error::TypeId,
        "ARRAY index type"
    );
    assert_eq!(
        refused(one(4, 1, false, 4, &[0, 5, 0])),
        Error::TypeId,
        "member type"
    );
    assert_eq!(
        refused(one(4, 1, false, 4, &[999, 0, 0])),
        Error::NameOffset,
        "member name"
    );
    assert_eq!(
        refused(one(4, 2, false, 4, &[0, 0, 0])),
        Error::TypeTruncated,
        "2 members, room for 1"
    );
    assert_eq!(
        refused(one(6, 1, false, 3, &[0, 0])),
        Error::BadType,
        "3-byte ENUM"
    );
    assert_eq!(
        refused(one(6, 1, false, 4, &[77, 0])),
        Error::NameOffset,
        "enumerator name"
    );
    assert_eq!(
        refused(one(12, 3, false, 0, &[])),
        Error::BadType,
        "FUNC linkage 3"
    );
    assert_eq!(
        refused(one(13, 1, false, 0, &[0, 8])),
        Error::TypeId,
        "parameter type"
    );
    assert_eq!(
        refused(one(13, 1, false, 8, &[0, 0])),
        Error::TypeId,
        "return type"
    );
    assert_eq!(
        refused(one(14, 0, false, 0, &[3])),
        Error::BadType,
        "VAR linkage 3"
    );
    assert_eq!(
        refused(one(15, 1, false, 0, &[4, 0, 0])),
        Error::TypeId,
        "DATASEC variable"
    );
    let mut v = one(2, 0, false, 0, &[]);
    v[24] = 50;
    assert_eq!(refused(v), Error::NameOffset, "type name");
    // A type cut short by the end of the section.
    let v = one(1, 0, false, 4, &[32]);
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

/// The `.BTF` section of an ELF file (64-bit, little-endian), if it has one.
fn elf_btf(elf: &[u8]) -> Option<Vec<u8>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?) as usize);
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?) as usize);
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?) as usize);
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?, u16_at(0x3e)?);
    let sh = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(sh(shstrndx) + 0x18)?;
    for i in 0..shnum {
        let name = strtab + u32_at(sh(i))?;
        if elf.get(name..name + 5)? == b".BTF\0" {
            let (off, size) = (u64_at(sh(i) + 0x18)?, u64_at(sh(i) + 0x20)?);
            return Some(elf.get(off..off + size)?.to_vec());
        }
    }
    None
}

/// What every kernel's BTF has: vfs_read(file, buf, count, pos), struct file, task_struct.
fn check_kernel(btf: &Btf<'_>, what: &str) {
    std::println!(
        "{what}: {} types, {} named",
        btf.end_id() - 1,
        btf.by_name().len()
    );
    assert!(btf.end_id() > 1000, "{what}");
    let f = btf.func(b"vfs_read").unwrap();
    let names: Vec<&[u8]> = (0..usize::from(f.proto.params))
        .map(|i| btf.param(f.proto.id, i).unwrap().name)
        .collect();
    assert_eq!(names, [&b"file"[..], b"buf", b"count", b"pos"], "{what}");
    let ret = btf.scalar(f.proto.ret).unwrap();
    assert_eq!((ret.size, ret.signed), (8, true), "ssize_t");
    let pos = btf.param(f.proto.id, 3).unwrap().ty;
    let loff = btf.ty(pos).unwrap().size_or_type;
    assert_eq!(btf.type_name(loff).unwrap(), b"loff_t");
    assert_eq!(btf.scalar(loff).unwrap().size, 8);
    let file = btf.find(b"file", Kind::Struct).unwrap();
    assert!(btf
        .member(file, b"f_inode")
        .unwrap()
        .byte_offset()
        .is_some());
    assert!(btf.member(file, b"f_pos").unwrap().byte_offset().is_some());
    let task = btf.find(b"task_struct", Kind::Struct).unwrap();
    let pid = btf.member(task, b"pid").unwrap();
    assert_eq!(btf.scalar(pid.ty).unwrap().size, 4);
    assert!(btf.scalar(pid.ty).unwrap().signed);
    // Every function's prototype and parameters read back; every struct's members are found by
    // their names (the first of a name: a later one in another anonymous member may differ).
    let mut funcs = 0;
    for id in btf.own_ids() {
        let t = btf.ty(id).unwrap();
        match t.kind {
            Kind::Func => {
                let p = btf.proto(t.size_or_type).unwrap();
                for i in 0..usize::from(p.params) {
                    btf.param(p.id, i).unwrap();
                }
                funcs += 1;
            }
            Kind::Struct | Kind::Union => {
                for i in 0..usize::from(t.vlen) {
                    let n = btf.str_at(t.word(3 * i).unwrap()).unwrap();
                    if !n.is_empty() {
                        let m = btf.member(id, n).unwrap();
                        let direct = btf.member_at(&t, i).unwrap();
                        let first =
                            (0..i).all(|j| btf.str_at(t.word(3 * j).unwrap()).unwrap() != n);
                        if first {
                            assert_eq!(
                                m,
                                direct,
                                "{what}: {} of type {id}",
                                String::from_utf8_lossy(n)
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    assert!(funcs > 1000, "{what}: {funcs} functions");
}

/// The test kernel's vmlinux ($UFG_BUILD or build/, once built), and with UFG_HOST_BTF=1 the
/// running kernel's /sys/kernel/btf/vmlinux; each is skipped when absent.
#[test]
fn kernel_btf_when_there_is_one() {
    let build = std::env::var("UFG_BUILD")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../build").into());
    let mut checked = 0;
    for arch in ["x86_64", "arm64"] {
        let path = std::format!("{build}/kernel-{arch}/vmlinux");
        let Ok(elf) = std::fs::read(&path) else {
            std::println!("{path}: absent, skipped");
            continue;
        };
        let Some(raw) = elf_btf(&elf) else {
            std::println!("{path}: no .BTF section, skipped");
            continue;
        };
        let raw = leak(raw);
        let start = std::time::Instant::now();
        let btf = load(raw, None).unwrap();
        std::println!("{path}: indexed in {:?}", start.elapsed());
        check_kernel(&btf, &path);
        checked += 1;
    }
    // The host's own kernel only on request (UFG_HOST_BTF=1): a newer host kernel may use BTF
    // kinds 6.12 has not, which ufgraph never meets where it runs.
    if std::env::var_os("UFG_HOST_BTF").is_none() {
        std::println!("/sys/kernel/btf/vmlinux: skipped (UFG_HOST_BTF unset)");
        std::println!("{checked} kernel BTF blobs checked");
        return;
    }
    match std::fs::read("/sys/kernel/btf/vmlinux") {
        Ok(raw) => {
            let raw = leak(raw);
            let base: &'static Btf<'static> = Box::leak(Box::new(load(raw, None).unwrap()));
            check_kernel(base, "/sys/kernel/btf/vmlinux");
            checked += 1;
            // The running kernel's modules: split over it.
            for e in std::fs::read_dir("/sys/kernel/btf").unwrap() {
                let p = e.unwrap().path();
                if p.file_name().unwrap() == "vmlinux" {
                    continue;
                }
                let m = load(leak(std::fs::read(&p).unwrap()), Some(base)).unwrap();
                assert!(m.first_id() == base.end_id(), "{}", p.display());
            }
        }
        Err(e) => std::println!("/sys/kernel/btf/vmlinux: {e}, skipped"),
    }
    std::println!("{checked} kernel BTF blobs checked");
}
