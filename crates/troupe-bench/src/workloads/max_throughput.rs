//! `max_throughput` (seed 000): the maximum throughput of an `image_resizer`
//! stage that halves a 640x480 8-bit grayscale image (2x2 box filter ->
//! 320x240), measured from its output the way seed 000's
//! `frequency_calculator` does: the first output frame starts the clock, the
//! last one stops it, rate = frames / elapsed.
//!
//! Input frame `f` has pixel (x, y) = (x*7 + y*13 + f) as u8; only 16
//! distinct frames are built (f mod 16) and shared (`Arc`), like the seed's
//! test sending one decoded frame many times. Output frames go over a
//! crossbeam channel to a plain thread (the frequency calculator), which
//! checks each frame's size and checksum against a straight-line resize of the
//! same input and feeds a [`ThroughputEstimator`] (the library's, `troupe::observability`).
//!
//! Variants, as in seed 000: the resizer as one actor (frames handled one at
//! a time), and the resizer as a [`SharedActor`] whose frame handler is
//! thread-safe, on a 2-thread pool (SObjectizer's adv_thread_pool): two
//! frames are resized at once by the same actor.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{unbounded, Sender};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::observability::ThroughputEstimator;
use troupe::parallel::{Fifo, SharedActor, SharedRef};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec::{ParamSpec, Spec};

pub struct Params {
    pub frames: u64,
}

pub const W: usize = 640;
pub const H: usize = 480;
pub const OW: usize = W / 2;
pub const OH: usize = H / 2;
const DISTINCT: usize = 16;

/// The synthetic input frame number `f`.
pub fn input_frame(f: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(W * H);
    for y in 0..H {
        for x in 0..W {
            v.push((x * 7 + y * 13 + f) as u8);
        }
    }
    v
}

/// Halves a W x H image with a 2x2 box filter (rounded average).
pub fn resize_half(src: &[u8], out: &mut Vec<u8>) {
    assert_eq!(src.len(), W * H);
    out.clear();
    out.reserve(OW * OH);
    for oy in 0..OH {
        let r0 = &src[2 * oy * W..2 * oy * W + W];
        let r1 = &src[(2 * oy + 1) * W..(2 * oy + 1) * W + W];
        out.extend(
            r0.chunks_exact(2).zip(r1.chunks_exact(2)).map(|(a, b)| {
                ((a[0] as u16 + a[1] as u16 + b[0] as u16 + b[1] as u16 + 2) / 4) as u8
            }),
        );
    }
}

/// The plain pixel-by-pixel resize the checks compare with.
pub fn resize_reference(src: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; OW * OH];
    for oy in 0..OH {
        for ox in 0..OW {
            let p = |x: usize, y: usize| src[y * W + x] as u32;
            let s = p(2 * ox, 2 * oy)
                + p(2 * ox + 1, 2 * oy)
                + p(2 * ox, 2 * oy + 1)
                + p(2 * ox + 1, 2 * oy + 1);
            out[oy * OW + ox] = ((s + 2) / 4) as u8;
        }
    }
    out
}

/// A position-dependent checksum (FNV-1a over 8-byte words).
pub fn checksum(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        h ^= u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    for &b in chunks.remainder() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ data.len() as u64
}

pub struct Frame {
    pub id: u64,
    pub data: Arc<Vec<u8>>,
}

