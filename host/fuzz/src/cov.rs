// SPDX-License-Identifier: GPL-2.0

//! The coverage-guided targets: what libFuzzer calls with each input (`cov/*.rs`), and the
//! committed seeds they start from (`seeds/TARGET/`).
//!
//! Each target turns the input into what its code takes and checks the promises of the
//! module that covers it; a broken promise panics with the reason, which libFuzzer reports
//! as a crash and saves the input of.

use crate::common::Bytes;

/// A target: its name (the binary is `cov-NAME`, the seeds `seeds/NAME/`) and its check.
pub struct Target {
    pub name: &'static str,
    pub check: fn(&[u8]) -> Result<&'static str, String>,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "probedef",
        check: probedef,
    },
    Target {
        name: "fetch",
        check: fetch,
    },
    Target {
        name: "shadow",
        check: shadow,
    },
    Target {
        name: "symbols",
        check: symbols,
    },
    Target {
        name: "btf",
        check: btf,
    },
];

/// A write to `dynamic_events`. The kernel refuses text that is not UTF-8 before parsing;
/// here such bytes become U+FFFD, which the parser must take like any other character.
pub fn probedef(data: &[u8]) -> Result<&'static str, String> {
    crate::probedef::check(&String::from_utf8_lossy(data))
}

/// A definition, then (after the first NUL) the bytes the fake hits are drawn from.
pub fn fetch(data: &[u8]) -> Result<&'static str, String> {
    let (def, hits) = match data.iter().position(|&c| c == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &[][..]),
    };
    crate::event::check(&mut Bytes(hits), &String::from_utf8_lossy(def))
}

/// A shadow-stack image or a sequence of operations on one (see [`crate::shadow`]).
pub fn shadow(data: &[u8]) -> Result<&'static str, String> {
    crate::shadow::check(data)
}

/// A buffer read from `available_filter_functions_addrs` or `/proc/kallsyms`, or symbol texts.
pub fn symbols(data: &[u8]) -> Result<&'static str, String> {
    crate::symbols::check(data)
}

/// A BTF blob as `/sys/kernel/btf/vmlinux` gives it, or a base and a module's split blob over
/// it (see [`crate::btf`]).
pub fn btf(data: &[u8]) -> Result<&'static str, String> {
    crate::btf::check(data)
}

/// Runs `check` on `data` as libFuzzer calls a target: a broken promise panics.
pub fn run(check: fn(&[u8]) -> Result<&'static str, String>, data: &[u8]) {
    if let Err(why) = check(data) {
        panic!("broken promise: {why}");
    }
}

/// Where the committed seeds of `target` are.
pub fn seed_dir(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds")
        .join(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every committed seed, and every crash input kept beside them as a regression, keeps its
    /// target's promises.
    #[test]
    fn committed_seeds_keep_promises() {
        for t in TARGETS {
            let dir = seed_dir(t.name);
            let mut n = 0;
            for entry in
                std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                (t.check)(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                n += 1;
            }
            assert!(n >= 5, "{}: only {n} seeds", dir.display());
        }
    }
}
