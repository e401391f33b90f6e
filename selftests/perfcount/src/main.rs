// SPDX-License-Identifier: GPL-2.0

//! `perfcount ID FILE BYTES TIMES`: opens a perf counter on trace event ID (tracefs
//! `events/GRP/EVENT/id`) for this process, reads BYTES bytes of FILE TIMES times (one `read()`
//! each), and prints what perf counted, and the sample records perf received with the raw
//! event record: `count N` then `samples N raw_ok N`.
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
const PERF_SAMPLE_RAW: u64 = 1 << 10;
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
    if args.len() != 5 {
        eprintln!("usage: perfcount ID FILE BYTES TIMES");
        std::process::exit(2);
    }
    let id: u64 = args[1].trim().parse().expect("ID");
    let bytes: usize = args[3].parse().expect("BYTES");
    let times: usize = args[4].parse().expect("TIMES");
    let mut attr = Attr {
        ty: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<Attr>() as u32,
        config: id,
        sample_period: 1,
        sample_type: PERF_SAMPLE_RAW,
        // disabled (bit 0), exclude_kernel off.
        flags: 1,
        wakeup_events: 1,
        ..Default::default()
    };
    // SAFETY: perf_event_open(attr, pid 0 = this process, cpu -1 = any, group -1, flags 0).
    let fd = unsafe { syscall(SYS_PERF_EVENT_OPEN, &mut attr as *mut Attr, 0i32, -1i32, -1i32, 0u64) };
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
            // PERF_SAMPLE_RAW: u32 size, then the event record: trace_entry (8), __probe_ip
            // (8), then the first argument (a u32 count) at 16.
            let raw = &data[at + 8..at + size];
            if raw.len() >= 4 + 20 && raw[4 + 16..4 + 20] == want {
                raw_ok += 1;
            }
        }
        pos += size;
    }
    println!("samples {} raw_ok {}", samples, raw_ok);
}
