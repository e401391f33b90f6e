// SPDX-License-Identifier: GPL-2.0

//! kcfi-audit: the kCFI audit of ufgraph's modules (issue #18).
//!
//! Under kCFI an indirect call checks the 32-bit hash stored in front of its target against the
//! hash of the function type it calls through. This lists every function of ufgraph.ko and
//! ufgraph_kunit.ko whose address is taken (a relocation to its first byte that is not a direct
//! call or jump, outside the unwind/debug/patching tables), finds in scripts/kcfi-audit.list
//! the type an indirect call to it checks, computes clang's hash of that type with the
//! module's own C flags, and compares it with the hash in the function's preamble.
//!
//!   kcfi-audit --arch ARCH --moddir BUILD/mod-TAG --kdir BUILD/kernel-TAG [--list FILE]
//!              [--src DIR] [--llvm SUFFIX] [-v]
//!
//! --list and --src (the Rust sources searched for `extern "C" fn`) default to the tree the
//! tool was built from; scripts/kcfi-audit.sh passes both, as one binary may serve several
//! work trees through a shared cargo target directory.
//!
//! Exit status: 0 when every address-taken function has the expected hash (or is Rust-only,
//! or never called indirectly, as the list says), 1 on a mismatch, a function the list does not
//! know, or a broken list entry, 2 on a bad command line. Only the standard library: no VM, no
//! network. scripts/kcfi-audit.sh runs it.

use kcfi_audit::elf::Elf;
use kcfi_audit::list::{self, Kind};
use kcfi_audit::{Arch, Audit};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const USAGE: &str = "usage: kcfi-audit --arch {x86_64,arm64} --moddir MODDIR --kdir KDIR [--list LIST] [--src SRC] [--llvm LLVM] [-v]";

struct Args {
    arch: Arch,
    moddir: PathBuf,
    kdir: PathBuf,
    list: PathBuf,
    src: PathBuf,
    llvm: String,
    verbose: bool,
}

/// The source tree the tool was built from (host/kcfi-audit/../..): its scripts/ and src/.
fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut arch, mut moddir, mut kdir) = (None, None, None);
    let mut list = top().join("scripts/kcfi-audit.list");
    let mut src = top().join("src");
    let mut llvm = "-19".to_string();
    let mut verbose = false;
    while let Some(a) = it.next() {
        let (opt, inline) = match a.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if opt == "-v" || opt == "--verbose" {
            verbose = true;
            continue;
        }
        if opt == "-h" || opt == "--help" {
            println!("{}", USAGE);
            std::process::exit(0);
        }
        let val = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| format!("argument {}: expected one argument", opt))?,
        };
        match opt.as_str() {
            "--arch" => {
                arch = Some(match val.as_str() {
                    "x86_64" => Arch::X86_64,
                    "arm64" => Arch::Arm64,
                    _ => return Err(format!("argument --arch: invalid choice: '{}'", val)),
                })
            }
            "--moddir" => moddir = Some(PathBuf::from(val)),
            "--kdir" => kdir = Some(PathBuf::from(val)),
            "--list" => list = PathBuf::from(val),
            "--src" => src = PathBuf::from(val),
            "--llvm" => llvm = val,
            _ => return Err(format!("unrecognized argument: {}", a)),
        }
    }
    match (arch, moddir, kdir) {
        (Some(arch), Some(moddir), Some(kdir)) => Ok(Args {
            arch,
            moddir,
            kdir,
            list,
            src,
            llvm,
            verbose,
        }),
        _ => Err("the following arguments are required: --arch, --moddir, --kdir".into()),
    }
}

fn read(p: &Path) -> Result<String, String> {
    std::fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("{}: {}", p.display(), e))
}

/// The names src/ defines `extern "C"` (in every .rs file below it).
fn extern_c_names(dir: &Path, names: &mut HashSet<String>) -> Result<(), String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {}", dir.display(), e))?;
    for ent in rd.flatten() {
        let p = ent.path();
        if p.is_dir() {
            extern_c_names(&p, names)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            list::extern_c_names(&read(&p)?, names);
        }
    }
    Ok(())
}

/// The `__kcfi_typeid_` symbols of an object: {name without the prefix: hash}.
fn typeids(elf: &Elf) -> HashMap<String, u32> {
    elf.syms
        .iter()
        .filter_map(|s| {
            Some((
                s.name.strip_prefix("__kcfi_typeid_")?.to_string(),
                s.value as u32,
            ))
        })
        .collect()
}

