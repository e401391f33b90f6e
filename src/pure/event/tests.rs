// SPDX-License-Identifier: GPL-2.0

//! Tests: real definitions parsed by `probedef`, compiled, run against a fake memory, and
//! rendered; expected texts derived from upstream's trace_probe.c.

use super::*;
use crate::pure::probedef::{parse, Command, Config, Deref, Errno, FetchType, StoreKind};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

const CFG: Config = Config {
    max_stack_index: 2048,
    dentry_name_offset: 0x28,
    file_dentry_offset: 0x48,
};

const JIFFIES: u64 = 0xffff_ffff_8200_0000;
const COMM: u64 = 0xffff_8880_0000_1000;
const K: u64 = 0xffff_8880_1000_0000;
const U: u64 = 0x7fff_0000_0000;

/// A probe hit: registers, and separate kernel and user memories (byte maps).
#[derive(Default)]
struct Fake {
    args: Vec<u64>,
    slots: Vec<u64>,
    retval: u64,
    stack: Vec<u64>,
    sp: u64,
    kmem: BTreeMap<u64, u8>,
    umem: BTreeMap<u64, u8>,
    syms: Vec<(u64, &'static str)>,
}

impl Fake {
    fn new() -> Self {
        let mut f = Fake {
            sp: 0xffff_c900_0000_3f00,
            ..Fake::default()
        };
        f.kstr(COMM, "bash");
        f.kword(JIFFIES, 0x1_0000_2345);
        f
    }

    fn mem(&self, user: bool) -> &BTreeMap<u64, u8> {
        if user {
            &self.umem
        } else {
            &self.kmem
        }
    }

    fn kbytes(&mut self, at: u64, b: &[u8]) {
        for (i, &c) in b.iter().enumerate() {
            self.kmem.insert(at + i as u64, c);
        }
    }

    fn ubytes(&mut self, at: u64, b: &[u8]) {
        for (i, &c) in b.iter().enumerate() {
            self.umem.insert(at + i as u64, c);
        }
    }

    fn kword(&mut self, at: u64, v: u64) {
        self.kbytes(at, &v.to_le_bytes());
    }

    fn uword(&mut self, at: u64, v: u64) {
        self.ubytes(at, &v.to_le_bytes());
    }

    fn kstr(&mut self, at: u64, s: &str) {
        self.kbytes(at, s.as_bytes());
        self.kbytes(at + s.len() as u64, &[0]);
    }

    fn ustr(&mut self, at: u64, s: &str) {
        self.ubytes(at, s.as_bytes());
        self.ubytes(at + s.len() as u64, &[0]);
    }

    fn byte(&self, addr: u64, user: bool) -> Option<u8> {
        self.mem(user).get(&addr).copied()
    }
}

impl Env for Fake {
    fn arg(&self, n: u16) -> u64 {
        self.args.get(usize::from(n)).copied().unwrap_or(0)
    }
    fn entry_slot(&self, slot: u8) -> u64 {
        self.slots[usize::from(slot)]
    }
    fn retval(&self) -> u64 {
        self.retval
    }
    fn stack(&self, n: u16) -> Option<u64> {
        self.stack.get(usize::from(n)).copied()
    }
    fn stack_pointer(&self) -> u64 {
        self.sp
    }
    fn comm(&self) -> u64 {
        COMM
    }
    fn read(&self, addr: u64, user: bool, buf: &mut [u8]) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match self.byte(addr.wrapping_add(i as u64), user) {
                Some(c) => *b = c,
                None => return false,
            }
        }
        true
    }
    // fetch_store_strlen() / strnlen_user_nofault(), capped as the trait says.
    fn strlen(&self, addr: u64, user: bool) -> Option<usize> {
        for len in 1..=MAX_STRING_SIZE {
            if self.byte(addr.wrapping_add(len as u64 - 1), user)? == 0 {
                return Some(len);
            }
        }
        Some(MAX_STRING_SIZE)
    }
    // strncpy_from_{kernel,user}_nofault(), the user one's empty string included.
    fn read_str(&self, addr: u64, user: bool, buf: &mut [u8]) -> Option<usize> {
        let n = buf.len();
        for i in 0..n {
            let Some(c) = self.byte(addr.wrapping_add(i as u64), user) else {
                buf[0] = 0;
                return None;
            };
            buf[i] = c;
            if c == 0 {
                return Some(if user && i == 0 { 0 } else { i + 1 });
            }
        }
        buf[n - 1] = 0;
        Some(n)
    }
    fn symstr(&self, addr: u64, buf: &mut [u8]) -> usize {
        let text = match self.syms.iter().find(|(a, _)| *a == addr) {
            Some((_, s)) => String::from(*s),
            None => format!("0x{addr:x}"),
        };
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        n
    }
}

/// A `trace_seq` stand-in: `%pS` as "<addr>".
#[derive(Default)]
struct Seq(String);

