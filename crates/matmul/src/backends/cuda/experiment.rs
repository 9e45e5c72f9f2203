//! Developer knobs read from the environment, in one place so that product code reads none of
//! its own: extra kernel defines (`MATMUL_KERNEL_DEFINES`) and NVRTC options
//! (`MATMUL_NVRTC_OPTIONS`) compiled into every registry kernel, the split tail's overrides among
//! those defines (`SPLIT_TAIL=0`, `TAIL_EXTRA_EIGHTHS`, `TAIL_PIECE_SLICES`), and the probe array a
//! timed kernel leaves behind (`MATMUL_PROBE`). A note on stderr says when a define or option is
//! in force, so no figure passes for the default kernel's.

use super::launch::Launcher;
use super::libs::Context;
use super::split_tail::{
    SPLIT_K_EIGHTHS, SPLIT_K_MIN_SLICES, TAIL_EXTRA_EIGHTHS, TAIL_MIN_WAVES, TAIL_PIECE_SLICES,
};
use super::CudaBackend;
use crate::error::{Error, Result};

/// The environment variable of [`experiment_defines`].
pub const EXPERIMENT_ENV: &str = "MATMUL_KERNEL_DEFINES";

/// Extra `-D` definitions for every registry kernel, from `$MATMUL_KERNEL_DEFINES`
/// ("NAME=VALUE,NAME" ...): a developer's switch for trying a kernel variant (e.g.
/// `PROBE=1`, the wgmma timeline probe) on a GPU host that has no Rust toolchain. They enter the cache key like any
/// define, and a note on stderr says they are in force, so no figure passes for the default
/// kernel's. A malformed entry is an error naming it.
pub fn experiment_defines() -> Result<Vec<(String, String)>> {
    let Ok(text) = std::env::var(EXPERIMENT_ENV) else {
        return Ok(Vec::new());
    };
    let defines = parse_defines(&text)?;
    static NOTE: std::sync::Once = std::sync::Once::new();
    if !defines.is_empty() {
        NOTE.call_once(|| eprintln!("note: {EXPERIMENT_ENV}={text} is compiled into every kernel"));
    }
    Ok(defines)
}

fn parse_defines(text: &str) -> Result<Vec<(String, String)>> {
    text.split([',', ' '])
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, value) = item.split_once('=').unwrap_or((item, "1"));
            let ident = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ident || value.is_empty() || value.contains(char::is_whitespace) {
                return Err(Error::Invalid(format!(
                    "{EXPERIMENT_ENV}: `{item}` is not NAME or NAME=VALUE (NAME a C identifier)"
                )));
            }
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}

/// The environment variable of [`experiment_options`].
pub const OPTIONS_ENV: &str = "MATMUL_NVRTC_OPTIONS";

/// Extra NVRTC options for every registry kernel, from `$MATMUL_NVRTC_OPTIONS` (options separated
/// by spaces, each starting with `-`, e.g. `--ptxas-options=--register-usage-level=8`): the
/// compiler's side of an experiment, as [`experiment_defines`] is the source's. They enter the
/// cache key like every option, and a note on stderr says they are in force. A word that is not
/// an option is an error naming it.
pub fn experiment_options() -> Result<Vec<String>> {
    let Ok(text) = std::env::var(OPTIONS_ENV) else {
        return Ok(Vec::new());
    };
    let options = parse_options(&text)?;
    static NOTE: std::sync::Once = std::sync::Once::new();
    if !options.is_empty() {
        NOTE.call_once(|| {
            eprintln!("note: {OPTIONS_ENV}={text} is passed to every kernel compile")
        });
    }
    Ok(options)
}

fn parse_options(text: &str) -> Result<Vec<String>> {
    text.split_whitespace()
        .map(|word| {
            if word.len() < 2 || !word.starts_with('-') || word.contains('\0') {
                return Err(Error::Invalid(format!(
                    "{OPTIONS_ENV}: `{word}` is not an NVRTC option (one starting with `-`)"
                )));
            }
            Ok(word.to_string())
        })
        .collect()
}

/// The kernel define that turns the split tail off (`MATMUL_KERNEL_DEFINES=SPLIT_TAIL=0`, for
/// A/B runs): the host then launches every tile whole.
const SPLIT_TAIL_OFF: (&str, &str) = ("SPLIT_TAIL", "0");

/// The split tail's knobs among the experiment defines (the registry sets none of them):
/// [`SPLIT_TAIL_OFF`] (split-K off too), and `TAIL_EXTRA_EIGHTHS=n`, `TAIL_PIECE_SLICES=n`,
/// `SPLIT_K_MIN_SLICES=n` and `SPLIT_K_EIGHTHS=n`, which override [`TAIL_EXTRA_EIGHTHS`],
/// [`TAIL_PIECE_SLICES`], [`SPLIT_K_MIN_SLICES`] and [`SPLIT_K_EIGHTHS`]. Each is read when asked for, so a malformed
/// value is an error only where it is used.
pub(super) struct TailKnobs {
    defines: Vec<(String, String)>,
}

impl TailKnobs {
    /// The knobs in force ([`experiment_defines`]).
    pub(super) fn read() -> Result<TailKnobs> {
        Ok(TailKnobs {
            defines: experiment_defines()?,
        })
    }

