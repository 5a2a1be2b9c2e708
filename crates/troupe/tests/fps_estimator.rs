//! The seed 000 fps_estimator example, checked: the rate it estimates on
//! each channel is within 10% of the producer's rate, and nothing is
//! reported while the stream is down.

#[path = "../examples/fps_estimator.rs"]
#[allow(dead_code)]
mod example;

use std::time::Duration;
use troupe::mchain::{MChain, Receive};
use troupe::ActorSystem;

#[test]
fn estimate_is_within_ten_percent_of_the_producer_rate() {
    const FPS: f64 = 100.0;
    let window = Duration::from_millis(1000);
    let system = ActorSystem::builder().threads(2).build();
    let estimates = MChain::unbounded();
    let producer = example::pipeline(&system, FPS, window, estimates.recipient());

    // Stream down: no reports.
    let r = estimates.receive(
        Receive::new().empty_timeout(Duration::from_millis(1200)),
        |_| (),
    );
    assert_eq!(r.extracted, 0, "reported while the stream was down");

    producer.tell(example::ProducerMsg::Start).unwrap();
    // Three windows on each of the two channels.
    let mut got = Vec::new();
    estimates.receive(
        Receive::new()
            .handle_n(6)
            .total_time(Duration::from_secs(20)),
        |e: example::Estimate| got.push(e),
    );
    producer.tell(example::ProducerMsg::Stop).unwrap();
    assert_eq!(got.len(), 6, "estimates: {got:?}");
    for name in ["main", "resized"] {
        let per_channel: Vec<_> = got.iter().filter(|e| e.channel.starts_with(name)).collect();
        assert_eq!(per_channel.len(), 3, "{name}: {got:?}");
        for e in per_channel {
            let error = (e.fps - FPS).abs() / FPS;
            assert!(
                error <= 0.10,
                "{name}: estimated {:.2} fps, produced {FPS}: {e:?}",
                e.fps
            );
        }
    }

    // Stream down again: after the idle limit (500 ms) the measure timer is
    // cancelled; at most the window in progress is reported.
    std::thread::sleep(Duration::from_millis(700));
    let late = estimates.len();
    let r = estimates.receive(
        Receive::new().empty_timeout(Duration::from_millis(1500)),
        |_| (),
    );
    assert_eq!(
        r.extracted, late,
        "reports kept coming after the stream went down"
    );
    system.shutdown();
}