impl fmt::Write for Seq {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

impl Out for Seq {
    fn symbol(&mut self, addr: u64) -> fmt::Result {
        write!(self.0, "<{addr:#x}>")
    }
}

fn resolve(sym: &str) -> Option<u64> {
    match sym {
        "jiffies" => Some(JIFFIES),
        "zero" => Some(0),
        "low" => Some(8),
        _ => None,
    }
}

/// A parsed and compiled definition.
struct Event {
    progs: Vec<Program>,
    args_size: usize,
    head: usize,
    is_return: bool,
}

fn event(cmd: &str) -> Event {
    let d = match parse(cmd, &CFG) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    };
    let progs: Vec<Program> = d
        .args()
        .map(|a| compile(&a, resolve).unwrap_or_else(|e| panic!("{cmd}: {e}")))
        .collect();
    for (p, a) in progs.iter().zip(d.args()) {
        assert_eq!(p.name(), a.name);
        assert_eq!(
            (p.ty(), p.count(), p.offset()),
            (a.ty, a.count(), usize::from(a.offset))
        );
        assert_eq!(p.field_size(), a.size());
        assert_eq!(p.derefs(), a.fetch.derefs());
    }
    let head = if d.is_return() { EXIT_HEAD } else { ENTRY_HEAD };
    Event {
        progs,
        args_size: d.args_size(),
        head,
        is_return: d.is_return(),
    }
}

impl Event {
    /// Both passes into a record of exactly the size reserved, its head marked.
    fn hit(&self, env: &Fake) -> Vec<u8> {
        let dsize = dynamic_size(&self.progs, env);
        self.hit_into(env, self.head + self.args_size + dsize)
    }

    /// Both passes into a record of `len` bytes (filled with garbage first).
    fn hit_into(&self, env: &Fake, len: usize) -> Vec<u8> {
        let mut rec = vec![0xa5u8; len];
        store(&self.progs, env, &mut rec, self.head, self.args_size);
        // The head is the caller's.
        assert!(rec.iter().take(self.head.min(len)).all(|&b| b == 0xa5));
        rec
    }

    fn render(&self, rec: &[u8]) -> String {
        let mut s = Seq::default();
        render_args(&self.progs, rec, self.head, &mut s).unwrap();
        s.0
    }

    fn show(&self, env: &Fake) -> String {
        self.render(&self.hit(env))
    }

    fn print_fmt(&self) -> String {
        let mut s = String::new();
        write_print_fmt(&self.progs, self.is_return, &mut s).unwrap();
        s
    }

    fn field_type(&self, i: usize) -> String {
        let mut s = String::new();
        self.progs[i].write_field_type(&mut s).unwrap();
        s
    }

    fn field<const N: usize>(&self, rec: &[u8], i: usize) -> [u8; N] {
        let at = self.progs[i].field_offset(self.head);
        rec[at..at + N].try_into().unwrap()
    }

    fn loc(&self, rec: &[u8], i: usize) -> (usize, usize) {
        split_data_loc(u32::from_le_bytes(self.field(rec, i)))
    }
}

#[test]
fn the_example_definition() {
    let e = event(
        "f:g/e vfs_read a=$arg1 s=+0($arg2):string b=@jiffies:u32 c=+8(+0($stack)):b3@2/8 \
         arr=+0($arg1):x16[3]",
    );
    assert_eq!(e.args_size, 8 + 4 + 4 + 1 + 6);
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) a=0x%Lx s=\"%s\" b=%u c=%u arr={0x%x,0x%x,0x%x}", REC->__probe_ip, REC->a, __get_str(s), REC->b, REC->c, REC->arr[0], REC->arr[1], REC->arr[2]"#
    );
    let types: Vec<String> = (0..5).map(|i| e.field_type(i)).collect();
    assert_eq!(types, ["u64", "__data_loc char[]", "u32", "u8", "u16[3]"]);
    let offsets: Vec<usize> = e.progs.iter().map(|p| p.field_offset(ENTRY_HEAD)).collect();
    assert_eq!(offsets, [16, 24, 28, 32, 33]);
    let sizes: Vec<usize> = e.progs.iter().map(Program::field_size).collect();
    assert_eq!(sizes, [8, 4, 4, 1, 6]);
    let signed: Vec<bool> = e.progs.iter().map(Program::is_signed).collect();
    assert_eq!(signed, [false, true, false, false, false]);

    let mut env = Fake::new();
    env.args = vec![K, K + 0x100];
    env.kbytes(K, &[0x34, 0x12, 0xcd, 0xab, 0xff, 0xff]);
    env.kstr(K + 0x100, "hello");
    env.kword(env.sp, K + 0x400);
    env.kbytes(K + 0x408, &[0b1011_1100]);

    assert_eq!(dynamic_size(&e.progs, &env), 6);
    let rec = e.hit(&env);
    assert_eq!(rec.len(), 16 + 23 + 6);
    assert_eq!(e.field::<8>(&rec, 0), K.to_le_bytes());
    assert_eq!(e.loc(&rec, 1), (6, 16 + 23));
    assert_eq!(&rec[39..], b"hello\0");
    assert_eq!(e.field::<4>(&rec, 2), 0x2345u32.to_le_bytes());
    assert_eq!(e.field::<1>(&rec, 3), [7]);
    assert_eq!(
        e.render(&rec),
        format!(" a=0x{K:x} s=\"hello\" b=9029 c=7 arr={{0x1234,0xabcd,0xffff}}")
    );
}

