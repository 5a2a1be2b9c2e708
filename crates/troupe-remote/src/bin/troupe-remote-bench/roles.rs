//! Child roles: this binary re-run as the serving side of a workload.

use super::*;

/// Child roles: print "ready" once serving, run until stdin closes.
pub(crate) fn child(role: &str, args: &Args) {
    let Some(url) = args.url.clone() else {
        eprintln!("a child role needs --url");
        std::process::exit(2);
    };
    let system = ActorSystem::builder().threads(1).build();
    let node_opts = |o: async_nats::ConnectOptions| o.subscription_capacity(SUB_CAPACITY);
    let wait_stdin = || {
        let mut s = String::new();
        let _ = std::io::stdin().read_line(&mut s);
    };
    match role {
        "tell-sink" => {
            let sink = system.spawn(Sink {
                count: 0,
                bytes: 0,
                waiting: None,
            });
            let node = Node::builder(&url, "sink")
                .insecure()
                .nats(|o| o.connect_options(node_opts))
                .connect()
                .expect("node");
            node.expose("sink", &sink)
                .tell::<Blob>()
                .ask::<WaitFor>(SinkMsg::WaitFor)
                .serve()
                .expect("serve");
            println!("ready");
            wait_stdin();
            let s = node.stats();
            if s.bad_frames + s.refused + s.undecodable > 0 {
                eprintln!("sink: {s:?}");
            }
        }
        "echo" => {
            let echo = system.spawn(EchoActor);
            let mut builder = Node::builder(&url, "echo").insecure();
            if let Some(us) = args.ask_spin_us {
                builder = builder.ask_spin(Duration::from_micros(us));
            }
            let node = builder
                .nats(|o| o.connect_options(node_opts))
                .connect()
                .expect("node");
            node.expose("echo", &echo)
                .ask::<Echo>(|q, r| (q, r))
                .serve()
                .expect("serve");
            println!("ready");
            wait_stdin();
        }
        "raw-sink" => {
            let per = args.expect;
            let rt = rt();
            let client = raw_client(&rt, &url);
            rt.block_on(async {
                let mut sub = client.subscribe("bench.raw.tell").await.expect("subscribe");
                client.flush().await.expect("flush");
                println!("ready");
                let _ = std::io::stdout().flush();
                let mut n = 0u64;
                let mut bytes = 0u64;
                while let Some(m) = sub.next().await {
                    n += 1;
                    bytes += m.payload.len() as u64;
                    if n % per == 0 {
                        client
                            .publish("bench.raw.done", n.to_string().into())
                            .await
                            .expect("publish");
                        client.flush().await.expect("flush");
                    }
                }
                let _ = bytes;
            });
        }
        "raw-echo" => {
            let rt = rt();
            let client = raw_client(&rt, &url);
            rt.block_on(async {
                let mut sub = client.subscribe("bench.raw.ask").await.expect("subscribe");
                client.flush().await.expect("flush");
                println!("ready");
                let _ = std::io::stdout().flush();
                while let Some(m) = sub.next().await {
                    if let Some(reply) = m.reply {
                        client.publish(reply, m.payload).await.expect("publish");
                    }
                }
            });
        }
        "raw-echo-hop" => {
            // The raw responder, but each request is answered by another OS
            // thread, as an actor on a worker thread answers a node's ask:
            // the floor for any runtime whose actors do not run on its I/O
            // thread. The worker blocks between requests (as an idle worker
            // parks); the I/O thread spins for the answer (as `ask_spin`).
            let (to_worker, requests) = std::sync::mpsc::channel::<bytes::Bytes>();
            let (to_io, answers) = std::sync::mpsc::channel::<bytes::Bytes>();
            std::thread::spawn(move || {
                while let Ok(b) = requests.recv() {
                    if to_io.send(b).is_err() {
                        break;
                    }
                }
            });
            let rt = rt();
            let client = raw_client(&rt, &url);
            rt.block_on(async {
                let mut sub = client
                    .subscribe("bench.raw.ask-hop")
                    .await
                    .expect("subscribe");
                client.flush().await.expect("flush");
                println!("ready");
                let _ = std::io::stdout().flush();
                while let Some(m) = sub.next().await {
                    if let Some(reply) = m.reply {
                        to_worker.send(m.payload).expect("worker");
                        let answer = loop {
                            match answers.try_recv() {
                                Ok(b) => break b,
                                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                                Err(e) => panic!("worker: {e}"),
                            }
                        };
                        client.publish(reply, answer).await.expect("publish");
                    }
                }
            });
        }
        other => panic!("unknown role {other}"),
    }
    system.shutdown();
}

/// A child process of this binary in `role`; killed when dropped.
pub(crate) struct ChildRole(Child);

impl ChildRole {
    pub(crate) fn start(role: &str, url: &str, extra: &[&str]) -> ChildRole {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .args(["--role", role, "--url", url])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn a child role");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("piped"))
            .read_line(&mut line)
            .expect("read");
        assert_eq!(line.trim(), "ready", "{role} did not start");
        ChildRole(child)
    }
}

impl Drop for ChildRole {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
