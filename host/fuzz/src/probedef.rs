// SPDX-License-Identifier: GPL-2.0

//! Mutation fuzzer for the fprobe definition parser (`src/pure/probedef/`), on stable Rust.
//!
//! ```sh
//! cargo run --release -p ufgraph-fuzz -- [ITERATIONS [SEED]]
//! ```
//!
//! Deterministic: the same seed runs the same inputs. Each input is a corpus entry (valid and
//! invalid definitions, upstream's selftest cases) mutated by a few random edits: bytes, parser
//! tokens, boundary numbers, splices, repetitions. Inputs that parse are added to the corpus, so
//! the mutations reach deeper into valid definitions as the run goes.
//!
//! Beyond not panicking, every input must keep the parser's promises:
//! - an error's caret lies within the command as the log shows it, and the `error_log` entry
//!   has upstream's shape;
//! - a definition respects upstream's limits (argument count, names, field sizes, instruction
//!   budget, entry-data slots), and its listing (`Display`) parses back to the same probe,
//!   unless upstream itself would refuse that listing (a default event name that is not an
//!   identifier, a line too long);
//! - a definition matches itself as an existing probe (no `DIFF_ARG_TYPE`, a `SAME_PROBE`).
//!
//! On a violation it prints the input and exits with status 1.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;

mod common;

use common::{mutate, Rng, CONFIGS, SEEDS};
use ufgraph_pure::probedef::{
    commands, parse, Command, Config, ErrCode, Error, FetchArg, Load, ProbeDef, ProbeError,
    StoreKind, MAX_ARGSTR_LEN, MAX_ARG_NAME_LEN, MAX_ARRAY_LEN, MAX_COMMAND_LEN, MAX_DEREFS,
    MAX_EVENT_NAME_LEN, MAX_PROBE_EVENT_SIZE, MAX_TRACE_ARGS,
};