pub struct Resized {
    pub id: u64,
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

/// The resizer stage: halves each frame and sends it on.
pub struct Resizer {
    output: Sender<Resized>,
}

impl Actor for Resizer {
    type Msg = Frame;
    fn handle(&mut self, frame: Frame, _ctx: &mut Context<'_, Self>) {
        let mut data = Vec::new();
        resize_half(&frame.data, &mut data);
        let _ = self.output.send(Resized {
            id: frame.id,
            width: OW,
            height: OH,
            data,
        });
    }
}

/// The same stage with a thread-safe frame handler: frames are resized in
/// parallel on the pool's workers.
pub struct SharedResizer {
    output: Sender<Resized>,
}

impl SharedActor for SharedResizer {
    type Msg = Frame;
    fn is_thread_safe(_frame: &Frame) -> bool {
        true
    }
    fn handle_shared(&self, frame: Frame) {
        let mut data = Vec::new();
        resize_half(&frame.data, &mut data);
        let _ = self.output.send(Resized {
            id: frame.id,
            width: OW,
            height: OH,
            data,
        });
    }
    fn handle_exclusive(&mut self, frame: Frame) {
        self.handle_shared(frame);
    }
}

/// Where the frames go.
enum Stage {
    Actor(ActorRef<Resizer>),
    Shared(SharedRef<SharedResizer>),
}

struct Inputs {
    frames: Vec<Arc<Vec<u8>>>,
    expected: Vec<u64>,
}

fn inputs() -> Inputs {
    let frames: Vec<Arc<Vec<u8>>> = (0..DISTINCT).map(|f| Arc::new(input_frame(f))).collect();
    let expected = frames
        .iter()
        .map(|f| checksum(&resize_reference(f)))
        .collect();
    Inputs { frames, expected }
}

/// One sample: the resizer as one actor, or (`parallel_threads` > 0) as a
/// shared actor on a pool of that many threads; the calling thread feeds, a
/// plain thread measures frequency_calculator-style.
fn sample(cfg: &RunCfg, inp: &Inputs, n: u64, parallel_threads: usize) -> Result<Sample, String> {
    let system = cfg.system();
    let (out_tx, out_rx) = unbounded::<Resized>();
    let stage = if parallel_threads == 0 {
        Stage::Actor(system.spawn(Resizer { output: out_tx }))
    } else {
        let pool = system.work_stealing_pool("resize", parallel_threads);
        Stage::Shared(system.spawn_shared(SharedResizer { output: out_tx }, &pool, Fifo::PerActor))
    };
    let expected = inp.expected.clone();
    let calc = std::thread::spawn(move || -> Result<(f64, ThroughputEstimator), String> {
        let mut est = ThroughputEstimator::new("resizer output", Duration::from_millis(50));
        let mut seen = vec![false; n as usize];
        let mut tic = None;
        let mut toc = Instant::now();
        for i in 0..n {
            let r = out_rx
                .recv_timeout(Duration::from_secs(120))
                .map_err(|e| format!("max_throughput: output frame {i} missing: {e}"))?;
            let now = Instant::now();
            if i == 0 {
                tic = Some(now);
                est.start_at(now);
            }
            if i + 1 == n {
                toc = now;
                est.record_at(1, now);
            } else {
                est.record(1);
            }
            verify(
                r.width == OW && r.height == OH && r.data.len() == OW * OH,
                || {
                    format!(
                        "max_throughput: frame {} is {}x{} ({} bytes), expected {OW}x{OH}",
                        r.id,
                        r.width,
                        r.height,
                        r.data.len()
                    )
                },
            )?;
            let want = expected[r.id as usize % DISTINCT];
            verify(checksum(&r.data) == want, || {
                format!("max_throughput: frame {} has a wrong checksum", r.id)
            })?;
            verify((r.id as usize) < seen.len() && !seen[r.id as usize], || {
                format!("max_throughput: frame {} out of range or twice", r.id)
            })?;
            seen[r.id as usize] = true;
        }
        est.flush_at(toc);
        verify(est.total() == n, || {
            "max_throughput: estimator miscounted".into()
        })?;
        let secs = tic
            .map(|t| toc.duration_since(t).as_secs_f64())
            .unwrap_or(0.0);
        Ok((secs, est))
    });
    for i in 0..n {
        let frame = Frame {
            id: i,
            data: inp.frames[i as usize % DISTINCT].clone(),
        };
        let sent = match &stage {
            Stage::Actor(a) => a.tell(frame).is_ok(),
            Stage::Shared(s) => s.tell(frame).is_ok(),
        };
        verify(sent, || "max_throughput: the resizer stopped".to_string())?;
    }
    let (seconds, est) = calc
        .join()
        .map_err(|_| "max_throughput: the frequency calculator panicked".to_string())??;
    system.shutdown();
    if let Some(last) = est.estimates().last() {
        crate::progress(&est.report_line(last));
    }
    // The seed's formula: messages_count / (last - first).
    let mut s = Sample::new(seconds.max(1e-9), n as f64).with("windows", est.estimates().len());
    if let Some(r) = est.mean_rate() {
        s = s.with("estimated_fps", r);
    }
    Ok(s)
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let n = p.frames.max(2);
    let inp = inputs();
    let ps = || params(&[("frames", json!(n))]);
    let one = cfg.measure(
        "troupe",
        "max_throughput",
        format!("resizer, 1 actor, {n} frames"),
        ps(),
        "frames/s",
        || sample(cfg, &inp, n, 0),
    )?;
    let pool = cfg.measure(
        "troupe",
        "max_throughput",
        format!("resizer, thread-safe handler on a 2-thread pool, {n} frames"),
        ps(),
        "frames/s",
        || sample(cfg, &inp, n, 2),
    )?;
    // The floor: the same resizes in a straight loop on one thread.
    let straight = cfg.measure(
        "baseline",
        "max_throughput",
        format!("straight-line resize, {n} frames"),
        ps(),
        "frames/s",
        || {
            let mut out = Vec::new();
            let mut ok = true;
            let t0 = Instant::now();
            for i in 0..n as usize {
                resize_half(&inp.frames[i % DISTINCT], &mut out);
                ok &= checksum(&out) == inp.expected[i % DISTINCT];
            }
            let s = t0.elapsed().as_secs_f64();
            verify(ok, || "max_throughput: straight resize checksum".into())?;
            Ok(Sample::new(s, n as f64))
        },
    )?;
    Ok(vec![one, pool, straight])
}

/// `max_throughput` (Troupe only): the resizer stage of seed 000; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "max_throughput",
        about:
            "a resizer stage halves 640x480 frames, on one thread and on a 2-thread pool; frames/s",
        params: &[ParamSpec::count(
            "frames",
            "max_throughput: frames sent through the resizer",
            "1000",
            "300",
        )],
    },
    peers: false,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                frames: a.u64("frames"),
            },
        )
    },
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_resize_matches_reference() {
        for f in [0, 5, 255] {
            let src = input_frame(f);
            let mut out = Vec::new();
            resize_half(&src, &mut out);
            assert_eq!(out.len(), OW * OH);
            assert_eq!(out, resize_reference(&src));
        }
    }

    #[test]
    fn the_library_estimator_counts_every_frame() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 0,
            samples: 1,
        };
        let s = sample(&cfg, &inputs(), 20, 0).unwrap();
        assert_eq!(s.ops, 20.0);
        // The partial window is flushed at the last frame: at least one
        // window, and a positive mean rate.
        assert!(s.extra["windows"].as_u64().unwrap() >= 1);
        assert!(s.extra["estimated_fps"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn checksum_sees_order() {
        assert_ne!(checksum(&[1, 2, 3]), checksum(&[3, 2, 1]));
        assert_ne!(checksum(&[0; 8]), checksum(&[0; 9]));
    }
}
