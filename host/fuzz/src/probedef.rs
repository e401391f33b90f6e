// SPDX-License-Identifier: GPL-2.0

//! The promises of the fprobe definition parser (`src/events/probedef/`), checked on one input.
//!
//! Beyond not panicking, every input must keep them:
//! - an error's caret lies within the command as the log shows it, and the `error_log` entry
//!   has upstream's shape;
//! - a definition respects upstream's limits (argument count, names, field sizes, instruction
//!   budget, entry-data slots), and its listing (`Display`) parses back to the same probe,
//!   unless upstream itself would refuse that listing (a default event name that is not an
//!   identifier, a line too long);
//! - a definition matches itself as an existing probe (no `DIFF_ARG_TYPE`, a `SAME_PROBE`), and
//!   a removal naming it (`-:GROUP/EVENT SYMBOL NAME=ARG...`) removes it;
//! - a multi-line write splits into lines without their newlines and comments, each of which
//!   keeps the same promises;
//! - `parse_with` asks about a tracepoint at most once, is `parse` when every tracepoint exists,
//!   and when none does refuses each tracepoint definition `parse` takes with `NO_TRACEPOINT`
//!   under its name.

use std::fmt::Write as _;
use std::sync::OnceLock;

use crate::common::CONFIGS;
use ufgraph_pure::events::probedef::{
    commands, find_function, find_struct, parse, parse_btf, parse_with, BtfRef, BtfSource, Command,
    Config, ErrCode, Error, FetchArg, Load, ProbeDef, ProbeError, ProbeKind, StoreKind,
    EXPAND_ROOM, MAX_ARGSTR_LEN, MAX_ARG_NAME_LEN, MAX_ARRAY_LEN, MAX_COMMAND_LEN, MAX_DEREFS,
    MAX_EVENT_NAME_LEN, MAX_PROBE_EVENT_SIZE, MAX_TRACE_ARGS,
};
use ufgraph_pure::sys::btf::reader::{Btf, Func};

/// The sample BTF of the reader's tests (src/sys/btf/reader/testdata/sample.c: vfs_read, local_fn,
/// no_args, struct file), the functions every input is also parsed against.
fn sample() -> &'static Btf<'static> {
    static SAMPLE: OnceLock<Btf<'static>> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        const BLOB: &[u8] = include_bytes!("../../../src/sys/btf/reader/testdata/sample.btf");
        let s = Btf::measure(BLOB, None).expect("sample BTF");
        let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
        let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
        Btf::new(BLOB, None, offsets, names).expect("sample BTF")
    })
}

/// A module's split BTF over its base (src/sys/btf/reader/testdata/split-mod.c over split-base.c:
/// mydev_open of the module, vfs_read of the base), looked up as the kernel's source does:
/// the base first, then the module.
struct Split {
    base: &'static Btf<'static>,
    module: Btf<'static>,
}

impl BtfSource for Split {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, Func)> {
        find_function(*self.base, name, tracepoint)
            .or_else(|| find_function(self.module, name, tracepoint))
    }

    fn structure(&self, name: &str, _func: &str, _tracepoint: bool) -> Option<(Btf<'_>, u32)> {
        find_struct(*self.base, name).or_else(|| find_struct(self.module, name))
    }
}

fn split() -> &'static Split {
    static SPLIT: OnceLock<Split> = OnceLock::new();
    SPLIT.get_or_init(|| {
        const BASE: &[u8] = include_bytes!("../../../src/sys/btf/reader/testdata/split-base.btf");
        const MODULE: &[u8] = include_bytes!("../../../src/sys/btf/reader/testdata/split-mod.btf");
        let index = |blob: &'static [u8], base: Option<&'static Btf<'static>>| {
            let s = Btf::measure(blob, base).expect("split BTF");
            let offsets = Box::leak(vec![0u32; s.types].into_boxed_slice());
            let names = Box::leak(vec![0u32; s.named].into_boxed_slice());
            Btf::new(blob, base, offsets, names).expect("split BTF")
        };
        let base: &'static Btf<'static> = Box::leak(Box::new(index(BASE, None)));
        Split {
            base,
            module: index(MODULE, Some(base)),
        }
    })
}

/// The BTF source of a check: none (a kernel without BTF arguments), the sample, or the split
/// pair.
type Src = Option<&'static dyn BtfSource>;

/// `cmd` parsed again with `src`, as a stored command is (no rewrite, so no scratch).
fn reparse<'a>(cmd: &'a str, cfg: &Config, src: Src) -> Result<Command<'a>, Error> {
    parse_btf(cmd, cfg, &mut |_| true, BtfRef(src), &mut [])
}

