// SPDX-License-Identifier: GPL-2.0

//! The parser's vocabulary, which every part of it may use: upstream's limits on definitions,
//! what the parser needs to know about the kernel ([`Config`]), and where a probe attaches
//! ([`ProbeKind`]).

/// The most fetch arguments a probe takes (`MAX_TRACE_ARGS`).
pub const MAX_TRACE_ARGS: usize = 128;

/// The longest fetch expression, after `NAME=` (`MAX_ARGSTR_LEN`).
pub const MAX_ARGSTR_LEN: usize = 63;

/// The most elements of an array type (`MAX_ARRAY_LEN`).
pub const MAX_ARRAY_LEN: usize = 64;

/// The longest argument name (`MAX_ARG_NAME_LEN`).
pub const MAX_ARG_NAME_LEN: usize = 32;

/// Group and event names must be shorter than this (`MAX_EVENT_NAME_LEN`).
pub const MAX_EVENT_NAME_LEN: usize = 64;

/// The largest `MAXACTIVE` of an exit probe (`RETHOOK_MAXACTIVE_MAX`).
pub const MAXACTIVE_MAX: i32 = 4096;

/// The longest line upstream's `dynamic_events` writer passes on (`WRITE_BUFSIZE` - 1).
pub const MAX_COMMAND_LEN: usize = 4095;

/// The group of fprobe events defined without one.
pub const FPROBE_GROUP: &str = "fprobes";

/// The group of tracepoint-probe events defined without one.
pub const TRACEPOINT_GROUP: &str = "tracepoints";

/// What the parser needs to know about the kernel it parses for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// The largest N of `$argN` and `$stackN`: upstream's `PARAM_MAX_STACK`,
    /// `THREAD_SIZE / sizeof(long)` (2048 for 16 KiB stacks; 16 bits hold it for stacks up to
    /// 512 KiB).
    pub max_stack_index: u16,
    /// `offsetof(struct dentry, d_name.name)`, for `%pd` and `%pD`.
    pub dentry_name_offset: u32,
    /// `offsetof(struct file, f_path.dentry)`, for `%pD`.
    pub file_dentry_offset: u32,
}

/// Where a probe attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// `f`: function entry or exit.
    Fprobe,
    /// `t`: a tracepoint.
    Tracepoint,
}
