//! `--plot DIR`: the scaling figures as SVG (plotters' SVG backend only: text
//! is written as SVG `<text>`, so no system font library is needed), each
//! with its data as CSV beside it.

use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Writes `rows` (header first) as CSV.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<String>]) -> Result<(), String> {
    let mut s = header.join(",");
    s.push('\n');
    for r in rows {
        s.push_str(&r.join(","));
        s.push('\n');
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A line chart of `points` (x, y); returns the SVG and CSV paths.
pub fn line_chart(
    dir: &Path,
    stem: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[(f64, f64)],
) -> Result<(PathBuf, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(err)?;
    let svg = dir.join(format!("{stem}.svg"));
    let csv = dir.join(format!("{stem}.csv"));
    write_csv(
        &csv,
        &[x_label, y_label],
        &points
            .iter()
            .map(|(x, y)| vec![x.to_string(), format!("{y:.3}")])
            .collect::<Vec<_>>(),
    )?;
    let x_max = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let y_max = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
    {
        let root = SVGBackend::new(&svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max * 1.1, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .y_label_formatter(&|v| crate::stats::fmt_rate(*v))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                BLUE.stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok((svg, csv))
}

/// A bar chart of labelled values; returns the SVG and CSV paths.
pub fn bar_chart(
    dir: &Path,
    stem: &str,
    title: &str,
    y_label: &str,
    bars: &[(String, f64)],
) -> Result<(PathBuf, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(err)?;
    let svg = dir.join(format!("{stem}.svg"));
    let csv = dir.join(format!("{stem}.csv"));
    write_csv(
        &csv,
        &["label", y_label],
        &bars
            .iter()
            .map(|(l, v)| vec![l.replace(',', ";"), format!("{v:.3}")])
            .collect::<Vec<_>>(),
    )?;
    let n = bars.len().max(1);
    let y_max = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.15;
    {
        let root = SVGBackend::new(&svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..n as f64, 0f64..y_max)
            .map_err(err)?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.26 {
                    labels.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_label)
            .y_label_formatter(&|v| crate::stats::fmt_rate(*v))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                Rectangle::new(
                    [(i as f64 + 0.2, 0.0), (i as f64 + 0.8, *v)],
                    BLUE.mix(0.7).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (l, _))| {
                Text::new(
                    l.clone(),
                    (i as f64 + 0.25, y_max * 0.03),
                    ("sans-serif", 14),
                )
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok((svg, csv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_svg_and_csv() {
        let dir = std::env::temp_dir().join(format!("troupe-bench-plot-{}", std::process::id()));
        let (svg, csv) = line_chart(
            &dir,
            "reads",
            "reads/s vs threads",
            "threads",
            "reads/s",
            &[(1.0, 1e6), (2.0, 1.8e6), (4.0, 2.0e6)],
        )
        .unwrap();
        let s = std::fs::read_to_string(&svg).unwrap();
        assert!(s.starts_with("<svg") && s.contains("<polyline"));
        assert_eq!(
            std::fs::read_to_string(&csv).unwrap(),
            "threads,reads/s\n1,1000000.000\n2,1800000.000\n4,2000000.000\n"
        );
        let (svg, _) =
            bar_chart(&dir, "bars", "hops/s", "hops/s", &[("default".into(), 5e7)]).unwrap();
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<rect"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