pub use crate::common::{ensure, Verdict};

fn check_error(cmd: &str, cfg: &Config, e: &ProbeError) -> Verdict {
    let log = e.log(cmd, cfg, 1_234_567_890).to_string();
    let lines: Vec<&str> = log.lines().collect();
    ensure(lines.len() == if e.also.is_some() { 6 } else { 3 }, || {
        format!("log shape: {log:?}")
    })?;
    ensure(log.ends_with("^\n"), || format!("log end: {log:?}"))?;
    let shown = lines[1]
        .strip_prefix("  Command: ")
        .ok_or_else(|| format!("command line: {log:?}"))?;
    ensure(lines[2].len() == 11 + e.pos + 1, || {
        format!("caret line: {log:?}")
    })?;
    ensure(
        lines[0].starts_with("[    1.234567] trace_fprobe: error: "),
        || format!("head: {log:?}"),
    )?;
    ensure(lines[0].ends_with(e.code.message()), || {
        format!("message: {log:?}")
    })?;
    // The caret is in the failing word or just past it; except for type errors found after a
    // dereference, which upstream places further right, by up to the length of the expression
    // before the type.
    // After `$arg*` was rewritten (the log then shows the arguments as written), an argument's
    // index counts the rewritten ones: past the last word, upstream's caret goes one past the
    // command's end; otherwise its offset is in another word than the one it was found in.
    let rewritten = e.index >= 2 && !e.expanded;
    if rewritten && e.index >= shown.split(' ').count() {
        return ensure(e.pos == shown.len() + 1, || {
            format!("pos {} past the end", e.pos)
        });
    }
    let word = shown
        .split(' ')
        .nth(e.index)
        .ok_or_else(|| format!("no word {} in {shown:?}", e.index))?;
    let late = matches!(
        e.code,
        ErrCode::BadSymstring | ErrCode::BadString | ErrCode::BadBitfield
    );
    let bound = if late { 2 * word.len() } else { word.len() };
    ensure(rewritten || e.offset <= bound, || {
        format!("offset {} past word {word:?}", e.offset)
    })?;
    let start: usize = shown.split(' ').take(e.index).map(|w| w.len() + 1).sum();
    ensure(start + e.offset == e.pos, || {
        format!("pos {} is not word {} + {}", e.pos, e.index, e.offset)
    })?;
    ensure(e.errno.to_kernel() < 0, || "errno".into())
}

/// What must survive listing and parsing again.
fn summary(d: &ProbeDef<'_>) -> String {
    let mut s = format!(
        "{:?} {} {} {} ret={} max={} n={} size={} entry={:?}",
        d.kind(),
        d.group(),
        d.event(),
        d.symbol(),
        d.is_return(),
        d.maxactive(),
        d.nargs(),
        d.args_size(),
        d.entry_args()
    );
    for a in d.args() {
        let f = a.fetch;
        let _ = write!(
            s,
            " | {} {:?} @{} {} {:?} {:?} {:?} {:?} {}",
            a.name,
            a.ty,
            a.offset,
            a.comm,
            f.load,
            f.derefs(),
            f.store,
            f.bitfield,
            f.count
        );
    }
    s
}

fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn check_arg(d: &ProbeDef<'_>, a: &FetchArg<'_>, end: &mut usize) -> Verdict {
    let f = &a.fetch;
    ensure(
        is_identifier(a.name) && a.name.len() <= MAX_ARG_NAME_LEN,
        || format!("name {:?}", a.name),
    )?;
    ensure(a.comm.to_string().len() <= MAX_ARGSTR_LEN, || {
        format!("comm {}", a.comm)
    })?;
    ensure(f.derefs().len() < MAX_DEREFS, || {
        format!("{} derefs", f.derefs().len())
    })?;
    ensure(usize::from(f.store.size) == a.ty.size(), || {
        format!("store size {:?} for {:?}", f.store, a.ty)
    })?;
    ensure(usize::from(f.count) <= MAX_ARRAY_LEN, || {
        format!("count {}", f.count)
    })?;
    let string_store = matches!(
        f.store.kind,
        StoreKind::String | StoreKind::UserString | StoreKind::SymString
    );
    ensure(string_store == a.ty.is_string(), || {
        format!("store {:?} for {:?}", f.store, a.ty)
    })?;
    if let Some(bf) = f.bitfield {
        ensure(usize::from(bf.basesize) == a.ty.size(), || {
            format!("bitfield {bf:?}")
        })?;
    }
    ensure(usize::from(a.offset) == *end, || {
        format!("offset {} after {}", a.offset, end)
    })?;
    *end += a.size();
    match f.load {
        Load::EntryArg { arg, slot } => ensure(
            d.is_return() && d.entry_args().get(usize::from(slot)) == Some(&arg),
            || format!("slot {slot} of {arg}"),
        ),
        Load::Retval => ensure(d.is_return(), || "retval on entry".into()),
        Load::Arg(_) => ensure(!d.is_return(), || "Arg on exit".into()),
        _ => Ok(()),
    }
}

