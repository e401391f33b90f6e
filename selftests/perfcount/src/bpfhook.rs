// SPDX-License-Identifier: GPL-2.0

//! bpfhook: a BPF fentry or fexit program on a kernel function, for the benchmarks (the BPF
//! trampoline is what a user would pick instead of ufgraph to hook a function's entry and
//! return). In the test VM, which has no libbpf and no bpftool:
//!
//! ```text
//!   bpfhook fentry|fexit FUNCTION [MODULE]
//! ```
//!
//! loads a program that counts its calls in an array map (as the other benchmark hooks' handlers
//! count theirs, and nothing more), attaches it to FUNCTION (in MODULE's BTF, else vmlinux's),
//! prints `bpfhook attached ...`, and waits for its standard input to close: then it prints
//! `bpfhook count=N` (the calls the program saw) and exits, which detaches the program.
//!
//! The function's BTF type id comes from /sys/kernel/btf: a module's BTF is split BTF, whose
//! type ids and string offsets continue vmlinux's, so vmlinux's is read for its counts. Only
//! `std` and the C library's `syscall()` are used (as `perfcount` does).

use std::fs;
use std::process::exit;

extern "C" {
    fn syscall(n: i64, ...) -> i64;
}

#[cfg(target_arch = "x86_64")]
const SYS_BPF: i64 = 321;
#[cfg(target_arch = "aarch64")]
const SYS_BPF: i64 = 280;

// enum bpf_cmd, bpf_map_type, bpf_prog_type, bpf_attach_type (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_PROG_LOAD: i64 = 5;
const BPF_OBJ_GET_INFO_BY_FD: i64 = 15;
const BPF_RAW_TRACEPOINT_OPEN: i64 = 17;
const BPF_BTF_GET_FD_BY_ID: i64 = 19;
const BPF_BTF_GET_NEXT_ID: i64 = 23;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_PROG_TYPE_TRACING: u32 = 26;
const BPF_TRACE_FENTRY: u32 = 24;
const BPF_TRACE_FEXIT: u32 = 25;

const BTF_KIND_FUNC: u32 = 12;

fn die(msg: &str) -> ! {
    eprintln!("bpfhook: {msg}");
    exit(1)
}

/// `union bpf_attr`, as bytes: each command fills the fields it reads at their offsets.
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.0[off..off + 4].try_into().unwrap())
    }
    /// bpf(cmd, &attr, sizeof attr): the result, or -errno as an error.
    fn bpf(&mut self, cmd: i64) -> Result<i64, std::io::Error> {
        // SAFETY: a valid pointer to 128 bytes (a prefix of `union bpf_attr` the kernel checks
        // the tail of for zeroes) and its size.
        let r = unsafe { syscall(SYS_BPF, cmd, self.0.as_mut_ptr(), self.0.len() as u32) };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
}

/// The parts of a raw BTF blob we need.
struct Btf {
    data: Vec<u8>,
    types: std::ops::Range<usize>,
    strs: std::ops::Range<usize>,
}

impl Btf {
    fn read(path: &str) -> Btf {
        let data = fs::read(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
        let u = |o: usize| -> usize {
            data.get(o..o + 4).map_or_else(
                || die(&format!("{path}: truncated")),
                |b| u32::from_ne_bytes(b.try_into().unwrap()) as usize,
            )
        };
        if data.len() < 24 || u16::from_ne_bytes([data[0], data[1]]) != 0xeb9f {
            die(&format!("{path}: not BTF"));
        }
        let (hdr, toff, tlen, soff, slen) = (u(4), u(8), u(12), u(16), u(20));
        let types = hdr + toff..hdr + toff + tlen;
        let strs = hdr + soff..hdr + soff + slen;
        if types.end > data.len() || strs.end > data.len() {
            die(&format!("{path}: sections out of bounds"));
        }
        Btf { data, types, strs }
    }

    /// Each type in order: (kind, name offset).
    fn each(&self, mut f: impl FnMut(u32, usize)) {
        let mut o = self.types.start;
        while o + 12 <= self.types.end {
            let w = |k: usize| u32::from_ne_bytes(self.data[o + k..o + k + 4].try_into().unwrap());
            let (name, info) = (w(0) as usize, w(4));
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            f(kind, name);
            // What follows the 12-byte `struct btf_type` for each kind.
            o += 12
                + match kind {
                    1 | 14 | 17 => 4,     // INT, VAR, DECL_TAG
                    3 => 12,              // ARRAY
                    4 | 5 => vlen * 12,   // STRUCT, UNION
                    6 | 13 => vlen * 8,   // ENUM, FUNC_PROTO
                    15 | 19 => vlen * 12, // DATASEC, ENUM64
                    _ => 0,
                };
        }
    }

    fn count(&self) -> usize {
        let mut n = 0;
        self.each(|_, _| n += 1);
        n
    }

    fn str_at(&self, off: usize) -> &[u8] {
        let s = &self.data[self.strs.start + off.min(self.strs.len())..self.strs.end];
        &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
    }
}

/// The id of the FUNC named `func` in `module`'s BTF (or vmlinux's, `module` empty).
fn func_id(func: &str, module: &str) -> u32 {
    let vmlinux = Btf::read("/sys/kernel/btf/vmlinux");
    let (btf, first_id, str_base) = if module.is_empty() {
        (vmlinux, 1, 0)
    } else {
        let m = Btf::read(&format!("/sys/kernel/btf/{module}"));
        // Split BTF: ids after vmlinux's (0 is void), strings after vmlinux's.
        let (n, s) = (vmlinux.count(), vmlinux.strs.len());
        (m, n + 1, s)
    };
    let mut found = None;
    let mut i = 0;
    btf.each(|kind, name| {
        if kind == BTF_KIND_FUNC
            && name >= str_base
            && btf.str_at(name - str_base) == func.as_bytes()
            && found.is_none()
        {
            found = Some(first_id + i);
        }
        i += 1;
    });
    found.unwrap_or_else(|| {
        die(&format!(
            "no BTF FUNC {func} in {}",
            if module.is_empty() { "vmlinux" } else { module }
        ))
    }) as u32
}

/// A file descriptor for `module`'s BTF object (walking the kernel's BTF objects by id).
fn module_btf_fd(module: &str) -> i64 {
    let mut id = 0;
    loop {
        let mut a = Attr::new();
        a.u32(0, id);
        if a.bpf(BPF_BTF_GET_NEXT_ID).is_err() {
            die(&format!("no BTF object for module {module}"));
        }
        id = a.get_u32(4);
        let Ok(fd) = Attr::new().u32(0, id).bpf(BPF_BTF_GET_FD_BY_ID) else {
            continue;
        };
        // struct bpf_btf_info: btf, btf_size, id, name (@16), name_len (@24), kernel_btf.
        let mut name = [0u8; 64];
        let mut info = [0u8; 32];
        info[16..24].copy_from_slice(&(name.as_mut_ptr() as u64).to_ne_bytes());
        info[24..28].copy_from_slice(&(name.len() as u32).to_ne_bytes());
        let mut q = Attr::new();
        q.u32(0, fd as u32)
            .u32(4, info.len() as u32)
            .u64(8, info.as_mut_ptr() as u64);
        if q.bpf(BPF_OBJ_GET_INFO_BY_FD).is_ok() {
            let n = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            if &name[..n] == module.as_bytes() {
                return fd;
            }
        }
        // SAFETY: a descriptor we own and no longer need.
        unsafe { syscall(3, fd) }; // close
    }
}

/// One `struct bpf_insn`: opcode, destination and source registers, offset, immediate.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    let o = off.to_le_bytes();
    let i = imm.to_le_bytes();
    u64::from_le_bytes([code, dst | src << 4, o[0], o[1], i[0], i[1], i[2], i[3]])
}

