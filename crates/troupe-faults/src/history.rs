//! The history a run records, as JSON lines: what the checker
//! (`faults/checker`) reads.
//!
//! Each client operation is two lines, written in this order:
//!
//! 1. `{"k":"call", "id", "client", "kind", "key", "op", "arg", "t"}`:
//!    written (and handed to the kernel) *before* the request is sent, so
//!    an operation with no call line was never sent;
//! 2. `{"k":"ret", "id", "ok", "val", "node", "act", "at", "t"}` when the
//!    entity answered with a value, or `{"k":"ret", "id", "ok":false,
//!    "err", "t"}` when it did not (a timeout, a store error): the
//!    operation's outcome is then unknown, and the checker lets it take
//!    effect at any time after its call, or never.
//!
//! A process killed between the two lines leaves a call without a return:
//! unknown, like a timeout. Every line goes out in one `write(2)` on a file
//! opened with `O_APPEND`, so a SIGKILL leaves at most one partial last
//! line, which the checker ignores.
//!
//! Each entity instance writes `{"k":"activated", "kind", "key", "node",
//! "act", "t"}` when it is created, before it loads its state.
//!
//! The driver writes `{"k":"nemesis", "what", "target", "phase":"start"|"end",
//! "t"}` lines to its own file, and the node processes `{"k":"node",
//! "name", "event", "t"}` lines (started, ready).
//!
//! Times are [`crate::clock::now`] nanoseconds.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use parking_lot::Mutex;
use serde::Serialize;

/// A JSON-lines file shared by a process's threads.
pub struct History {
    file: Mutex<File>,
}

impl History {
    /// Opens (appends to, or creates) `path`.
    pub fn open(path: &Path) -> std::io::Result<History> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(History {
            file: Mutex::new(file),
        })
    }

    /// Writes `record` as one line, in one `write(2)`.
    pub fn record<T: Serialize>(&self, record: &T) {
        let Ok(mut line) = serde_json::to_vec(record) else {
            return;
        };
        line.push(b'\n');
        // A failed write shows as a missing line: a missing call is an
        // operation never sent (it was not: we write before sending), a
        // missing return an unknown outcome. Both keep the check sound.
        let _ = self.file.lock().write_all(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_record_is_one_line_appended() {
        let path =
            std::env::temp_dir().join(format!("troupe-faults-h-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            let h = History::open(&path).unwrap();
            h.record(&serde_json::json!({"k": "call", "id": "a"}));
        }
        // Reopened, as a restarted node's clients append to a new file but
        // the driver's log may be reopened: nothing is truncated.
        History::open(&path)
            .unwrap()
            .record(&serde_json::json!({"k": "ret", "id": "a"}));
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [r#"{"id":"a","k":"call"}"#, r#"{"id":"a","k":"ret"}"#]
        );
    }
}
