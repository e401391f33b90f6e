// SPDX-License-Identifier: GPL-2.0

//! The demo users the module's own parameters start (`make demo`, the in-VM tests): an entry
//! counter on the `sys::ftrace` layer (`func=`) and an entry/return counter on the fgraph core
//! (`graph=`). Neither is part of the API; both are what a first user of each layer looks like.

pub mod counter;
pub mod ipcount;
pub mod retcount;
