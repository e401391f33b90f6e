// SPDX-License-Identifier: GPL-2.0

//! The fetch arguments of a definition: their names, and the parser that reads them in order
//! (`traceprobe_parse_probe_arg()` for each).

use super::argv::{self, BufWriter, DentryWord, Words, MAX_DENTRY_ARGS_LEN};
use super::btfarg::BtfRef;
use super::builder::Fail;
use super::config::{Config, MAX_ARG_NAME_LEN, MAX_TRACE_ARGS};
use super::error::{ErrCode, Errno};
use super::fetch::{parse_body, ArgCtx};
use super::fetcharg::{Comm, FetchArg};
use super::num::is_good_name;
use super::program::Fetch;
use super::types::FetchType;

/// The fetch arguments of a [`ProbeDef`](super::ProbeDef), parsed again from its command line.
#[derive(Clone, Debug)]
pub struct Args<'a> {
    pub(super) parser: ArgParser<'a>,
    /// Arguments not yet returned.
    pub(super) left: usize,
}

impl<'a> Iterator for Args<'a> {
    type Item = FetchArg<'a>;

    fn next(&mut self) -> Option<FetchArg<'a>> {
        self.left = self.left.checked_sub(1)?;
        // The definition was parsed with these very steps, so no argument fails here; should one
        // fail anyway, end rather than skip it.
        let arg = self.parser.next_arg().and_then(Result::ok);
        if arg.is_none() {
            self.left = 0;
        }
        arg
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Args<'_> {}

/// Field names of every trace event, which arguments may not take.
pub(super) const RESERVED_NAMES: [&str; 8] = [
    "common_type",
    "common_flags",
    "common_preempt_count",
    "common_pid",
    "common_tgid",
    "__probe_ip",
    "__probe_ret_ip",
    "__probe_func",
];

/// "arg1".."arg128": upstream's names for unnamed arguments, kept static so that every
/// argument name is a `&str` that outlives the definition.
static DEFAULT_NAMES: [[u8; 6]; MAX_TRACE_ARGS] = default_names();

const fn default_names() -> [[u8; 6]; MAX_TRACE_ARGS] {
    let mut names = [[0u8; 6]; MAX_TRACE_ARGS];
    let mut i = 0;
    while i < MAX_TRACE_ARGS {
        let n = i + 1;
        let name = &mut names[i];
        name[0] = b'a';
        name[1] = b'r';
        name[2] = b'g';
        let mut at = 3;
        if n >= 100 {
            name[at] = b'0' + (n / 100) as u8;
            at += 1;
        }
        if n >= 10 {
            name[at] = b'0' + (n / 10 % 10) as u8;
            at += 1;
        }
        name[at] = b'0' + (n % 10) as u8;
        i += 1;
    }
    names
}

/// The default name of argument `i` (from 0).
fn default_name(i: usize) -> &'static str {
    let Some(name) = DEFAULT_NAMES.get(i) else {
        return "";
    };
    let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    core::str::from_utf8(&name[..len]).unwrap_or("")
}

/// An argument word's name (given before '=', else the default) and where its expression starts.
/// With BTF arguments (`btf`), the default is the expression before its type if it is a good
/// name, as upstream's `generate_probe_arg_name()` (`count` names itself), else `argN`.
fn arg_name(word: &str, i: usize, btf: bool) -> (&str, Option<usize>) {
    match word.find('=') {
        Some(eq) => (word.get(..eq).unwrap_or(""), Some(eq + 1)),
        None => {
            let expr = word.split(':').next().unwrap_or("");
            if btf && is_good_name(expr, false) {
                (expr, None)
            } else {
                (default_name(i), None)
            }
        }
    }
}

/// The name of argument word `word` (number `i`) as the parser gives it: a `%pd`/`%pD` word is
/// named in its rewritten form, which is never a good name.
fn word_name<'w>(word: &'w str, i: usize, btf: bool, cfg: &Config) -> &'w str {
    let btf = btf && DentryWord::of(word, cfg).is_none();
    arg_name(word, i, btf).0
}

