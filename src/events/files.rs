// SPDX-License-Identifier: GPL-2.0

//! The control files (debugfs, see `ufgraph_main.rs`): thin wrappers that find the events.
//! And `README`'s text.

use super::events;
use crate::sys::debugfs::SeqFile;
use core::fmt::{self, Write};
use kernel::prelude::*;

/// The `README` file: upstream's tracefs README lines (kernel/trace/trace.c, `readme_msg`) for
/// what ufgraph's `dynamic_events` takes, word for word, and none for what it does not (no
/// `e:`, `p:` or `r:`): tools, ftracetest's `requires:` among them, grep it to decide what to
/// try. Test 61 checks both ways. [`README_BTF`] goes after it where BTF arguments work.
pub const README: &str = "\
ufgraph fprobe events: upstream's dynamic_events syntax for fprobes, on ufgraph.

  error_log\t- error log for failed commands (that support it)
  dynamic_events\t\t- Create/append/remove/show the generic dynamic events
\t\t\t  Write into this file to define/undefine new trace events.
\t  accepts: event-definitions (one definition per line)
\t   Format: f[:[<group>/][<event>]] <func-name>[%return] [<args>]
\t           t[:[<group>/][<event>]] <tracepoint> [<args>]
\t           -:[<group>/][<event>]
\t     args: <name>=fetcharg[:type]
\t fetcharg: @<address>, @<symbol>[+|-<offset>],
\t           $stack<index>, $stack, $retval, $comm, $arg<N>, $current
";

/// The README lines of BTF arguments and typecasts (upstream's with
/// `CONFIG_PROBE_EVENTS_BTF_ARGS`, from the typecast series on), shown when vmlinux's BTF could
/// be read.
pub const README_BTF: &str = "\
\t           [(structname[,field])]<argname>[->field[->field|.field...]],
\t           [(structname[,field])](fetcharg)->field[->field|.field...],
";

/// The rest of the README, after the BTF line's place.
pub const README_TAIL: &str = "\
\t           +|-[u]<offset>(<fetcharg>), \\imm-value, \\\"imm-string\"
\t           this_cpu_read(<fetcharg>), this_cpu_ptr(<fetcharg>)
\t     kernel return probes support: $retval, $arg<N>, $comm
\t     type: s8/16/32/64, u8/16/32/64, x8/16/32/64, char, string, symbol,
\t           b<bit-width>@<bit-offset>/<container-size>, ustring,
\t           symstr, %pd/%pD, <type>\\[<array-size>\\]
  events/<system>/<event>/\t- Directory containing control files for
\t\t\t  <event>:
      enable\t\t- Write 0/1 to enable/disable tracing of <event>
      filter\t\t- If set, only events passing filter are traced
      trigger\t\t- If set, a command to perform when event is hit
";

/// `dynamic_events`, read.
pub fn show(m: &mut SeqFile) -> fmt::Result {
    events().map_or(Ok(()), |e| e.show(m))
}

/// `dynamic_events`, written.
pub fn write(text: &str) -> Result {
    events().ok_or(ENODEV)?.write(text)
}

/// `dynamic_events`, opened with `O_TRUNC`.
pub fn truncate() -> Result {
    events().ok_or(ENODEV)?.clear()
}

/// `error_log`, read.
pub fn show_errors(m: &mut SeqFile) -> fmt::Result {
    events().map_or(Ok(()), |e| e.show_errors(m))
}

/// `error_log`, written: upstream ignores what is written.
pub fn write_errors(_text: &str) -> Result {
    Ok(())
}

/// `error_log`, opened with `O_TRUNC`: cleared.
pub fn truncate_errors() -> Result {
    if let Some(e) = events() {
        e.clear_errors();
    }
    Ok(())
}

/// `README`. Reading it reads vmlinux's BTF if no definition did yet: whether BTF arguments
/// work is what it says.
pub fn show_readme(m: &mut SeqFile) -> fmt::Result {
    m.write_str(README)?;
    if events().is_some_and(|e| e.has_btf()) {
        m.write_str(README_BTF)?;
    }
    m.write_str(README_TAIL)
}
