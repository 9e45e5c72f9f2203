//! The CPU backend: the reference every result is checked against, and a fast path.

pub mod fast;
pub mod reference;
pub mod verify;

use std::time::Instant;

use crate::backend::{check_input_sets, check_inputs, Backend, Inputs, RunOptions};
use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::registry::{BackendKind, DeviceLimits, Implementation, KernelSpec};

/// The CPU backend (always available).
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

impl CpuBackend {
    fn compute(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
    ) -> Result<AnyMatrix> {
        match kernel.implementation {
            Implementation::CpuReference => reference::matmul(problem, a, b),
            Implementation::CpuFast => fast::matmul(problem, a, b),
            _ => Err(Error::WrongBackend {
                kernel: kernel.name.to_string(),
                backend: "cpu".into(),
            }),
        }
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn describe(&self) -> String {
        let threads = rayon::current_num_threads();
        format!(
            "CPU ({} {}, {threads} threads)",
            std::env::consts::ARCH,
            std::env::consts::OS
        )
    }

    fn limits(&self) -> Option<DeviceLimits> {
        None
    }

    /// A [`HostPlan`](crate::backends::HostPlan): each run is `run`, then α and β on the host.
    fn plan(
        &self,
        kernel: &'static KernelSpec,
        problem: &Problem,
        opts: crate::RunOptions,
        scale: crate::backends::Scale,
        _batch: crate::backends::Batch,
    ) -> crate::Result<Box<dyn crate::backends::PlanRun + '_>> {
        Ok(Box::new(crate::backends::HostPlan::new(
            self, kernel, problem, opts, scale,
        )?))
    }

    fn run(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> Result<AnyMatrix> {
        self.check(kernel, problem, opts)?;
        check_inputs(problem, a, b)?;
        self.compute(kernel, problem, a, b)
    }

    /// The fast kernel reads f32 views in place ([`fast::matmul_ref`]); the rest through copies.
    fn run_ref(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: crate::view::AnyMatRef<'_>,
        b: crate::view::AnyMatRef<'_>,
        opts: RunOptions,
    ) -> Result<AnyMatrix> {
        self.check(kernel, problem, opts)?;
        match kernel.implementation {
            Implementation::CpuFast => fast::matmul_ref(problem, a, b),
            _ => self.run(kernel, problem, &a.to_matrix(), &b.to_matrix(), opts),
        }
    }

    fn time(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
        opts: RunOptions,
    ) -> Result<Vec<f64>> {
        self.check(kernel, problem, opts)?;
        check_input_sets(problem, inputs)?;
        let mut times = Vec::with_capacity(iters);
        for i in 0..warmup + iters {
            let set = &inputs[i % inputs.len()];
            let start = Instant::now();
            let c = self.compute(kernel, problem, &set.a, &set.b)?;
            let elapsed = start.elapsed().as_secs_f64();
            std::hint::black_box(c);
            if i >= warmup {
                times.push(elapsed);
            }
        }
        Ok(times)
    }
}
