//! Deadlines from user durations, and the one condvar wait loop.
//!
//! Every public call that takes a `Duration` turns it into a deadline here,
//! with [`after`]: a duration too large for `Instant` (`Duration::MAX`, or
//! any that overflows the clock) means "no deadline", never a panic. Every
//! blocking wait on a mutex-guarded condition with an optional deadline goes
//! through [`wait_while`]. The one wait that has no mutex, a joiner waiting
//! for an actor's stop, parks on the exit record's address instead
//! (`actor::lifecycle`, whose record sits behind a `ShortLock`).

use parking_lot::{Condvar, MutexGuard};
use std::time::{Duration, Instant};

/// The deadline `timeout` from now, or `None` ("wait as long as it takes")
/// when `now + timeout` does not fit in an `Instant`.
///
/// ```ignore
/// assert!(after(Duration::MAX).is_none());
/// ```
#[inline]
pub(crate) fn after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// Waits on `cv` while `pending(&mut state)` holds, until `deadline` (or for
/// ever with `None`). Returns `true` if the condition cleared, `false` if the
/// deadline passed first. Spurious wake-ups are handled here.
pub(crate) fn wait_while<T: ?Sized>(
    cv: &Condvar,
    guard: &mut MutexGuard<'_, T>,
    deadline: Option<Instant>,
    mut pending: impl FnMut(&mut T) -> bool,
) -> bool {
    while pending(guard) {
        match deadline {
            None => cv.wait(guard),
            Some(d) => {
                if cv.wait_until(guard, d).timed_out() {
                    return !pending(guard);
                }
            }
        }
    }
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn huge_durations_mean_no_deadline() {
        assert!(after(Duration::MAX).is_none());
        assert!(after(Duration::from_secs(u64::MAX)).is_none());
        assert!(after(Duration::ZERO).is_some());
    }

    #[test]
    fn wait_while_times_out_and_sees_the_condition() {
        let m = Mutex::new(0u32);
        let cv = Condvar::new();
        let mut g = m.lock();
        let d = after(Duration::from_millis(5));
        assert!(!wait_while(&cv, &mut g, d, |v| *v == 0));
        *g = 1;
        assert!(wait_while(&cv, &mut g, None, |v| *v == 0));
    }
}