/// The program: `counter[0] += 1; return 0;`, the counter an array map (`map_fd`).
fn program(map_fd: i32) -> Vec<u64> {
    vec![
        insn(0x18, 1, 1, 0, map_fd), // r1 = map (ld_imm64, BPF_PSEUDO_MAP_FD)
        insn(0, 0, 0, 0, 0),
        insn(0x62, 10, 0, -4, 0), // *(u32 *)(r10 - 4) = 0: the key
        insn(0xbf, 2, 10, 0, 0),  // r2 = r10
        insn(0x07, 2, 0, 0, -4),  // r2 += -4
        insn(0x85, 0, 0, 0, 1),   // call bpf_map_lookup_elem
        insn(0x15, 0, 0, 3, 0),   // if r0 == 0 goto out
        insn(0x79, 1, 0, 0, 0),   // r1 = *(u64 *)(r0 + 0)
        insn(0x07, 1, 0, 0, 1),   // r1 += 1
        insn(0x7b, 0, 1, 0, 0),   // *(u64 *)(r0 + 0) = r1
        insn(0xb7, 0, 0, 0, 0),   // out: r0 = 0
        insn(0x95, 0, 0, 0, 0),   // exit
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.len() > 4 {
        die("usage: bpfhook fentry|fexit FUNCTION [MODULE]");
    }
    let attach = match args[1].as_str() {
        "fentry" => BPF_TRACE_FENTRY,
        "fexit" => BPF_TRACE_FEXIT,
        _ => die("the first argument is fentry or fexit"),
    };
    let module = args.get(3).map_or("", |s| s.as_str());
    let id = func_id(&args[2], module);
    let obj_fd = if module.is_empty() {
        0
    } else {
        module_btf_fd(module)
    };

    // The counter: an array of one u64.
    let map = Attr::new()
        .u32(0, BPF_MAP_TYPE_ARRAY)
        .u32(4, 4)
        .u32(8, 8)
        .u32(12, 1)
        .bpf(BPF_MAP_CREATE)
        .unwrap_or_else(|e| die(&format!("BPF_MAP_CREATE: {e}")));
    let insns = program(map as i32);
    let license = b"GPL\0";
    let mut log = vec![0u8; 65536];
    let mut a = Attr::new();
    a.u32(0, BPF_PROG_TYPE_TRACING)
        .u32(4, insns.len() as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .u32(68, attach)
        .u32(108, id)
        .u32(112, obj_fd as u32);
    let prog = a.bpf(BPF_PROG_LOAD).unwrap_or_else(|e| {
        let n = log.iter().position(|&b| b == 0).unwrap_or(0);
        die(&format!(
            "BPF_PROG_LOAD: {e}: {}",
            String::from_utf8_lossy(&log[..n])
        ))
    });
    let link = Attr::new()
        .u64(0, 0)
        .u32(8, prog as u32)
        .bpf(BPF_RAW_TRACEPOINT_OPEN)
        .unwrap_or_else(|e| die(&format!("attach: {e}")));
    println!(
        "bpfhook attached {} {} btf_id={id} prog_fd={prog} link_fd={link}",
        args[1], args[2]
    );
    // Until standard input closes.
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
    let (key, mut value) = (0u32, 0u64);
    Attr::new()
        .u32(0, map as u32)
        .u64(8, &key as *const u32 as u64)
        .u64(16, &mut value as *mut u64 as u64)
        .bpf(BPF_MAP_LOOKUP_ELEM)
        .unwrap_or_else(|e| die(&format!("BPF_MAP_LOOKUP_ELEM: {e}")));
    println!("bpfhook count={value}");
}