fn check_def(cfg: &Config, d: &ProbeDef<'_>, src: Src) -> Verdict {
    ensure(d.nargs() <= MAX_TRACE_ARGS, || {
        format!("{} args", d.nargs())
    })?;
    ensure(
        d.args().len() == d.nargs() && d.args().count() == d.nargs(),
        || "args lost".into(),
    )?;
    ensure(!d.group().is_empty() && !d.event().is_empty(), || {
        "names".into()
    })?;
    ensure(d.event().len() < MAX_EVENT_NAME_LEN, || {
        "event too long".into()
    })?;
    ensure(d.entry_data_size() == 8 * d.entry_args().len(), || {
        "entry size".into()
    })?;
    let mut end = 0;
    for a in d.args() {
        check_arg(d, &a, &mut end)?;
    }
    ensure(end == d.args_size() && end <= MAX_PROBE_EVENT_SIZE, || {
        format!("size {end} vs {}", d.args_size())
    })?;

    // The probe clashes with no copy of itself but duplicates it.
    ensure(
        d.diff_arg_types(d.args().map(|a| a.sig())).is_none(),
        || "differs from itself".into(),
    )?;
    ensure(d.diff_probe_type(d.is_return(), d.kind()).is_none(), || {
        "other type than itself".into()
    })?;
    let comms: Vec<String> = d.args().map(|a| a.comm.to_string()).collect();
    let same = d.same_probe(d.symbol(), comms.iter().map(String::as_str));
    ensure(
        same.is_some_and(|e| e.code == ErrCode::SameProbe && e.pos == 0),
        || "not the same as itself".into(),
    )?;

    check_removal(cfg, d)?;

    // What the events keep parses again, without a rewrite, to the same probe.
    let mut kept = String::new();
    let _ = d.write_rewritten(&mut kept);
    match reparse(&kept, cfg, src) {
        Ok(Command::Add(again)) => ensure(summary(d) == summary(&again), || {
            format!("kept {kept:?} parses differently")
        })?,
        other => return Err(format!("kept {kept:?} gives {other:?}")),
    }

    // Listing round trip.
    let listed = d.to_string();
    match reparse(&listed, cfg, src) {
        // A negative maxactive (upstream's int wrap) lists as "f-N", which upstream reads as "f".
        Ok(Command::Add(again)) if d.maxactive() < 0 => {
            ensure(again.maxactive() == 0 && again.nargs() == d.nargs(), || {
                format!("{listed:?}")
            })
        }
        Ok(Command::Add(again)) => {
            ensure(summary(d) == summary(&again), || {
                format!("listed {listed:?} parses differently")
            })?;
            ensure(again.to_string() == listed, || {
                format!("listing {listed:?} is not stable")
            })
        }
        Err(Error::Probe(e)) if e.code == ErrCode::BadEventName && !d.event_given() => Ok(()),
        Err(Error::CommandTooLong) if listed.len() > MAX_COMMAND_LEN => Ok(()),
        other => Err(format!("listing {listed:?} gives {other:?}")),
    }
}

/// A removal that names the probe removes it, as dynamic_events lists it: by event, by group
/// and event, and with its symbol and arguments; one that names another event does not.
fn check_removal(cfg: &Config, d: &ProbeDef<'_>) -> Verdict {
    let args = || d.args().map(|a| (a.name, a.comm));
    let mut full = format!("-:{}/{} {}", d.group(), d.event(), d.symbol());
    for a in d.args() {
        let _ = write!(full, " {}={}", a.name, a.comm);
    }
    let mut forms = vec![format!("-:{}/{}", d.group(), d.event())];
    // Without a group, a '/' would start the event name (one made from a symbol with a '/',
    // which no kernel function has).
    if !d.event().contains('/') {
        forms.push(format!("-:{}", d.event()));
    }
    // Upstream compares the symbol cut to MAX_ARGSTR_LEN bytes: a longer one never matches.
    // An empty one (`f:e %return`, which the parser takes as upstream's does) names no
    // function, so no such probe is ever registered.
    if (1..=MAX_ARGSTR_LEN).contains(&d.symbol().len()) && full.len() <= MAX_COMMAND_LEN {
        forms.push(full);
    }
    for text in &forms {
        match parse(text, cfg) {
            Ok(Command::Remove(r)) => {
                ensure(r.matches(d.group(), d.event(), d.symbol(), args()), || {
                    format!("removal {text:?} does not match")
                })?;
                let other = format!("{}x", d.event());
                ensure(!r.matches(d.group(), &other, d.symbol(), args()), || {
                    format!("removal {text:?} matches another event")
                })?;
            }
            other => return Err(format!("removal {text:?} gives {other:?}")),
        }
    }
    Ok(())
}