#[test]
fn every_numeric_type() {
    let e = event(
        "f vfs_read a=$arg1:u8 b=$arg1:u16 c=$arg1:u32 d=$arg1:u64 e=$arg1:s8 f=$arg1:s16 \
         g=$arg1:s32 h=$arg1:s64 i=$arg1:x8 j=$arg1:x16 k=$arg1:x32 l=$arg1:x64 m=$arg2:char \
         n=$arg3:symbol o=$arg1",
    );
    let mut env = Fake::new();
    env.args = vec![0xffff_ffff_ffff_fe85, 0x41, 0xffff_ffff_8100_1234];
    let rec = e.hit(&env);
    assert_eq!(
        rec.len(),
        ENTRY_HEAD + 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8 + 1 + 8 + 8
    );
    assert_eq!(
        e.show(&env),
        " a=133 b=65157 c=4294966917 d=18446744073709551237 e=-123 f=-379 g=-379 h=-379 \
         i=0x85 j=0xfe85 k=0xfffffe85 l=0xfffffffffffffe85 m='A' n=<0xffffffff81001234> \
         o=0xfffffffffffffe85"
    );
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) a=%u b=%u c=%u d=%Lu e=%d f=%d g=%d h=%Ld i=0x%x j=0x%x k=0x%x l=0x%Lx m='%c' n=%pS o=0x%Lx", REC->__probe_ip, REC->a, REC->b, REC->c, REC->d, REC->e, REC->f, REC->g, REC->h, REC->i, REC->j, REC->k, REC->l, REC->m, REC->n, REC->o"#
    );
    let types: Vec<String> = (0..15).map(|i| e.field_type(i)).collect();
    assert_eq!(
        types,
        [
            "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "u8",
            "u64", "u64"
        ]
    );
    let signed: Vec<bool> = e.progs.iter().map(Program::is_signed).collect();
    assert_eq!(signed.iter().filter(|&&s| s).count(), 4);
    assert!(signed[4..8].iter().all(|&s| s));

    // Positive and extreme values.
    env.args = vec![0x7f, 0, 0];
    assert!(e
        .show(&env)
        .starts_with(" a=127 b=127 c=127 d=127 e=127 f=127 g=127 h=127 i=0x7f"));
    env.args = vec![0x8000_0000_0000_0000, 0, 0];
    let shown = e.show(&env);
    assert!(shown.contains(" h=-9223372036854775808 "), "{shown}");
    assert!(
        shown.contains(" e=0 ") && shown.contains(" m='\0' "),
        "{shown}"
    );
}

#[test]
fn chars_are_raw_bytes() {
    let e = event("f vfs_read c=+0($arg1):char[4]");
    let mut env = Fake::new();
    env.args = vec![K];
    env.kbytes(K, b"a,\xff'");
    assert_eq!(e.show(&env), " c={'a',',','\u{fffd}','''}");
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) c={'%c','%c','%c','%c'}", REC->__probe_ip, REC->c[0], REC->c[1], REC->c[2], REC->c[3]"#
    );
    assert_eq!(e.field_type(0), "u8[4]");
}

#[test]
fn derefs_nest_and_read_user_memory() {
    let e = event(
        "f vfs_read a=+8(+0($arg1)):u32 b=-8(+16(+0($arg1))):x64 u=+u8($arg2):u32 \
         uk=+8(+u0($arg2)):u16 k=+8($arg2):u32",
    );
    let mut env = Fake::new();
    env.args = vec![K, U];
    env.kword(K, K + 0x100);
    env.kbytes(K + 0x108, &42u32.to_le_bytes());
    env.kword(K + 0x110, K + 0x208);
    env.kword(K + 0x200, 0xdead_beef);
    // The same address in both memories, different contents.
    env.uword(U, K + 0x300);
    env.ubytes(U + 8, &7u32.to_le_bytes());
    env.kword(U + 8, 9);
    env.kbytes(K + 0x308, &0x1234u16.to_le_bytes());
    assert_eq!(e.show(&env), " a=42 b=0xdeadbeef u=7 uk=4660 k=9");
    let store = e.progs[2].store();
    assert_eq!(store.kind, StoreKind::UserMem);
    assert_eq!(
        e.progs[3].derefs(),
        &[Deref {
            offset: 0,
            user: true
        }]
    );
}

#[test]
fn faults_at_every_stage() {
    let e = event(
        "f vfs_read load=+0(+0($arg1)):u32 store=+0(+0($arg2)):u64 bf=+0(+0($arg2)):b4@0/8 \
         s=+0(+0($arg1)):string arr=+0(+0($arg2)):u16[2] ok=$arg3:u8 s2=+0(+0($arg2)):string",
    );
    let mut env = Fake::new();
    // arg1 unreadable (stage 2), arg2 readable as a pointer to nothing (stage 3).
    env.args = vec![K + 0x1000, K, 5];
    env.kword(K, K + 0x2000);
    let rec = e.hit(&env);
    assert_eq!(rec.len(), ENTRY_HEAD + e.args_size);
    // Every numeric field but `ok` is zero, whatever the record held.
    for i in [0, 1, 2, 4] {
        let p = &e.progs[i];
        let at = p.field_offset(ENTRY_HEAD);
        assert!(
            rec[at..at + p.field_size()].iter().all(|&b| b == 0),
            "{}",
            p.name()
        );
    }
    assert_eq!(e.loc(&rec, 3), (0, ENTRY_HEAD + e.args_size));
    assert_eq!(e.loc(&rec, 6), (0, ENTRY_HEAD + e.args_size));
    assert_eq!(
        e.render(&rec),
        " load=0 store=0 bf=0 s=(fault) arr={0,0} ok=5 s2=(fault)"
    );
    // A partial read is no read.
    env.kbytes(K + 0x2000, &[1, 2, 3]);
    assert_eq!(e.field::<8>(&e.hit(&env), 1), [0; 8]);
    assert_eq!(e.field::<4>(&e.hit(&env), 4), [1, 2, 0, 0]);
}

