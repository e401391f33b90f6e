// SPDX-License-Identifier: GPL-2.0

//! Fixed fields: the example definition, every numeric type, dereferences, faults, bitfields,
//! numeric arrays, exit and tracepoint probes, symbols and immediates.

use super::*;

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
            user: true,
            cpu: false
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

#[test]
fn current_and_this_cpu() {
    // A per-CPU variable at per-CPU address 0x2000 ("low" resolves to 8: the symbol's
    // address is the per-CPU address), this CPU's area at K.
    let e = event(
        "f vfs_read c=$current p=this_cpu_ptr(@low) r=this_cpu_read(@low):u32 \
         a=this_cpu_read($arg1):u16 d=+4($current):u8 s=this_cpu_ptr($arg2)",
    );
    let mut env = Fake::new();
    env.current = K + 0x800;
    env.cpu_offset = K;
    env.args = vec![0x10, 0];
    env.kbytes(K + 8, &[0x78, 0x56, 0x34, 0x12]);
    env.kbytes(K + 0x10, &[0xcd, 0xab]);
    env.kbytes(K + 0x804, &[0x42]);
    assert_eq!(
        e.show(&env),
        format!(
            " c=0x{:x} p=0x{:x} r=305419896 a=43981 d=66 s=0x0",
            K + 0x800,
            K + 8
        )
    );
    // A null per-CPU address has no copy: the field reads as a fault (0), not as the offset.
    env.args = vec![0, 0];
    assert!(e.show(&env).contains(" a=0 "));
}