/// `parse_with`'s promises (see the module's documentation).
fn check_lookup(input: &str, cfg: &Config) -> Verdict {
    let mut asked = 0;
    let all = parse_with(input, cfg, &mut |_| {
        asked += 1;
        true
    });
    ensure(asked <= 1, || format!("asked {asked} times"))?;
    ensure(all == parse(input, cfg), || {
        "parse_with finding all is not parse".into()
    })?;
    let Ok(Command::Add(d)) = &all else {
        return Ok(());
    };
    if d.kind() != ProbeKind::Tracepoint {
        return Ok(());
    }
    match parse_with(input, cfg, &mut |_| false) {
        Err(Error::Probe(e))
            if e.code == ErrCode::NoTracepoint && e.index == 1 && e.offset == 0 =>
        {
            check_error(input, cfg, &e)
        }
        other => Err(format!("no tracepoint, but {other:?}")),
    }
}

/// Runs one command through one configuration, without BTF, with the sample's and with a
/// module's split BTF; returns a label for the statistics (without BTF's).
fn check_one(input: &str, cfg: &Config) -> Result<&'static str, String> {
    check_lookup(input, cfg)?;
    let sample: &'static dyn BtfSource = sample();
    check_parsed(input, cfg, Some(sample)).map_err(|v| format!("with BTF: {v}"))?;
    let split: &'static dyn BtfSource = split();
    check_parsed(input, cfg, Some(split)).map_err(|v| format!("with split BTF: {v}"))?;
    check_parsed(input, cfg, None)
}

/// [`check_one`] with the BTF source `src`.
fn check_parsed(input: &str, cfg: &Config, src: Src) -> Result<&'static str, String> {
    let mut scratch = vec![0u8; input.len() + EXPAND_ROOM];
    let parsed = parse_btf(input, cfg, &mut |_| true, BtfRef(src), &mut scratch);
    if src.is_none() {
        ensure(parsed == parse(input, cfg), || {
            "parse_btf without BTF is not parse".into()
        })?;
    }
    match parsed {
        Ok(Command::Empty) => Ok("empty"),
        Ok(Command::Add(d)) => check_def(cfg, &d, src).map(|()| "defined"),
        Ok(Command::Remove(r)) => {
            let none: [(&str, &str); 0] = [];
            let _ = r.matches("fprobes", "ev", "vfs_read", none);
            ensure(r.group().is_some() || !r.event().is_empty(), || {
                "empty removal".into()
            })
            .map(|()| "removal")
        }
        Err(Error::Probe(e)) => check_error(input, cfg, &e).map(|()| e.code.name()),
        Err(e) => Ok(match e {
            Error::NotFprobe => "(not fprobe)",
            Error::TooManyArgs => "(too many args)",
            Error::DentryArgsTooLong => "(dentry args too long)",
            Error::BadRemove => "(bad removal)",
            _ => "(too long)",
        }),
    }
}

/// Runs one input through every configuration; returns a label for the statistics (the first
/// configuration's), or what promise the input breaks.
pub fn check(input: &str) -> Result<&'static str, String> {
    let mut label = "";
    for (n, cfg) in CONFIGS.iter().enumerate() {
        let l = check_one(input, cfg).map_err(|v| format!("config {n}: {v}"))?;
        if n == 0 {
            label = l;
        }
    }
    // Multi-line writes split into commands: one per line, newline and comment cut off, each
    // keeping the promises of a single command.
    if input.contains(['\n', '#']) {
        let mut lines = 0;
        for line in commands(input) {
            ensure(!line.contains(['\n', '#']), || {
                format!("command {line:?} keeps a newline or comment")
            })?;
            lines += 1;
            check_one(line, &CONFIGS[0]).map_err(|v| format!("line {line:?}: {v}"))?;
        }
        let want = input.split_terminator('\n').count();
        ensure(lines == want, || {
            format!("{lines} commands in {want} lines")
        })?;
    }
    Ok(label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::SEEDS;

    #[test]
    fn seeds_keep_invariants() {
        for s in SEEDS {
            check(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        }
    }

    #[test]
    fn short_run() {
        crate::common::short_run(SEEDS, 20_000, |_, input| check(input));
    }
}
