// SPDX-License-Identifier: GPL-2.0

//! The little of ELF64 (little-endian, relocatable) the audit needs.

use std::collections::{HashMap, HashSet};

/// SHF_EXECINSTR.
pub const SHF_EXECINSTR: u64 = 4;
/// SHF_ALLOC.
pub const SHF_ALLOC: u64 = 2;
pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_RELA: u32 = 4;
pub const STT_NOTYPE: u8 = 0;
pub const STT_FUNC: u8 = 2;
/// The first reserved section index (SHN_LORESERVE): SHN_ABS, SHN_COMMON...
pub const SHN_LORESERVE: u16 = 0xff00;

pub struct Section {
    pub i: usize,
    pub name: String,
    pub typ: u32,
    pub flags: u64,
    pub off: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
}

pub struct Sym {
    pub name: String,
    pub typ: u8,
    pub bind: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

/// One relocation: `tgt` is the index of the section it patches.
pub struct Rela {
    pub tgt: usize,
    pub off: u64,
    pub sym: usize,
    pub rtype: u32,
    pub addend: i64,
}

pub struct Elf {
    pub path: String,
    pub d: Vec<u8>,
    pub secs: Vec<Section>,
    pub syms: Vec<Sym>,
    pub relas: Vec<Rela>,
    /// Every symbol's name.
    pub names: HashSet<String>,
}

/// A section index and an offset in it: where a function starts.
pub type Loc = (usize, u64);

/// The symbols that start code, in symbol table order (the order the report breaks ties in).
pub struct Starts {
    pub order: Vec<Loc>,
    pub map: HashMap<Loc, String>,
}

impl Starts {
    pub fn get(&self, k: &Loc) -> Option<&String> {
        self.map.get(k)
    }
}

fn u16_at(d: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(d: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(o..o + 8)?.try_into().ok()?))
}

