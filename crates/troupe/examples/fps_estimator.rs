//! Seed 000's fps_estimator on Troupe: a producer publishes frames on the
//! named channel "main" at a fixed rate, a resizer republishes them on an
//! anonymous channel, and one estimator subscribed to both prints the frame
//! rate it sees on each, only while the stream is up (states
//! `StreamDown`/`HandlingImages` with an idle limit, a periodic measure timer
//! started in `on_enter` and cancelled in `on_exit`).
//!
//! Run: `cargo run -p troupe --example fps_estimator -- [fps] [window_ms] [seconds]`
//! (defaults: 30 fps, 1000 ms windows, 5 s).

use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::channel::Channel;
use troupe::states::{Flow, StateMachine, StateTable, StateTimeout, Stateful};
use troupe::timer::{send_periodic, TimerHandle};
use troupe::{Actor, ActorRef, Context, Recipient, SystemHandle};

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
    counters: Vec<u64>,
    window: Duration,
    start: Instant,
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
                    e.counters.iter_mut().for_each(|c| *c = 0);
                    e.timer = Some(send_periodic(
                        ctx.myself(),
                        e.window,
                        e.window,
                        EstMsg::Measure,
                    ));
                    e.start = Instant::now();
                })
                .on_exit(|e: &mut FpsEstimator, _| e.timer = None)
                .idle_limit(Duration::from_millis(500), EstState::StreamDown)
                .handler(|e, msg, _| match msg {
                    EstMsg::Frame(i) => {
                        e.counters[i] += 1;
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
            counters: vec![0; inputs.len()],
            inputs,
            window,
            start: Instant::now(),
            timer: None,
            report,
        }
    }

    fn measure(&mut self) {
        let elapsed = self.start.elapsed();
        self.start = Instant::now();
        for (i, counter) in self.counters.iter_mut().enumerate() {
            let _ = self.report.send(Estimate {
                channel: self.inputs[i].name(),
                fps: *counter as f64 / elapsed.as_secs_f64(),
                frames: *counter,
                elapsed,
            });
            *counter = 0;
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
    let main_channel: Channel<Frame> = Channel::named("main");
    let resized: Channel<Frame> = Channel::new();
    system.spawn(Resizer {
        input: main_channel.clone(),
        output: resized.clone(),
    });
    system.spawn(FpsEstimator::new(
        vec![main_channel.clone(), resized],
        window,
        report,
    ));
    system.spawn(Producer {
        out: main_channel,
        fps,
        timer: None,
        seq: 0,
    })
}

#[allow(dead_code)] // unused when a test includes this file as a module
fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let fps = args.first().copied().unwrap_or(30.0);
    let window = Duration::from_millis(args.get(1).copied().unwrap_or(1000.0) as u64);
    let seconds = args.get(2).copied().unwrap_or(5.0);

    let system = troupe::ActorSystem::builder().threads(2).build();
    let report = Recipient::from_fn(|e: Estimate| {
        println!(
            "Estimated fps @{}=~{:.2} ({} frames in ~{:.1?})",
            e.channel, e.fps, e.frames, e.elapsed
        );
    });
    let producer = pipeline(&system, fps, window, report);
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
