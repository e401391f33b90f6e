// SPDX-License-Identifier: GPL-2.0

//! What differs between architectures on the Rust side: how a return matches its frame, and how
//! to unwind through our trampoline. The trampolines themselves are assembly, under `arch/`.

#[cfg(CONFIG_X86_64)]
#[path = "hot_x86_64.rs"]
pub mod hot;
#[cfg(CONFIG_X86_64)]
mod x86_64;
#[cfg(CONFIG_X86_64)]
pub use x86_64::*;

#[cfg(CONFIG_ARM64)]
#[path = "hot_arm64.rs"]
pub mod hot;
#[cfg(CONFIG_ARM64)]
mod arm64;
#[cfg(CONFIG_ARM64)]
pub use arm64::*;