    /// Whether the split tail is on (not turned off by [`SPLIT_TAIL_OFF`]).
    pub(super) fn enabled(&self) -> Result<bool> {
        Ok(self.value(SPLIT_TAIL_OFF.0, 1)? != 0)
    }

    /// The tail beyond the last partial wave, in eighths of a wave.
    pub(super) fn extra_eighths(&self) -> Result<u64> {
        self.value("TAIL_EXTRA_EIGHTHS", TAIL_EXTRA_EIGHTHS)
    }

    /// The length of a tail piece in k slices.
    pub(super) fn piece_slices(&self) -> Result<u64> {
        self.value("TAIL_PIECE_SLICES", TAIL_PIECE_SLICES)
    }

    /// The fewest waves of tiles whose tail is split (`TAIL_MIN_WAVES=n`).
    pub(super) fn min_waves(&self) -> Result<u64> {
        self.value("TAIL_MIN_WAVES", TAIL_MIN_WAVES)
    }

    /// The shortest split-K piece in k slices (`SPLIT_K_MIN_SLICES=n`).
    pub(super) fn split_k_min_slices(&self) -> Result<u64> {
        self.value("SPLIT_K_MIN_SLICES", SPLIT_K_MIN_SLICES)
    }

    /// The blocks split-K aims at, in eighths of a wave (`SPLIT_K_EIGHTHS=n`).
    pub(super) fn split_k_eighths(&self) -> Result<u64> {
        self.value("SPLIT_K_EIGHTHS", SPLIT_K_EIGHTHS)
    }

    /// The last value given to define `name`, else `default`.
    fn value(&self, name: &str, default: u64) -> Result<u64> {
        match self.defines.iter().rev().find(|(n, _)| n == name) {
            None => Ok(default),
            Some((_, v)) => v.parse().map_err(|_| {
                Error::Invalid(format!("{name}={v}: the split tail needs a whole number"))
            }),
        }
    }
}

/// The environment variable of the probe hook: the `__device__` array whose words a timing run
/// prints to stderr after its last launch.
pub const PROBE_ENV: &str = "MATMUL_PROBE";

impl CudaBackend {
    /// Experiment hook: with `$MATMUL_PROBE=SYMBOL`, prints the module-scope `__device__` array
    /// SYMBOL of the kernel just timed, as u64 words, to stderr (a kernel compiled with a probe
    /// switch writes its timestamps there, left by the last launch).
    pub(super) fn print_probe(&self, launcher: &Launcher) -> Result<()> {
        let (Ok(symbol), Launcher::Kernel { loaded, .. }) = (std::env::var(PROBE_ENV), launcher)
        else {
            return Ok(());
        };
        let view = loaded
            .module
            .get_global(&symbol, &self.stream)
            .ctx(|| {
                format!(
                    "finding the probe array `{symbol}` (MATMUL_PROBE) in {}: was the kernel built with its probe switch (e.g. MATMUL_KERNEL_DEFINES=PROBE=1)?",
                    loaded.entry
                )
            })?;
        let bytes = self
            .stream
            .clone_dtoh(&view)
            .ctx(|| format!("reading the probe array `{symbol}`"))?;
        for (i, w) in bytes.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            eprintln!("probe {symbol} {i} {v}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_defines_parse_and_reject_bad_entries() {
        let d = parse_defines("PROBE=0, SPLIT_TAIL").unwrap();
        assert_eq!(
            d,
            vec![
                ("PROBE".to_string(), "0".to_string()),
                ("SPLIT_TAIL".to_string(), "1".to_string())
            ]
        );
        assert!(parse_defines("").unwrap().is_empty());
        for bad in ["=1", "1X=2", "A-B=3", "X="] {
            let e = parse_defines(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(EXPERIMENT_ENV), "{bad}: {e}");
        }
    }

    #[test]
    fn experiment_options_parse_and_reject_bad_words() {
        let o = parse_options(" --ptxas-options=--register-usage-level=8  -lineinfo ").unwrap();
        assert_eq!(o, ["--ptxas-options=--register-usage-level=8", "-lineinfo"]);
        assert!(parse_options("").unwrap().is_empty());
        for bad in ["register-usage-level=8", "-", "O3"] {
            let e = parse_options(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(OPTIONS_ENV), "{bad}: {e}");
        }
    }

    #[test]
    fn tail_knobs_take_the_last_value_and_name_a_bad_one() {
        let knobs = |pairs: &[(&str, &str)]| TailKnobs {
            defines: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let none = knobs(&[]);
        assert!(none.enabled().unwrap());
        assert_eq!(none.extra_eighths().unwrap(), TAIL_EXTRA_EIGHTHS);
        assert_eq!(none.piece_slices().unwrap(), TAIL_PIECE_SLICES);
        let set = knobs(&[
            ("TAIL_PIECE_SLICES", "32"),
            ("TAIL_PIECE_SLICES", "128"),
            ("SPLIT_TAIL", "0"),
            ("TAIL_EXTRA_EIGHTHS", "x"),
        ]);
        assert!(!set.enabled().unwrap());
        assert_eq!(set.piece_slices().unwrap(), 128);
        let e = set.extra_eighths().unwrap_err().to_string();
        assert!(e.contains("TAIL_EXTRA_EIGHTHS=x"), "{e}");
    }
}
