//! The tell and ask workloads: troupe and raw NATS side by side.

use super::*;

pub(crate) fn remote_tell(
    url: &str,
    size: usize,
    n: u64,
    samples: u64,
    batch_bytes: Option<usize>,
) -> (f64, f64, f64) {
    let _sink = ChildRole::start("tell-sink", url, &[]);
    let mut builder = Node::builder(url, "source").insecure();
    if let Some(b) = batch_bytes {
        builder = builder.batch_bytes(b);
    }
    let node = builder.connect().expect("node");
    let blob = node.lookup::<Blob>("sink@sink").expect("lookup");
    let wait = blob.retype::<WaitFor>().expect("retype");
    let payload = vec![0xa5u8; size];
    let mut total = 0u64;
    let mut rates = Vec::new();
    let mut secs = Vec::new();
    let before = node.stats();
    let mut fulls = 0u64;
    for sample in 0..=samples {
        let count = if sample == 0 { n / 10 } else { n };
        let start = Instant::now();
        for _ in 0..count {
            let mut msg = Blob(payload.clone());
            loop {
                match blob.tell(msg) {
                    Ok(()) => break,
                    Err(SendError::Full(m)) => {
                        msg = m;
                        fulls += 1;
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    Err(e) => panic!("tell failed: {e}"),
                }
            }
        }
        total += count;
        let got = wait
            .ask(WaitFor(total), Duration::from_secs(120))
            .expect("the sink confirms");
        assert_eq!(got, total, "the sink counted a different number");
        let s = start.elapsed().as_secs_f64();
        if sample > 0 {
            rates.push(count as f64 / s);
            secs.push(s);
        }
    }
    let after = node.stats();
    if fulls > 0 {
        eprintln!("  the sender waited {fulls} times on a full outbox");
    }
    let coalescing = (after.frames_sent - before.frames_sent) as f64
        / (after.batches_sent - before.batches_sent).max(1) as f64;
    (median(rates), median(secs), coalescing)
}

pub(crate) fn raw_tell(url: &str, size: usize, n: u64, samples: u64) -> (f64, f64) {
    // The sink confirms every n messages; the warm-up is n too.
    let _sink = ChildRole::start("raw-sink", url, &["--expect", &n.to_string()]);
    let rt = rt();
    let client = raw_client(&rt, url);
    rt.block_on(async {
        let mut done = client.subscribe("bench.raw.done").await.expect("subscribe");
        client.flush().await.expect("flush");
        let payload = bytes::Bytes::from(vec![0xa5u8; size]);
        let mut rates = Vec::new();
        let mut secs = Vec::new();
        let mut total = 0u64;
        for sample in 0..=samples {
            let start = Instant::now();
            for _ in 0..n {
                client
                    .publish("bench.raw.tell", payload.clone())
                    .await
                    .expect("publish");
            }
            client.flush().await.expect("flush");
            total += n;
            let m = tokio::time::timeout(Duration::from_secs(120), done.next())
                .await
                .expect("the raw sink confirms (a slow consumer would drop and never confirm)")
                .expect("done");
            let got: u64 = std::str::from_utf8(&m.payload)
                .expect("utf8")
                .parse()
                .expect("count");
            assert_eq!(got, total);
            let s = start.elapsed().as_secs_f64();
            if sample > 0 {
                rates.push(n as f64 / s);
                secs.push(s);
            }
        }
        (median(rates), median(secs))
    })
}

pub(crate) fn percentiles(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64;
    (us(v[v.len() / 2]), us(v[v.len() * 99 / 100]), mean)
}

/// Latencies of remote asks (blocking, async), node pings and raw NATS
/// requests, taken interleaved: `rounds` rounds of k/rounds of each, so a
/// change in the machine's load during the run touches all four alike.
pub(crate) struct AskRun {
    pub(crate) blocking: Vec<Duration>,
    pub(crate) asynchronous: Vec<Duration>,
    /// `ask_async` on the runtime the asking node runs on (`connect_async`).
    pub(crate) same_runtime: Vec<Duration>,
    pub(crate) ping: Vec<Duration>,
    pub(crate) raw: Vec<Duration>,
    /// Raw requests to a responder that hands each to another thread.
    pub(crate) raw_hop: Vec<Duration>,
    /// The same, asked from a plain thread through a runtime driven by its
    /// own thread (as a blocking `ask` goes through the node's I/O thread).
    pub(crate) raw_hop_thread: Vec<Duration>,
}

pub(crate) fn ask_run(url: &str, k: u64, rounds: u64, spin_us: Option<u64>) -> AskRun {
    let spin_us = spin_us.map(|us| us.to_string());
    let extra: Vec<&str> = match &spin_us {
        Some(us) => vec!["--ask-spin-us", us.as_str()],
        None => Vec::new(),
    };
    let _echo = ChildRole::start("echo", url, &extra);
    let _raw_echo = ChildRole::start("raw-echo", url, &[]);
    let _raw_echo_hop = ChildRole::start("raw-echo-hop", url, &[]);
    // A raw client on a runtime driven by its own thread, like a node's I/O.
    let io_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let io_client = io_rt.block_on(async {
        async_nats::ConnectOptions::new()
            .connect(url)
            .await
            .expect("connect")
    });
    let node = Node::builder(url, "asker")
        .insecure()
        .connect()
        .expect("node");
    let echo = node.lookup::<Echo>("echo@echo").expect("lookup");
    let rt = rt();
    let client = raw_client(&rt, url);
    let node2 = rt
        .block_on(Node::builder(url, "asker2").insecure().connect_async())
        .expect("node on this runtime");
    let echo2 = node2.lookup::<Echo>("echo@echo").expect("lookup");
    let mut run = AskRun {
        blocking: Vec::new(),
        asynchronous: Vec::new(),
        same_runtime: Vec::new(),
        ping: Vec::new(),
        raw: Vec::new(),
        raw_hop: Vec::new(),
        raw_hop_thread: Vec::new(),
    };
    let per = (k / rounds).max(1);
    // Round 0 is the warm-up.
    for round in 0..=rounds {
        let keep = round > 0;
        for i in 0..per {
            let start = Instant::now();
            assert_eq!(echo.ask(Echo(i), Duration::from_secs(5)), Ok(i));
            if keep {
                run.blocking.push(start.elapsed());
            }
        }
        for i in 0..per {
            let start = Instant::now();
            assert_eq!(
                futures::executor::block_on(echo.ask_async(Echo(i), Duration::from_secs(5))),
                Ok(i)
            );
            if keep {
                run.asynchronous.push(start.elapsed());
            }
        }
        rt.block_on(async {
            for i in 0..per {
                let start = Instant::now();
                assert_eq!(
                    echo2.ask_async(Echo(i), Duration::from_secs(5)).await,
                    Ok(i)
                );
                if keep {
                    run.same_runtime.push(start.elapsed());
                }
            }
        });
        for _ in 0..per {
            let start = Instant::now();
            node.ping("echo", Duration::from_secs(5)).expect("ping");
            if keep {
                run.ping.push(start.elapsed());
            }
        }
        rt.block_on(async {
            for (subject, into) in [
                ("bench.raw.ask", &mut run.raw),
                ("bench.raw.ask-hop", &mut run.raw_hop),
            ] {
                for i in 0..per {
                    let start = Instant::now();
                    let m = client
                        .request(subject, i.to_le_bytes().to_vec().into())
                        .await
                        .expect("reply");
                    assert_eq!(m.payload.as_ref(), i.to_le_bytes());
                    if keep {
                        into.push(start.elapsed());
                    }
                }
            }
        });
        for i in 0..per {
            let start = Instant::now();
            let (tx, rx) = std::sync::mpsc::channel();
            let c = io_client.clone();
            io_rt.spawn(async move {
                let m = c
                    .request("bench.raw.ask-hop", i.to_le_bytes().to_vec().into())
                    .await
                    .expect("reply");
                let _ = tx.send(m.payload);
            });
            let payload = rx.recv().expect("reply");
            assert_eq!(payload.as_ref(), i.to_le_bytes());
            if keep {
                run.raw_hop_thread.push(start.elapsed());
            }
        }
    }
    run
}

/// The in-process floor: a plain thread asks a local actor (no network).
pub(crate) fn local_ask(k: u64) -> (f64, f64, f64) {
    let system = ActorSystem::builder().threads(1).build();
    let echo = system.spawn(EchoActor);
    let mut lat = Vec::with_capacity(k as usize);
    for i in 0..(k + k / 10) {
        let start = Instant::now();
        assert_eq!(echo.ask(|r| (Echo(i), r), Duration::from_secs(5)), Ok(i));
        if i >= k / 10 {
            lat.push(start.elapsed());
        }
    }
    system.shutdown();
    percentiles(lat)
}
