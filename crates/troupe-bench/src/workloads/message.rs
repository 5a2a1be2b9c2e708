//! `message` (CAF's micro-benchmarks, seed 004):
//! - create a one-integer message, as a plain typed value (what Troupe's
//!   mailbox carries) and boxed as `Box<dyn Any + Send>` (what a dynamically
//!   typed message costs: one allocation);
//! - dispatch 5 messages to an actor with 8 handlers (int; int,int; double;
//!   double,double; string; string,string; foo; bar) hitting handlers
//!   2, 4, 6, 7, 8, through the same method the actor's `handle` calls;
//! - serialize and deserialize `foo {a: 10, b: 20}`, `bar {a: foo{1,2}, b:
//!   "three"}` and a two-integer message with serde + postcard.
//!
//! One figure per micro-benchmark; rate in ops/s, `ns_per_op` as an extra.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::any::Any;
use std::borrow::Cow;
use std::hint::black_box;
use std::time::Instant;
use troupe::{Actor, Context};
use troupe_bench_contract::spec::{ParamSpec, Spec};

pub struct Params {
    /// Operations per sample.
    pub iterations: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Foo {
    pub a: i32,
    pub b: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub a: Foo,
    pub b: String,
}

/// The eight message shapes of CAF's dispatch benchmark. Strings are
/// `Cow<'static, str>` so that, as in CAF (whose messages are shared and
/// copy-on-write), dispatching a pre-built message copies no string.
// Handlers 1, 3 and 5 exist to be matched against, never hit (as in CAF).
#[allow(dead_code)]
#[derive(Clone, Debug)]
pub enum Msg {
    Int(i32),
    IntInt(i32, i32),
    Double(f64),
    DoubleDouble(f64, f64),
    Str(Cow<'static, str>),
    StrStr(Cow<'static, str>, Cow<'static, str>),
    Foo(Foo),
    Bar(Box<BarRef>),
}

/// `bar` with a shared string (see [`Msg`]).
#[derive(Clone, Debug)]
pub struct BarRef {
    pub a: Foo,
    pub b: Cow<'static, str>,
}

/// An actor with eight handlers; counts which ones ran.
#[derive(Default)]
pub struct EightHandlers {
    pub hits: [u64; 8],
    pub acc: i64,
}

impl EightHandlers {
    /// What `handle` does: match the message to one of eight handlers.
    #[inline]
    pub fn dispatch(&mut self, msg: Msg) {
        match msg {
            Msg::Int(a) => {
                self.hits[0] += 1;
                self.acc += a as i64;
            }
            Msg::IntInt(a, b) => {
                self.hits[1] += 1;
                self.acc += (a + b) as i64;
            }
            Msg::Double(a) => {
                self.hits[2] += 1;
                self.acc += a as i64;
            }
            Msg::DoubleDouble(a, b) => {
                self.hits[3] += 1;
                self.acc += (a + b) as i64;
            }
            Msg::Str(s) => {
                self.hits[4] += 1;
                self.acc += s.len() as i64;
            }
            Msg::StrStr(a, b) => {
                self.hits[5] += 1;
                self.acc += (a.len() + b.len()) as i64;
            }
            Msg::Foo(f) => {
                self.hits[6] += 1;
                self.acc += (f.a + f.b) as i64;
            }
            Msg::Bar(b) => {
                self.hits[7] += 1;
                self.acc += (b.a.a + b.b.len() as i32) as i64;
            }
        }
    }
}

impl Actor for EightHandlers {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
        self.dispatch(msg);
    }
}

/// The five messages of CAF's benchmark (handlers 2, 4, 6, 7, 8).
pub fn five_messages() -> [Msg; 5] {
    [
        Msg::IntInt(1, 2),
        Msg::DoubleDouble(1.0, 2.0),
        Msg::StrStr(Cow::Borrowed("hi"), Cow::Borrowed("there")),
        Msg::Foo(Foo { a: 1, b: 2 }),
        Msg::Bar(Box::new(BarRef {
            a: Foo { a: 1, b: 2 },
            b: Cow::Borrowed("three"),
        })),
    ]
}

fn time_loop(n: u64, mut body: impl FnMut(u64)) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        body(i);
    }
    t0.elapsed().as_secs_f64()
}

fn micro(seconds: f64, n: u64) -> Sample {
    Sample::new(seconds, n as f64).with("ns_per_op", seconds * 1e9 / n as f64)
}

/// Serializes `v` into `buf` and reads it back; returns the decoded value.
fn roundtrip<T: Serialize + for<'de> Deserialize<'de>>(v: &T, buf: &mut [u8]) -> T {
    let used = postcard::to_slice(v, buf).expect("fits the buffer").len();
    postcard::from_bytes(&buf[..used]).expect("decodes")
}

