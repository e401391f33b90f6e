// SPDX-License-Identifier: GPL-2.0

//! Strings in the dynamic data: every kind, `%pd`/`%pD`, arrays of them, and records too short
//! or strings too long for what the first pass measured.

use super::*;

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
    assert_eq!(e.progs[5].origin(), Origin::ImmStr(()));
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
                user: false,
                cpu: false
            },
            Deref {
                offset: 0x28,
                user: false,
                cpu: false
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
