//! Testing actors without sleeps: a deterministic system on a virtual
//! clock ([`TestKit`]), probes that stand in for actors ([`TestProbe`]),
//! and assertions on how actors stop. In the spirit of Akka's TestKit,
//! CAF's deterministic test coordinator and SObjectizer's testing env.
//!
//! * [`TestKit`] runs its actors **on the test's own thread**, one message
//!   at a time, only when the test asks ([`TestKit::step`],
//!   [`TestKit::run_until_idle`]). Timers armed by its actors (delayed and
//!   periodic messages, state time limits, ask deadlines) run on a
//!   **virtual clock** that moves only with [`TestKit::advance`]: a one-hour
//!   time limit is tested in microseconds, and a test gives the same result
//!   on every run.
//! * [`TestProbe`] is a [`Recipient`](crate::Recipient) that records what
//!   it receives and offers `expect_msg`, `expect_msg_where`,
//!   `expect_no_msg` and `receive_n`, with failure messages that show what
//!   arrived instead. Made by a kit ([`TestKit::probe`]) it waits in virtual
//!   time, driving the kit; made alone ([`TestProbe::new`]) it waits in real
//!   time, for tests of an ordinary [`ActorSystem`](crate::ActorSystem).
//! * [`TestKit::expect_stopped`] (and [`expect_stopped`] for real systems)
//!   asserts an actor's stop reason.
//!
//! ```
//! use std::time::Duration;
//! use troupe::testkit::TestKit;
//! use troupe::{timer, Actor, Context, Recipient};
//!
//! /// Says "tick" to `out` every second.
//! struct Ticker { out: Recipient<&'static str> }
//! impl Actor for Ticker {
//!     type Msg = &'static str;
//!     fn started(&mut self, ctx: &mut Context<'_, Self>) {
//!         timer::send_periodic(ctx.myself(), Duration::from_secs(1), Duration::from_secs(1), "tick").detach();
//!     }
//!     fn handle(&mut self, m: &'static str, _ctx: &mut Context<'_, Self>) {
//!         let _ = self.out.send(m);
//!     }
//! }
//!
//! let kit = TestKit::new();
//! let probe = kit.probe::<&'static str>();
//! kit.spawn(Ticker { out: probe.recipient() });
//! probe.expect_no_msg(Duration::from_millis(999)); // virtual: takes no time
//! probe.expect_msg(Duration::from_millis(1)).equals("tick");
//! assert_eq!(probe.receive_n(3600, Duration::from_secs(3600)).len(), 3600);
//! ```

#[cfg(all(test, not(loom)))]
mod async_actor_tests;
mod kit;
mod probe;

pub use kit::{TestKit, TestKitBuilder};
pub use probe::{expect_stopped, Received, TestProbe};
