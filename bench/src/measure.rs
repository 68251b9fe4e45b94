//! Timing for the `quasar-bench` subcommands: workloads timed in rounds, every workload once
//! per round, so that load from other processes on this shared machine falls on a workload and
//! its baseline alike; percentiles by linear interpolation between order statistics; ratios
//! paired by round.

use std::time::{Duration, Instant};

use crate::summary::time;

/// Linear-interpolation quantile `p` (0 ≤ p ≤ 1) of ascending `sorted`: with h = (len − 1)·p,
/// `sorted[⌊h⌋] + (h − ⌊h⌋)·(sorted[⌈h⌉] − sorted[⌊h⌋])` (Hyndman and Fan 1996, definition 7).
/// NaN for an empty slice.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let h = last as f64 * p.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    let (a, b) = (sorted[lo.min(last)], sorted[hi.min(last)]);
    a + (h - h.floor()) * (b - a)
}

/// The median of `values` (any order); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile(&sorted, 0.5)
}

/// Least-squares line through `points` (x, y): `(slope, intercept)`; `None` with fewer than two
/// distinct x.
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    if points.len() < 2 || sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((slope, mean_y - slope * mean_x))
}

/// Samples of one measured quantity: one value per round, in milliseconds.
#[derive(Clone, Debug)]
pub struct Series {
    /// The workload's group (a lane, a profile, a size).
    pub group: String,
    /// The workload's name within its group.
    pub name: String,
    /// Milliseconds per call, one sample per round.
    pub samples_ms: Vec<f64>,
    /// Calls averaged into each sample.
    pub calls_per_sample: u32,
}

/// A workload: a closure timed as a whole (`calls` calls per sample, calibrated), or one that
/// times its own phases and returns one duration per phase name.
enum Work<'a> {
    Whole {
        run: Box<dyn FnMut() + 'a>,
        series: usize,
    },
    Phased {
        run: Box<dyn FnMut() -> Vec<Duration> + 'a>,
        series: Vec<usize>,
    },
}

/// Workloads to time together, round after round.
pub struct Rounds<'a> {
    /// Wall time a sample of a fast workload aims for (more calls per sample below it).
    sample_target: Duration,
    works: Vec<Work<'a>>,
    series: Vec<Series>,
}

impl<'a> Rounds<'a> {
    /// No workloads yet; samples of fast workloads aim for `sample_target`.
    pub fn new(sample_target: Duration) -> Rounds<'a> {
        Rounds {
            sample_target,
            works: Vec::new(),
            series: Vec::new(),
        }
    }

    /// Adds a series; returns its index in [`Rounds::run`]'s result.
    fn series(&mut self, group: &str, name: &str) -> usize {
        self.series.push(Series {
            group: group.to_string(),
            name: name.to_string(),
            samples_ms: Vec::new(),
            calls_per_sample: 1,
        });
        self.series.len() - 1
    }

    /// Adds `run`, timed whole: each sample is the mean over enough calls to take about the
    /// sample target (one call for slow workloads). Its result is kept from the optimizer.
    /// Returns the index of its series in [`Rounds::run`]'s result.
    pub fn add<T>(&mut self, group: &str, name: &str, mut run: impl FnMut() -> T + 'a) -> usize {
        let series = self.series(group, name);
        self.works.push(Work::Whole {
            run: Box::new(move || {
                std::hint::black_box(run());
            }),
            series,
        });
        series
    }

    /// Adds `run`, which times its own phases: it returns one duration per entry of `names`,
    /// and each becomes its own series (one call per sample), at consecutive indices from the
    /// one returned.
    pub fn add_phased(
        &mut self,
        group: &str,
        names: &[&str],
        run: impl FnMut() -> Vec<Duration> + 'a,
    ) -> usize {
        let series: Vec<usize> = names.iter().map(|name| self.series(group, name)).collect();
        let first = series.first().copied().unwrap_or(self.series.len());
        self.works.push(Work::Phased {
            run: Box::new(run),
            series,
        });
        first
    }

    /// Runs one warm-up call of every workload (which also calibrates the calls per sample),
    /// then `rounds` rounds of every workload in order, and returns every series.
    pub fn run(mut self, rounds: usize) -> Vec<Series> {
        for work in &mut self.works {
            if let Work::Whole { run, series } = work {
                let once = time(1, &mut **run);
                let calls = (self.sample_target.as_secs_f64() / once.max(1e-9)).ceil();
                self.series[*series].calls_per_sample = calls.clamp(1.0, 100_000.0) as u32;
            }
        }
        for _ in 0..rounds {
            for work in &mut self.works {
                match work {
                    Work::Whole { run, series } => {
                        let s = &mut self.series[*series];
                        s.samples_ms
                            .push(time(s.calls_per_sample, &mut **run) * 1e3);
                    }
                    Work::Phased { run, series } => {
                        for (&i, d) in series.iter().zip(run()) {
                            self.series[i].samples_ms.push(d.as_secs_f64() * 1e3);
                        }
                    }
                }
            }
        }
        self.series
    }
}

/// Runs `work` and returns how long it took with its result.
pub fn timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = std::hint::black_box(work());
    (out, start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&sorted, 0.5), 3.0);
        assert_eq!(quantile(&sorted, 0.0), 1.0);
        assert_eq!(quantile(&sorted, 1.0), 5.0);
        assert!((quantile(&sorted, 0.95) - 4.8).abs() < 1e-12);
        assert!((quantile(&[1.0, 2.0], 0.5) - 1.5).abs() < 1e-12);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn the_fitted_line_recovers_slope_and_intercept() {
        let (slope, intercept) = fit_line(&[(10.0, 25.0), (15.0, 35.0), (20.0, 45.0)]).unwrap();
        assert!((slope - 2.0).abs() < 1e-12);
        assert!((intercept - 5.0).abs() < 1e-12);
        assert!(fit_line(&[(1.0, 1.0)]).is_none());
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }

    #[test]
    fn rounds_keep_one_sample_per_round_for_every_series() {
        let mut rounds = Rounds::new(Duration::from_micros(200));
        let mut calls = 0u64;
        rounds.add("g", "whole", || calls += 1);
        rounds.add_phased("g", &["a", "b"], || {
            vec![Duration::from_millis(2), Duration::from_millis(3)]
        });
        let series = rounds.run(4);
        assert_eq!(series.len(), 3);
        assert!(series.iter().all(|s| s.samples_ms.len() == 4));
        assert_eq!(series[1].samples_ms, vec![2.0; 4]);
        assert_eq!(series[2].samples_ms, vec![3.0; 4]);
        assert!(series[0].calls_per_sample >= 1);
        // The warm-up call, then every sample's calls.
        assert_eq!(calls, 1 + 4 * u64::from(series[0].calls_per_sample));
    }
}
