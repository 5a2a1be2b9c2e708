//! The workloads of `shared/BENCHMARKS.md`, on Troupe, one file each, plus the
//! plain-Rust baselines they are compared with in the same run.

pub mod actor_creation;
pub mod baseline;
pub mod channels;
pub mod mailbox_performance;
pub mod max_throughput;
pub mod message;
pub mod mixed_case;
pub mod pingpong;
pub mod reader_db;
pub mod registry;
pub mod ring;
pub mod schedulers;
pub mod spawn_and_await;

use crate::stats::{Figure, Sample};
use serde_json::{Map, Value};
use troupe::ActorSystem;

/// How to measure: threads, warm-up runs, samples, progress output.
#[derive(Clone, Debug)]
pub struct RunCfg {
    pub threads: usize,
    pub warmup: usize,
    pub samples: usize,
}

impl RunCfg {
    /// A Troupe system with the configured worker count.
    pub fn system(&self) -> ActorSystem {
        ActorSystem::builder().threads(self.threads).build()
    }

    /// Runs `f` `warmup` times unrecorded, then `samples` times, and builds
    /// the figure. `f` must verify its own result and return `Err` if wrong.
    pub fn measure(
        &self,
        framework: &str,
        workload: &str,
        name: String,
        params: Map<String, Value>,
        unit: &str,
        mut f: impl FnMut() -> Result<Sample, String>,
    ) -> Result<Figure, String> {
        for i in 0..self.warmup {
            crate::progress(&format!("{name}: warm-up {}/{}", i + 1, self.warmup));
            f()?;
        }
        let mut samples = Vec::with_capacity(self.samples);
        for i in 0..self.samples {
            crate::progress(&format!("{name}: sample {}/{}", i + 1, self.samples));
            samples.push(f()?);
        }
        Ok(Figure::from_samples(
            framework,
            workload,
            name,
            params,
            unit,
            self.threads,
            &samples,
        ))
    }
}

/// Builds a params map from (name, value) pairs.
pub fn params(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Fails with a clear message unless `ok`.
pub fn verify(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}