/// What went wrong with an input.
type Verdict = Result<(), String>;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Verdict {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn check_error(cmd: &str, cfg: &Config, e: &ProbeError) -> Verdict {
    let log = e.log(cmd, cfg, 1_234_567_890).to_string();
    let lines: Vec<&str> = log.lines().collect();
    ensure(lines.len() == if e.also.is_some() { 6 } else { 3 }, || format!("log shape: {log:?}"))?;
    ensure(log.ends_with("^\n"), || format!("log end: {log:?}"))?;
    let shown =
        lines[1].strip_prefix("  Command: ").ok_or_else(|| format!("command line: {log:?}"))?;
    ensure(lines[2].len() == 11 + e.pos + 1, || format!("caret line: {log:?}"))?;
    ensure(lines[0].starts_with("[    1.234567] trace_fprobe: error: "), || {
        format!("head: {log:?}")
    })?;
    ensure(lines[0].ends_with(e.code.message()), || format!("message: {log:?}"))?;
    // The caret is in the failing word or just past it; except for type errors found after a
    // dereference, which upstream places further right, by up to the length of the expression
    // before the type.
    let word =
        shown.split(' ').nth(e.index).ok_or_else(|| format!("no word {} in {shown:?}", e.index))?;
    let late = matches!(e.code, ErrCode::BadSymstring | ErrCode::BadString | ErrCode::BadBitfield);
    let bound = if late { 2 * word.len() } else { word.len() };
    ensure(e.offset <= bound, || format!("offset {} past word {word:?}", e.offset))?;
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
    b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn check_arg(d: &ProbeDef<'_>, a: &FetchArg<'_>, end: &mut usize) -> Verdict {
    let f = &a.fetch;
    ensure(is_identifier(a.name) && a.name.len() <= MAX_ARG_NAME_LEN, || {
        format!("name {:?}", a.name)
    })?;
    ensure(a.comm.to_string().len() <= MAX_ARGSTR_LEN, || format!("comm {}", a.comm))?;
    ensure(f.derefs().len() < MAX_DEREFS, || format!("{} derefs", f.derefs().len()))?;
    ensure(usize::from(f.store.size) == a.ty.size(), || {
        format!("store size {:?} for {:?}", f.store, a.ty)
    })?;
    ensure(usize::from(f.count) <= MAX_ARRAY_LEN, || format!("count {}", f.count))?;
    let string_store =
        matches!(f.store.kind, StoreKind::String | StoreKind::UserString | StoreKind::SymString);
    ensure(string_store == a.ty.is_string(), || format!("store {:?} for {:?}", f.store, a.ty))?;
    if let Some(bf) = f.bitfield {
        ensure(usize::from(bf.basesize) == a.ty.size(), || format!("bitfield {bf:?}"))?;
    }
    ensure(usize::from(a.offset) == *end, || format!("offset {} after {}", a.offset, end))?;
    *end += a.size();
    match f.load {
        Load::EntryArg { arg, slot } => {
            ensure(d.is_return() && d.entry_args().get(usize::from(slot)) == Some(&arg), || {
                format!("slot {slot} of {arg}")
            })
        }
        Load::Retval => ensure(d.is_return(), || "retval on entry".into()),
        Load::Arg(_) => ensure(!d.is_return(), || "Arg on exit".into()),
        _ => Ok(()),
    }
}

fn check_def(cfg: &Config, d: &ProbeDef<'_>) -> Verdict {
    ensure(d.nargs() <= MAX_TRACE_ARGS, || format!("{} args", d.nargs()))?;
    ensure(d.args().len() == d.nargs() && d.args().count() == d.nargs(), || "args lost".into())?;
    ensure(!d.group().is_empty() && !d.event().is_empty(), || "names".into())?;
    ensure(d.event().len() < MAX_EVENT_NAME_LEN, || "event too long".into())?;
    ensure(d.entry_data_size() == 8 * d.entry_args().len(), || "entry size".into())?;
    let mut end = 0;
    for a in d.args() {
        check_arg(d, &a, &mut end)?;
    }
    ensure(end == d.args_size() && end <= MAX_PROBE_EVENT_SIZE, || {
        format!("size {end} vs {}", d.args_size())
    })?;

    // The probe clashes with no copy of itself but duplicates it.
    ensure(d.diff_arg_types(d.args().map(|a| a.sig())).is_none(), || "differs from itself".into())?;
    ensure(d.diff_probe_type(d.is_return(), d.kind()).is_none(), || {
        "other type than itself".into()
    })?;
    let comms: Vec<String> = d.args().map(|a| a.comm.to_string()).collect();
    let same = d.same_probe(d.symbol(), comms.iter().map(String::as_str));
    ensure(same.is_some_and(|e| e.code == ErrCode::SameProbe && e.pos == 0), || {
        "not the same as itself".into()
    })?;

    // Listing round trip.
    let listed = d.to_string();
    match parse(&listed, cfg) {
        // A negative maxactive (upstream's int wrap) lists as "f-N", which upstream reads as "f".
        Ok(Command::Add(again)) if d.maxactive() < 0 => {
            ensure(again.maxactive() == 0 && again.nargs() == d.nargs(), || format!("{listed:?}"))
        }
        Ok(Command::Add(again)) => {
            ensure(summary(d) == summary(&again), || {
                format!("listed {listed:?} parses differently")
            })?;
            ensure(again.to_string() == listed, || format!("listing {listed:?} is not stable"))
        }
        Err(Error::Probe(e)) if e.code == ErrCode::BadEventName && !d.event_given() => Ok(()),
        Err(Error::CommandTooLong) if listed.len() > MAX_COMMAND_LEN => Ok(()),
        other => Err(format!("listing {listed:?} gives {other:?}")),
    }
}

/// Runs one input through every configuration; returns a label for the statistics.
fn check(input: &str) -> Result<&'static str, String> {
    let mut label = "";
    for (n, cfg) in CONFIGS.iter().enumerate() {
        let verdict = match parse(input, cfg) {
            Ok(Command::Empty) => {
                label = if n == 0 { "empty" } else { label };
                Ok(())
            }
            Ok(Command::Add(d)) => {
                label = if n == 0 { "defined" } else { label };
                check_def(cfg, &d)
            }
            Ok(Command::Remove(r)) => {
                label = if n == 0 { "removal" } else { label };
                let none: [(&str, &str); 0] = [];
                let _ = r.matches("fprobes", "ev", "vfs_read", none);
                ensure(r.group().is_some() || !r.event().is_empty(), || "empty removal".into())
            }
            Err(Error::Probe(e)) => {
                label = if n == 0 { e.code.name() } else { label };
                check_error(input, cfg, &e)
            }
            Err(e) => {
                label = if n == 0 {
                    match e {
                        Error::NotFprobe => "(not fprobe)",
                        Error::TooManyArgs => "(too many args)",
                        Error::DentryArgsTooLong => "(dentry args too long)",
                        Error::BadRemove => "(bad removal)",
                        _ => "(too long)",
                    }
                } else {
                    label
                };
                Ok(())
            }
        };
        verdict.map_err(|v| format!("config {n}: {v}"))?;
    }
    // Multi-line writes split into commands.
    for line in commands(input) {
        let _ = parse(line, &CONFIGS[0]);
    }
    Ok(label)
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let iterations: u64 =
        argv.next().map_or(Ok(1_000_000), |a| a.replace('_', "").parse()).unwrap_or_else(|_| {
            eprintln!("usage: probedef [ITERATIONS [SEED]]");
            std::process::exit(2)
        });
    let seed: u64 = argv.next().and_then(|a| a.parse().ok()).unwrap_or(0x0f9b_0be5);
    let mut rng = Rng(seed);
    let mut corpus: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    let base = corpus.len();
    const CORPUS_MAX: usize = 4096;
    let mut stats: BTreeMap<&'static str, u64> = BTreeMap::new();

    // Quiet panics: we report the input ourselves.
    panic::set_hook(Box::new(|_| {}));
    for i in 0..iterations {
        let mut bytes = rng.pick(&corpus).clone().into_bytes();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut bytes, &corpus);
        }
        bytes.truncate(2 * MAX_COMMAND_LEN);
        let input = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        match panic::catch_unwind(AssertUnwindSafe(|| check(&input))) {
            Ok(Ok(label)) => {
                *stats.entry(label).or_default() += 1;
                // Keep some definitions and a few failures to mutate further, replacing older
                // finds when full: definitions lead deeper, failures keep the mix varied.
                let keep = if label == "defined" { rng.below(4) == 0 } else { rng.below(32) == 0 };
                if keep {
                    if corpus.len() < CORPUS_MAX {
                        corpus.push(input);
                    } else {
                        let slot = base + rng.below(CORPUS_MAX - base);
                        corpus[slot] = input;
                    }
                }
            }
            Ok(Err(why)) => {
                eprintln!("probedef: input {i} (seed {seed}) breaks an invariant: {why}\ninput: {input:?}");
                return ExitCode::FAILURE;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned());
                eprintln!(
                    "probedef: input {i} (seed {seed}) panics: {}\ninput: {input:?}",
                    msg.unwrap_or_default()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("probedef: {iterations} inputs run (seed {seed}), no panic, no invariant broken");
    let mut by_count: Vec<_> = stats.into_iter().collect();
    by_count.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    for (label, n) in by_count {
        println!("  {n:>9}  {label}");
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_keep_invariants() {
        for s in SEEDS {
            check(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        }
    }

    #[test]
    fn short_run() {
        let mut rng = Rng(1);
        let corpus: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
        for _ in 0..20_000 {
            let mut bytes = rng.pick(&corpus).clone().into_bytes();
            mutate(&mut rng, &mut bytes, &corpus);
            let input = String::from_utf8_lossy(&bytes).into_owned();
            check(&input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        }
    }
}
