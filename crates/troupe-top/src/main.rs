//! `troupe-top`: a live, top-like view of a Troupe system's metrics
//! endpoint (`SystemHandle::serve_metrics`).
//!
//! Usage: `troupe-top [URL] [--interval MS]` (default
//! `http://127.0.0.1:9464/metrics`, 1000 ms). Keys: `a` arrival, `t`
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

struct App {
    url: String,
    interval: Duration,
    key: SortKey,
    view: Option<View>,
    error: Option<String>,
    polls: u64,
}

impl App {
    fn poll(&mut self) {
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
                "troupe-top  {}  live actors {}  sorted by {}  (a/t/d/w/s/n sort, q quit)",
                self.url,
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
                Cell::from(format!("{}", w.tasks)),
            ])
        });
        let wtable = Table::new(
            wrows,
            [
                Constraint::Min(18),
                Constraint::Length(7),
                Constraint::Length(21),
                Constraint::Length(12),
            ],
        )
        .header(
            Row::new(["WORKER", "BUSY", "", "TASKS"])
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
    /// Milliseconds between polls (at least 50).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..))]
    interval: u64,
}

fn main() -> std::io::Result<()> {
    let cli = <Cli as clap::Parser>::parse();
    let (url, interval) = (cli.url, Duration::from_millis(cli.interval));
    let mut app = App {
        url,
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
