// SPDX-License-Identifier: GPL-2.0

//! The `error_log` entry of a [`ProbeError`], as `tracing_err_log_seq_show()`
//! (kernel/trace/trace.c) prints it. Apart from the errors themselves, because it writes the
//! command as upstream's log shows it (argv.rs), which the errors must not depend on.

use core::fmt;

use super::argv::write_command;
use super::config::Config;
use super::error::ProbeError;

impl ProbeError {
    /// The `error_log` entry for this error, on `cmd` (the command the error came from) as parsed
    /// with `cfg`, logged `ts_ns` nanoseconds after boot.
    pub fn log<'e>(&'e self, cmd: &'e str, cfg: &'e Config, ts_ns: u64) -> ErrorLog<'e> {
        ErrorLog {
            err: self,
            cmd,
            cfg,
            ts_ns,
        }
    }
}

/// Upstream's `error_log` entry for a [`ProbeError`] (two entries when it has `also`).
///
/// The format is `tracing_err_log_seq_show()`'s:
/// `"[%5llu.%06u] trace_fprobe: error: MESSAGE\n  Command: CMD\n"`, then the caret line: as many
/// spaces as `"  Command: "` is long plus the position, then `"^\n"`.
#[derive(Clone, Copy, Debug)]
pub struct ErrorLog<'e> {
    err: &'e ProbeError,
    cmd: &'e str,
    cfg: &'e Config,
    ts_ns: u64,
}

/// The prefix of the command line of an `error_log` entry (`CMD_PREFIX`).
const CMD_PREFIX: &str = "  Command: ";

/// The subsystem `trace_probe_log_init()` names for fprobe and tracepoint-probe events.
const SUBSYSTEM: &str = "trace_fprobe";

impl fmt::Display for ErrorLog<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (sec, nsec) = (self.ts_ns / 1_000_000_000, self.ts_ns % 1_000_000_000);
        let expanded = self.err.expanded.then_some(self.cfg);
        for code in core::iter::once(self.err.code).chain(self.err.also) {
            write!(
                f,
                "[{:5}.{:06}] {}: error: {}\n{}",
                sec,
                nsec / 1000,
                SUBSYSTEM,
                code.message(),
                CMD_PREFIX
            )?;
            write_command(f, self.cmd, expanded)?;
            f.write_str("\n")?;
            for _ in 0..CMD_PREFIX.len() + self.err.pos {
                f.write_str(" ")?;
            }
            f.write_str("^\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::error::{ErrCode, Errno};
    use super::*;
    use std::string::ToString;

    #[test]
    fn log_format() {
        let cfg = Config {
            max_stack_index: 2048,
            dentry_name_offset: 0x28,
            file_dentry_offset: 0x48,
        };
        let err = ProbeError {
            code: ErrCode::BadArgNum,
            errno: Errno::Inval,
            index: 2,
            offset: 0,
            pos: 11,
            also: None,
            expanded: true,
        };
        assert_eq!(
            err.log("f  vfs_read\t$arg10000", &cfg, 12_345_678_901)
                .to_string(),
            "[   12.345678] trace_fprobe: error: Invalid argument number\n  Command: f vfs_read \
             $arg10000\n                      ^\n"
        );
        let twice = ProbeError {
            code: ErrCode::BadVar,
            also: Some(ErrCode::BadFetchArg),
            ..err
        };
        let log = twice
            .log("f vfs_read %ax", &cfg, 123_456_789_012_345)
            .to_string();
        assert_eq!(log.lines().count(), 6);
        assert!(
            log.starts_with("[123456.789012] trace_fprobe: error: Invalid $-variable specified\n")
        );
        assert!(log.contains("\n[123456.789012] trace_fprobe: error: Invalid fetch argument\n"));
    }
}
