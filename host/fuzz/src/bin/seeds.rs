// SPDX-License-Identifier: GPL-2.0

//! Writes the seed corpora of the coverage-guided targets, `host/fuzz/seeds/TARGET/seed-*`, and
//! their dictionaries, `host/fuzz/seeds/TARGET.dict`, from the inputs the tests already use:
//!
//! ```sh
//! cargo run -p ufgraph-fuzz --bin seeds
//! ```
//!
//! - probedef: the mutation fuzzers' seeds and every command the parser's and the record
//!   layer's host tests write (`src/events/probedef/tests/`, `src/events/program/tests/`);
//! - fetch: the definitions among those, each followed by a NUL and bytes for its hits;
//! - shadow: operation sequences like the shadow stack's tests, images of the stacks they
//!   build, and those stacks with words corrupted where the readers look first;
//! - symbols: the lines of the symbol parsers' tests;
//! - btf: the BTF reader's test blobs (clang's, pahole's split pair, both byte orders) and
//!   small blobs whose types loop (`ufgraph_fuzz::btf::seeds`).
//!
//! Files other than `seed-*` (crash inputs kept as regressions) are left alone; the output is
//! the same on every run, and the committed seeds are what it writes.

use std::collections::BTreeSet;
use std::fs;

use ufgraph_fuzz::common::{Rng, Source, SEEDS, TOKENS};
use ufgraph_fuzz::cov::seed_dir;
use ufgraph_fuzz::event::EVENT_SEEDS;
use ufgraph_fuzz::{btf, shadow, symbols};
use ufgraph_pure::events::probedef::{parse, Command};

/// The host tests of the definition parser and of the record layer, whose commands seed the
/// parser's targets.
const TEST_SOURCES: [&str; 14] = [
    include_str!("../../../../src/events/probedef/tests/mod.rs"),
    include_str!("../../../../src/events/probedef/tests/upstream.rs"),
    include_str!("../../../../src/events/probedef/tests/heads.rs"),
    include_str!("../../../../src/events/probedef/tests/fetchargs.rs"),
    include_str!("../../../../src/events/probedef/tests/types.rs"),
    include_str!("../../../../src/events/probedef/tests/fields.rs"),
    include_str!("../../../../src/events/probedef/tests/listing.rs"),
    include_str!("../../../../src/events/probedef/tests/btf.rs"),
    include_str!("../../../../src/events/probedef/tests/btf_split.rs"),
    include_str!("../../../../src/events/probedef/tests/typecast.rs"),
    include_str!("../../../../src/events/program/tests/mod.rs"),
    include_str!("../../../../src/events/program/tests/values.rs"),
    include_str!("../../../../src/events/program/tests/strings.rs"),
    include_str!("../../../../src/events/program/tests/records.rs"),
];

/// Skips the raw string literal (`r"..."`, `r#"..."#`) that starts after the `r` just read, if
/// one does: its quotes must not be taken for plain strings' (an odd number of them would
/// leave every later literal inside out, and which ones depended on how the tests were split
/// into files). Returns whether it skipped one.
fn skip_raw(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    let mut ahead = chars.clone();
    let mut hashes = 0;
    while ahead.next_if_eq(&'#').is_some() {
        hashes += 1;
    }
    if ahead.next() != Some('"') {
        return false;
    }
    // Up to a quote followed by as many '#'.
    while let Some(c) = ahead.next() {
        if c == '"' && (0..hashes).all(|_| ahead.next_if_eq(&'#').is_some()) {
            *chars = ahead;
            return true;
        }
    }
    *chars = ahead;
    true
}

