// SPDX-License-Identifier: GPL-2.0

//! Host tests of the BTF reader: blobs clang-19 and pahole wrote (testdata/, with their C
//! sources and the commands that made them), blobs built here byte by byte to break one rule
//! each, and the kernel's own BTF when there is one to read.

extern crate std;

mod kernel;
mod malformed;
mod sample;

use super::*;
use std::boxed::Box;
use std::string::String;
use std::vec;
use std::vec::Vec;

/// clang-19 -target bpf of testdata/sample.c.
const SAMPLE: &[u8] = include_bytes!("../testdata/sample.btf");

/// pahole -J of testdata/split-base.c, and of split-mod.c split over it.
const SPLIT_BASE: &[u8] = include_bytes!("../testdata/split-base.btf");

const SPLIT_MOD: &[u8] = include_bytes!("../testdata/split-mod.btf");

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

pub(crate) fn leak(v: Vec<u8>) -> &'static [u8] {
    Box::leak(v.into_boxed_slice())
}

fn sample() -> Btf<'static> {
    load(SAMPLE, None).unwrap()
}

fn name(btf: &Btf<'_>, id: u32) -> String {
    String::from_utf8_lossy(btf.type_name(id).unwrap()).into_owned()
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

/// Writes blobs type by type, for the rules no compiler breaks.
pub(crate) struct Builder {
    pub(crate) types: Vec<u32>,
    pub(crate) strs: Vec<u8>,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            types: Vec::new(),
            strs: vec![0],
        }
    }
    pub(crate) fn s(&mut self, s: &str) -> u32 {
        let off = self.strs.len() as u32;
        self.strs.extend_from_slice(s.as_bytes());
        self.strs.push(0);
        off
    }
    /// A type entry: name, kind, vlen, kind_flag, third word, trailing words. Returns its id.
    pub(crate) fn t(
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
    pub(crate) fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
        self.t(
            name,
            1,
            0,
            false,
            size,
            &[(u32::from(signed) << 24) | (size * 8)],
        )
    }
    pub(crate) fn build(&self) -> Vec<u8> {
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
