//! Seed 000's fps_estimator on Troupe: a producer publishes frames on the
//! named channel "main" at a fixed rate, a resizer republishes them on an
//! anonymous channel, and one estimator subscribed to both prints the frame
//! rate it sees on each, only while the stream is up (states
//! `StreamDown`/`HandlingImages` with an idle limit, a periodic measure timer
//! started in `on_enter` and cancelled in `on_exit`).
//!
//! The estimator counts with the library's
//! [`ThroughputEstimator`](troupe::observability::ThroughputEstimator); a
//! face detector behind the resizer (the seed's slow stage, `detect_ms` per
//! frame) times its first frames with a
//! [`FrequencyCalculator`](troupe::observability::FrequencyCalculator). The
//! system runs with metrics on and, with feature `metrics-http`, serves them
//! at `$TROUPE_METRICS_ADDR` (default `127.0.0.1:9464`): watch it with
//! `troupe-top`; a detector slower than the producer shows as buffering.
//!
//! Run: `cargo run -p troupe --features metrics-http --example fps_estimator -- [fps] [window_ms] [seconds] [detect_ms]`
//! (defaults: 30 fps, 1000 ms windows, 5 s, 0 ms).

use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::channel::Channel;
use troupe::observability::{FrequencyCalculator, ThroughputEstimator};
use troupe::states::{Flow, StateMachine, StateTable, StateTimeout, Stateful};
use troupe::timer::{send_periodic, TimerHandle};
use troupe::{Actor, ActorRef, Context, Recipient, SpawnOptions, SystemHandle};

/// An image (its pixels are shared by every subscriber, never copied).
pub struct Frame {
    /// Frame number.
    pub seq: u64,
    /// The image data.
    pub pixels: Vec<u8>,
}

/// Publishes a frame on its channel every `1/fps` seconds while started.
pub struct Producer {
    out: Channel<Frame>,
    fps: f64,
    timer: Option<TimerHandle>,
    seq: u64,
}

/// What the producer is told.
pub enum ProducerMsg {
    /// Start the stream.
    Start,
    /// Stop the stream.
    Stop,
    /// Time for the next frame (from its periodic timer).
    Tick,
}

impl Actor for Producer {
    type Msg = ProducerMsg;
    fn handle(&mut self, msg: ProducerMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            ProducerMsg::Start => {
                let period = Duration::from_secs_f64(1.0 / self.fps);
                self.timer = Some(send_periodic(
                    ctx.myself(),
                    Duration::ZERO,
                    period,
                    ProducerMsg::Tick,
                ));
            }
            ProducerMsg::Stop => self.timer = None,
            ProducerMsg::Tick => {
                self.seq += 1;
                self.out.publish(Frame {
                    seq: self.seq,
                    pixels: vec![0x80; 64 * 48 * 3],
                });
            }
        }
    }
}

impl Clone for ProducerMsg {
    fn clone(&self) -> Self {
        match self {
            ProducerMsg::Start => ProducerMsg::Start,
            ProducerMsg::Stop => ProducerMsg::Stop,
            ProducerMsg::Tick => ProducerMsg::Tick,
        }
    }
}

/// Halves every frame it sees and republishes it on its output channel.
pub struct Resizer {
    input: Channel<Frame>,
    output: Channel<Frame>,
}

impl Actor for Resizer {
    type Msg = Arc<Frame>;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.input.subscribe(ctx.myself().recipient());
    }
    fn handle(&mut self, frame: Arc<Frame>, _ctx: &mut Context<'_, Self>) {
        self.output.publish(Frame {
            seq: frame.seq,
            pixels: frame.pixels.iter().step_by(2).copied().collect(),
        });
    }
}

/// The seed's face detector: takes `detect` per frame (a stand-in for the
/// real work) and reports the frequency of its first `timed` frames.
pub struct FaceDetector {
    input: Channel<Frame>,
    detect: Duration,
    frequency: FrequencyCalculator,
}

impl Actor for FaceDetector {
    type Msg = Arc<Frame>;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.input.subscribe(ctx.myself().recipient());
    }
    fn handle(&mut self, _frame: Arc<Frame>, _ctx: &mut Context<'_, Self>) {
        std::thread::sleep(self.detect);
        if let Some(hz) = self.frequency.record() {
            println!(
                "face_detector: first {} frames at ~{hz:.2} frames/s",
                self.frequency.counted()
            );
        }
    }
}

