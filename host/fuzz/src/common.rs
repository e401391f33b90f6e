// SPDX-License-Identifier: GPL-2.0

//! What the fuzzers share: the parser configurations, a corpus of definitions, the mutator that
//! edits them, and the sources of random choices (a seeded generator, or the fuzzer's input).

use ufgraph_pure::events::probedef::Config;

/// Parser configurations: the usual one, and small limits with long offsets.
pub const CONFIGS: [Config; 2] = [
    Config {
        max_stack_index: 2048,
        dentry_name_offset: 0x28,
        file_dentry_offset: 0x48,
    },
    // Small limits and long offsets: other boundaries, longer %pd rewrites.
    Config {
        max_stack_index: 7,
        dentry_name_offset: 0x1234_5678,
        file_dentry_offset: 0,
    },
];

/// Definitions to start from: valid and invalid ones, upstream's selftest cases.
pub const SEEDS: &[&str] = &[
    "f vfs_read",
    "f:mygrp/myev vfs_read $arg1 $arg2:u32 +8($arg3):string",
    "f:ev vfs_read%return $retval $arg1 x=+0(+8($arg2)):u8[4]",
    "f10:g.e do_exit%return code=$arg1:s32 $retval:x32",
    "t sched_switch prev=$arg2 next=+0x10($arg3):u64",
    "t:tp/ev 9p_client_req $arg1:symbol",
    "f vfs_read $stack $stack0 $stack12 $comm $COMM:string",
    "f vfs_read @jiffies @jiffies+8:u32 @0xffffffff81000000:x16 @sym-4:symstr",
    "f vfs_read \\1 \\-1 \\0x10:u8 \\\"str\" s=\\\"a=b\" \\+-3",
    "f vfs_read +u8($arg1):ustring +0($arg1):ustring -8(+u0($stack)):u16[3]",
    "f vfs_read $arg1:b3@5/32 +4($arg2):b1@0/8[2] x=$arg3:b64@0/64",
    "f vfs_read f=$arg1:%pD d=+8($arg2):%pd $arg3:%pd",
    "f vfs_read $arg1:symstr +0($arg1):string[2] +0($arg1):char[64]",
    "f vfs_read a=$arg1 b=$arg1 c=$arg1 d=$arg1 e=$arg1 f=$arg1 g=$arg1 h=$arg1",
    "f vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0)))))))))))))",
    "f vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0($arg1))))))))))))))",
    "-:fprobes/myev",
    "-:myev vfs_read a=$arg1",
    "!f:grp/",
    "",
    "f vfs_read # comment\nf:e2 vfs_write $arg1\n-:e2",
    // Globs: default names from them, %return, $retval making an exit probe.
    "f vfs_read*",
    "f:g/e vfs_*rea[!l]?%return r=$retval:s32 n=$arg1",
    "f ufgt_glob_t[wh]?* $arg1 $retval",
    "f \\*x[a-z]%return",
    "-:e vfs_read*",
    // Upstream's selftest cases.
    "f100 vfs_read",
    "f1a111 vfs_read",
    "f100000 vfs_read",
    "f:/bar vfs_read",
    "f:foo.1/bar vfs_read",
    "f: vfs_read",
    "f:foo/bar.1 vfs_read",
    "f vfs_read $stack10000",
    "f vfs_read $arg10000",
    "f vfs_read $none_var",
    "f vfs_read %ax",
    "f vfs_read @12345678abcde",
    "f vfs_read @+10",
    "f vfs_read arg1=\\x",
    "f vfs_read arg1=\\\"abcd",
    "f vfs_read +0@0)",
    "f vfs_read +0ab1(@0)",
    "f vfs_read +0(+0(@0)",
    "f vfs_read +0($comm)",
    "f vfs_read &1",
    "f vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))",
    "f vfs_read +0(@11):u8[10",
    "f vfs_read +0(@11):u8[10]a",
    "f vfs_read +0(@11):u8[10a]",
    "f vfs_read +0(@11):u8[256]",
    "f vfs_read @11:unknown_type",
    "f vfs_read $stack0:string",
    "f vfs_read @11:b10@a/16",
    "f vfs_read arg123456789012345678901234567890=@11",
    "f vfs_read =@11",
    "f vfs_read var.1=@11",
    "f vfs_read var1=@11 var1=@12",
    "f vfs_read +1234567(+1234567(+1234567(+1234567(+1234567(+1234567(@1234))))))",
    "f vfs_read arg1=",
    "f vfs_read%hoge",
    "f vfs_read $arg* $arg*",
    "t kfree $arg*",
    "f vfs_read file->foo",
    // Rarer errors.
    "f vfs_read a1=+0($arg1):u64[64] a2=+0($arg1):u64[64] a3=+0($arg1):u64[64] a4=+0($arg1):u64[64] a5=+0($arg1):u64[64] a6=+0($arg1):u64[64]",
    "f vfs_read%return $arg1:symstr +u0($arg1):symstr",
    "f:gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg/e vfs_read",
    "t kfree $retval",
    "f vfs_read $comm:u8 \"x\":string[2]",
    // BTF arguments (the sample BTF, src/sys/btf/reader/testdata/sample.c): parameters, members,
    // typed $retval, $arg* and $argN rewritten, and their errors.
    "f vfs_read count pos file->f_name.name:string n=file->f_mode",
    "f vfs_read%return $retval count file->f_pair.hi file->f_name.len",
    "f vfs_read $arg* $arg3:u32",
    "f local_fn%return $arg2 $retval x:s8 b",
    "f no_args%return $retval",
    "f vfs_read file->f_dentry->d_name $arg9 file-.x file.f_mode",
    "f vfs_read $arg* $arg* hoge",
    "t vfs_read $arg*",
    // A module's function, from split BTF (src/sys/btf/reader/testdata/split-mod.c over split-base.c).
    "f mydev_open dev->filp->f_inode->i_size i=inode->i_ino dev->id $arg*",
    "f mydev_open%return $retval dev->nosuch $arg3",
    // Typecasts and $current (upstream's later BTF syntax): every form, the field option, and
    // their errors.
    "f vfs_read (file)file->f_name.name:string (file)(buf)->f_count (file)$arg1->f_mode",
    "f vfs_read (file)((file)file->f_dentry)->f_count (file)+8($arg2)->f_long (file)@sym->f_char",
    "f vfs_read%return (file,f_name)$retval->f_count (file,f_pair.hi)count->f_long",
    "f vfs_read $current c=$current:x64 $current->pid $current->comm:string +8($current)",
    "f vfs_read (task_struct,group_leader)$current->pid (task_struct)$current->comm",
    "f vfs_read (nosuch)file->x (file)file (file)@sym+8->f_count (file,f_name->name)file->f_count",
    "f vfs_read (file,f_mode)file->f_count (file)(file (file)+8file->x $current.pid $currentx",
    "f mydev_open (file)dev->filp->f_flags (inode,i_size)inode->i_ino",
    "f vfs_read this_cpu_ptr(@pcpu_hot) this_cpu_read(@x):u32 this_cpu_read(+8($arg1))",
    "f vfs_read (file)this_cpu_ptr(@var)->f_count this_cpu_read((file,f_name)buf->f_dentry)",
    "f vfs_read this_cpu_read($comm) this_cpu_ptr(@x):string this_cpu_read(@x (file)this_cpu_ptr(@x)",
];

