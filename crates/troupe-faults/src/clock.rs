//! The run's one clock: `CLOCK_MONOTONIC`, which every process on a Linux
//! machine shares, so timestamps written by the driver and by every node
//! process order against each other. It does not jump with the wall
//! clock, and it keeps counting while a process is stopped (SIGSTOP).

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration,
    // and CLOCK_MONOTONIC is always supported on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    // Both fields are non-negative for CLOCK_MONOTONIC.
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}