/// One line of the estimator's report.
#[derive(Clone, Debug)]
pub struct Estimate {
    /// The channel's name.
    pub channel: String,
    /// Frames per second over the window.
    pub fps: f64,
    /// Frames counted in the window.
    pub frames: u64,
    /// The window's length.
    pub elapsed: Duration,
    /// When the window closed (it began `elapsed` earlier).
    pub at: Instant,
}

/// The estimator's states (seed 000's `st_stream_down`/`st_handling_images`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EstState {
    /// No frame for a while: nothing is measured or reported.
    StreamDown,
    /// Frames are flowing: count them and report every window.
    HandlingImages,
}

/// What the estimator receives.
pub enum EstMsg {
    /// A frame arrived on input channel `i`.
    Frame(usize),
    /// The periodic measure timer fired.
    Measure,
    /// The stream-down idle limit ran out.
    TimeLimit(StateTimeout),
}

impl Clone for EstMsg {
    fn clone(&self) -> Self {
        match self {
            EstMsg::Frame(i) => EstMsg::Frame(*i),
            EstMsg::Measure => EstMsg::Measure,
            EstMsg::TimeLimit(t) => EstMsg::TimeLimit(*t),
        }
    }
}

/// Counts frames per input channel and reports the rates every `window`.
pub struct FpsEstimator {
    fsm: StateMachine<FpsEstimator>,
    inputs: Vec<Channel<Frame>>,
    counters: Vec<ThroughputEstimator>,
    window: Duration,
    timer: Option<TimerHandle>,
    report: Recipient<Estimate>,
}

impl Stateful for FpsEstimator {
    type State = EstState;
    fn machine(&mut self) -> &mut StateMachine<Self> {
        &mut self.fsm
    }
    fn time_limit_msg(t: StateTimeout) -> EstMsg {
        EstMsg::TimeLimit(t)
    }
}

impl FpsEstimator {
    /// An estimator of `inputs`, reporting to `report` every `window`.
    pub fn new(inputs: Vec<Channel<Frame>>, window: Duration, report: Recipient<Estimate>) -> Self {
        let table = StateTable::<FpsEstimator>::new(EstState::StreamDown)
            .state(EstState::StreamDown, |s| {
                s.transfer_to(|m| matches!(m, EstMsg::Frame(_)), EstState::HandlingImages)
            })
            .state(EstState::HandlingImages, |s| {
                s.on_enter(|e: &mut FpsEstimator, ctx| {
                    let now = Instant::now();
                    e.counters.iter_mut().for_each(|c| c.start_at(now));
                    e.timer = Some(send_periodic(
                        ctx.myself(),
                        e.window,
                        e.window,
                        EstMsg::Measure,
                    ));
                })
                .on_exit(|e: &mut FpsEstimator, _| e.timer = None)
                .idle_limit(Duration::from_millis(500), EstState::StreamDown)
                .handler(|e, msg, _| match msg {
                    EstMsg::Frame(i) => {
                        // Reports come from the measure timer (`flush_at`),
                        // as in the seed, not from the estimator's own window.
                        let _ = e.counters[i].record_at(1, Instant::now());
                        Flow::Handled
                    }
                    EstMsg::Measure => {
                        e.measure();
                        Flow::Handled
                    }
                    m => Flow::Pass(m),
                })
            })
            .build();
        FpsEstimator {
            fsm: StateMachine::new(&table),
            counters: inputs
                .iter()
                // A window longer than any measure period: the timer closes it.
                .map(|c| ThroughputEstimator::new(c.name(), Duration::MAX))
                .collect(),
            inputs,
            window,
            timer: None,
            report,
        }
    }

    fn measure(&mut self) {
        let now = Instant::now();
        for (i, counter) in self.counters.iter_mut().enumerate() {
            let estimate = match counter.flush_at(now) {
                Some(e) => Estimate {
                    channel: self.inputs[i].name(),
                    fps: e.rate,
                    frames: e.messages,
                    elapsed: Duration::from_secs_f64(e.seconds),
                    at: now,
                },
                None => {
                    // Nothing arrived on this channel in the window: 0 fps.
                    counter.start_at(now);
                    Estimate {
                        channel: self.inputs[i].name(),
                        fps: 0.0,
                        frames: 0,
                        elapsed: self.window,
                        at: now,
                    }
                }
            };
            let _ = self.report.send(estimate);
        }
    }
}

impl Actor for FpsEstimator {
    type Msg = EstMsg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        for (i, input) in self.inputs.iter().enumerate() {
            input.subscribe(
                ctx.myself()
                    .recipient_map(move |_: Arc<Frame>| EstMsg::Frame(i)),
            );
        }
        StateMachine::start(self, ctx);
    }
    fn handle(&mut self, msg: EstMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            EstMsg::TimeLimit(t) => StateMachine::time_limit_expired(self, t, ctx),
            msg => {
                let _ = StateMachine::dispatch(self, msg, ctx);
            }
        }
    }
}