#[test]
fn strings_of_every_kind() {
    let e = event(
        "f vfs_read k=+0($arg1):string u=+0($arg2):ustring uk=+u0($arg2):string c=$comm \
         C=$COMM:string i=\\\"imm\" y=$arg3:symstr z=+8($arg1):symstr o=+3($arg1):string",
    );
    let kinds: Vec<StoreKind> = e.progs.iter().map(|p| p.store().kind).collect();
    use StoreKind::*;
    assert_eq!(
        kinds,
        [String, UserString, UserString, String, String, String, SymString, SymString, String]
    );
    assert_eq!(e.progs[5].origin(), Origin::ImmStr);
    assert_eq!(e.progs[5].imm_str(), "imm");
    let mut env = Fake::new();
    env.args = vec![K, U, 0xffff_ffff_8100_0010];
    env.kstr(K, "kernel");
    env.kword(K + 8, 0xffff_ffff_8100_0020);
    env.ustr(U, "user");
    env.syms = vec![
        (0xffff_ffff_8100_0010, "vfs_read+0x0/0x40"),
        (0xffff_ffff_8100_0020, "f+0x10/0x20 [m]"),
    ];
    // The string at +3 of the kernel pointer: the text from its 4th byte.
    assert_eq!(
        dynamic_size(&e.progs, &env),
        7 + 5 + 5 + 5 + 5 + 4 + 18 + 16 + 4
    );
    let rec = e.hit(&env);
    assert_eq!(
        e.render(&rec),
        " k=\"kernel\" u=\"user\" uk=\"user\" c=\"bash\" C=\"bash\" i=\"imm\" \
         y=\"vfs_read+0x0/0x40\" z=\"f+0x10/0x20 [m]\" o=\"nel\""
    );
    // The data follow each other, each data_loc counting from the start of the record.
    let mut at = ENTRY_HEAD + e.args_size;
    for (i, len) in [7, 5, 5, 5, 5, 4, 18, 16, 4].into_iter().enumerate() {
        assert_eq!(e.loc(&rec, i), (len, at), "{i}");
        assert_eq!(rec[at + len - 1], 0);
        at += len;
    }
    assert_eq!(at, rec.len());
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) k=\"%s\" u=\"%s\" uk=\"%s\" c=\"%s\" C=\"%s\" i=\"%s\" y=\"%s\" z=\"%s\" o=\"%s\"", REC->__probe_ip, __get_str(k), __get_str(u), __get_str(uk), __get_str(c), __get_str(C), __get_str(i), __get_str(y), __get_str(z), __get_str(o)"#
    );
    assert!((0..9).all(|i| e.field_type(i) == "__data_loc char[]"));

    // An address without a symbol shows as upstream's sprint_symbol() shows it.
    env.args[2] = 0x1234;
    assert!(e.show(&env).contains(" y=\"0x1234\" "));
    // The kernel pointer read from user memory is not in user memory.
    env.args[1] = K;
    assert!(e.show(&env).contains(" u=(fault) uk=(fault) "));
    // An empty user string is a fault, as upstream shows it; an empty kernel string is not.
    env.args[1] = U + 0x200;
    env.ustr(U + 0x200, "");
    env.kstr(K, "");
    assert!(
        e.show(&env).starts_with(" k=\"\" u=(fault) uk=(fault) "),
        "{}",
        e.show(&env)
    );
}

#[test]
fn dentry_shorthands() {
    let e = event("f vfs_read f=$arg1:%pD d=+8($arg2):%pd");
    assert_eq!(
        e.progs[0].derefs(),
        &[
            Deref {
                offset: 0x48,
                user: false
            },
            Deref {
                offset: 0x28,
                user: false
            }
        ]
    );
    let mut env = Fake::new();
    env.args = vec![K, K + 0x800];
    env.kword(K + 0x48, K + 0x100); // file->f_path.dentry
    env.kword(K + 0x128, K + 0x200); // dentry->d_name.name
    env.kstr(K + 0x200, "passwd");
    env.kword(K + 0x808, K + 0x100);
    assert_eq!(e.show(&env), " f=\"passwd\" d=\"passwd\"");
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) f=\"%s\" d=\"%s\"", REC->__probe_ip, __get_str(f), __get_str(d)"#
    );
}

#[test]
fn bitfields() {
    let e = event(
        "f vfs_read a=$arg1:b3@2/8 b=$arg1:b64@0/64 c=$arg1:b1@63/64 d=$arg1:b32@0/32 \
         e=$arg1:b8@8/16 f=+0($arg2):b4@4/8[3] g=$arg1:b1@0/8 h=$arg1:b16@48/64",
    );
    let mut env = Fake::new();
    env.args = vec![0x8765_4321_dead_a5bc, K];
    env.kbytes(K, &[0x12, 0xab, 0xf0]);
    let bf = e.progs[0].bitfield().unwrap();
    assert_eq!((bf.basesize, bf.lshift, bf.rshift), (1, 3, 5));
    assert_eq!(
        e.show(&env),
        " a=7 b=9756277980516951484 c=1 d=3735922108 e=165 f={1,10,15} g=0 h=34661"
    );
    assert_eq!(e.field_type(5), "u8[3]");
}

