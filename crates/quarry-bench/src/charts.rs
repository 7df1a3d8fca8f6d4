//! How do results look as pictures: grouped bar charts (PNG) drawn with plotters.
//!
//! Text is rendered with `ab_glyph` from DejaVu Sans embedded by the `dejavu` crate, so charts
//! need no fontconfig and no system fonts.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

static FONT: Once = Once::new();

pub(crate) fn register_font() {
    FONT.call_once(|| {
        // The bytes are a valid TrueType font shipped by the `dejavu` crate.
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| ())
            .expect("DejaVu Sans is a valid font");
        plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold())
            .map_err(|_| ())
            .expect("DejaVu Sans Bold is a valid font");
    });
}

/// Fixed colour per engine, so every chart reads the same way.
pub fn engine_color(engine: &str) -> RGBColor {
    match engine {
        "quarry" => RGBColor(230, 120, 20),
        "tantivy" => RGBColor(40, 110, 200),
        "lucene" => RGBColor(60, 160, 70),
        // The I/O study's engine/directory pairs: shades of the engine's colour.
        "quarry-mmap" => RGBColor(230, 120, 20),
        "quarry-pread" => RGBColor(250, 175, 90),
        "quarry-direct" => RGBColor(170, 70, 0),
        "quarry-adaptive" => RGBColor(200, 40, 40),
        "tantivy-mmap" => RGBColor(40, 110, 200),
        "lucene-mmap" => RGBColor(60, 160, 70),
        "lucene-niofs" => RGBColor(140, 200, 120),
        _ => RGBColor(120, 120, 120),
    }
}

/// One series of a grouped bar chart: an engine and one value per group (None = no bar).
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

fn fmt_value(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 100_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Draws a grouped bar chart to `path` (PNG): one group per label, one bar per series.
pub fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[Series],
    log_y: bool,
) -> Result<()> {
    register_font();
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| *v > 0.0)
        .collect();
    if values.is_empty() || groups.is_empty() {
        return Err(anyhow!("nothing to plot for {title}"));
    }
    let max = values.iter().cloned().fold(f64::MIN, f64::max);
    let min = values.iter().cloned().fold(f64::MAX, f64::min);
    let width = (220 + groups.len() as u32 * (60 + 40 * series.len() as u32)).clamp(800, 1800);
    let root = BitMapBackend::new(path, (width, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    let n = groups.len() as f64;
    let k = series.len() as f64;
    let bar_w = 0.8 / k;

    macro_rules! draw {
        ($chart:expr, $y0:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .x_label_formatter(&|_: &f64| String::new())
                .y_desc(y_desc)
                .y_label_formatter(&|v: &f64| fmt_value(*v))
                .label_style(("sans-serif", 16))
                .axis_desc_style(("sans-serif", 16))
                .draw()
                .map_err(|e| anyhow!("{e:?}"))?;
            for (si, s) in series.iter().enumerate() {
                let color = engine_color(&s.name);
                let bars = s.values.iter().enumerate().filter_map(|(gi, v)| {
                    let v = (*v)?;
                    let x0 = gi as f64 + 0.1 + si as f64 * bar_w;
                    Some(Rectangle::new(
                        [(x0, $y0), (x0 + bar_w * 0.92, v)],
                        color.filled(),
                    ))
                });
                chart
                    .draw_series(bars)
                    .map_err(|e| anyhow!("{e:?}"))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled())
                    });
                let labels = s.values.iter().enumerate().filter_map(|(gi, v)| {
                    let v = (*v)?;
                    let x0 = gi as f64 + 0.1 + si as f64 * bar_w;
                    let style = ("sans-serif", 13)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Bottom));
                    Some(Text::new(fmt_value(v), (x0, v), style))
                });
                chart.draw_series(labels).map_err(|e| anyhow!("{e:?}"))?;
            }
            // Group labels under the x axis, drawn in pixel space.
            for (gi, g) in groups.iter().enumerate() {
                let (px, py) = chart.backend_coord(&(gi as f64 + 0.5, $y0));
                let style = ("sans-serif", 16)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(g.clone(), (px, py + 10), style))
                    .map_err(|e| anyhow!("{e:?}"))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 16))
                .draw()
                .map_err(|e| anyhow!("{e:?}"))?;
        }};
    }

    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80);
    if log_y {
        let lo = (min / 2.0).max(1e-3);
        let hi = max * 10.0; // a free decade on top for the legend
        let chart = builder
            .build_cartesian_2d(0.0..n, (lo..hi).log_scale())
            .map_err(|e| anyhow!("{e:?}"))?;
        draw!(chart, lo);
    } else {
        let hi = max * 1.45; // room on top for the legend
        let chart = builder
            .build_cartesian_2d(0.0..n, 0.0..hi)
            .map_err(|e| anyhow!("{e:?}"))?;
        draw!(chart, 0.0);
    }
    root.present()
        .map_err(|e| anyhow!("writing {}: {e:?}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_chart_with_text() {
        let dir = std::env::temp_dir().join(format!("quarry-bench-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        let groups = vec!["term".to_string(), "union".to_string()];
        let series = vec![
            Series {
                name: "tantivy".into(),
                values: vec![Some(10.0), Some(200.0)],
            },
            Series {
                name: "lucene".into(),
                values: vec![Some(12.0), None],
            },
        ];
        grouped_bars(&path, "test", "µs", &groups, &series, true).unwrap();
        grouped_bars(&path, "test", "docs/s", &groups, &series, false).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 1000);
        std::fs::remove_dir_all(&dir).ok();
    }
}