/// The pipeline of seed 000: producer -> "main" -> resizer -> output, and an
/// estimator watching "main" and the output. Returns the producer.
pub fn pipeline(
    system: &SystemHandle,
    fps: f64,
    window: Duration,
    report: Recipient<Estimate>,
) -> ActorRef<Producer> {
    pipeline_with_detector(system, fps, window, report, None)
}

/// As [`pipeline`], plus a face detector taking `detect` per frame on the
/// resizer's output, if given. Every stage is named (`producer`,
/// `resizer`, `face_detector`, `fps_estimator`) and both channels are
/// watched, so the metrics show the pipeline stage by stage.
pub fn pipeline_with_detector(
    system: &SystemHandle,
    fps: f64,
    window: Duration,
    report: Recipient<Estimate>,
    detect: Option<Duration>,
) -> ActorRef<Producer> {
    let main_channel: Channel<Frame> = Channel::named("main");
    let resized: Channel<Frame> = Channel::named("resized");
    system.watch_channel(&main_channel);
    system.watch_channel(&resized);
    let named = |n: &str| SpawnOptions::new().name(n);
    system.spawn_with(
        Resizer {
            input: main_channel.clone(),
            output: resized.clone(),
        },
        named("resizer"),
    );
    if let Some(detect) = detect {
        system.spawn_with(
            FaceDetector {
                input: resized.clone(),
                detect,
                frequency: FrequencyCalculator::new(fps.ceil() as u64),
            },
            named("face_detector"),
        );
    }
    system.spawn_with(
        FpsEstimator::new(vec![main_channel.clone(), resized], window, report),
        named("fps_estimator"),
    );
    system.spawn_with(
        Producer {
            out: main_channel,
            fps,
            timer: None,
            seq: 0,
        },
        named("producer"),
    )
}

/// The video pipeline: a producer, a resizer, a face detector and the
/// frame-rate estimator.
#[derive(clap::Parser)]
#[allow(dead_code)] // unused when a test includes this file as a module
struct Args {
    /// Frames per second the producer publishes.
    #[arg(default_value_t = 30.0, value_parser = positive)]
    fps: f64,
    /// The estimator's window, milliseconds.
    #[arg(default_value_t = 1000)]
    window_ms: u64,
    /// How long to run, seconds.
    #[arg(default_value_t = 5.0, value_parser = positive)]
    seconds: f64,
    /// Time the face detector takes per frame, milliseconds.
    #[arg(default_value_t = 0.0, value_parser = non_negative)]
    detect_ms: f64,
}

/// A finite number above zero.
#[allow(dead_code)]
fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number above 0")),
    }
}

/// A finite number, zero or more.
#[allow(dead_code)]
fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of 0 or more")),
    }
}

#[allow(dead_code)] // unused when a test includes this file as a module
fn main() {
    let args: Args = clap::Parser::parse();
    let fps = args.fps;
    let window = Duration::from_millis(args.window_ms);
    let seconds = args.seconds;
    let detect = Duration::from_secs_f64(args.detect_ms / 1e3);

    let system = troupe::ActorSystem::builder()
        .threads(2)
        .metrics(true)
        // Frames are few (tens per second): time one in 4, not 1 in 1,024.
        .metrics_sample_every(4)
        .build();
    #[cfg(feature = "metrics-http")]
    let _server = {
        let addr = std::env::var("TROUPE_METRICS_ADDR").unwrap_or_else(|_| "127.0.0.1:9464".into());
        let server = system
            .serve_metrics(&addr)
            .expect("could not serve metrics");
        println!("metrics at http://{}/metrics", server.addr());
        server
    };
    let report = Recipient::from_fn(|e: Estimate| {
        println!(
            "Estimated fps @{}=~{:.2} ({} frames in ~{:.1?})",
            e.channel, e.fps, e.frames, e.elapsed
        );
    });
    let producer = pipeline_with_detector(&system, fps, window, report, Some(detect));
    // Wait a moment with the stream down: nothing is reported.
    std::thread::sleep(Duration::from_millis(300));
    println!("stream up at {fps} fps");
    let _ = producer.tell(ProducerMsg::Start);
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let _ = producer.tell(ProducerMsg::Stop);
    println!("stream down");
    std::thread::sleep(window * 2);
    println!("{}", system.shutdown());
}