#[test]
fn numeric_arrays() {
    let e = event("f vfs_read a=+0($arg1):u8[10] b=-2(+0($arg1)):x16[3] c=+0($arg2):s32[2]");
    let mut env = Fake::new();
    env.args = vec![K, K + 0x2000];
    env.kbytes(K, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    env.kword(K, K + 0x102);
    env.kbytes(K + 0x100, &[1, 0, 2, 0, 0xff, 0xff]);
    env.kbytes(K + 0x2000, &[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0]);
    let a0 = (K + 0x102).to_le_bytes();
    assert_eq!(
        e.show(&env),
        format!(
            " a={{{},{},{},{},{},{},{},{},8,9}} b={{0x1,0x2,0xffff}} c={{-1,1}}",
            a0[0], a0[1], a0[2], a0[3], a0[4], a0[5], a0[6], a0[7]
        )
    );
    assert_eq!(e.field_type(0), "u8[10]");
    assert_eq!(e.field_type(2), "s32[2]");
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) a={%u,%u,%u,%u,%u,%u,%u,%u,%u,%u} b={0x%x,0x%x,0x%x} c={%d,%d}", REC->__probe_ip, REC->a[0], REC->a[1], REC->a[2], REC->a[3], REC->a[4], REC->a[5], REC->a[6], REC->a[7], REC->a[8], REC->a[9], REC->b[0], REC->b[1], REC->b[2], REC->c[0], REC->c[1]"#
    );
    // An element that faults is 0; the others are read.
    env.kmem.remove(&(K + 0x105));
    assert!(e.show(&env).contains(" b={0x1,0x2,0x0} "));
}