/// Pieces of the grammar, for insertions.
#[rustfmt::skip]
pub const TOKENS: &[&str] = &[
    "f", "t", "f:", "t:", "-:", "!", "%return", "%", "$", "$arg", "$arg1", "$arg2", "$arg*",
    "$retval", "$stack", "$stack0", "$comm", "$COMM", "@", "@0x10", "@sym", "@+", "+0(", "-8(",
    "+u0(", "-u4(", "++1(", "+-1(", ")", "(", ":", "::", "u8", "s16", "x32", "u64", "char",
    "string", "ustring", "symstr", "symbol", "%pd", "%pD", ":%pd", ":%pD", "b4@2/8", "b1@0/64", "[",
    "]", "[4]", "[64]", "[65]", "\\", "\\\"", "\"", "\\1", "\\-1", "=", "x=", "arg1=", "/", ".",
    " ", "  ", "\t", "\n", "\0", "#", "*", "?", "[!", "[a-z]", "_", "-", "+", "0x", "é", "\u{a0}",
    "common_pid", "__probe_ip", "grp/", "ev", "vfs_read", "vfs_read%return",
    "->", "file", "buf", "count", "pos", "file->", "f_name.", "name", "len", "f_mode", "f_char",
    "f_dentry->", "f_buf", "local_fn", "no_args", "$arg3", "$arg5", "$retval->",
    "mydev_open", "dev->", "filp->", "f_inode->", "inode->", "i_ino", "i_size", "id",
    "(file)", "(file,f_name)", "(file,f_pair.hi)", "(task_struct)", "(qstr)", ")->", ",",
    "$current", "$current->", "pid", "comm", "group_leader", "f_count", "this_cpu_read(",
    "this_cpu_ptr(", "@pcpu_hot",
];

/// Numbers around upstream's limits.
#[rustfmt::skip]
pub const NUMBERS: &[&str] = &[
    "0", "1", "7", "8", "9", "13", "14", "15", "16", "31", "32", "33", "63", "64", "65", "127",
    "128", "129", "255", "256", "2047", "2048", "2049", "3072", "4095", "4096", "4097",
    "0x7fffffff", "0x80000000", "0xffffffff", "0x100000000", "9223372036854775807",
    "9223372036854775808", "18446744073709551615", "18446744073709551616", "-1", "-0", "+0", "010",
    "08", "0x", "0xg", "2147483648", "4294967295",
];