/// Parses the fetch arguments of one probe in order (`traceprobe_parse_probe_arg()` for each).
#[derive(Clone, Debug)]
pub(super) struct ArgParser<'a> {
    /// All the argument words.
    all: &'a str,
    words: Words<'a>,
    index: usize,
    cfg: Config,
    pub(super) ctx: ArgCtx<'a>,
}

impl<'a> ArgParser<'a> {
    /// A parser of the arguments `args` of a probe on `func`.
    pub(super) fn new(
        args: &'a str,
        cfg: Config,
        (is_return, tracepoint): (bool, bool),
        btf: BtfRef<'a>,
        func: &'a str,
    ) -> Self {
        ArgParser {
            all: args,
            words: argv::words(args),
            index: 0,
            cfg,
            ctx: ArgCtx::new(is_return, tracepoint, cfg.max_stack_index, btf, func),
        }
    }

    /// The next argument, or its index (from 0) and failure.
    pub(super) fn next_arg(&mut self) -> Option<Result<FetchArg<'a>, (usize, Fail)>> {
        let word = self.words.next()?;
        let i = self.index;
        self.index += 1;
        Some(self.parse(i, word).map_err(|f| (i, f)))
    }

    fn parse(&mut self, i: usize, word: &'a str) -> Result<FetchArg<'a>, Fail> {
        let Some(d) = DentryWord::of(word, &self.cfg) else {
            let (name, at, ty, offset, fetch) = self.parse_text(i, word)?;
            let comm = Comm::new(word.get(at..).unwrap_or(""), None);
            return Ok(FetchArg {
                name,
                comm,
                ty,
                offset,
                fetch,
            });
        };
        // Upstream parses the rewritten word. Rewrite it into a buffer, parse, and point what
        // the argument borrows back into the command: the name and the wrapped expression are
        // copied verbatim, and the text of a load always lies in the wrapped expression.
        let mut buf = [0u8; MAX_DENTRY_ARGS_LEN];
        let mut w = BufWriter::new(&mut buf);
        // ProbeDef::parse() checked that every rewrite fits.
        let _ = d.write(&mut w);
        let text = w.into_str();
        let (_, _, ty, offset, fetch) = self.parse_text(i, text)?;
        let name = arg_name(word, i, false).0;
        let comm = Comm::new(word.get(d.head.len()..).unwrap_or(""), Some(d.exp));
        let inner_at = d.inner_at();
        let fetch = fetch.map_text(|s| {
            let at = (s.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
            match at.checked_sub(inner_at) {
                Some(rel) if rel + s.len() <= d.inner.len() => word
                    .get(d.head.len() + rel..d.head.len() + rel + s.len())
                    .unwrap_or(""),
                _ => "",
            }
        });
        Ok(FetchArg {
            name,
            comm,
            ty,
            offset,
            fetch,
        })
    }

    /// Parses argument `i` written `text`: its name, where its expression starts, its type, the
    /// offset of its field and its program.
    #[allow(clippy::type_complexity)]
    fn parse_text<'t>(
        &mut self,
        i: usize,
        text: &'t str,
    ) -> Result<(&'t str, usize, FetchType, u16, Fetch<'t>), Fail> {
        let inval = |code| Fail {
            code,
            offset: 0,
            errno: Errno::Inval,
            also: None,
        };
        let btf = self.ctx.btf.0.is_some();
        let (name, body_at) = arg_name(text, i, btf);
        if let Some(at) = body_at {
            if at - 1 > MAX_ARG_NAME_LEN {
                return Err(inval(ErrCode::ArgNameTooLong));
            }
            if at == 1 {
                return Err(inval(ErrCode::NoArgName));
            }
        }
        if !is_good_name(name, false) {
            return Err(inval(ErrCode::BadArgName));
        }
        let used = RESERVED_NAMES.contains(&name)
            || argv::words(self.all)
                .take(i)
                .enumerate()
                .any(|(j, w)| word_name(w, j, btf, &self.cfg) == name);
        if used {
            return Err(inval(ErrCode::UsedArgName));
        }
        let at = body_at.unwrap_or(0);
        let (ty, offset, fetch) = parse_body(text.get(at..).unwrap_or(""), at, &mut self.ctx)?;
        Ok((name, at, ty, offset, fetch))
    }
}