#[test]
fn string_arrays() {
    let e = event("f vfs_read s=+0($arg1):string[3] u=+8($arg2):ustring[2] n=$arg3:u8");
    assert_eq!(e.field_type(0), "__data_loc char[][3]");
    assert_eq!(e.field_type(1), "__data_loc char[][2]");
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) s={\"%s\",\"%s\",\"%s\"} u={\"%s\",\"%s\"} n=%u", REC->__probe_ip, __get_str(s[0]), __get_str(s[1]), __get_str(s[2]), __get_str(u[0]), __get_str(u[1]), REC->n"#
    );
    let mut env = Fake::new();
    env.args = vec![K, K + 0x1000, 3];
    // argv-like arrays of pointers.
    env.kword(K, K + 0x100);
    env.kword(K + 8, K + 0x200);
    env.kword(K + 16, K + 0x300);
    env.kstr(K + 0x100, "one");
    env.kstr(K + 0x200, "two");
    env.kstr(K + 0x300, "three");
    env.kword(K + 0x1008, U + 0x100);
    env.kword(K + 0x1010, U + 0x200);
    env.ustr(U + 0x100, "uno");
    env.ustr(U + 0x200, "dos");
    assert_eq!(dynamic_size(&e.progs, &env), 4 + 4 + 6 + 4 + 4);
    let rec = e.hit(&env);
    assert_eq!(
        e.render(&rec),
        " s={\"one\",\"two\",\"three\"} u={\"uno\",\"dos\"} n=3"
    );
    let base = ENTRY_HEAD + e.args_size;
    let locs: Vec<u32> = (0..5)
        .map(|j| {
            u32::from_le_bytes(
                rec[ENTRY_HEAD + 4 * j..ENTRY_HEAD + 4 * j + 4]
                    .try_into()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        locs,
        [
            make_data_loc(4, base),
            make_data_loc(4, base + 4),
            make_data_loc(6, base + 8),
            make_data_loc(4, base + 14),
            make_data_loc(4, base + 18)
        ]
    );

    // A string that cannot be read is a fault; the next elements still are read.
    env.kmem.remove(&(K + 0x200));
    assert_eq!(dynamic_size(&e.progs, &env), 4 + 6 + 4 + 4);
    assert_eq!(
        e.show(&env),
        " s={\"one\",(fault),\"three\"} u={\"uno\",\"dos\"} n=3"
    );
    // A pointer that cannot be read ends the array: the elements before it stay.
    env.kmem.remove(&(K + 8));
    assert_eq!(dynamic_size(&e.progs, &env), 4 + 4 + 4);
    let rec = e.hit(&env);
    assert_eq!(
        e.render(&rec),
        " s={\"one\",(fault),(fault)} u={\"uno\",\"dos\"} n=3"
    );
    assert_eq!(e.loc(&rec, 1), (4, base + 4));
    // The first pointer: the whole array faults.
    env.args[0] = K + 0x5000;
    assert_eq!(
        e.show(&env),
        " s={(fault),(fault),(fault)} u={\"uno\",\"dos\"} n=3"
    );
}

#[test]
fn string_array_without_deref_fails_whole() {
    // Upstream accepts it, then fails the argument (-EILSEQ) when it redoes a dereference that
    // is not there.
    let e = event("f vfs_read s=\\0xffff888010000000:string[2]");
    assert!(e.progs[0].derefs().is_empty());
    let mut env = Fake::new();
    env.kstr(K, "x");
    assert_eq!(dynamic_size(&e.progs, &env), 0);
    assert_eq!(e.show(&env), " s={(fault),(fault)}");
}

#[test]
fn exit_probes_read_entry_slots_and_retval() {
    let e = event("f vfs_read%return a=$arg3 b=+0($arg1):u8 c=$arg3:s8 r=$retval:s32");
    assert!(e.is_return);
    assert_eq!(e.head, EXIT_HEAD);
    assert_eq!(e.progs[0].origin(), Origin::EntryArg { arg: 2, slot: 0 });
    assert_eq!(e.progs[1].origin(), Origin::EntryArg { arg: 0, slot: 1 });
    let mut env = Fake::new();
    env.slots = vec![0xff, K];
    env.args = vec![1, 2, 3];
    env.retval = (-22i64) as u64;
    env.kbytes(K, &[200]);
    let rec = e.hit(&env);
    assert_eq!(rec.len(), EXIT_HEAD + 8 + 1 + 1 + 4);
    assert_eq!(e.render(&rec), " a=0xff b=200 c=-1 r=-22");
    assert_eq!(
        e.print_fmt(),
        r#""(%lx <- %lx) a=0x%Lx b=%u c=%d r=%d", REC->__probe_func, REC->__probe_ret_ip, REC->a, REC->b, REC->c, REC->r"#
    );
    // $retval alone makes an exit probe.
    let e = event("f vfs_read $retval");
    assert!(e.is_return);
    assert_eq!(
        e.print_fmt(),
        r#""(%lx <- %lx) arg1=0x%Lx", REC->__probe_func, REC->__probe_ret_ip, REC->arg1"#
    );
}

#[test]
fn tracepoint_args_and_stack() {
    let e = event("t sched_switch a=$arg1 s=$stack z=$stack2:u32 d=+0($stack9):u8 m=$stack0");
    assert_eq!(e.progs[0].origin(), Origin::Arg(1));
    let mut env = Fake::new();
    env.args = vec![0, 77];
    env.stack = vec![0x11, 0x22, 0x33];
    // $stack9 is off the stack: 0, whose dereference faults.
    assert_eq!(
        e.show(&env),
        format!(" a=0x4d s=0x{:x} z=51 d=0 m=0x11", env.sp)
    );
    assert_eq!(
        e.print_fmt().split(',').next().unwrap(),
        r#""(%lx) a=0x%Lx s=0x%Lx z=%u d=%u m=0x%Lx""#
    );
}

#[test]
fn symbols_and_immediates() {
    let e = event(
        "f vfs_read a=@jiffies:u32 b=@jiffies+4:u32 c=@0xffffffff82000000 i=\\-1:s16 j=\\0x10",
    );
    assert_eq!(e.progs[0].origin(), Origin::Imm(JIFFIES));
    assert_eq!(e.progs[1].origin(), Origin::Imm(JIFFIES + 4));
    let env = Fake::new();
    assert_eq!(e.show(&env), " a=9029 b=1 c=0x100002345 i=-1 j=0x10");

    let unknown = |cmd| {
        let d = match parse(cmd, &CFG) {
            Ok(Command::Add(d)) => d,
            other => panic!("{other:?}"),
        };
        let a = d.args().next().unwrap();
        compile(&a, resolve)
    };
    assert_eq!(
        unknown("f vfs_read @nosuch"),
        Err(CompileError::UnknownSymbol)
    );
    assert_eq!(
        unknown("f vfs_read @zero"),
        Err(CompileError::UnknownSymbol)
    );
    assert_eq!(CompileError::UnknownSymbol.errno(), -2);
    assert_eq!(
        unknown("f vfs_read @jiffies+x"),
        Err(CompileError::BadSymbolOffset(Errno::Inval))
    );
    assert_eq!(unknown("f vfs_read @jiffies+x").unwrap_err().errno(), -22);
    // Offsets wrap as an unsigned long.
    let e = event("f vfs_read a=@low-16:u8 b=@jiffies-0x10:u8");
    assert_eq!(e.progs[0].origin(), Origin::Imm(u64::MAX - 7));
    assert_eq!(e.progs[1].origin(), Origin::Imm(JIFFIES - 16));
}

#[test]
fn short_records_cut_strings() {
    let e = event("f vfs_read a=+0($arg1):string b=+0($arg2):string n=$arg3:u32");
    let mut env = Fake::new();
    env.args = vec![K + 0x100, K + 0x200, 9];
    env.kstr(K + 0x100, "first");
    env.kstr(K + 0x200, "second");
    let fixed = ENTRY_HEAD + e.args_size;
    assert_eq!(dynamic_size(&e.progs, &env), 13);
    // Room for "fir" and its NUL only: the second string has none left.
    let rec = e.hit_into(&env, fixed + 4);
    assert_eq!(e.loc(&rec, 0), (4, fixed));
    assert_eq!(e.loc(&rec, 1), (0, fixed + 4));
    assert_eq!(e.render(&rec), " a=\"fir\" b=(fault) n=9");
    // Room for the first only.
    let rec = e.hit_into(&env, fixed + 6);
    assert_eq!(e.render(&rec), " a=\"first\" b=(fault) n=9");
    // One byte: an empty string.
    assert_eq!(
        e.render(&e.hit_into(&env, fixed + 1)),
        " a=\"\" b=(fault) n=9"
    );
    // More room than needed is left as it was.
    let rec = e.hit_into(&env, fixed + 20);
    assert_eq!(e.render(&rec), " a=\"first\" b=\"second\" n=9");
    assert!(rec[fixed + 13..].iter().all(|&b| b == 0xa5));
    // Records cut within the fixed fields, or the head: nothing written out of bounds, and
    // what is missing renders as a fault.
    for len in 0..fixed {
        let rec = e.hit_into(&env, len);
        let shown = e.render(&rec);
        assert!(shown.starts_with(" a="), "{shown}");
        if len < fixed {
            assert!(shown.ends_with("(fault)"), "{len}: {shown}");
        }
    }
    // An immediate string cut short, and a symbol string.
    let e = event("f vfs_read i=\\\"immediate\" y=$arg1:symstr");
    env.args = vec![0xffff_ffff_8100_0010];
    env.syms = vec![(0xffff_ffff_8100_0010, "vfs_read+0x0/0x40")];
    let fixed = ENTRY_HEAD + e.args_size;
    assert_eq!(dynamic_size(&e.progs, &env), 10 + 18);
    assert_eq!(
        e.render(&e.hit_into(&env, fixed + 5)),
        " i=\"imme\" y=(fault)"
    );
    assert_eq!(
        e.render(&e.hit_into(&env, fixed + 15)),
        " i=\"immediate\" y=\"vfs_\""
    );
}

#[test]
fn long_strings_take_at_most_max_string_size() {
    let e = event("f vfs_read a=+0($arg1):string b=+0($arg2):string");
    let mut env = Fake::new();
    env.args = vec![K + 0x1000, K + 0x200];
    let long: String = "x".repeat(5000);
    env.kstr(K + 0x1000, &long);
    env.kstr(K + 0x200, "b");
    assert_eq!(dynamic_size(&e.progs, &env), MAX_STRING_SIZE + 2);
    let fixed = ENTRY_HEAD + e.args_size;
    // Even given more room, the long one is cut where the first pass measured it.
    let rec = e.hit_into(&env, fixed + 3 * MAX_STRING_SIZE);
    assert_eq!(e.loc(&rec, 0), (MAX_STRING_SIZE, fixed));
    assert_eq!(e.loc(&rec, 1), (2, fixed + MAX_STRING_SIZE));
    let shown = e.render(&rec);
    assert!(shown.ends_with(&format!("{}\" b=\"b\"", "x".repeat(MAX_STRING_SIZE - 1))));
}

#[test]
fn data_loc_encoding() {
    assert_eq!(make_data_loc(6, 39), (6 << 16) | 39);
    assert_eq!(split_data_loc((6 << 16) | 39), (6, 39));
    assert_eq!(make_data_loc(0x1_0001, 0x1_0002), (1 << 16) | 2);
    // No string data beyond what a data_loc can address.
    let e = event("f vfs_read a=$comm");
    let env = Fake::new();
    let rec = e.hit_into(&env, 0x1_0000 + 100);
    assert_eq!(e.loc(&rec, 0), (5, ENTRY_HEAD + 4));
}

#[test]
fn corrupt_records_render_faults() {
    let e = event("f vfs_read s=+0($arg1):string t=+0($arg1):string[2] n=$arg1:u16");
    let head = ENTRY_HEAD;
    let mut rec = vec![0u8; head + e.args_size + 8];
    let put = |rec: &mut Vec<u8>, i: usize, v: u32| {
        rec[head + 4 * i..head + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    };
    rec[head + e.args_size..].copy_from_slice(b"ok\0nonul");
    let data = head + e.args_size;
    put(&mut rec, 0, make_data_loc(3, data));
    put(&mut rec, 1, make_data_loc(100, data)); // past the end
    put(&mut rec, 2, make_data_loc(5, data + 3)); // no NUL: cut at the length
    assert_eq!(e.render(&rec), " s=\"ok\" t={(fault),\"nonul\"} n=0");
    put(&mut rec, 0, make_data_loc(1, 0xffff));
    put(&mut rec, 2, make_data_loc(0, data));
    assert_eq!(e.render(&rec), " s=(fault) t={(fault),(fault)} n=0");
    for len in 0..rec.len() {
        let mut s = Seq::default();
        render_args(&e.progs, &rec[..len], head, &mut s).unwrap();
    }
    // A head larger than the record.
    let mut s = Seq::default();
    render_args(&e.progs, &rec, usize::MAX, &mut s).unwrap();
    assert_eq!(s.0, " s=(fault) t={(fault),(fault)} n=(fault)");
}

#[test]
fn store_never_writes_out_of_bounds() {
    let e = event("f vfs_read a=$arg1 s=$comm b=+0($arg1):u8[4]");
    let env = Fake::new();
    let mut rec = vec![0xa5u8; 64];
    store(&e.progs, &env, &mut rec[..10], ENTRY_HEAD, e.args_size);
    assert!(rec.iter().all(|&b| b == 0xa5));
    store(&e.progs, &env, &mut rec, usize::MAX - 2, e.args_size);
    store(&e.progs, &env, &mut rec, ENTRY_HEAD, usize::MAX);
    store(&e.progs, &env, &mut [], 0, 0);
}

#[test]
fn program_is_self_contained() {
    let cmd = String::from("f vfs_read abcdefghijklmnopqrstuvwxyz012345=\\\"immediate_text\"");
    let e = event(&cmd);
    drop(cmd);
    assert_eq!(e.progs[0].name(), "abcdefghijklmnopqrstuvwxyz012345");
    assert_eq!(e.progs[0].imm_str(), "immediate_text");
    let copy = e.progs[0];
    assert_eq!(copy, e.progs[0]);
    assert_eq!(FetchType::String, copy.ty());
}

#[test]
fn output_sinks_get_bytes() {
    // A sink that takes raw bytes sees them unchanged.
    struct Raw(Vec<u8>);
    impl fmt::Write for Raw {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    impl Out for Raw {
        fn symbol(&mut self, _: u64) -> fmt::Result {
            self.0.extend_from_slice(b"sym");
            Ok(())
        }
        fn bytes(&mut self, b: &[u8]) -> fmt::Result {
            self.0.extend_from_slice(b);
            Ok(())
        }
    }
    let e = event("f vfs_read s=+0($arg1):string c=$arg2:char y=$arg2:symbol");
    let mut env = Fake::new();
    env.args = vec![K + 0x10, 0xe9];
    env.kbytes(K + 0x10, b"caf\xe9\0");
    let rec = e.hit(&env);
    let mut raw = Raw(Vec::new());
    render_args(&e.progs, &rec, ENTRY_HEAD, &mut raw).unwrap();
    assert_eq!(raw.0, b" s=\"caf\xe9\" c='\xe9' y=sym");
    assert_eq!(e.render(&rec), " s=\"caf\u{fffd}\" c='\u{fffd}' y=<0xe9>");
}

#[test]
fn symbol_arrays_and_refused_symstr_arrays() {
    let e = event("f vfs_read y=+0($arg1):symbol[2]");
    assert_eq!(e.field_type(0), "u64[2]");
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) y={%pS,%pS}", REC->__probe_ip, REC->y[0], REC->y[1]"#
    );
    let mut env = Fake::new();
    env.args = vec![K];
    env.kword(K, 0xffff_ffff_8100_0010);
    env.kword(K + 8, 0xffff_ffff_8100_0020);
    assert_eq!(
        e.show(&env),
        " y={<0xffffffff81000010>,<0xffffffff81000020>}"
    );
    // Upstream refuses arrays of symstr (its array loop would not move their data_loc).
    assert!(parse("f vfs_read y=+0($arg1):symstr[2]", &CFG).is_err());
    assert!(parse("f vfs_read y=+u0($arg1):u8[2]", &CFG).is_err());
}

#[test]
fn tracepoint_probes_print_as_entries() {
    let e = event("t sched_switch p=+0($arg2):string");
    assert!(!e.is_return);
    assert_eq!(
        e.print_fmt(),
        r#""(%lx) p=\"%s\"", REC->__probe_ip, __get_str(p)"#
    );
    // No arguments at all.
    let e = event("f vfs_read");
    assert_eq!(e.print_fmt(), r#""(%lx)", REC->__probe_ip"#);
    assert_eq!(e.show(&Fake::new()), "");
}

/// The layout fields of a program: what `define_fields`, `print` and the print format read.
fn layout(p: &Program) -> (&str, FetchType, u8, usize, usize) {
    (p.name(), p.ty(), p.count(), p.offset(), p.field_size())
}

/// A probe appended to an event (same names and types as its first definition, other fetches)
/// records through its own programs into the event's layout, which the first definition's
/// programs describe: the event module keeps one layout per event and the programs per probe.
#[test]
fn appended_probes_fill_the_first_definitions_layout() {
    let first = event("f:g/e do_sys_openat2 v=$arg1:s32 s=$comm");
    let second = event("f:g/e vfs_open v=+0($arg2):s32 s=+0($arg2):string");
    assert_eq!(
        first.progs.iter().map(layout).collect::<Vec<_>>(),
        second.progs.iter().map(layout).collect::<Vec<_>>()
    );
    assert_eq!(first.args_size, second.args_size);
    assert_eq!(first.print_fmt(), second.print_fmt());
    assert_ne!(first.progs, second.progs);

    let mut env = Fake::new();
    env.args = vec![(-100i64) as u64, K];
    env.kstr(K, "/tmp/file");
    // The second probe's hit: its own string sizes the record, its own programs fill it.
    assert_eq!(dynamic_size(&second.progs, &env), 10);
    assert_eq!(dynamic_size(&first.progs, &env), 5);
    let rec = second.hit(&env);
    // "/tmp" as a little-endian s32.
    assert_eq!(first.render(&rec), " v=1886221359 s=\"/tmp/file\"");
    assert_eq!(first.render(&first.hit(&env)), " v=-100 s=\"bash\"");
}

/// Exit probes of one event that read different `$argN`: each saves its own arguments at entry
/// (its own `entry_args`), in slots its own programs read.
#[test]
fn appended_exit_probes_read_their_own_entry_slots() {
    const FIRST: &str = "f:g/x do_sys_openat2%return w=$arg2:x64 r=$retval:s32";
    const SECOND: &str = "f:g/x do_sys_openat2%return w=$arg1:x64 r=$retval:s32";
    let [d1, d2] = [FIRST, SECOND].map(|cmd| match parse(cmd, &CFG) {
        Ok(Command::Add(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    });
    assert_eq!(d2.diff_arg_types(d1.args().map(|a| a.sig())), None);
    assert_eq!(d1.entry_args(), [1]);
    assert_eq!(d2.entry_args(), [0]);
    let (first, second) = (event(FIRST), event(SECOND));
    assert_eq!(
        first.progs[0].origin(),
        Origin::EntryArg { arg: 1, slot: 0 }
    );
    assert_eq!(
        second.progs[0].origin(),
        Origin::EntryArg { arg: 0, slot: 0 }
    );
    // What each probe's entry saved in its slot 0: argument 2 for the first, 1 for the second.
    let args = [0xd1u64, 0xa2];
    let mut env = Fake::new();
    env.retval = 3;
    env.slots = d1
        .entry_args()
        .iter()
        .map(|&a| args[usize::from(a)])
        .collect();
    assert_eq!(first.render(&first.hit(&env)), " w=0xa2 r=3");
    env.slots = d2
        .entry_args()
        .iter()
        .map(|&a| args[usize::from(a)])
        .collect();
    assert_eq!(first.render(&second.hit(&env)), " w=0xd1 r=3");
}