/// Where a check draws its random choices from: a seeded generator ([`Rng`], the mutation
/// fuzzers) or the input itself ([`Bytes`], the coverage-guided targets, so that libFuzzer's
/// mutations steer the choices too).
pub trait Source {
    /// Any 64-bit value.
    fn next(&mut self) -> u64;

    /// A number in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }
}

/// SplitMix64: small, fast, and good enough to drive mutations.
pub struct Rng(pub u64);

impl Source for Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Choices read from a fuzzer's input, little-endian, as few bytes per choice as its range
/// needs (one byte for a choice among up to 256), so that a mutated byte changes one choice.
/// An exhausted input reads as zeros, as `arbitrary`'s `Unstructured` does.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> u64 {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head.iter().rev().fold(0, |v, &b| (v << 8) | u64::from(b))
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The bytes a choice of `0..n` takes.
    pub fn width(n: usize) -> usize {
        let bits = usize::BITS - n.saturating_sub(1).leading_zeros();
        bits.div_ceil(8) as usize
    }

    /// The bytes that make [`Source::below`]`(n)` read `v` (for writing seeds).
    pub fn encode_below(out: &mut Vec<u8>, n: usize, v: usize) {
        assert!(v < n.max(1));
        out.extend_from_slice(&(v as u64).to_le_bytes()[..Self::width(n)]);
    }

    /// The bytes that make [`Source::next`] read `v`.
    pub fn encode_next(out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

impl Source for Bytes<'_> {
    fn next(&mut self) -> u64 {
        self.take(8)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.take(Self::width(n)) % n as u64) as usize
    }
}

/// Applies one random edit to `input`.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[String]) {
    let len = input.len();
    let at = |rng: &mut Rng| rng.below(len + 1);
    match rng.below(11) {
        // Overwrite a byte with a byte the grammar cares about, or any byte.
        0 if len > 0 => {
            let i = rng.below(len);
            input[i] = if rng.below(4) == 0 {
                rng.next() as u8
            } else {
                *rng.pick(b"$@+-u()[]:=/.%\\\"*0123456789abx _\t")
            };
        }
        1 => insert_piece(rng, input, TOKENS),
        2 => insert_piece(rng, input, NUMBERS),
        // Delete a range.
        3 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(8));
            input.drain(i..i + n);
        }
        // Duplicate a range in place.
        4 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(16));
            let piece: Vec<u8> = input[i..i + n].to_vec();
            input.splice(i..i, piece);
        }
        5 => replace_number(rng, input),
        // Splice with another corpus entry.
        6 => {
            let other = rng.pick(corpus).as_bytes();
            let (i, j) = (at(rng), rng.below(other.len() + 1));
            input.truncate(i);
            input.extend_from_slice(&other[j..]);
        }
        // Repeat a token many times: argument counts, nesting, lengths.
        7 => {
            let tok = *rng.pick(&[" \\1", " $arg1", " $arg1:%pd", "+0(", ")", "a", " x=\\1"]);
            let n = 1 + rng.below(140);
            let i = at(rng);
            input.splice(i..i, tok.repeat(n).into_bytes());
        }
        8 => swap_words(rng, input),
        9 => named_arg(rng, input),
        _ => {
            if len > 0 {
                let i = rng.below(len);
                input.truncate(i);
            }
        }
    }
}

/// Inserts one of `pieces` (tokens, numbers) anywhere in `input`.
fn insert_piece(rng: &mut Rng, input: &mut Vec<u8>, pieces: &[&str]) {
    let i = rng.below(input.len() + 1);
    let piece = rng.pick(pieces).as_bytes();
    input.splice(i..i, piece.iter().copied());
}

/// Replaces a number-looking run with a boundary number.
fn replace_number(rng: &mut Rng, input: &mut Vec<u8>) {
    let len = input.len();
    if let Some(start) = (0..len)
        .map(|_| rng.below(len.max(1)))
        .find(|&i| input.get(i).is_some_and(u8::is_ascii_digit))
    {
        let end = (start..len)
            .find(|&i| !input[i].is_ascii_hexdigit() && input[i] != b'x')
            .unwrap_or(len);
        let num = rng.pick(NUMBERS).as_bytes();
        input.splice(start..end, num.iter().copied());
    }
}

/// Swaps two words.
fn swap_words(rng: &mut Rng, input: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(input).into_owned();
    let mut words: Vec<&str> = text.split(' ').collect();
    if words.len() > 1 {
        let (a, b) = (rng.below(words.len()), rng.below(words.len()));
        words.swap(a, b);
        *input = words.join(" ").into_bytes();
    }
}

