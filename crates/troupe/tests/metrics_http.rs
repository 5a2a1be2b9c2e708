//! The metrics endpoint over real HTTP: scraped with an HTTP client (ureq),
//! parsed with a Prometheus text parser (prometheus-parse), figures checked
//! against known load. Needs feature `metrics-http`.

use prometheus_parse::{Sample, Scrape, Value};
use std::time::{Duration, Instant};
use troupe::{Actor, ActorSystem, Context, SpawnOptions};

struct Sleeper;

impl Actor for Sleeper {
    type Msg = u64;
    fn handle(&mut self, us: u64, _: &mut Context<'_, Self>) {
        std::thread::sleep(Duration::from_micros(us));
    }
}

fn scrape(url: &str) -> Scrape {
    let mut resp = ureq::get(url).call().expect("scrape");
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let body = resp.body_mut().read_to_string().expect("body");
    Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("valid exposition")
}

fn sample<'a>(s: &'a Scrape, metric: &str, actor: &str) -> &'a Sample {
    s.samples
        .iter()
        .find(|x| x.metric == metric && x.labels.get("actor") == Some(actor))
        .unwrap_or_else(|| panic!("no {metric}{{actor={actor}}}"))
}

fn scalar(v: &Value) -> f64 {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => *x,
        other => panic!("not a scalar: {other:?}"),
    }
}

#[test]
fn scrape_shows_arrivals_service_time_and_workers() {
    let system = ActorSystem::builder()
        .threads(2)
        .metrics(true)
        .metrics_sample_every(64)
        .build();
    let server = system.serve_metrics("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", server.addr());
    let a = system.spawn_with(Sleeper, SpawnOptions::new().name("paced"));
    // 1,000 msgs/s for 1 s, each handled in 0.5 ms.
    let start = Instant::now();
    for i in 0..1000u32 {
        let due = start + Duration::from_micros(u64::from(i) * 1000);
        if let Some(w) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
        a.tell(500).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    let s = scrape(&url);

    let received = scalar(&sample(&s, "troupe_actor_messages_received_total", "paced").value);
    assert_eq!(received, 1000.0);
    let handled = scalar(&sample(&s, "troupe_actor_messages_handled_total", "paced").value);
    assert!(handled >= 990.0, "handled {handled}");
    let arrival = scalar(&sample(&s, "troupe_actor_arrival_rate_per_second", "paced").value);
    assert!((850.0..=1100.0).contains(&arrival), "arrival {arrival}/s");
    let depth = scalar(&sample(&s, "troupe_actor_mailbox_depth", "paced").value);
    assert!(depth <= 10.0, "depth {depth}");

    // The service-time histogram: sampled about one in 64, mostly in (0.5, 1] ms.
    let hist = sample(&s, "troupe_actor_processing_time_seconds", "paced");
    let Value::Histogram(buckets) = &hist.value else {
        panic!("not a histogram: {:?}", hist.value)
    };
    let le = |bound: f64| {
        buckets
            .iter()
            .find(|b| b.less_than == bound || (b.less_than - bound).abs() < 1e-12)
            .map(|b| b.count)
            .unwrap_or_else(|| panic!("no bucket le={bound}"))
    };
    let total = le(f64::INFINITY);
    // Every 64th dequeue (16) plus the waits sampled (up to 17 more).
    assert!(
        (16.0..=40.0).contains(&total),
        "~1000/32 sampled, got {total}"
    );
    let waited = s
        .samples
        .iter()
        .find(|x| {
            x.metric == "troupe_actor_mailbox_time_seconds_count"
                && x.labels.get("actor") == Some("paced")
        })
        .map(|x| scalar(&x.value))
        .expect("waiting count");
    // The first send, then one per 64 dequeues (the sampler is armed by
    // the consumer); a few may be lost to races.
    assert!(
        (8.0..=17.0).contains(&waited),
        "1 + 1000/64 waits sampled, got {waited}"
    );
    assert!(le(0.0005) <= total * 0.05, "almost none under 0.5 ms");
    assert!(le(0.005) >= total * 0.9, "almost all under 5 ms");
    // Quantiles are gauges, one family per statistic (no summary type).
    let p50 = scalar(&sample(&s, "troupe_actor_service_time_p50_seconds", "paced").value);
    assert!((0.0005..0.002).contains(&p50), "service p50 {p50} s");

    // Workers: the default pool's two, which ran tasks and idled.
    let tasks: Vec<&Sample> = s
        .samples
        .iter()
        .filter(|x| x.metric == "troupe_worker_tasks_total")
        .collect();
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().map(|t| scalar(&t.value)).sum::<f64>() > 0.0);
    let idle: f64 = s
        .samples
        .iter()
        .filter(|x| x.metric == "troupe_worker_idle_seconds_total")
        .map(|x| scalar(&x.value))
        .sum();
    assert!(idle > 0.3, "two workers mostly idle over 1 s: {idle}");

    // Anything but /metrics is a 404.
    let err = ureq::get(&format!("http://{}/nope", server.addr())).call();
    assert!(matches!(err, Err(ureq::Error::StatusCode(404))), "{err:?}");
    server.stop();
    system.shutdown();
}
