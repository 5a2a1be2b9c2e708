//! `--contention`: the runtime's contention counters (`troupe::contention`)
//! around a workload's measured window, printed per message after its
//! normal output as `contention <name> <per message> <total>` lines (the
//! many-core check parses them), and a counting global allocator. Both exist
//! only when the suite is built with `--features contention`; the flag then
//! works for `mailbox_performance` and `stress`.
//!
//! A leaf module: the workloads call [`window`] and the main loop calls
//! [`take_report`]; it imports nothing from them.

use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// Whether this build can count (`--features contention`).
pub const BUILT: bool = cfg!(feature = "contention");

/// Turns counting on for the run (the `--contention` flag).
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

#[cfg(feature = "contention")]
mod imp {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::Mutex;
    use troupe::contention::{self, Snapshot};

    /// The system allocator, each allocation and free counted on the
    /// calling thread (`troupe::contention` allocates nothing itself).
    struct Counting;

    // SAFETY: every call is forwarded unchanged to `System`, which upholds
    // `GlobalAlloc`'s contract; counting touches only thread-local counters.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            contention::count_alloc();
            // SAFETY: the caller's `layout` obligations pass through.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            contention::count_alloc();
            // SAFETY: as `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            contention::count_free();
            // SAFETY: `ptr` came from this allocator, that is `System`.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            contention::count_alloc();
            contention::count_free();
            // SAFETY: as `dealloc` and `alloc`.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Per workload: the counts of its measured windows, and their messages.
    pub(super) static RUNS: Mutex<Vec<(String, Snapshot, u64)>> = Mutex::new(Vec::new());

    pub(super) fn start() -> Snapshot {
        contention::reset_gauges();
        contention::snapshot()
    }

    pub(super) fn end(workload: &str, start: Snapshot, messages: u64) {
        let d = contention::snapshot().since(&start);
        let mut runs = RUNS.lock().unwrap_or_else(|e| e.into_inner());
        runs.push((workload.to_owned(), d, messages));
    }

    pub(super) fn take_report() -> String {
        let runs = std::mem::take(&mut *RUNS.lock().unwrap_or_else(|e| e.into_inner()));
        let mut out = String::new();
        let mut names: Vec<&str> = runs.iter().map(|(n, _, _)| n.as_str()).collect();
        names.dedup();
        for name in names {
            let mine: Vec<&(String, Snapshot, u64)> =
                runs.iter().filter(|(n, _, _)| n == name).collect();
            let messages: u64 = mine.iter().map(|(_, _, m)| m).sum();
            // The sum of the windows; the gauge is the largest of them.
            let mut total: Vec<(String, u64)> = Vec::new();
            for (_, s, _) in &mine {
                for (k, v) in s.iter() {
                    match total.iter_mut().find(|(n, _)| n == k) {
                        Some((_, t)) if k == "searching_max" => *t = (*t).max(v),
                        Some((_, t)) => *t += v,
                        None => total.push((k.to_owned(), v)),
                    }
                }
            }
            out.push_str(&format!(
                "\n== contention: {name} ({} windows, {messages} messages)\n",
                mine.len()
            ));
            for (k, v) in total {
                let per = if k == "searching_max" {
                    v as f64
                } else {
                    v as f64 / messages.max(1) as f64
                };
                out.push_str(&format!("contention {k} {per:.6} {v}\n"));
            }
        }
        out
    }
}

/// Counts `f` (a measured window of `messages` messages of `workload`)
/// when `--contention` is on; else just runs it.
pub fn window<T>(workload: &str, messages: u64, f: impl FnOnce() -> T) -> T {
    #[cfg(feature = "contention")]
    if ON.load(Ordering::Relaxed) {
        let start = imp::start();
        let r = f();
        imp::end(workload, start, messages);
        return r;
    }
    let _ = (workload, messages);
    f()
}

/// The counted windows so far, as report lines (empty if none), cleared.
pub fn take_report() -> String {
    #[cfg(feature = "contention")]
    return imp::take_report();
    #[cfg(not(feature = "contention"))]
    String::new()
}
