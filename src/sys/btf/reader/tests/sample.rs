// SPDX-License-Identifier: GPL-2.0

//! The blobs clang and pahole wrote (testdata/): functions, names, members, prototypes, split
//! BTF, and the same blobs in the other byte order.

use super::*;

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
    // Byte offsets; f_long and f_pair are in an anonymous union.
    for (name, off) in [
        (&b"f_mode"[..], None),
        (&b"f_char"[..], Some(2)),
        (&b"f_name"[..], Some(8)),
        (&b"f_dentry"[..], Some(24)),
        (&b"f_long"[..], Some(32)),
        (&b"f_pair"[..], Some(32)),
        (&b"f_color"[..], Some(40)),
        (&b"f_big"[..], Some(48)),
        (&b"f_count"[..], Some(56)),
        (&b"f_buf"[..], Some(60)),
        (&b"f_ok"[..], Some(76)),
        (&b"f_float"[..], Some(80)),
    ] {
        assert_eq!(
            m(name).byte_offset(),
            off,
            "{}",
            String::from_utf8_lossy(name)
        );
    }
    assert!(btf.scalar(m(b"f_char").ty).unwrap().signed);
    assert_eq!(btf.size(m(b"f_buf").ty), Ok(16));
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
}

#[test]
fn members_through_anonymous_members_and_errors() {
    let btf = sample();
    let file = btf.find(b"file", Kind::Struct).unwrap();
    let m = |n: &[u8]| btf.member(file, n).unwrap();
    // Through the pair: a struct member of a member, from the inner struct's type.
    let pair = m(b"f_pair").ty;
    assert_eq!(btf.member(pair, b"hi").unwrap().byte_offset(), Some(2));
    assert_eq!(btf.size(pair), Ok(4));

    // struct qstr: len is in an anonymous struct in an anonymous union.
    let qstr = btf.resolve(m(b"f_name").ty).unwrap();
    assert_eq!(btf.size(qstr), Ok(16));
    for (name, off) in [
        (&b"hash"[..], 0),
        (b"len", 4),
        (b"hash_len", 0),
        (b"name", 8),
    ] {
        assert_eq!(btf.member(qstr, name).unwrap().byte_offset(), Some(off));
    }
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