/// The string literals of Rust source (plain ones; escapes decoded; raw strings skipped).
fn literals(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = src.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        if c == 'r' && !(prev.is_alphanumeric() || prev == '_') && skip_raw(&mut chars) {
            prev = '"';
            continue;
        }
        // A quote that opens a string: not a char literal '"'.
        if c != '"' || prev == '\'' {
            prev = c;
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('0') => s.push('\0'),
                    Some('\n') => {
                        while chars.peek().is_some_and(|c| c.is_whitespace()) {
                            chars.next();
                        }
                    }
                    Some('x') => {
                        let hex: String = chars.by_ref().take(2).collect();
                        s.push(u8::from_str_radix(&hex, 16).map_or('?', char::from));
                    }
                    Some('u') => {
                        let code: String = chars
                            .by_ref()
                            .take_while(|&c| c != '}')
                            .filter(|&c| c != '{')
                            .collect();
                        s.push(
                            u32::from_str_radix(&code, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .unwrap_or('?'),
                        );
                    }
                    Some(other) => s.push(other),
                    None => break,
                },
                _ => s.push(c),
            }
        }
        out.push(s);
        prev = '"';
    }
    out
}

/// The commands the tests write: literals that start as a command does. Tests of error
/// positions mark the caret with '^' inside the command; it goes.
fn test_commands() -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for src in TEST_SOURCES {
        for s in literals(src) {
            if s.len() >= 2 && s.starts_with(['f', 't', '-', '!']) && !s.contains("{}") {
                set.insert(s.replace('^', ""));
            }
        }
    }
    set
}

/// FNV-1a, for file names that follow the content.
fn name(data: &[u8]) -> String {
    let h = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("seed-{h:016x}")
}

fn write(target: &str, inputs: &[Vec<u8>]) -> std::io::Result<()> {
    let dir = seed_dir(target);
    fs::create_dir_all(&dir)?;
    for entry in fs::read_dir(&dir)? {
        let path = entry?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("seed-"))
        {
            fs::remove_file(path)?;
        }
    }
    let mut names = BTreeSet::new();
    for data in inputs {
        if names.insert(name(data)) {
            fs::write(dir.join(name(data)), data)?;
        }
    }
    println!("{}: {} seeds", dir.display(), names.len());
    Ok(())
}

/// A libFuzzer dictionary: one quoted token per line, bytes outside printable ASCII escaped.
fn write_dict(target: &str, tokens: &[&str]) -> std::io::Result<()> {
    let mut text = String::from(
        "# Tokens of the grammar (host/fuzz/src/common.rs), written by the `seeds` binary.\n",
    );
    for t in tokens {
        text.push('"');
        for &b in t.as_bytes() {
            match b {
                b'"' | b'\\' => text.push_str(&format!("\\{}", b as char)),
                0x20..=0x7e => text.push(b as char),
                _ => text.push_str(&format!("\\x{b:02x}")),
            }
        }
        text.push_str("\"\n");
    }
    let path = seed_dir(target).with_extension("dict");
    fs::write(&path, text)?;
    println!("{}: {} tokens", path.display(), tokens.len());
    Ok(())
}

fn main() -> std::io::Result<()> {
    let mut commands: BTreeSet<String> = SEEDS
        .iter()
        .chain(EVENT_SEEDS)
        .map(|s| s.to_string())
        .collect();
    commands.extend(test_commands());
    let probedef: Vec<Vec<u8>> = commands.iter().map(|s| s.clone().into_bytes()).collect();
    write("probedef", &probedef)?;
    write_dict("probedef", TOKENS)?;

    // Definitions that parse, each with bytes for two hits' memories.
    let cfg = &ufgraph_fuzz::common::CONFIGS[0];
    let mut rng = Rng(0x5eed);
    let mut fetch = Vec::new();
    for def in commands
        .iter()
        .filter(|c| matches!(parse(c, cfg), Ok(Command::Add(_))))
    {
        let mut data = def.clone().into_bytes();
        data.push(0);
        let n = 64 + rng.below(512);
        data.extend((0..n).map(|_| rng.next() as u8));
        fetch.push(data);
    }
    write("fetch", &fetch)?;
    write_dict("fetch", TOKENS)?;

    let mut stacks: Vec<Vec<u8>> = shadow::seed_sequences()
        .iter()
        .map(|s| shadow::encode_ops(s))
        .collect();
    stacks.extend(shadow::seed_images());
    stacks.extend(shadow::seed_corrupted());
    write("shadow", &stacks)?;

    write(
        "symbols",
        &symbols::SEEDS
            .iter()
            .map(|s| s.to_vec())
            .collect::<Vec<_>>(),
    )?;
    write("btf", &btf::seeds())?;
    Ok(())
}
