// SPDX-License-Identifier: GPL-2.0

//! `uringread FILE BYTES TIMES`: reads BYTES bytes of FILE TIMES times through io_uring, each
//! read forced onto an io_uring worker thread (`IOSQE_ASYNC`): the kernel creates those workers
//! with `create_io_thread()`, which does not pass the `sched_process_fork` tracepoint. Prints
//! `ok N` (reads that returned BYTES), or what failed.
//!
//! A test helper for tests/74-io-uring-worker.sh, built statically for the x86_64 test VM (no
//! liburing there). It uses only `std` and the C library's `syscall()` and `mmap()`.

use std::fs::File;
use std::os::fd::AsRawFd;

extern "C" {
    fn syscall(n: i64, ...) -> i64;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
}

const SYS_IO_URING_SETUP: i64 = 425;
const SYS_IO_URING_ENTER: i64 = 426;
const IORING_OFF_SQ_RING: i64 = 0;
const IORING_OFF_CQ_RING: i64 = 0x800_0000;
const IORING_OFF_SQES: i64 = 0x1000_0000;
const IORING_OP_READ: u8 = 22;
const IOSQE_ASYNC: u8 = 1 << 4;
const IORING_ENTER_GETEVENTS: u32 = 1;
const PROT_RW: i32 = 3;
const MAP_SHARED_POPULATE: i32 = 0x01 | 0x8000;

#[repr(C)]
#[derive(Default)]
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct CqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv1: u32,
    user_addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct Params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    cq_off: CqOffsets,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Sqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    rw_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    splice_fd_in: i32,
    addr3: u64,
    pad: u64,
}

#[repr(C)]
struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

fn die(what: &str) -> ! {
    println!(
        "{} failed {}",
        what,
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    );
    std::process::exit(1);
}

fn map(fd: i32, len: usize, off: i64, what: &str) -> *mut u8 {
    // SAFETY: maps an io_uring region of `len` bytes; checked below.
    let p = unsafe {
        mmap(
            std::ptr::null_mut(),
            len,
            PROT_RW,
            MAP_SHARED_POPULATE,
            fd,
            off,
        )
    };
    if p as isize == -1 {
        die(what);
    }
    p
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: uringread FILE BYTES TIMES");
        std::process::exit(2);
    }
    let file = File::open(&args[1]).expect("FILE");
    let bytes: usize = args[2].parse().expect("BYTES");
    let times: usize = args[3].parse().expect("TIMES");
    let mut p = Params::default();
    // SAFETY: io_uring_setup(entries, params): the kernel fills `p`.
    let ring = unsafe { syscall(SYS_IO_URING_SETUP, 4u32, &mut p as *mut Params) };
    if ring < 0 {
        die("io_uring_setup");
    }
    let ring = ring as i32;
    let sq_len = p.sq_off.array as usize + p.sq_entries as usize * 4;
    let cq_len = p.cq_off.cqes as usize + p.cq_entries as usize * std::mem::size_of::<Cqe>();
    let sq = map(ring, sq_len, IORING_OFF_SQ_RING, "mmap sq");
    let cq = map(ring, cq_len, IORING_OFF_CQ_RING, "mmap cq");
    let sqes = map(
        ring,
        p.sq_entries as usize * std::mem::size_of::<Sqe>(),
        IORING_OFF_SQES,
        "mmap sqes",
    ) as *mut Sqe;
    let mut buf = vec![0u8; bytes];
    let mut ok = 0;
    for i in 0..times {
        // SAFETY: the offsets the kernel gave us into the rings we mapped; one submission and
        // one completion at a time, so index 0 and the tail arithmetic stay in range.
        unsafe {
            let tail = sq.add(p.sq_off.tail as usize) as *mut u32;
            let mask = *(sq.add(p.sq_off.ring_mask as usize) as *const u32);
            let t = std::ptr::read_volatile(tail);
            let slot = (t & mask) as usize;
            *sqes.add(slot) = Sqe {
                opcode: IORING_OP_READ,
                flags: IOSQE_ASYNC,
                fd: file.as_raw_fd(),
                off: 0,
                addr: buf.as_mut_ptr() as u64,
                len: bytes as u32,
                user_data: i as u64,
                ..Default::default()
            };
            *(sq.add(p.sq_off.array as usize) as *mut u32).add(slot) = slot as u32;
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            std::ptr::write_volatile(tail, t.wrapping_add(1));
            let n = syscall(
                SYS_IO_URING_ENTER,
                ring,
                1u32,
                1u32,
                IORING_ENTER_GETEVENTS,
                0usize,
                0usize,
            );
            if n < 0 {
                die("io_uring_enter");
            }
            let head = cq.add(p.cq_off.head as usize) as *mut u32;
            let cmask = *(cq.add(p.cq_off.ring_mask as usize) as *const u32);
            let h = std::ptr::read_volatile(head);
            if std::ptr::read_volatile(cq.add(p.cq_off.tail as usize) as *const u32) == h {
                println!("no completion");
                std::process::exit(1);
            }
            let cqe = &*(cq.add(p.cq_off.cqes as usize) as *const Cqe).add((h & cmask) as usize);
            if cqe.res == bytes as i32 {
                ok += 1;
            } else {
                println!("read {} returned {}", cqe.user_data, cqe.res);
            }
            std::ptr::write_volatile(head, h.wrapping_add(1));
        }
    }
    println!("ok {}", ok);
}
