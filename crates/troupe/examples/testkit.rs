//! Testing a timer-driven actor with the test kit's virtual clock: a login
//! session that expires after 15 minutes without activity, and reminds its
//! user once a minute before. The checks below cover 45 minutes of the
//! session's life and take microseconds, the same on every run, with no
//! sleep: the kit runs the actors on this thread, and its clock moves only
//! when the test says so.
//!
//! Run: `cargo run -p troupe --example testkit` (in a crate's tests, the
//! same code goes in a `#[test]` function).

use std::time::{Duration, Instant};
use troupe::testkit::TestKit;
use troupe::timer::{self, TimerHandle};
use troupe::{Actor, Context, Recipient, StopReason};

const IDLE_LIMIT: Duration = Duration::from_secs(15 * 60);
const WARN_BEFORE: Duration = Duration::from_secs(60);

/// What the session tells its user.
#[derive(Debug, PartialEq)]
enum Notice {
    ExpiresSoon,
    Expired,
}

enum SessionMsg {
    /// The user did something: the idle clock starts again.
    Activity,
    /// The session's own timers.
    Warn,
    Expire,
}

struct Session {
    user: Recipient<Notice>,
    warn: Option<TimerHandle>,
    expire: Option<TimerHandle>,
}

impl Session {
    fn new(user: Recipient<Notice>) -> Self {
        Session {
            user,
            warn: None,
            expire: None,
        }
    }

    /// (Re)arms both timers; the old handles are dropped, which cancels them.
    fn arm(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.myself();
        self.warn = Some(timer::send_delayed(
            me.clone(),
            IDLE_LIMIT - WARN_BEFORE,
            SessionMsg::Warn,
        ));
        self.expire = Some(timer::send_delayed(me, IDLE_LIMIT, SessionMsg::Expire));
    }
}

impl Actor for Session {
    type Msg = SessionMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.arm(ctx);
    }

    fn handle(&mut self, msg: SessionMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            SessionMsg::Activity => self.arm(ctx),
            SessionMsg::Warn => {
                let _ = self.user.send(Notice::ExpiresSoon);
            }
            SessionMsg::Expire => {
                let _ = self.user.send(Notice::Expired);
                ctx.stop();
            }
        }
    }
}

fn minutes(n: u64) -> Duration {
    Duration::from_secs(n * 60)
}

fn main() {
    let real = Instant::now();
    let kit = TestKit::new();
    let user = kit.probe::<Notice>();
    let session = kit.spawn(Session::new(user.recipient()));

    // Ten quiet minutes, then activity: nothing is said meanwhile.
    user.expect_no_msg(minutes(10));
    session.tell(SessionMsg::Activity).unwrap();
    println!("t = 10 min: activity");

    // The clock restarted at 10 min: no warning at 14 min (the old timer
    // was cancelled), a warning at 24 min, expiry at 25 min.
    user.expect_no_msg(minutes(13) + Duration::from_secs(59));
    user.expect_msg(Duration::from_secs(1))
        .equals(Notice::ExpiresSoon);
    println!("t = 24 min: warned");
    user.expect_msg(minutes(1)).equals(Notice::Expired);
    println!("t = 25 min: expired");
    kit.expect_stopped(&session, StopReason::Normal);

    // A stopped session says nothing more, however long we wait.
    user.expect_no_msg(minutes(20));
    println!(
        "ok: 45 virtual minutes checked in {:?} of real time",
        real.elapsed()
    );
}
