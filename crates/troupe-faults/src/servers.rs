//! The run's processes other than the nodes' own: NATS servers clustered
//! on loopback, each with JetStream in its own store directory under the
//! run's directory, and the toxiproxy server; each can be SIGKILLed and
//! started again on the same ports with the same store.
//!
//! The servers' cluster blocks say `no_advertise`, so a client learns no
//! server address beyond those it was given: every node's connection goes
//! through the proxy, where the nemesis can reach it.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port the OS had free a moment ago.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until `port` accepts connections, at most `limit`.
pub fn wait_listening(port: u16, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A child process that can be killed and started again with the same
/// command line; killed when dropped, and (on Linux) when the driver dies.
pub struct Process {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Process {
    /// A process named `name` (its log is `<dir>/<name>.log`), not started.
    pub fn new(name: &str, program: &Path, args: Vec<String>, dir: &Path) -> Process {
        Process {
            name: name.to_string(),
            program: program.to_path_buf(),
            args,
            log: dir.join(format!("{name}.log")),
            child: None,
        }
    }

    /// Starts it (its output appended to its log).
    pub fn start(&mut self) -> std::io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs in the forked child before exec and
            // calls only prctl(2), which is async-signal-safe; it touches
            // no memory shared with the parent.
            unsafe {
                command.pre_exec(|| {
                    // The child dies with the driver, even a SIGKILLed one,
                    // so a run cut short (a CI timeout) leaves no server,
                    // proxy or node behind.
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let child = command.spawn()?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGKILLs it and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().and_then(|c| i32::try_from(c.id()).ok())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One NATS server of the cluster.
pub struct NatsServer {
    /// Its client port.
    pub port: u16,
    /// The process.
    pub process: Process,
}

impl NatsServer {
    /// Kills it (SIGKILL: no goodbye to clients).
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Starts it again on the same ports and store.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.process.kill();
        self.process.start()?;
        if wait_listening(self.port, Duration::from_secs(10)) {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "{} did not listen again",
                self.process.name()
            )))
        }
    }
}

/// Starts `n` clustered JetStream servers `s0..` under `dir`.
pub fn nats_cluster(bin: &Path, n: usize, dir: &Path) -> std::io::Result<Vec<NatsServer>> {
    let routes = (0..n)
        .map(|_| free_port())
        .collect::<std::io::Result<Vec<u16>>>()?;
    let routes_text: Vec<String> = routes
        .iter()
        .map(|p| format!("\"nats-route://127.0.0.1:{p}\""))
        .collect();
    let mut servers = Vec::with_capacity(n);
    for (i, route) in routes.iter().enumerate() {
        let port = free_port()?;
        let store = dir.join(format!("s{i}"));
        std::fs::create_dir_all(&store)?;
        let conf = store.join("nats.conf");
        std::fs::write(
            &conf,
            format!(
                "server_name: \"s{i}\"\nlisten: 127.0.0.1:{port}\n\
                 jetstream {{ store_dir: \"{}\" }}\n\
                 cluster {{ name: \"faults\", listen: \"127.0.0.1:{route}\", routes: [{}], no_advertise: true }}\n",
                store.join("js").display(),
                routes_text.join(", ")
            ),
        )?;
        let mut process = Process::new(
            &format!("s{i}"),
            bin,
            vec!["-c".into(), conf.display().to_string()],
            dir,
        );
        process.start()?;
        servers.push(NatsServer { port, process });
    }
    for s in &servers {
        if !wait_listening(s.port, Duration::from_secs(10)) {
            return Err(std::io::Error::other(format!(
                "{} did not listen",
                s.process.name()
            )));
        }
    }
    Ok(servers)
}
