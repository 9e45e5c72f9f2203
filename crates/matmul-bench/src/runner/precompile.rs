//! Compiling a run's CUDA kernels before it, all at once.
//!
//! The runner compiles each kernel when it first runs it, one after another; NVRTC takes seconds
//! for the tensor-core kernels (~12 s for `wgmma` on a 2-core machine), so a run's first pass on
//! a fresh machine used to spend most of its time compiling in turn. [`precompile`] compiles every
//! build a run will load on every thread of rayon's pool into the disk cache, where the run then
//! finds it: the compile time of the run becomes that of its slowest kernel.

use rayon::prelude::*;

use matmul::{Backend, KernelSpec, RunOptions, Types};

use super::BenchConfig;

/// One build a run loads: a registry kernel with a CUDA source, its types and its options.
#[derive(Debug, Clone, Copy)]
pub struct CompileUnit {
    /// The kernel.
    pub kernel: &'static KernelSpec,
    /// Its input and C types.
    pub types: Types,
    /// Its tile or tiling.
    pub opts: RunOptions,
}

impl BenchConfig {
    /// The distinct builds the run will compile: every case that applies and that `backend`'s
    /// rules accept, of a kernel with a CUDA source (`auto` as it resolves); the tensor-core
    /// kernels, the slowest to compile, first.
    pub fn compile_units(&self, backend: &dyn Backend) -> Vec<CompileUnit> {
        let mut units: Vec<CompileUnit> = Vec::new();
        for (problem, _, kernels) in self.planned() {
            for kernel in kernels {
                let Ok(r) = self.resolve(backend, kernel, &problem) else {
                    continue;
                };
                // (The int8 ceiling, cuBLASLt, has nothing to compile.)
                let Some(spec) = r.spec else { continue };
                if spec.cuda_source().is_none() || backend.check(spec, &problem, r.opts).is_err() {
                    continue;
                }
                let unit = CompileUnit {
                    kernel: spec,
                    types: problem.types(),
                    opts: r.opts,
                };
                let same = |u: &CompileUnit| {
                    u.kernel.name == unit.kernel.name
                        && u.types == unit.types
                        && u.opts == unit.opts
                };
                if !units.iter().any(same) {
                    units.push(unit);
                }
            }
        }
        units.sort_by_key(|u| u.kernel.tc_tile().is_none());
        units
    }
}

/// Compiles `units` for `arch` into the disk cache, on every thread of rayon's pool, calling
/// `done` after each. Returns the failures as text; the run meets them again and records them
/// where they belong. Does nothing (returns no failure) when the disk cache is off
/// (`MATMUL_CACHE_DIR=off`), as the run could not find the builds there.
pub fn precompile(units: &[CompileUnit], arch: &str, done: &(dyn Fn() + Sync)) -> Vec<String> {
    if matmul::cuda::DiskCache::configured().dir().is_none() {
        return Vec::new();
    }
    units
        .par_iter()
        .with_max_len(1)
        .filter_map(|u| {
            let result = matmul::cuda::compile(u.kernel, u.types, &u.opts, arch);
            done();
            result
                .err()
                .map(|e| format!("{} {}: {e}", u.kernel.name, u.types.input))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use matmul::cpu::CpuBackend;
    use matmul::registry::DeviceLimits;
    use matmul::{AnyMatrix, BackendKind, DType, Inputs, Problem, Shape};

    use super::*;
    use crate::defaults;

    /// A CUDA backend on paper: every rule passes; nothing runs.
    struct PaperCuda;

    impl Backend for PaperCuda {
        fn kind(&self) -> BackendKind {
            BackendKind::Cuda
        }
        fn describe(&self) -> String {
            "paper".into()
        }
        fn limits(&self) -> Option<DeviceLimits> {
            None
        }
        fn check(&self, _: &KernelSpec, _: &Problem, _: RunOptions) -> matmul::Result<()> {
            Ok(())
        }
        fn run(
            &self,
            _: &KernelSpec,
            _: &Problem,
            _: &AnyMatrix,
            _: &AnyMatrix,
            _: RunOptions,
        ) -> matmul::Result<AnyMatrix> {
            unreachable!("nothing runs on paper")
        }
        fn time(
            &self,
            _: &KernelSpec,
            _: &Problem,
            _: &[Inputs],
            _: usize,
            _: usize,
            _: RunOptions,
        ) -> matmul::Result<Vec<f64>> {
            unreachable!("nothing runs on paper")
        }
    }

    #[test]
    fn a_quick_runs_builds_are_listed_once_tensor_cores_first() {
        let square = |n| Shape { m: n, n, k: n };
        let mut config = BenchConfig::new(
            defaults::kernels(BackendKind::Cuda, true),
            DType::ALL.to_vec(),
            vec![square(1024), square(2048)],
        );
        config.plan = defaults::quick_plan(BackendKind::Cuda);
        // 13 cases at 1024 (f32: naive, tiled, multistage-raster, cublas; u32: the same less
        // cublas; tf32, bf16, f16: ours and cublas), 9 at 2048 (no seeds).
        let cases: Vec<usize> = config.planned().iter().map(|(_, _, k)| k.len()).collect();
        assert_eq!(cases.iter().sum::<usize>(), 22, "{cases:?}");
        let units = config.compile_units(&PaperCuda);
        let names: Vec<String> = units
            .iter()
            .map(|u| format!("{} {}", u.kernel.name, u.types.input))
            .collect();
        // One build per kernel × dtype (no tune table: one tiling per kernel); no cuBLAS.
        assert_eq!(
            names,
            [
                "wgmma-tf32 tf32",
                "wgmma bf16",
                "wgmma f16",
                "naive f32",
                "tiled f32",
                "multistage-raster f32",
                "naive u32",
                "tiled u32",
                "multistage-raster u32",
            ]
        );
        // On the CPU backend no CUDA kernel passes its rules: nothing to compile.
        assert!(config.compile_units(&CpuBackend).is_empty());
        assert!(precompile(&[], "sm_90a", &|| {}).is_empty());
    }
}
