// SPDX-License-Identifier: GPL-2.0

//! Probes appended to an event: their own programs, the first definition's layout.

use super::*;

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
