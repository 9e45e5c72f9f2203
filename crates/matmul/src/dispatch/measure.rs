//! Measured choice: time the model's top candidates for one problem and keep the fastest as the
//! choice for the problem's shape bucket ([`super::tune::bucket`]), as Triton's autotune and
//! cuBLASLt's algorithm search do. `matmul tune --suite` runs it over a suite and saves the
//! table; `--autotune` (and [`crate::Gemm::autotune`]) runs it on the first use of a bucket.

use super::model;
use super::tune::{bucket, MeasuredChoice, TuneTable};
use crate::backend::{Backend, Inputs};
use crate::error::{Error, Result};
use crate::matrix::{AnyMatrix, Init};
use crate::problem::Problem;

/// The most candidates timed per problem.
pub const TOP: usize = 3;

/// How long the timed launches of one candidate may take, seconds (a first launch decides the
/// count: at least 1, at most 20).
const BUDGET_PER_CANDIDATE_S: f64 = 0.015;

/// Times up to `top` of the model's best candidates for `problem` on `backend` ([`top`], then
/// [`fastest`]) and returns the fastest as the choice for the problem's bucket.
pub fn measure(
    backend: &dyn Backend,
    problem: &Problem,
    table: Option<&TuneTable>,
    top: usize,
) -> Result<MeasuredChoice> {
    fastest(backend, problem, &candidates(backend, problem, table, top)?)
}

/// The model's best `top` candidates (at least one) for `problem` on `backend`, ranked as `auto`
/// ranks them with `table` ([`super::ranked`]).
pub fn candidates(
    backend: &dyn Backend,
    problem: &Problem,
    table: Option<&TuneTable>,
    top: usize,
) -> Result<Vec<model::Candidate>> {
    let limits = backend
        .limits()
        .ok_or_else(|| Error::Invalid("measuring a choice needs a CUDA device".into()))?;
    Ok(super::ranked(problem, &limits, table)
        .into_iter()
        .take(top.max(1))
        .map(|(c, _)| c)
        .collect())
}

/// Times each of `candidates` on `problem` (after an untimed launch, on one set of random inputs,
/// within a budget of about 15 ms each) and returns the fastest as the choice for the problem's
/// bucket. A candidate that fails to run is left out; none running is an error.
pub fn fastest(
    backend: &dyn Backend,
    problem: &Problem,
    candidates: &[model::Candidate],
) -> Result<MeasuredChoice> {
    let (ar, ac) = problem.a_stored();
    let (br, bc) = problem.b_stored();
    let inputs = [Inputs {
        a: AnyMatrix::generate(problem.dtype, ar, ac, Init::Random { seed: 11 })?,
        b: AnyMatrix::generate(problem.dtype, br, bc, Init::Random { seed: 12 })?,
    }];
    let mut timed: Vec<(model::Candidate, f64)> = Vec::new();
    let mut errors = Vec::new();
    for &c in candidates {
        let opts = c.options();
        let run = |iters| backend.time(c.kernel, problem, &inputs, 1, iters, opts);
        let median = run(1).and_then(|first| {
            let once = first.first().copied().unwrap_or(0.0).max(1e-7);
            let iters = ((BUDGET_PER_CANDIDATE_S / once) as usize).clamp(1, 20);
            let mut t = if iters > 1 { run(iters)? } else { first };
            t.sort_by(f64::total_cmp);
            t.get(t.len() / 2)
                .copied()
                .ok_or_else(|| Error::Invalid("no timing".into()))
        });
        match median {
            Ok(s) => timed.push((c, s)),
            Err(e) => errors.push(format!("{}: {e}", label(&c))),
        }
    }
    timed.sort_by(|a, b| a.1.total_cmp(&b.1));
    let Some((best, seconds)) = timed.first().copied() else {
        return Err(Error::Invalid(format!(
            "no candidate ran {problem}: {}",
            errors.join("; ")
        )));
    };
    Ok(MeasuredChoice {
        dtype: problem.dtype,
        bucket: bucket(problem),
        shape: problem.shape_label(),
        kernel: best.kernel.name.to_string(),
        tiling: best.tiling,
        seconds,
        timed: timed.iter().map(|(c, s)| (label(c), *s)).collect(),
    })
}

/// "kernel" or "kernel@tiling".
fn label(c: &model::Candidate) -> String {
    match c.tiling {
        Some(t) => format!("{}@{t}", c.kernel.name),
        None => c.kernel.name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::tests::FakeCuda;
    use crate::dtype::DType;
    use crate::registry::rules::test_limits::H200;
    use crate::registry::KernelSpec;
    use crate::RunOptions;

    /// A fake device whose every kernel takes a time the test sets: the model's second choice
    /// is the fastest here.
    struct Timed(FakeCuda, &'static str);

    impl Backend for Timed {
        fn kind(&self) -> crate::registry::BackendKind {
            self.0.kind()
        }
        fn describe(&self) -> String {
            "timed".into()
        }
        fn limits(&self) -> Option<crate::registry::DeviceLimits> {
            self.0.limits()
        }
        fn run(
            &self,
            k: &KernelSpec,
            p: &Problem,
            a: &AnyMatrix,
            b: &AnyMatrix,
            o: RunOptions,
        ) -> Result<AnyMatrix> {
            self.0.run(k, p, a, b, o)
        }
        fn time(
            &self,
            k: &KernelSpec,
            _: &Problem,
            _: &[Inputs],
            _: usize,
            iters: usize,
            _: RunOptions,
        ) -> Result<Vec<f64>> {
            let t = if k.name == self.1 { 1e-5 } else { 2e-5 };
            Ok(vec![t; iters])
        }
    }

    #[test]
    fn the_fastest_measured_candidate_becomes_the_buckets_choice() {
        let p = Problem::new(1024, 1024, 1024, DType::Bf16);
        let ranked = model::rank(&p, &H200, &[]);
        let second = ranked
            .iter()
            .map(|(c, _)| c.kernel.name)
            .find(|n| *n != ranked[0].0.kernel.name)
            .unwrap();
        let backend = Timed(FakeCuda(H200), second);
        let choice = measure(&backend, &p, None, TOP).unwrap();
        assert_eq!(choice.kernel, second);
        assert_eq!(choice.bucket, bucket(&p));
        assert!(choice.timed.len() <= TOP && choice.timed.len() >= 2);
        let mut table = TuneTable::default();
        table.insert_choice(choice);
        let c = crate::dispatch::auto_with_table(&backend, DType::Bf16, Some(&p), Some(&table))
            .unwrap();
        assert_eq!(c.kernel.name, second);
        // A device that runs nothing: an error naming the problem.
        let e = measure(&FakeCuda(H200), &p, None, TOP).unwrap_err();
        assert!(e.to_string().contains("no candidate ran"), "{e}");
    }
}
