//! The Savina actor benchmark suite (Imam & Sarkar, AGERE 2014) on Troupe.
//!
//! Micro and concurrency groups: the contract's workloads
//! (`troupe_bench_contract::savina`), which the peers run too, one file each
//! with its protocol mapped to Troupe. Parallel group (trapezoid, recmatmul,
//! quicksort, sieve, nqueenk): Troupe only, declared here with Savina's
//! defaults.
//!
//! Every figure is Savina's: the wall time of the measured phase in
//! milliseconds (`unit: "ms"`, `rate` = milliseconds, lower is better). The
//! samples are recorded with one operation each, so the report's `average`
//! and `median` columns are that time too. Each figure's JSON line also
//! carries `savina_group` (`micro`, `concurrency` or `parallel`).

pub mod banking;
pub mod barber;
pub mod big;
pub mod bndbuffer;
pub mod chameneos;
pub mod concdict;
pub mod count;
pub mod fjcreate;
pub mod fjthrput;
pub mod harness;
pub mod nqueenk;
pub mod philosopher;
pub mod pingpong;
pub mod quicksort;
pub mod recmatmul;
pub mod report;
pub mod sieve;
pub mod threadring;
pub mod trapezoid;

use crate::run::Workload;
// The workload files reach their harness through `super::`.
pub use harness::{measure, plot_threads, recv, sample, timed};

/// The micro group, in report order.
pub const MICRO: &[&Workload] = &[
    &pingpong::WORKLOAD,
    &count::WORKLOAD,
    &fjthrput::WORKLOAD,
    &fjcreate::WORKLOAD,
    &threadring::WORKLOAD,
    &chameneos::WORKLOAD,
    &big::WORKLOAD,
];

/// The concurrency group, in report order.
pub const CONCURRENCY: &[&Workload] = &[
    &concdict::WORKLOAD,
    &bndbuffer::WORKLOAD,
    &philosopher::WORKLOAD,
    &barber::WORKLOAD,
    &banking::WORKLOAD,
];

/// The parallel group (Troupe only), in report order.
pub const PARALLEL: &[&Workload] = &[
    &trapezoid::WORKLOAD,
    &recmatmul::WORKLOAD,
    &quicksort::WORKLOAD,
    &sieve::WORKLOAD,
    &nqueenk::WORKLOAD,
];

/// The groups a workload-name argument can select: `savina` (all three),
/// `savina-micro`, `savina-concurrency`, `savina-parallel`.
pub fn group(name: &str) -> Option<Vec<&'static Workload>> {
    let v: Vec<&'static Workload> = match name {
        "savina" => MICRO
            .iter()
            .chain(CONCURRENCY)
            .chain(PARALLEL)
            .copied()
            .collect(),
        "savina-micro" => MICRO.to_vec(),
        "savina-concurrency" => CONCURRENCY.to_vec(),
        "savina-parallel" => PARALLEL.to_vec(),
        _ => return None,
    };
    Some(v)
}

/// The group names, for messages.
pub const GROUPS: &[&str] = &[
    "savina",
    "savina-micro",
    "savina-concurrency",
    "savina-parallel",
];

#[cfg(test)]
mod tests {
    use super::harness::group_of;
    use super::*;
    use crate::run::RunCfg;

    /// Tiny parameters for each Savina workload (flag -> value).
    fn tiny(name: &str) -> &'static [(&'static str, &'static str)] {
        match name {
            "savina_pingpong" => &[("pings", "500")],
            "savina_count" => &[("increments", "2000")],
            "savina_fjthrput" => &[("messages", "200"), ("actors", "8")],
            "savina_fjcreate" => &[("actors", "500")],
            "savina_threadring" => &[("actors", "10"), ("passes", "500")],
            "savina_chameneos" => &[("chameneos", "7"), ("meetings", "300")],
            "savina_big" => &[("actors", "10"), ("pings", "100")],
            "savina_concdict" => &[("workers", "4"), ("requests", "200")],
            "savina_bndbuffer" => &[
                ("buffer", "5"),
                ("producers", "4"),
                ("consumers", "3"),
                ("items", "50"),
                ("cost", "5"),
            ],
            "savina_philosopher" => &[("philosophers", "5"), ("rounds", "50")],
            "savina_barber" => &[
                ("haircuts", "100"),
                ("seats", "5"),
                ("arrival-cost", "50"),
                ("haircut-cost", "100"),
            ],
            "savina_banking" => &[("accounts", "20"), ("transfers", "500")],
            "savina_trapezoid" => &[("pieces", "20000"), ("workers", "7")],
            "savina_recmatmul" => &[("size", "64"), ("block-area", "256"), ("workers", "4")],
            "savina_quicksort" => &[("values", "5000"), ("sequential", "64")],
            "savina_sieve" => &[("limit", "5000"), ("primes-per-actor", "20")],
            "savina_nqueenk" => &[
                ("queens", "7"),
                ("solutions", "1500000"),
                ("threshold", "3"),
                ("workers", "4"),
            ],
            other => panic!("no tiny parameters for {other}"),
        }
    }

    #[test]
    fn every_savina_workload_verifies_at_tiny_parameters() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 0,
            samples: 1,
        };
        let all = group("savina").unwrap();
        assert_eq!(all.len(), 17);
        for w in all {
            let given = tiny(w.spec.name);
            let args = w
                .spec
                .resolve(true, |flag| {
                    given
                        .iter()
                        .find(|(f, _)| *f == flag)
                        .map(|(_, v)| v.to_string())
                })
                .unwrap();
            let figs =
                (w.run)(&cfg, &args).unwrap_or_else(|e| panic!("{} failed: {e}", w.spec.name));
            assert_eq!(figs.len(), 1, "{}", w.spec.name);
            let f = &figs[0];
            assert_eq!(f.unit, "ms");
            assert!(f.rate > 0.0 && (f.rate - f.seconds * 1e3).abs() < 1e-9);
            assert!(group_of(w.spec.name).is_some());
        }
    }

    #[test]
    fn harness_groups_agree_with_the_lists() {
        for (g, list) in [
            ("micro", MICRO),
            ("concurrency", CONCURRENCY),
            ("parallel", PARALLEL),
        ] {
            for w in list {
                assert_eq!(group_of(w.spec.name), Some(g), "{}", w.spec.name);
            }
        }
        assert_eq!(group_of("ring"), None);
    }

    #[test]
    fn groups_partition_the_suite() {
        for g in GROUPS {
            assert!(group(g).is_some());
        }
        assert_eq!(MICRO.len() + CONCURRENCY.len(), 12);
        assert_eq!(PARALLEL.len(), 5);
        assert!(MICRO.iter().chain(CONCURRENCY).all(|w| w.peers));
        assert!(PARALLEL.iter().all(|w| !w.peers));
    }
}
