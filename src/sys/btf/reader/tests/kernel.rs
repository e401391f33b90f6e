// SPDX-License-Identifier: GPL-2.0

//! The running kernel's own BTF, when there is one to read.

use super::*;

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
