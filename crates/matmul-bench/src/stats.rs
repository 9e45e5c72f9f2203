//! Summary statistics of a sample of times (seconds).

use serde::{Deserialize, Serialize};

/// Median, mean, standard deviation, minimum and maximum of a sample, in the sample's unit
/// (seconds for every timing in this crate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Samples.
    pub count: usize,
    /// The middle value; the mean of the two middle values for an even count.
    pub median: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); 0 for a single sample.
    pub std_dev: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Stats {
    /// Statistics of `samples`; `None` for an empty sample or one holding NaN.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let std_dev = if n > 1 {
            let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Stats {
            count: n,
            median,
            mean,
            std_dev,
            min: sorted[0],
            max: sorted[n - 1],
        })
    }

    /// Standard deviation relative to the mean (0 when the mean is 0).
    pub fn relative_std_dev(&self) -> f64 {
        if self.mean != 0.0 {
            self.std_dev / self.mean
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn odd_count() {
        let s = Stats::from_samples(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(s.count, 3);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert!(close(s.std_dev, 2.0));
    }

    #[test]
    fn even_count() {
        let s = Stats::from_samples(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert_eq!(s.mean, 2.5);
        // Σ(x − 2.5)² = 5, / 3.
        assert!(close(s.std_dev, (5.0f64 / 3.0).sqrt()));
    }

    #[test]
    fn one_sample() {
        let s = Stats::from_samples(&[0.25]).unwrap();
        assert_eq!(
            s,
            Stats {
                count: 1,
                median: 0.25,
                mean: 0.25,
                std_dev: 0.0,
                min: 0.25,
                max: 0.25
            }
        );
    }

    #[test]
    fn known_values() {
        // The textbook sample 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population σ 2, sample s = √(32/7).
        let s = Stats::from_samples(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert!(close(s.std_dev, (32.0f64 / 7.0).sqrt()));
        assert!(close(s.relative_std_dev(), (32.0f64 / 7.0).sqrt() / 5.0));
    }

    #[test]
    fn empty_or_nan_is_none() {
        assert!(Stats::from_samples(&[]).is_none());
        assert!(Stats::from_samples(&[1.0, f64::NAN]).is_none());
    }
}