fn cstr(d: &[u8], o: usize) -> Option<String> {
    let s = d.get(o..)?;
    let end = s.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

impl Elf {
    pub fn read(path: &str) -> Result<Elf, String> {
        let d = std::fs::read(path).map_err(|e| format!("{}: {}", path, e))?;
        Elf::parse(path, d)
    }

    pub fn parse(path: &str, d: Vec<u8>) -> Result<Elf, String> {
        if d.len() < 0x40 || &d[..4] != b"\x7fELF" || d[4] != 2 || d[5] != 1 {
            return Err(format!("{}: not a little-endian ELF64 file", path));
        }
        let bad = || format!("{}: truncated or corrupt ELF file", path);
        let shoff = u64_at(&d, 0x28).ok_or_else(bad)? as usize;
        let shentsize = u16_at(&d, 0x3a).ok_or_else(bad)? as usize;
        let shnum = u16_at(&d, 0x3c).ok_or_else(bad)? as usize;
        let shstrndx = u16_at(&d, 0x3e).ok_or_else(bad)? as usize;
        let mut secs = Vec::with_capacity(shnum);
        let mut nameoffs = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let h = shoff + i * shentsize;
            nameoffs.push(u32_at(&d, h).ok_or_else(bad)? as usize);
            secs.push(Section {
                i,
                name: String::new(),
                typ: u32_at(&d, h + 4).ok_or_else(bad)?,
                flags: u64_at(&d, h + 8).ok_or_else(bad)?,
                off: u64_at(&d, h + 0x18).ok_or_else(bad)?,
                size: u64_at(&d, h + 0x20).ok_or_else(bad)?,
                link: u32_at(&d, h + 0x28).ok_or_else(bad)?,
                info: u32_at(&d, h + 0x2c).ok_or_else(bad)?,
            });
        }
        let stroff = secs.get(shstrndx).ok_or_else(bad)?.off as usize;
        for (s, n) in secs.iter_mut().zip(nameoffs) {
            s.name = cstr(&d, stroff + n).ok_or_else(bad)?;
        }
        let mut syms = Vec::new();
        for s in secs.iter().filter(|s| s.typ == SHT_SYMTAB) {
            let strs = secs.get(s.link as usize).ok_or_else(bad)?.off as usize;
            for j in 0..(s.size / 24) as usize {
                let e = s.off as usize + 24 * j;
                let info = *d.get(e + 4).ok_or_else(bad)?;
                syms.push(Sym {
                    name: cstr(&d, strs + u32_at(&d, e).ok_or_else(bad)? as usize)
                        .ok_or_else(bad)?,
                    typ: info & 15,
                    bind: info >> 4,
                    shndx: u16_at(&d, e + 6).ok_or_else(bad)?,
                    value: u64_at(&d, e + 8).ok_or_else(bad)?,
                    size: u64_at(&d, e + 16).ok_or_else(bad)?,
                });
            }
        }
        let mut relas = Vec::new();
        for s in secs.iter().filter(|s| s.typ == SHT_RELA) {
            if s.info as usize >= secs.len() {
                return Err(bad());
            }
            for j in 0..(s.size / 24) as usize {
                let e = s.off as usize + 24 * j;
                let info = u64_at(&d, e + 8).ok_or_else(bad)?;
                let sym = (info >> 32) as usize;
                if sym >= syms.len() {
                    return Err(bad());
                }
                relas.push(Rela {
                    tgt: s.info as usize,
                    off: u64_at(&d, e).ok_or_else(bad)?,
                    sym,
                    rtype: (info & 0xffff_ffff) as u32,
                    addend: u64_at(&d, e + 16).ok_or_else(bad)? as i64,
                });
            }
        }
        let names = syms.iter().map(|s| s.name.clone()).collect();
        Ok(Elf {
            path: path.to_string(),
            d,
            secs,
            syms,
            relas,
            names,
        })
    }

    /// Whether section `shndx` is code.
    pub fn is_code(&self, shndx: usize) -> bool {
        self.secs
            .get(shndx)
            .is_some_and(|s| s.flags & SHF_EXECINSTR != 0)
    }

    /// The symbols that start code (functions, and assembly labels such as the return
    /// trampoline); local .L labels left out. A function symbol wins over a label at the same
    /// place.
    pub fn code_syms(&self) -> Starts {
        let mut st = Starts {
            order: Vec::new(),
            map: HashMap::new(),
        };
        for s in &self.syms {
            // .L: assembler-local labels; $x, $d: AArch64 mapping symbols.
            if s.name.is_empty()
                || s.name.starts_with(".L")
                || s.name.starts_with('$')
                || s.shndx == 0
                || s.shndx >= SHN_LORESERVE
            {
                continue;
            }
            if (s.typ != STT_NOTYPE && s.typ != STT_FUNC) || !self.is_code(s.shndx as usize) {
                continue;
            }
            let k = (s.shndx as usize, s.value);
            match st.map.get_mut(&k) {
                None => {
                    st.order.push(k);
                    st.map.insert(k, s.name.clone());
                }
                Some(n) if s.typ == STT_FUNC => *n = s.name.clone(),
                Some(_) => {}
            }
        }
        st
    }

    /// `n` bytes at offset `off` of section `shndx`, if the section has them.
    pub fn bytes_at(&self, shndx: usize, off: i64, n: usize) -> Option<&[u8]> {
        let s = self.secs.get(shndx)?;
        if off < 0 || off as u64 + n as u64 > s.size {
            return None;
        }
        let start = s.off as usize + off as usize;
        self.d.get(start..start + n)
    }

    /// The little-endian word at offset `off` of section `shndx`.
    pub fn word_at(&self, shndx: usize, off: i64) -> Option<u32> {
        self.bytes_at(shndx, off, 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
pub mod build {
    //! Hand-made relocatable ELF files for the tests.

    /// A section of a test object: name, type, flags, contents, info.
    pub struct Sec {
        pub name: &'static str,
        pub typ: u32,
        pub flags: u64,
        pub data: Vec<u8>,
        pub info: u32,
    }

    /// A symbol: name, type, section index, value.
    pub struct S {
        pub name: &'static str,
        pub typ: u8,
        pub shndx: u16,
        pub value: u64,
    }

    impl Sec {
        /// Code: PROGBITS, allocated and executable.
        pub fn code(name: &'static str, data: Vec<u8>) -> Sec {
            Sec::progbits(name, 6, data)
        }

        /// Data: PROGBITS, allocated and writable.
        pub fn data(name: &'static str, data: Vec<u8>) -> Sec {
            Sec::progbits(name, 3, data)
        }

        /// A read-only table: PROGBITS, allocated.
        pub fn table(name: &'static str, data: Vec<u8>) -> Sec {
            Sec::progbits(name, 2, data)
        }

        fn progbits(name: &'static str, flags: u64, data: Vec<u8>) -> Sec {
            Sec {
                name,
                typ: 1,
                flags,
                data,
                info: 0,
            }
        }

        /// The relocations (RELA) of section `info`.
        pub fn rela(name: &'static str, info: u32, data: Vec<u8>) -> Sec {
            Sec {
                name,
                typ: 4,
                flags: 0,
                data,
                info,
            }
        }
    }

    impl S {
        pub fn new(name: &'static str, typ: u8, shndx: u16, value: u64) -> S {
            S {
                name,
                typ,
                shndx,
                value,
            }
        }

        /// A function symbol.
        pub fn func(name: &'static str, shndx: u16, value: u64) -> S {
            S::new(name, 2, shndx, value)
        }
    }

    /// A relocation entry's bytes.
    pub fn rela(off: u64, sym: u32, rtype: u32, addend: i64) -> Vec<u8> {
        let mut v = off.to_le_bytes().to_vec();
        v.extend_from_slice(&(((sym as u64) << 32) | rtype as u64).to_le_bytes());
        v.extend_from_slice(&addend.to_le_bytes());
        v
    }

    /// An ELF64 file with `secs` at indexes 1.., then .symtab (with a null symbol first, so
    /// `syms[i]` is symbol i + 1), .strtab and .shstrtab.
    pub fn elf(secs: Vec<Sec>, syms: &[S]) -> Vec<u8> {
        let n = secs.len();
        let mut strtab = vec![0u8];
        let mut symtab = vec![0u8; 24];
        for s in syms {
            let name = strtab.len() as u32;
            strtab.extend_from_slice(s.name.as_bytes());
            strtab.push(0);
            symtab.extend_from_slice(&name.to_le_bytes());
            symtab.push(s.typ);
            symtab.push(0);
            symtab.extend_from_slice(&s.shndx.to_le_bytes());
            symtab.extend_from_slice(&s.value.to_le_bytes());
            symtab.extend_from_slice(&0u64.to_le_bytes());
        }
        let mut all: Vec<(String, u32, u64, Vec<u8>, u32, u32)> =
            vec![(String::new(), 0, 0, vec![], 0, 0)];
        for s in secs {
            all.push((s.name.to_string(), s.typ, s.flags, s.data, 0, s.info));
        }
        all.push((".symtab".into(), 2, 0, symtab, n as u32 + 2, 0));
        all.push((".strtab".into(), 3, 0, strtab, 0, 0));
        let mut shstr = vec![0u8];
        let mut nameoffs = Vec::new();
        for s in all
            .iter()
            .map(|s| s.0.clone())
            .chain([".shstrtab".to_string()])
        {
            nameoffs.push(shstr.len() as u32);
            shstr.extend_from_slice(s.as_bytes());
            shstr.push(0);
        }
        all.push((".shstrtab".into(), 3, 0, shstr, 0, 0));
        let mut d = vec![0u8; 64];
        d[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let mut offs = Vec::new();
        for s in &all {
            offs.push(d.len() as u64);
            d.extend_from_slice(&s.3);
        }
        let shoff = d.len() as u64;
        for (i, s) in all.iter().enumerate() {
            d.extend_from_slice(&nameoffs[i].to_le_bytes());
            d.extend_from_slice(&s.1.to_le_bytes());
            d.extend_from_slice(&s.2.to_le_bytes());
            d.extend_from_slice(&0u64.to_le_bytes());
            d.extend_from_slice(&offs[i].to_le_bytes());
            d.extend_from_slice(&(s.3.len() as u64).to_le_bytes());
            d.extend_from_slice(&s.4.to_le_bytes());
            d.extend_from_slice(&s.5.to_le_bytes());
            d.extend_from_slice(&0u64.to_le_bytes());
            d.extend_from_slice(&0u64.to_le_bytes());
        }
        d[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        d[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        d[0x3c..0x3e].copy_from_slice(&(all.len() as u16).to_le_bytes());
        d[0x3e..0x40].copy_from_slice(&(all.len() as u16 - 1).to_le_bytes());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    #[test]
    fn parses_sections_symbols_relocations() {
        let d = elf(
            vec![
                Sec::code(".text", vec![0xc3; 32]),
                Sec::data(".data", vec![0; 8]),
                Sec::rela(".rela.data", 2, rela(0, 2, 1, 16)),
            ],
            &[
                S::func("f", 1, 0),
                S::new(".Ltmp", 0, 1, 16),
                S::new("label", 0, 1, 16),
                S::func("g", 1, 16),
                S::new("obj", 1, 2, 0),
            ],
        );
        let e = Elf::parse("t.o", d).unwrap();
        assert_eq!(e.secs[1].name, ".text");
        assert_eq!(e.secs[3].name, ".rela.data");
        assert_eq!(e.syms.len(), 6);
        assert_eq!(e.syms[2].name, ".Ltmp");
        assert_eq!(e.relas.len(), 1);
        assert_eq!(
            (
                e.relas[0].tgt,
                e.relas[0].sym,
                e.relas[0].rtype,
                e.relas[0].addend
            ),
            (2, 2, 1, 16)
        );
        let st = e.code_syms();
        // The function symbol wins over the label; .L labels and data are left out.
        assert_eq!(st.order, vec![(1, 0), (1, 16)]);
        assert_eq!(st.get(&(1, 16)).unwrap(), "g");
        assert_eq!(e.bytes_at(1, 30, 2), Some(&[0xc3, 0xc3][..]));
        assert_eq!(e.bytes_at(1, 31, 2), None);
        assert_eq!(e.bytes_at(1, -1, 2), None);
    }

    #[test]
    fn refuses_non_elf64() {
        assert!(Elf::parse("x", b"\x7fELF\x01\x01".to_vec())
            .err()
            .unwrap()
            .contains("not a little-endian ELF64"));
    }
}