/// Appends a named argument built from pieces.
fn named_arg(rng: &mut Rng, input: &mut Vec<u8>) {
    let arg = format!(
        " {}={}{}",
        rng.pick(&["a", "arg1", "x_1", "common_pid", ""]),
        rng.pick(TOKENS),
        rng.pick(TOKENS)
    );
    input.extend_from_slice(arg.as_bytes());
}

/// What a check of one input says: `Ok`, or the promise it breaks.
pub type Verdict = Result<(), String>;

/// `Ok` if `ok`, else the broken promise `what` describes (built only then).
pub fn ensure(ok: bool, what: impl FnOnce() -> String) -> Verdict {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// The driver both deterministic mutation fuzzers (`src/bin/probedef.rs`, `src/bin/event.rs`)
/// run: `[ITERATIONS [SEED]]` from the command line, then `iterations` inputs, each a corpus
/// entry mutated by `min_edits` to `min_edits + 3` random edits, cut to twice the longest
/// command. `check` runs an input (with the run's generator, which it may draw from) and says
/// how it went: a label for the statistics, or the promise it broke; `keep` says, by label,
/// whether the input joins the corpus (replacing a find, not a seed, once the corpus is full).
/// A broken promise or a panic prints the input and fails the run.
pub fn mutation_fuzzer(
    name: &str,
    default_seed: u64,
    mut corpus: Vec<String>,
    min_edits: usize,
    mut check: impl FnMut(&mut Rng, &str) -> Result<&'static str, String>,
    mut keep: impl FnMut(&mut Rng, &'static str) -> bool,
) -> std::process::ExitCode {
    use std::collections::BTreeMap;
    use std::panic::{self, AssertUnwindSafe};
    use std::process::ExitCode;
    use ufgraph_pure::events::probedef::MAX_COMMAND_LEN;
    const CORPUS_MAX: usize = 4096;

    let mut argv = std::env::args().skip(1);
    let iterations: u64 = argv
        .next()
        .map_or(Ok(1_000_000), |a| a.replace('_', "").parse())
        .unwrap_or_else(|_| {
            eprintln!("usage: {name} [ITERATIONS [SEED]]");
            std::process::exit(2)
        });
    let seed: u64 = argv
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(default_seed);
    let mut rng = Rng(seed);
    let base = corpus.len();
    let mut stats: BTreeMap<&'static str, u64> = BTreeMap::new();

    // Quiet panics: we report the input ourselves.
    panic::set_hook(Box::new(|_| {}));
    for i in 0..iterations {
        let mut bytes = rng.pick(&corpus).clone().into_bytes();
        for _ in 0..min_edits + rng.below(4) {
            mutate(&mut rng, &mut bytes, &corpus);
        }
        bytes.truncate(2 * MAX_COMMAND_LEN);
        let input = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        match panic::catch_unwind(AssertUnwindSafe(|| check(&mut rng, &input))) {
            Ok(Ok(label)) => {
                *stats.entry(label).or_default() += 1;
                if keep(&mut rng, label) {
                    if corpus.len() < CORPUS_MAX {
                        corpus.push(input);
                    } else {
                        let slot = base + rng.below(CORPUS_MAX - base);
                        corpus[slot] = input;
                    }
                }
            }
            Ok(Err(why)) => {
                eprintln!(
                    "{name}: input {i} (seed {seed}) breaks an invariant: {why}\ninput: {input:?}"
                );
                return ExitCode::FAILURE;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned());
                eprintln!(
                    "{name}: input {i} (seed {seed}) panics: {}\ninput: {input:?}",
                    msg.unwrap_or_default()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{name}: {iterations} inputs run (seed {seed}), no panic, no invariant broken");
    let mut by_count: Vec<_> = stats.into_iter().collect();
    by_count.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    for (label, n) in by_count {
        println!("  {n:>9}  {label}");
    }
    ExitCode::SUCCESS
}

/// The mutation fuzzers' short runs in `cargo test`: `n` entries of `seeds`, each with one
/// random edit, through `check` (with the run's generator, seeded 1); a broken promise fails
/// the test with the input.
#[cfg(test)]
pub(crate) fn short_run(
    seeds: &[&str],
    n: usize,
    mut check: impl FnMut(&mut Rng, &str) -> Result<&'static str, String>,
) {
    let mut rng = Rng(1);
    let corpus: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
    for _ in 0..n {
        let mut bytes = rng.pick(&corpus).clone().into_bytes();
        mutate(&mut rng, &mut bytes, &corpus);
        let input = String::from_utf8_lossy(&bytes).into_owned();
        check(&mut rng, &input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
    }
}
