//! # Fault injection for Troupe
//!
//! A run starts three NATS servers clustered on loopback (JetStream on
//! each, its own store directory), a [toxiproxy](toxiproxy) in front of
//! them, and three Troupe node processes (`troupe-faults-node`) that host
//! a durable register and an event-sourced ledger (sharding and state on
//! 3 JetStream replicas) and run clients against them. The driver
//! (`troupe-faults`) then injects faults (the *nemesis*): SIGKILL and
//! SIGSTOP/SIGCONT of nodes, SIGKILL and restart of servers, and, through
//! the proxy, partitions, latency, a narrow bandwidth and connection
//! resets between a node and its servers.
//!
//! Every client operation is recorded in a history ([`history`]) that an
//! independent checker reads: `faults/checker`, a Go program built on
//! porcupine, decides whether the history is linearizable for a register
//! and a ledger, counts lost confirmed deposits and finds double
//! activations (two instances of one entity handling commands in
//! overlapping intervals, from each reply's [`entities::Stamp`]).
//!
//! Each node also runs an at-least-once producer ([`producing`]) to
//! event-sourced tallies ([`tally`]), whose exact counts the checker
//! verifies: every confirmed message handled once, in order.
//!
//! Floors, lowest first: [`clock`] → [`history`] → [`entities`] →
//! [`tally`], [`workload`] and [`producing`] (what a node runs) → [`servers`] and [`toxiproxy`] (what
//! the driver starts) → the binaries. The driver and checker are run by
//! `faults/run.sh` (`--short` for CI, `--long` for the record).

#![warn(missing_docs)]

pub mod clock;
pub mod entities;
pub mod history;
pub mod producing;
pub mod servers;
pub mod tally;
pub mod toxiproxy;
pub mod workload;
