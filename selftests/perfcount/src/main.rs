// SPDX-License-Identifier: GPL-2.0

//! `perfcount ID FILE BYTES TIMES [regs]`: opens a perf counter on trace event ID (tracefs
//! `events/GRP/EVENT/id`) for this process, reads BYTES bytes of FILE TIMES times (one `read()`
//! each), and prints what perf counted, and the sample records perf received with the raw
//! event record: `count N` then `samples N raw_ok N`.
//!
//! With `regs`, the samples also carry the instruction pointer and the interrupted registers
//! (`PERF_SAMPLE_IP | PERF_SAMPLE_REGS_INTR`: ax, sp, ip on x86_64), as a return event's
//! consumer reads them; it then prints `kernel_ip N ax_ok N` (samples whose ip, and whose
//! register ip, is a kernel address, and whose ax is BYTES: the return value of the read) and
//! `ipsym NAME` (the kernel function the first sample's ip lies in).
//!
//! A test helper for tests/63-event-perf.sh, built statically for the test VM (there is no
//! perf tool there). It uses only `std` and the C library's `syscall()`.

use std::fs::File;
use std::io::Read;

extern "C" {
    fn syscall(n: i64, ...) -> i64;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn ioctl(fd: i32, req: u64, ...) -> i32;
    fn read(fd: i32, buf: *mut u8, n: usize) -> isize;
}

const SYS_PERF_EVENT_OPEN: i64 = 298; // x86_64
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_RAW: u64 = 1 << 10;
const PERF_SAMPLE_REGS_INTR: u64 = 1 << 18;
// x86_64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h): ax, sp, ip.
const REGS_MASK: u64 = (1 << 0) | (1 << 7) | (1 << 8);
const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;
const PERF_EVENT_IOC_ENABLE: u64 = 0x2400;
const PERF_EVENT_IOC_DISABLE: u64 = 0x2401;
const PERF_RECORD_SAMPLE: u32 = 9;
const PAGE: usize = 4096;
const DATA_PAGES: usize = 8;

/// `struct perf_event_attr` (PERF_ATTR_SIZE_VER5 layout; the rest stays zero).
#[repr(C)]
#[derive(Default)]
struct Attr {
    ty: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 && !(args.len() == 6 && args[5] == "regs") {
        eprintln!("usage: perfcount ID FILE BYTES TIMES [regs]");
        std::process::exit(2);
    }
    let id: u64 = args[1].trim().parse().expect("ID");
    let bytes: usize = args[3].parse().expect("BYTES");
    let times: usize = args[4].parse().expect("TIMES");
    let regs = args.len() == 6;
    let mut attr = Attr {
        ty: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<Attr>() as u32,
        config: id,
        sample_period: 1,
        sample_type: if regs {
            PERF_SAMPLE_IP | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_INTR
        } else {
            PERF_SAMPLE_RAW
        },
        sample_regs_intr: if regs { REGS_MASK } else { 0 },
        // disabled (bit 0), exclude_kernel off.
        flags: 1,
        wakeup_events: 1,
        ..Default::default()
    };
    // SAFETY: perf_event_open(attr, pid 0 = this process, cpu -1 = any, group -1, flags 0).
    let fd = unsafe {
        syscall(
            SYS_PERF_EVENT_OPEN,
            &mut attr as *mut Attr,
            0i32,
            -1i32,
            -1i32,
            0u64,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        println!("open failed {}", e.raw_os_error().unwrap_or(0));
        std::process::exit(1);
    }
    let fd = fd as i32;
    // SAFETY: maps the perf ring buffer: one header page and DATA_PAGES data pages.
    let ring = unsafe { mmap(std::ptr::null_mut(), (1 + DATA_PAGES) * PAGE, 3, 1, fd, 0) };
    if ring as isize == -1 {
        println!("mmap failed");
        std::process::exit(1);
    }
    let mut file = File::open(&args[2]).expect("FILE");
    let mut buf = vec![0u8; bytes];
    // SAFETY: ioctl on our perf fd.
    unsafe { ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) };
    for _ in 0..times {
        use std::io::Seek;
        let _ = file.read(&mut buf);
        let _ = file.seek(std::io::SeekFrom::Start(0));
    }
    // SAFETY: as above.
    unsafe { ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) };
    let mut count = [0u8; 8];
    // SAFETY: reads the counter value into 8 bytes.
    let n = unsafe { read(fd, count.as_mut_ptr(), 8) };
    if n != 8 {
        println!("read failed");
        std::process::exit(1);
    }
    println!("count {}", u64::from_ne_bytes(count));
    // Walk the sample records: header page has data_head at offset 1024.
    // SAFETY: the mapping is (1 + DATA_PAGES) pages; data_head is a u64 at 1024 of page 0.
    let head = unsafe { std::ptr::read_volatile(ring.add(1024) as *const u64) } as usize;
    let data = unsafe { std::slice::from_raw_parts(ring.add(PAGE), DATA_PAGES * PAGE) };
    let (mut pos, mut samples, mut raw_ok) = (0usize, 0, 0);
    let (mut kernel_ip, mut ax_ok, mut first_ip) = (0, 0, None);
    let want = (bytes as u32).to_ne_bytes();
    while pos + 8 <= head.min(DATA_PAGES * PAGE) {
        let at = pos % (DATA_PAGES * PAGE);
        let ty = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
        let size = u16::from_ne_bytes(data[at + 6..at + 8].try_into().unwrap()) as usize;
        if size == 0 {
            break;
        }
        if ty == PERF_RECORD_SAMPLE && at + size <= data.len() {
            samples += 1;
            let word = |o: usize| u64::from_ne_bytes(data[o..o + 8].try_into().unwrap());
            let mut o = at + 8;
            let mut ip = 0;
            if regs {
                ip = word(o);
                o += 8;
            }
            // PERF_SAMPLE_RAW: u32 size, then the event record: trace_entry (8), __probe_ip
            // (8), then the first argument (a u32 count) at 16.
            let raw_size = u32::from_ne_bytes(data[o..o + 4].try_into().unwrap()) as usize;
            let raw = &data[o..(o + 4 + raw_size).min(at + size)];
            if raw.len() >= 4 + 20 && raw[4 + 16..4 + 20] == want {
                raw_ok += 1;
            }
            o += 4 + raw_size;
            if regs && o + 32 <= at + size {
                // PERF_SAMPLE_REGS_INTR: the ABI word, then ax, sp, ip (mask order).
                let (ax, sp, rip) = (word(o + 8), word(o + 16), word(o + 24));
                if ip >= KERNEL_BASE && rip == ip && sp >= KERNEL_BASE {
                    kernel_ip += 1;
                }
                if ax == bytes as u64 {
                    ax_ok += 1;
                }
                first_ip.get_or_insert(ip);
            }
        }
        pos += size;
    }
    println!("samples {} raw_ok {}", samples, raw_ok);
    if regs {
        println!("kernel_ip {} ax_ok {}", kernel_ip, ax_ok);
        println!("ipsym {}", first_ip.map_or("none".into(), symbol_of));
    }
}

/// The name of the kernel function `addr` lies in, from /proc/kallsyms (readable by root).
fn symbol_of(addr: u64) -> String {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let mut best: Option<(u64, &str)> = None;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(a), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !matches!(kind, "t" | "T") {
            continue;
        }
        let Ok(a) = u64::from_str_radix(a, 16) else {
            continue;
        };
        if a <= addr && best.is_none_or(|(b, _)| a > b) {
            best = Some((a, name));
        }
    }
    best.map_or_else(|| "none".into(), |(_, n)| n.to_string())
}
