//! `troupe-top`: a live, top-like view of a Troupe system's metrics
//! endpoint (`SystemHandle::serve_metrics`), or of a node's management
//! API (troupe-admin), and so of any node of a cluster.
//!
//! Usage: `troupe-top [URL] [--interval MS]` (default
//! `http://127.0.0.1:9464/metrics`, 1000 ms), or `troupe-top --admin
//! http://127.0.0.1:9470` with the bearer token in the environment
//! variable `TROUPE_ADMIN_TOKEN` (never on the command line, where `ps`
//! shows it): the busiest actors from `/api/v1/actors`, the workers'
//! current actors from `/api/v1/workers`, the node and its cluster's
//! member count in the title. Keys: `a` arrival, `t`
//! throughput, `d` depth, `w` waiting p99, `s` service p99, `n` name (sort
//! by); `q` or Esc quits. A `!` marks an actor that is buffering (arrivals
//! outpace throughput and its mailbox is not empty).

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};
use ratatui::Frame;
use std::time::{Duration, Instant};
use troupe_top::{human_secs, parse, SortKey, View};

/// Where the figures come from.
enum Source {
    /// A Prometheus endpoint.
    Metrics,
    /// A management API: its base URL's token.
    Admin { token: String },
}

struct App {
    url: String,
    source: Source,
    /// The node's name and its cluster's member count (`--admin`).
    node: Option<String>,
    interval: Duration,
    key: SortKey,
    view: Option<View>,
    error: Option<String>,
    polls: u64,
}

