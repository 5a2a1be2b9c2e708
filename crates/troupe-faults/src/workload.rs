//! The workload's client: picks operations at random and records each one
//! in the history (see [`crate::history`] for the lines and their order).
//!
//! Half the operations go to registers (`r0..`), half to ledgers (`l0..`);
//! half of each are reads. A written value is unique in the run (the
//! client's prefix: node index, incarnation, client number; then its own
//! counter), so a read names the one write it saw. A deposit's amount is
//! 1 to 9.

use std::sync::Arc;

use serde::Serialize;
use troupe::AskError;

use crate::clock;
use crate::entities::Answer;
use crate::history::History;

/// One operation.
#[derive(Clone, Debug)]
pub enum Op {
    /// Store `value` in register `key`.
    Write {
        /// The register's id.
        key: String,
        /// The value, unique in the run.
        value: u64,
    },
    /// Read register `key`.
    ReadRegister {
        /// The register's id.
        key: String,
    },
    /// Deposit `amount` in ledger `key`.
    Deposit {
        /// The ledger's id.
        key: String,
        /// The amount (1 to 9).
        amount: u64,
    },
    /// Read ledger `key`'s balance.
    ReadBalance {
        /// The ledger's id.
        key: String,
    },
}

#[derive(Serialize)]
struct Call<'a> {
    k: &'static str,
    id: &'a str,
    client: &'a str,
    kind: &'static str,
    key: &'a str,
    op: &'static str,
    arg: u64,
    t: u64,
}

#[derive(Serialize)]
struct Ret<'a> {
    k: &'static str,
    id: &'a str,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    val: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    act: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    err: Option<String>,
    t: u64,
}

/// A client: its name, random state, value prefix and history.
pub struct Client {
    name: String,
    rng: u64,
    prefix: u64,
    keys: u64,
    seq: u64,
    /// The pause after the last failure, ms (0 after a success).
    backoff: u64,
    history: Arc<History>,
}

impl Client {
    /// A client named `name` (also the prefix of its operation ids).
    pub fn new(name: String, seed: u64, prefix: u64, keys: u64, history: Arc<History>) -> Client {
        Client {
            name,
            rng: seed | 1,
            prefix,
            keys: keys.max(1),
            seq: 0,
            backoff: 0,
            history,
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The next operation, at random.
    pub fn next_op(&mut self) -> Op {
        let r = self.next();
        let k = (r >> 8) % self.keys;
        self.seq += 1;
        match r & 3 {
            0 => Op::Write {
                key: format!("r{k}"),
                value: self.prefix | (self.seq & 0xff_ffff_ffff),
            },
            1 => Op::ReadRegister {
                key: format!("r{k}"),
            },
            2 => Op::Deposit {
                key: format!("l{k}"),
                amount: 1 + (r >> 32) % 9,
            },
            _ => Op::ReadBalance {
                key: format!("l{k}"),
            },
        }
    }

    /// Records `op`'s call, runs it with `f`, records its return.
    pub fn run(&mut self, op: &Op, f: impl FnOnce() -> Result<Answer, AskError>) {
        let id = format!("{}.{}", self.name, self.seq);
        let (kind, key, name, arg) = match op {
            Op::Write { key, value } => ("register", key, "write", *value),
            Op::ReadRegister { key } => ("register", key, "read", 0),
            Op::Deposit { key, amount } => ("ledger", key, "deposit", *amount),
            Op::ReadBalance { key } => ("ledger", key, "read", 0),
        };
        self.history.record(&Call {
            k: "call",
            id: &id,
            client: &self.name,
            kind,
            key,
            op: name,
            arg,
            t: clock::now(),
        });
        let outcome = f();
        let t = clock::now();
        let ret = match &outcome {
            Ok(Ok((val, stamp))) => Ret {
                k: "ret",
                id: &id,
                ok: true,
                val: Some(*val),
                node: Some(&stamp.node),
                act: Some(stamp.act),
                at: Some(stamp.at),
                err: None,
                t,
            },
            Ok(Err(e)) => Ret {
                k: "ret",
                id: &id,
                ok: false,
                val: None,
                node: None,
                act: None,
                at: None,
                err: Some(format!("store: {e}")),
                t,
            },
            Err(e) => Ret {
                k: "ret",
                id: &id,
                ok: false,
                val: None,
                node: None,
                act: None,
                at: None,
                err: Some(format!("ask: {e:?}")),
                t,
            },
        };
        self.history.record(&ret);
        if matches!(outcome, Ok(Ok(_))) {
            self.backoff = 0;
        } else {
            // Back off (100 ms doubling to 1 s) while the cluster fails: a
            // fast refusal repeated every few milliseconds would fill the
            // history with operations of unknown outcome, each of which the
            // checker must try at every place in its window.
            self.backoff = (self.backoff * 2).clamp(100, 1000);
            std::thread::sleep(std::time::Duration::from_millis(self.backoff));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(prefix: u64) -> Client {
        let path = std::env::temp_dir().join(format!("troupe-faults-w-{}", std::process::id()));
        let history = Arc::new(History::open(&path).unwrap());
        let _ = std::fs::remove_file(&path);
        Client::new("c".into(), 7, prefix, 6, history)
    }

    /// The checker drops unknown writes no read saw, which is exact only
    /// if no two writes of a run store the same value. (Writing the bare
    /// counter, without the client's prefix, fails this test.)
    #[test]
    fn written_values_are_unique_across_clients() {
        let mut seen = std::collections::HashSet::new();
        for prefix in [1u64 << 56 | 1 << 48, 2 << 56 | 1 << 48, 2 << 56 | 2 << 48] {
            let mut c = client(prefix);
            for _ in 0..10_000 {
                if let Op::Write { value, .. } = c.next_op() {
                    assert!(seen.insert(value), "value {value} written twice");
                }
            }
        }
        assert!(seen.len() > 5_000);
    }

    #[test]
    fn every_kind_of_operation_is_drawn() {
        let mut c = client(0);
        let mut kinds = [0u32; 4];
        for _ in 0..1_000 {
            let i = match c.next_op() {
                Op::Write { .. } => 0,
                Op::ReadRegister { .. } => 1,
                Op::Deposit { amount, .. } => {
                    assert!((1..=9).contains(&amount));
                    2
                }
                Op::ReadBalance { .. } => 3,
            };
            kinds[i] += 1;
        }
        assert!(kinds.iter().all(|&n| n > 150), "{kinds:?}");
    }
}
