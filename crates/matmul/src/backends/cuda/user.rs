//! A user's CUDA C++ kernel ([`UserKernel`], docs/own-kernels.md): compiled by NVRTC with the
//! same options and disk cache as ours (the file's own name and lines in any log), launched with
//! the user's grid, block and shared memory and the usual ten arguments, C poisoned (or zeroed),
//! the context's error state checked after every synchronize.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::buffers::DeviceBuf;
use super::libs::Context;
use super::{CudaBackend, Loaded};
use crate::backend::{check_input_sets, check_inputs, Inputs};
use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::user::{Lang, UserKernel};

impl CudaBackend {
    /// Compiles (or finds in the caches) and loads `kernel`'s entry point; a compile error is
    /// [`Error::Compile`] with NVRTC's log, which names the user's file and lines.
    pub fn user_load(&self, kernel: &UserKernel) -> Result<()> {
        self.user_loaded(kernel).map(|_| ())
    }

    fn user_loaded(&self, kernel: &UserKernel) -> Result<std::sync::Arc<Loaded>> {
        if kernel.lang != Lang::Cuda {
            return Err(Error::Invalid(format!(
                "{} is not a CUDA kernel",
                kernel.path
            )));
        }
        kernel.validate()?;
        self.load(
            &kernel.path,
            &kernel.text,
            &kernel.cuda_defines(),
            &[],
            &kernel.entry,
        )
    }

    /// The launch configuration of `kernel` on `problem`, checked against the device's limits.
    fn user_config(
        &self,
        kernel: &UserKernel,
        loaded: &Loaded,
        problem: &Problem,
    ) -> Result<LaunchConfig> {
        kernel.check_problem(problem)?;
        let l = kernel.launch(problem)?;
        let threads = l.block.iter().map(|&x| x as u64).product::<u64>();
        let bad = |why: String| Error::Invalid(format!("{}: {why}", kernel.label()));
        if threads > self.info.max_threads_per_block as u64 {
            return Err(bad(format!(
                "--block {:?} is {threads} threads; the device allows {} per block",
                l.block, self.info.max_threads_per_block
            )));
        }
        if l.block[2] > 64 || l.grid[1] > 65535 || l.grid[2] > 65535 || l.grid[0] > i32::MAX as u32
        {
            return Err(bad(format!(
                "--grid {:?} / --block {:?} exceed CUDA's limits (grid x < 2^31, y and z ≤ 65535; block z ≤ 64)",
                l.grid, l.block
            )));
        }
        if l.shared as usize > self.info.shared_per_block_optin {
            return Err(bad(format!(
                "--shared {} bytes; the device allows {} per block",
                l.shared, self.info.shared_per_block_optin
            )));
        }
        self.allow_dynamic_shared(loaded, l.shared as usize)?;
        Ok(LaunchConfig {
            grid_dim: (l.grid[0], l.grid[1], l.grid[2]),
            block_dim: (l.block[0], l.block[1], l.block[2]),
            shared_mem_bytes: l.shared,
        })
    }

    fn user_launch(
        &self,
        loaded: &Loaded,
        config: &LaunchConfig,
        problem: &Problem,
        a: &DeviceBuf,
        b: &DeviceBuf,
        c: &DeviceBuf,
    ) -> Result<()> {
        let (pa, pb, pc) = (
            a.ptr(&self.stream),
            b.ptr(&self.stream),
            c.ptr(&self.stream),
        );
        let (sa, sb) = (problem.a_strides(), problem.b_strides());
        let ints = [
            problem.m, problem.n, problem.k, sa.row, sa.col, sb.row, sb.col,
        ]
        .map(|x| x as i32);
        let mut builder = self.stream.launch_builder(&loaded.func);
        builder.arg(&pa).arg(&pb).arg(&pc);
        for v in &ints {
            builder.arg(v);
        }
        // SAFETY: the documented ABI (three pointers to buffers sized for `problem`, seven
        // ints, all checked to fit); what the user's kernel does with them is its own: a fault
        // surfaces as a CUDA error at the next synchronize (the CLI runs it in a child process).
        unsafe { builder.launch(*config) }
            .map(|_| ())
            .ctx(|| format!("launching {} with {config:?}", loaded.entry))
    }

    /// Runs `kernel` once on `problem` with C poisoned (zeroed with `zero_c`) and returns C.
    pub fn user_run(
        &self,
        kernel: &UserKernel,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
    ) -> Result<AnyMatrix> {
        self.check_alive()?;
        check_inputs(problem, a, b)?;
        let loaded = self.user_loaded(kernel)?;
        let config = self.user_config(kernel, &loaded, problem)?;
        let (da, db) = (self.upload(a)?, self.upload(b)?);
        let mut c = self.alloc_output(problem)?;
        self.fill_output(&mut c, kernel.zero_c)?;
        self.user_launch(&loaded, &config, problem, &da, &db, &c)?;
        self.sync(|| format!("running {} on {problem}", kernel.label()))?;
        self.download(&c, problem)
    }

    /// Times `iters` launches of `kernel` after `warmup`, rotating among `inputs`, with CUDA
    /// events, as [`Backend::time`](crate::Backend::time) times ours.
    pub fn user_time(
        &self,
        kernel: &UserKernel,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        check_input_sets(problem, inputs)?;
        let loaded = self.user_loaded(kernel)?;
        let config = self.user_config(kernel, &loaded, problem)?;
        let bufs = inputs
            .iter()
            .map(|set| Ok((self.upload(&set.a)?, self.upload(&set.b)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut c = self.alloc_output(problem)?;
        self.fill_output(&mut c, kernel.zero_c)?;
        let zero = kernel.zero_c;
        let reset = |c: &mut DeviceBuf| {
            if zero {
                self.fill_output(c, true)
            } else {
                Ok(())
            }
        };
        let launch = |c: &DeviceBuf, i: usize| {
            let (a, b) = &bufs[i % bufs.len()];
            self.user_launch(&loaded, &config, problem, a, b, c)
        };
        self.timed(&mut c, warmup, iters, reset, launch, || {
            format!("timing {} on {problem}", kernel.label())
        })
    }
}