impl App {
    fn get_json(&self, path: &str, token: &str) -> Result<serde_json::Value, String> {
        let url = format!("{}{path}", self.url.trim_end_matches('/'));
        let text = ureq::get(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .map_err(|e| e.to_string())
            .and_then(|mut r| r.body_mut().read_to_string().map_err(|e| e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| format!("{url}: not JSON: {e}"))
    }

    fn poll_admin(&mut self, token: &str) {
        match self.get_json("/api/v1/actors?top=50", token) {
            Ok(actors) => {
                // Optional reads: a node without a workers' view or a
                // cluster answers 404.
                let workers = self.get_json("/api/v1/workers", token).ok();
                let name = self
                    .get_json("/api/v1/node", token)
                    .ok()
                    .and_then(|n| n["node"]["name"].as_str().map(str::to_string));
                let members = self
                    .get_json("/api/v1/members", token)
                    .ok()
                    // Members listed `down` (declared down lately) are
                    // not counted.
                    .and_then(|m| {
                        m["members"]
                            .as_array()
                            .map(|a| a.iter().filter(|m| m["state"] != "down").count())
                    });
                self.node = Some(match (name, members) {
                    (Some(n), Some(m)) => format!("node {n} ({m} members)"),
                    (Some(n), None) => format!("node {n}"),
                    _ => "no cluster".into(),
                });
                self.view = Some(View::from_admin(&actors, workers.as_ref(), self.key));
                self.error = None;
                self.polls += 1;
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn poll(&mut self) {
        if let Source::Admin { token } = &self.source {
            let token = token.clone();
            return self.poll_admin(&token);
        }
        let body = ureq::get(&self.url)
            .call()
            .map_err(|e| e.to_string())
            .and_then(|mut r| r.body_mut().read_to_string().map_err(|e| e.to_string()));
        match body.and_then(|b| parse(&b).map_err(|e| e.to_string())) {
            Ok(scrape) => {
                self.view = Some(View::from_scrape(&scrape, self.view.as_ref(), self.key));
                self.error = None;
                self.polls += 1;
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn draw(&self, f: &mut Frame) {
        let [head, actors, workers] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(5),
            Constraint::Length(
                self.view
                    .as_ref()
                    .map_or(3, |v| v.workers.len() as u16 + 3)
                    .min(12),
            ),
        ])
        .areas(f.area());
        let status = match (&self.error, &self.view) {
            (Some(e), _) => format!("troupe-top  {}  error: {e}", self.url),
            (None, Some(v)) => format!(
                "troupe-top  {}{}  live actors {}  sorted by {}  (a/t/d/w/s/n sort, q quit)",
                self.url,
                self.node
                    .as_deref()
                    .map(|n| format!("  {n}"))
                    .unwrap_or_default(),
                v.live_actors,
                self.key.title()
            ),
            (None, None) => format!("troupe-top  {}  connecting...", self.url),
        };
        f.render_widget(Paragraph::new(Line::from(status)), head);

        let titles = [
            "",
            "ACTOR",
            "TYPE",
            "ARRIVAL/s",
            "THROUGHPUT/s",
            "DEPTH",
            "WAIT p99",
            "SERVICE p99",
        ];
        let header = Row::new(titles.iter().map(|t| {
            let style = if *t == self.key.title() {
                Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
            } else {
                Style::default().add_modifier(Modifier::BOLD)
            };
            Cell::from(*t).style(style)
        }));
        let rows = self.view.iter().flat_map(|v| v.actors.iter()).map(|a| {
            let mark = if a.buffering() { "!" } else { " " };
            let style = if a.buffering() {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            };
            Row::new(vec![
                Cell::from(mark),
                Cell::from(a.name.clone()),
                Cell::from(a.type_name.clone()),
                Cell::from(format!("{:.1}", a.arrival)),
                Cell::from(format!("{:.1}", a.throughput)),
                Cell::from(format!("{}", a.depth)),
                Cell::from(human_secs(a.waiting_p99)),
                Cell::from(human_secs(a.service_p99)),
            ])
            .style(style)
        });
        let table = Table::new(
            rows,
            [
                Constraint::Length(1),
                Constraint::Min(16),
                Constraint::Min(12),
                Constraint::Length(10),
                Constraint::Length(13),
                Constraint::Length(7),
                Constraint::Length(9),
                Constraint::Length(12),
            ],
        )
        .header(header)
        .block(Block::default().borders(Borders::TOP).title("actors"));
        f.render_widget(table, actors);

        let wrows = self.view.iter().flat_map(|v| v.workers.iter()).map(|w| {
            let bar_len = (w.utilisation * 20.0).round() as usize;
            Row::new(vec![
                Cell::from(format!("{}-{}", w.pool, w.index)),
                Cell::from(format!("{:>5.1}%", w.utilisation * 100.0)),
                Cell::from(format!(
                    "{}{}",
                    "#".repeat(bar_len),
                    ".".repeat(20 - bar_len)
                )),
                Cell::from(match &w.running {
                    Some(r) => r.clone(),
                    None => format!("{}", w.tasks),
                }),
            ])
        });
        let wtable = Table::new(
            wrows,
            [
                Constraint::Min(18),
                Constraint::Length(7),
                Constraint::Length(21),
                Constraint::Min(12),
            ],
        )
        .header(
            Row::new(["WORKER", "BUSY", "", "TASKS / RUNNING"])
                .style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::default().borders(Borders::TOP).title("workers"));
        f.render_widget(wtable, workers);
    }
}

/// A live view of a Troupe system's metrics endpoint.
#[derive(clap::Parser)]
#[command(name = "troupe-top", version, about)]
struct Cli {
    /// The Prometheus endpoint (`SystemHandle::serve_metrics`).
    #[arg(default_value = "http://127.0.0.1:9464/metrics")]
    url: String,
    /// A node's management API (troupe-admin) to attach to instead, e.g.
    /// `http://127.0.0.1:9470`; the bearer token is read from
    /// `TROUPE_ADMIN_TOKEN`.
    #[arg(long, value_name = "URL", conflicts_with = "url")]
    admin: Option<String>,
    /// Milliseconds between polls (at least 50).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..))]
    interval: u64,
}

fn main() -> std::io::Result<()> {
    let cli = <Cli as clap::Parser>::parse();
    let interval = Duration::from_millis(cli.interval);
    let (url, source) = match cli.admin {
        Some(base) => {
            let Ok(token) = std::env::var("TROUPE_ADMIN_TOKEN") else {
                eprintln!("troupe-top --admin: set TROUPE_ADMIN_TOKEN to the API's bearer token");
                std::process::exit(2);
            };
            (base, Source::Admin { token })
        }
        None => (cli.url, Source::Metrics),
    };
    let mut app = App {
        url,
        source,
        node: None,
        interval,
        key: SortKey::Arrival,
        view: None,
        error: None,
        polls: 0,
    };
    let mut terminal = ratatui::init();
    let result = (|| -> std::io::Result<()> {
        let mut next_poll = Instant::now();
        loop {
            if Instant::now() >= next_poll {
                app.poll();
                next_poll = Instant::now() + app.interval;
            }
            terminal.draw(|f| app.draw(f))?;
            let wait = next_poll.saturating_duration_since(Instant::now());
            if event::poll(wait)? {
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Press {
                        continue;
                    }
                    match k.code {
                        KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Char(c) => {
                            if let Some(key) = SortKey::from_key(c) {
                                app.key = key;
                                if let Some(v) = app.view.as_mut() {
                                    v.sort(key);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    })();
    ratatui::restore();
    let _ = app.polls;
    result
}
