// SPDX-License-Identifier: GPL-2.0

//! Records as bytes: `__data_loc` words, corrupt records, writes kept in bounds, programs that
//! outlive their command, and output sinks.

use super::*;

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