/// clang's hash of each `c` and `called` entry's type, from a C file that declares a function of
/// that type and takes its address (clang then emits __kcfi_typeid_NAME = hash), compiled with
/// the module's flags in the kernel's directory.
fn expected_hashes(
    entries: &mut [list::Entry],
    cc_argv: &[String],
    kdir: &Path,
) -> Result<(), String> {
    let src = list::types_source(entries);
    let tmp = std::env::temp_dir().join(format!("kcfi-audit.{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {}", tmp.display(), e))?;
    let (c, o) = (tmp.join("kcfi_types.c"), tmp.join("kcfi_types.o"));
    let result = (|| {
        std::fs::write(&c, &src).map_err(|e| format!("{}: {}", c.display(), e))?;
        let (cc, rest) = cc_argv
            .split_first()
            .ok_or("kcfi-audit: empty C compile command")?;
        let out = Command::new(cc)
            .args(rest)
            .args(["-Werror", "-DKBUILD_MODFILE=\"kcfi\"", "-c", "-o"])
            .arg(&o)
            .arg(&c)
            .current_dir(kdir)
            .output()
            .map_err(|e| format!("{}: {}", cc, e))?;
        if !out.status.success() {
            let _ = std::io::stderr().write_all(&out.stderr);
            return Err("kcfi-audit: the list's C types do not compile (above)".to_string());
        }
        Ok(typeids(&Elf::read(&o.to_string_lossy())?))
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    let ids = result?;
    for e in entries
        .iter_mut()
        .filter(|e| matches!(e.kind, Kind::C | Kind::Called))
    {
        let sym = e.sym.as_deref().unwrap_or("");
        match ids.get(sym) {
            Some(&h) => e.hash = Some(h),
            None => {
                return Err(format!(
                    "kcfi-audit: line {}: clang emitted no type id for {}",
                    e.line, e.expr
                ))
            }
        }
    }
    Ok(())
}

/// llvm-cxxfilt's names for `names`.
fn demangle(llvm: &str, names: &[String]) -> Result<HashMap<String, String>, String> {
    let tool = format!("llvm-cxxfilt{}", llvm);
    let mut child = Command::new(&tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {}", tool, e))?;
    let input = names.join("\n");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{}: {}", tool, e))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(format!("{} failed", tool));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(names
        .iter()
        .cloned()
        .zip(text.split('\n').map(str::to_string))
        .collect())
}

fn run(a: &Args) -> Result<u8, String> {
    let list_path = a.list.to_string_lossy().to_string();
    let mut entries = list::parse_list(&read(&a.list)?, &list_path)?;
    let mut externc = HashSet::new();
    extern_c_names(&a.src, &mut externc)?;
    let cmd = a.moddir.join("src/helpers/.helpers.o.cmd");
    let first = read(&cmd)?.lines().next().unwrap_or("").to_string();
    let flags = list::c_flags(&first).map_err(|e| format!("{}: {}", cmd.display(), e))?;
    expected_hashes(&mut entries, &flags, &a.kdir)?;
    let list_name = a
        .list
        .file_name()
        .map_or(list_path.clone(), |n| n.to_string_lossy().to_string());
    let mut audit = Audit::new(a.arch, entries, externc, &list_name);
    audit.verbose = a.verbose;
    audit.bti = a.arch == Arch::Arm64
        && read(&a.kdir.join(".config"))?.contains("CONFIG_ARM64_BTI_KERNEL=y\n");
    let llvm = a.llvm.clone();
    let mut dem = move |n: &[String]| demangle(&llvm, n);
    for (ko, helpers) in [
        ("ufgraph.ko", "src/helpers/helpers.o"),
        ("ufgraph_kunit.ko", "src/helpers/helpers_kunit.o"),
    ] {
        let path = a.moddir.join(ko);
        if !path.exists() {
            continue;
        }
        let elf = Elf::read(&path.to_string_lossy())?;
        // The hash C gives each export's prototype: exports.c takes their addresses.
        let exports = typeids(&Elf::read(&a.moddir.join(helpers).to_string_lossy())?);
        // With IBT, objtool's view comes from the object it processed (ufgraph.o).
        let obj = if a.arch == Arch::X86_64 && elf.secs.iter().any(|s| s.name == ".ibt_endbr_seal")
        {
            Some(Elf::read(&path.with_extension("o").to_string_lossy())?)
        } else {
            None
        };
        let r = audit.module(ko, &elf, obj.as_ref(), &exports, &mut dem);
        for l in audit.out.drain(..) {
            println!("{}", l);
        }
        r?;
    }
    audit.finish();
    for l in audit.out.drain(..) {
        println!("{}", l);
    }
    Ok(if audit.bad > 0 { 1 } else { 0 })
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{}\nkcfi-audit: error: {}", USAGE, e);
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(c) => ExitCode::from(c),
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("{}", e);
            ExitCode::from(1)
        }
    }
}
