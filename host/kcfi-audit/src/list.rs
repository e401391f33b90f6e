// SPDX-License-Identifier: GPL-2.0

//! scripts/kcfi-audit.list, and the small text matching the audit does (Python's `re` in the
//! first version: the same semantics, written out).

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, Hash)]
pub enum Kind {
    C,
    Called,
    Export,
    Rust,
    None,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::C => "c",
            Kind::Called => "called",
            Kind::Export => "export",
            Kind::Rust => "rust",
            Kind::None => "none",
        }
    }
}

/// One entry of the list.
#[derive(Debug)]
pub struct Entry {
    pub line: usize,
    pub pat: String,
    pub kind: Kind,
    /// `c`, `called`: the C expression; `rust`, `none`: the reason.
    pub expr: String,
    pub check: String,
    pub used: usize,
    /// The name of the C function of this type (`c`, `called`).
    pub sym: Option<String>,
    /// clang's hash of the type (`c`, `called`).
    pub hash: Option<u32>,
}

impl Entry {
    pub fn matches(&self, name: &str) -> bool {
        glob_match(&self.pat, name)
    }
}

/// A word character of Python's `\w` (and `\b`).
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `PATTERN` matches all of `s`, `*` matching any text.
pub fn glob_match(pat: &str, s: &str) -> bool {
    let parts: Vec<&str> = pat.split('*').collect();
    if parts.len() == 1 {
        return pat == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if s.len() < first.len() + last.len() || !s.starts_with(first) || !s.ends_with(last) {
        return false;
    }
    // Leftmost placement of each middle part is enough: `*` absorbs the rest.
    let mut rest = &s[first.len()..s.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

/// `s` with every whole-word `word` (Python's `\bword\b`) replaced by `by`.
pub fn replace_word(s: &str, word: &str, by: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let tail = &s[i..];
        if let Some(rest) = tail.strip_prefix(word) {
            let before = s[..i].chars().next_back().is_some_and(is_word);
            let after = rest.chars().next().is_some_and(is_word);
            if !before && !after {
                out.push_str(by);
                i += word.len();
                continue;
            }
        }
        let c = tail.chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// A demangled name as the list spells it: the crate (ufgraph_main, ufgraph_kunit) `ufgraph`.
pub fn pretty_name(demangled: &str) -> String {
    replace_word(
        &replace_word(demangled, "ufgraph_main", "ufgraph"),
        "ufgraph_kunit",
        "ufgraph",
    )
}

/// The function's own name: the last path component, generic arguments left out.
pub fn last_component(pretty: &str) -> &str {
    let s = match pretty.find("::<") {
        Some(i) => &pretty[..i],
        None => pretty,
    };
    match s.rfind("::") {
        Some(i) => &s[i + 2..],
        None => s,
    }
}

/// Splits a line `PATTERN  KIND REST` (two whitespace characters or more before KIND): the
/// first place where such a KIND follows.
fn split_entry(line: &str) -> Option<(&str, Kind, &str)> {
    let idx: Vec<(usize, char)> = line.char_indices().collect();
    for k in 1..idx.len() {
        let mut j = k;
        while j < idx.len() && idx[j].1.is_whitespace() {
            j += 1;
        }
        if j - k < 2 || j == idx.len() {
            continue;
        }
        let after = &line[idx[j].0..];
        for (w, kind) in [
            ("c", Kind::C),
            ("called", Kind::Called),
            ("export", Kind::Export),
            ("rust", Kind::Rust),
            ("none", Kind::None),
        ] {
            if after.starts_with(w) && !after[w.len()..].chars().next().is_some_and(is_word) {
                return Some((&line[..idx[k].0], kind, after[w.len()..].trim_start()));
            }
        }
    }
    None
}

/// The list's entries, in order; an error names the line it cannot use.
pub fn parse_list(text: &str, path: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (pat, kind, rest) =
            split_entry(line).ok_or_else(|| format!("{}:{}: cannot read: {}", path, n, line))?;
        if matches!(kind, Kind::Rust | Kind::None) && rest.is_empty() {
            return Err(format!("{}:{}: `{}` needs a reason", path, n, kind.name()));
        }
        let (expr, check) = match kind {
            Kind::C | Kind::Called => match rest.split_once(';') {
                Some((e, c)) => (e.trim(), c.trim()),
                None => (rest.trim(), ""),
            },
            _ => (rest, ""),
        };
        entries.push(Entry {
            line: n,
            pat: pat.to_string(),
            kind,
            expr: expr.to_string(),
            check: check.to_string(),
            used: 0,
            sym: None,
            hash: None,
        });
    }
    Ok(entries)
}

/// The names of the functions a Rust source defines `extern "C"` (`extern "C" fn NAME`).
pub fn extern_c_names(src: &str, names: &mut std::collections::HashSet<String>) {
    let mut i = 0;
    while let Some(p) = src[i..].find("extern") {
        let start = i + p;
        i = start + "extern".len();
        let rest = &src[i..];
        let t = rest.trim_start();
        if t.len() == rest.len() {
            continue;
        }
        let Some(t) = t.strip_prefix("\"C\"") else {
            continue;
        };
        let u = t.trim_start();
        if u.len() == t.len() {
            continue;
        }
        let Some(u) = u.strip_prefix("fn") else {
            continue;
        };
        let v = u.trim_start();
        if v.len() == u.len() {
            continue;
        }
        let name: String = v
            .chars()
            .enumerate()
            .take_while(|&(k, c)| {
                c == '_' || c.is_ascii_alphabetic() || (k > 0 && c.is_ascii_digit())
            })
            .map(|(_, c)| c)
            .collect();
        if !name.is_empty() {
            names.insert(name);
        }
    }
}

/// A shell command line split into words, as POSIX sh (and Python's shlex) split it.
pub fn shell_split(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut have = false;
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\'' => {
                have = true;
                loop {
                    match it.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '"' => {
                have = true;
                loop {
                    match it.next() {
                        Some('"') => break,
                        Some('\\') => match it.next() {
                            Some(c @ ('"' | '\\')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unterminated quote".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '\\' => {
                have = true;
                match it.next() {
                    Some(c) => cur.push(c),
                    None => return Err("no escaped character".into()),
                }
            }
            c if c.is_whitespace() => {
                if have {
                    out.push(std::mem::take(&mut cur));
                    have = false;
                }
            }
            c => {
                have = true;
                cur.push(c);
            }
        }
    }
    if have {
        out.push(cur);
    }
    Ok(out)
}

/// The module's C compile command (the first line of its Kbuild .cmd file), without its input,
/// output and dependency file: the flags clang hashed exports.c's prototypes with.
pub fn c_flags(cmd_line: &str) -> Result<Vec<String>, String> {
    let (_, cmd) = cmd_line
        .split_once(":=")
        .ok_or("no `:=` in the .cmd file")?;
    let mut out = Vec::new();
    let mut skip = false;
    for a in shell_split(cmd)? {
        if skip {
            skip = false;
            continue;
        }
        if a == "-o" {
            skip = true;
            continue;
        }
        if a.starts_with("-Wp,-MMD") || a == "-c" || a.ends_with(".c") {
            continue;
        }
        out.push(a);
    }
    Ok(out)
}

/// The C file whose `__kcfi_typeid_ufg_kcfi_N` symbols are clang's hashes of the list's types:
/// each `c` and `called` entry gets the name of its function of that type (`sym`); entries of
/// the same type share one.
pub fn types_source(entries: &mut [Entry]) -> String {
    let mut src: Vec<String> = [
        "#include <linux/module.h>",
        "#include <linux/fs.h>",
        "#include <linux/seq_file.h>",
        "#include <linux/workqueue.h>",
        "#include <linux/notifier.h>",
        "#include <linux/cpuhotplug.h>",
        "#include <linux/stop_machine.h>",
        "#include <linux/tracepoint.h>",
        "#include <linux/trace_events.h>",
        "#include <linux/ftrace.h>",
        "#include <linux/kprobes.h>",
        "#include <kunit/test.h>",
        "#include <trace/events/task.h>",
        "#include <trace/events/sched.h>",
        "#include <ufgraph/fgraph.h>",
        "#include <ufgraph/fprobe.h>",
        "#include <ufgraph/kretprobe.h>",
        "#include <ufgraph/rethook.h>",
        "#include \"helpers/helpers.h\"",
        "long ufg_test_call(long (*fn)(long), long x);",
        "/* Every expression below must be a pointer to a function type. */",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut types: Vec<((String, String), String)> = Vec::new();
    for e in entries.iter_mut() {
        if !matches!(e.kind, Kind::C | Kind::Called) {
            continue;
        }
        if let Some((_, s)) = types.iter().find(|(k, _)| k.0 == e.expr && k.1 == e.check) {
            e.sym = Some(s.clone());
            continue;
        }
        let n = types.len();
        let sym = format!("ufg_kcfi_{}", n);
        e.sym = Some(sym.clone());
        types.push(((e.expr.clone(), e.check.clone()), sym.clone()));
        src.push(format!("/* {} (line {}) */", e.pat, e.line));
        src.push(format!("extern typeof(*({})) {};", e.expr, sym));
        src.push(format!("void *ufg_kcfi_take_{}(void);", n));
        src.push(format!(
            "void *ufg_kcfi_take_{}(void) {{ return (void *)&{}; }}",
            n, sym
        ));
        if !e.check.is_empty() {
            let chk = replace_word(&e.check, "F", &sym);
            src.push(format!("void ufg_kcfi_check_{}(void);", n));
            src.push(format!("void ufg_kcfi_check_{}(void) {{ {}; }}", n, chk));
        }
    }
    src.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("ufgraph::a::<*>", "ufgraph::a::<T>"));
        assert!(glob_match("ufgraph_*", "ufgraph_fprobe_register"));
        assert!(!glob_match("ufgraph_*", "xufgraph_a"));
        assert!(glob_match(
            "<* as core::fmt::Write>::*",
            "<x as core::fmt::Write>::write_str"
        ));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("a*b*c", "abbc"));
        assert!(glob_match("a*a", "aa"));
        assert!(!glob_match("a*a", "a"));
        assert!(glob_match("init_module", "init_module"));
        assert!(!glob_match("init_module", "init_module2"));
    }

    #[test]
    fn words() {
        assert_eq!(
            pretty_name("ufgraph_main::a::<ufgraph_kunit::B>"),
            "ufgraph::a::<ufgraph::B>"
        );
        assert_eq!(pretty_name("ufgraph_mainx::a"), "ufgraph_mainx::a");
        assert_eq!(replace_word("F(F, xF, F_)", "F", "g"), "g(g, xF, F_)");
        assert_eq!(
            last_component("ufgraph::sys::debugfs::open_shim::<a::b>"),
            "open_shim"
        );
        assert_eq!(last_component("init_module"), "init_module");
        assert_eq!(last_component("<a::B>::new::<c>::{closure#0}"), "new");
    }

    #[test]
    fn list_entries() {
        let text = "# comment\n\n\
            a::b::<*>      c ((struct ftrace_ops *)0)->func\n\
            f   c (int (*)(unsigned int))0 ; (void)g(F, NULL)\n\
            ufgraph_*   export\n\
            x  rust a reason\n\
            label  called (t)0\n\
            two words here  none returned into\n";
        let e = parse_list(text, "l").unwrap();
        assert_eq!(e.len(), 6);
        assert_eq!(
            (e[0].line, e[0].pat.as_str(), e[0].kind),
            (3, "a::b::<*>", Kind::C)
        );
        assert_eq!(e[0].expr, "((struct ftrace_ops *)0)->func");
        assert_eq!(e[1].expr, "(int (*)(unsigned int))0");
        assert_eq!(e[1].check, "(void)g(F, NULL)");
        assert_eq!(e[2].kind, Kind::Export);
        assert_eq!((e[3].kind, e[3].expr.as_str()), (Kind::Rust, "a reason"));
        assert_eq!(e[4].kind, Kind::Called);
        assert_eq!(
            (e[5].pat.as_str(), e[5].kind),
            ("two words here", Kind::None)
        );
    }

    #[test]
    fn list_errors() {
        assert_eq!(
            parse_list("a c x\n", "l").unwrap_err(),
            "l:1: cannot read: a c x"
        );
        assert_eq!(
            parse_list("\na  rust\n", "l").unwrap_err(),
            "l:2: `rust` needs a reason"
        );
        assert_eq!(
            parse_list("a  none\n", "l").unwrap_err(),
            "l:1: `none` needs a reason"
        );
        assert!(parse_list("a  cx y\n", "l").is_err());
    }

    #[test]
    fn extern_c() {
        let mut n = std::collections::HashSet::new();
        extern_c_names(
            "pub unsafe extern \"C\" fn reg_shim<T>(x: u32) {}\nextern \"C\"\n  fn  b2() {}\n\
             extern \"C\" { fn decl(); }\nextern \"Rust\" fn r() {}\nextern \"C\" fn 9x() {}",
            &mut n,
        );
        let mut v: Vec<_> = n.into_iter().collect();
        v.sort();
        assert_eq!(v, ["b2", "reg_shim"]);
    }

    #[test]
    fn shell_words() {
        assert_eq!(
            shell_split(r#"cc -DA='"x y"' -DB="a\"b" c\ d  'e'"#).unwrap(),
            ["cc", "-DA=\"x y\"", "-DB=a\"b", "c d", "e"]
        );
        assert!(shell_split("'a").is_err());
        let f = c_flags(
            "savedcmd_x/h.o := clang-19 -Wp,-MMD,x/.h.o.d -nostdinc -DKBUILD_MODFILE='\"ufgraph/ufgraph\"' -c -o x/h.o x/h.c\n",
        )
        .unwrap();
        assert_eq!(
            f,
            [
                "clang-19",
                "-nostdinc",
                "-DKBUILD_MODFILE=\"ufgraph/ufgraph\""
            ]
        );
    }

    #[test]
    fn types_file() {
        let mut e = parse_list(
            "a  c (t1)0\nb  c (t1)0\nc  c (int (*)(int))0 ; g(F, NULL)\nd  rust r\nl  called (t1)0\n",
            "l",
        )
        .unwrap();
        let src = types_source(&mut e);
        assert_eq!(e[0].sym.as_deref(), Some("ufg_kcfi_0"));
        assert_eq!(e[1].sym.as_deref(), Some("ufg_kcfi_0"));
        assert_eq!(e[2].sym.as_deref(), Some("ufg_kcfi_1"));
        assert_eq!(e[3].sym, None);
        assert_eq!(e[4].sym.as_deref(), Some("ufg_kcfi_0"));
        assert!(src.contains("extern typeof(*((t1)0)) ufg_kcfi_0;\n"));
        assert!(src.contains("void ufg_kcfi_check_1(void) { g(ufg_kcfi_1, NULL); }\n"));
        assert_eq!(src.matches("extern typeof").count(), 2);
    }
}