/// (c) one serialize + deserialize figure: `n` round trips of `value`
/// through postcard, each decoded value scored by `score`, which must add up
/// to `n * expected`.
fn serde_figure<T: Serialize + for<'de> Deserialize<'de>>(
    cfg: &RunCfg,
    n: u64,
    what: &str,
    value: &T,
    score: impl Fn(&T) -> i64,
    expected: i64,
) -> Result<Figure, String> {
    cfg.measure(
        "troupe",
        "message",
        format!("serde+postcard {what}"),
        params(&[("iterations", json!(n))]),
        "ops/s",
        || {
            let mut buf = [0u8; 64];
            let mut sum = 0i64;
            let s = time_loop(n, |_| sum += score(&roundtrip(black_box(value), &mut buf)));
            verify(sum == expected * n as i64, || {
                format!("message: {what} decoded wrong")
            })?;
            Ok(micro(s, n))
        },
    )
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let n = p.iterations.max(1);
    let ps = || params(&[("iterations", json!(n))]);
    let mut figs = Vec::new();

    // (a) create a one-integer message.
    figs.push(cfg.measure(
        "troupe",
        "message",
        "make int message (typed enum)".into(),
        ps(),
        "ops/s",
        || {
            let mut sum = 0i64;
            let s = time_loop(n, |i| {
                let m = black_box(Msg::Int(black_box(i as i32)));
                if let Msg::Int(v) = m {
                    sum += v as i64;
                }
            });
            verify(sum != 0 || n < 2, || "message: typed values lost".into())?;
            Ok(micro(s, n))
        },
    )?);
    figs.push(cfg.measure(
        "troupe",
        "message",
        "make int message (Box<dyn Any>)".into(),
        ps(),
        "ops/s",
        || {
            let mut hits = 0u64;
            let s = time_loop(n, |i| {
                let m: Box<dyn Any + Send> = Box::new(Msg::Int(black_box(i as i32)));
                let m = black_box(m);
                if let Some(Msg::Int(_)) = m.downcast_ref::<Msg>() {
                    hits += 1;
                }
            });
            verify(hits == n, || {
                format!("message: {hits} of {n} boxed messages downcast")
            })?;
            Ok(micro(s, n))
        },
    )?);

    // (b) dispatch 5 messages to an actor with 8 handlers.
    figs.push(cfg.measure(
        "troupe",
        "message",
        "dispatch 5 msgs, 8 handlers".into(),
        ps(),
        "ops/s",
        || {
            let msgs = five_messages();
            let mut actor = EightHandlers::default();
            let s = time_loop(n, |_| {
                for m in black_box(&msgs).iter() {
                    black_box(&mut actor).dispatch(black_box(m.clone()));
                }
            });
            let expected = [0, n, 0, n, 0, n, n, n];
            verify(actor.hits == expected, || {
                format!(
                    "message: handlers hit {:?}, expected {expected:?}",
                    actor.hits
                )
            })?;
            Ok(micro(s, n).with("ns_per_message", s * 1e9 / (5 * n) as f64))
        },
    )?);

    // (c) serialize + deserialize with serde + postcard.
    let foo_msg = Foo { a: 10, b: 20 };
    let bar = Bar {
        a: Foo { a: 1, b: 2 },
        b: "three".into(),
    };
    let two: (i32, i32) = (1, 2);
    let mut buf = [0u8; 64];
    verify(roundtrip(&foo_msg, &mut buf) == foo_msg, || {
        "foo roundtrip".into()
    })?;
    verify(roundtrip(&bar, &mut buf) == bar, || "bar roundtrip".into())?;
    verify(roundtrip(&two, &mut buf) == two, || {
        "int,int roundtrip".into()
    })?;
    figs.push(serde_figure(
        cfg,
        n,
        "foo{10,20}",
        &foo_msg,
        |v| (v.a + v.b) as i64,
        30,
    )?);
    figs.push(serde_figure(
        cfg,
        n,
        "bar{foo{1,2},\"three\"}",
        &bar,
        |v| (v.a.a + v.a.b) as i64 + v.b.len() as i64,
        8,
    )?);
    figs.push(serde_figure(
        cfg,
        n,
        "(int,int)",
        &two,
        |v| (v.0 + v.1) as i64,
        3,
    )?);
    Ok(figs)
}

/// `message` (Troupe only): CAF's micro-benchmarks; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "message",
        about: "create, dispatch and (de)serialize messages (CAF's micro-benchmarks); ns per op",
        params: &[ParamSpec::count(
            "iterations",
            "message: operations per sample of each micro-benchmark",
            "10000000",
            "1000000",
        )],
    },
    peers: false,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                iterations: a.u64("iterations"),
            },
        )
    },
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_messages_hit_handlers_2_4_6_7_8() {
        let mut a = EightHandlers::default();
        for m in five_messages() {
            a.dispatch(m);
        }
        assert_eq!(a.hits, [0, 1, 0, 1, 0, 1, 1, 1]);
    }

    #[test]
    fn postcard_roundtrips() {
        let mut buf = [0u8; 64];
        let bar = Bar {
            a: Foo { a: 1, b: 2 },
            b: "three".into(),
        };
        assert_eq!(roundtrip(&bar, &mut buf), bar);
        assert_eq!(roundtrip(&(1i32, 2i32), &mut buf), (1, 2));
    }
}
