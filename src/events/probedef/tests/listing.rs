// SPDX-License-Identifier: GPL-2.0

//! Removals, command lines, and the `dynamic_events` listing round trip.

use super::*;

#[test]
fn removals() {
    let r = remove("-:fprobes/myprobe");
    assert_eq!(
        (r.group(), r.event(), r.words().count()),
        (Some("fprobes"), "myprobe", 0)
    );
    let r = remove("-:myprobe");
    assert_eq!((r.group(), r.event()), (None, "myprobe"));
    let r = remove("-:grp/");
    assert_eq!((r.group(), r.event()), (Some("grp"), ""));
    let r = remove("!f:grp/ev");
    assert_eq!((r.group(), r.event()), (Some("grp"), "ev"));
    // '.' separates nothing here.
    assert_eq!(remove("-:a.b").event(), "a.b");
    for bad in ["-", "-:", "- :foo", "-x:foo", "!", "!foo"] {
        assert_eq!(parse(bad, &CFG), Err(Error::BadRemove), "{bad:?}");
    }

    // Removal, group, event, symbol, and whether it removes that probe (with no arguments).
    let cases = [
        ("-:myprobe", "fprobes", "myprobe", "vfs_read", true),
        ("-:myprobe", "fprobes", "other", "vfs_read", false),
        ("-:fprobes/", "fprobes", "other", "vfs_read", true),
        ("-:kprobes/", "fprobes", "other", "vfs_read", false),
        ("-:myprobe vfs_read", "g", "myprobe", "vfs_read", true),
        ("-:myprobe vfs_write", "g", "myprobe", "vfs_read", false),
    ];
    let none: [(&str, &str); 0] = [];
    for (cmd, group, event, symbol, removes) in cases {
        assert_eq!(
            remove(cmd).matches(group, event, symbol, none),
            removes,
            "{cmd:?}"
        );
    }
    // The arguments given must match the probe's, as they are listed.
    let d = def("f:myprobe vfs_read a=$arg1 f=$arg2:%pD");
    for (cmd, removes) in [
        ("-:myprobe vfs_read a=$arg1", true),
        (
            "-:myprobe vfs_read a=$arg1 f=+0x0(+0x28(+0x48($arg2))):string",
            true,
        ),
        ("-:myprobe vfs_read a=$arg2", false),
        ("-:myprobe vfs_read a=$arg1 f=$arg2:%pD", false),
        ("-:myprobe vfs_read a=$arg1 f=x g=y", false),
    ] {
        let args = d.args().map(|a| (a.name, a.comm));
        let matches = remove(cmd).matches("fprobes", "myprobe", "vfs_read", args);
        assert_eq!(matches, removes, "{cmd:?}");
    }
    // Symbols compare cut to 63 bytes.
    let long = "s".repeat(70);
    let cmd = format!("-:ev {}", &long[..63]);
    assert!(remove(&cmd).matches("g", "ev", &long, none));
}

#[test]
fn command_lines() {
    let lines: Vec<_> = commands("f a # comment\n\n-:x\nf b").collect();
    assert_eq!(lines, ["f a ", "", "-:x", "f b"]);
    assert_eq!(commands("f a\n").count(), 1);
    assert_eq!(commands("").count(), 0);
}

#[test]
fn listing_round_trips() {
    let cases = [
        ("f vfs_read", "f:fprobes/vfs_read__entry vfs_read"),
        (
            "f10 vfs_read $retval",
            "f10:fprobes/vfs_read__exit vfs_read%return arg1=$retval",
        ),
        (
            "f:g.e vfs_read%return $arg2 x=+8($arg1):u32[2]",
            "f:g/e vfs_read%return arg1=$arg2 x=+8($arg1):u32[2]",
        ),
        (
            "t sched_switch $arg1:u32",
            "t:tracepoints/sched_switch sched_switch arg1=$arg1:u32",
        ),
        (
            "f vfs_read f=$arg1:%pD",
            "f:fprobes/vfs_read__entry vfs_read f=+0x0(+0x28(+0x48($arg1))):string",
        ),
    ];
    for (cmd, listed) in cases {
        let Ok(Command::Add(d)) = parse(cmd, &CFG) else {
            continue;
        };
        let shown = d.to_string();
        assert_eq!(shown, listed, "{cmd:?}");
        let again = def(&shown);
        assert!(same(&d, &again), "{cmd:?} -> {shown:?}");
        assert_eq!(again.to_string(), shown);
    }
}
