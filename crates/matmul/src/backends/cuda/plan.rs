//! Plans on CUDA: a product's launcher (the compiled kernel, its launch configuration, its
//! split-K and byte-plane workspaces) made once and launched on matrices the backend holds, with
//! α and β applied by a second, elementwise kernel (kernels/scale.cu) reading the product from a
//! workspace in the accumulator's type, so 16-bit C is rounded once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use cudarc::driver::{CudaFunction, PushKernelArg};

use super::batched::BatchedLauncher;
use super::buffers::DeviceBuf;
use super::launch::{Launcher, Operands};
use super::libs::Context;
use super::tma::TensorMap;
use super::CudaBackend;
use crate::backends::{Batch, DeviceData, PlanRun, Scale};
use crate::dtype::DType;
use crate::error::Result;
use crate::problem::{COut, Problem};
use crate::registry::{KernelSpec, RunOptions};

const SCALE_SOURCE: &str = include_str!("../../../kernels/scale.cu");

/// The next CUDA backend's [`crate::Backend::instance`] (0 is the host's).
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// A number for a new CUDA backend that no other shares.
pub(super) fn new_instance() -> u64 {
    NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed)
}

/// The operands of a plan's last run, one per product of its batch, with their addresses (A, B,
/// the kernel's C).
type LastOperands = Vec<((u64, u64, u64), Operands)>;

/// A planned product on one CUDA backend.
pub(super) struct CudaPlan<'a> {
    backend: &'a CudaBackend,
    kernel: &'static KernelSpec,
    problem: Problem,
    /// The problem the kernel runs: `problem`, or with C in the accumulator's type when α and
    /// β are applied after it.
    launched: Problem,
    scale: Scale,
    launcher: Launcher,
    /// The kernel accumulates into a zeroed C.
    zero: bool,
    /// The operands of the last run, by their addresses: tensor maps and staging copies are made
    /// once for a set of buffers, not on every run.
    last: Mutex<LastOperands>,
    /// With α, β other than (1, 0): the elementwise kernel and the product's workspace.
    epilogue: Option<(CudaFunction, DeviceBuf)>,
    /// The batch the plan was made for, in one launch where the kernel has a batched build that
    /// takes it (`super::batched`), with the tensor maps of its last buffers.
    batched: Option<(Batch, BatchedLauncher, Mutex<Option<BatchedMaps>>)>,
}

/// A batched launch's tensor maps, with the addresses (A, B, C) they were made for.
type BatchedMaps = ((u64, u64, u64), Option<[TensorMap; 3]>);

impl CudaBackend {
    /// A plan of `kernel` on `problem` ([`crate::Backend::plan`]).
    pub(super) fn make_plan(
        &self,
        kernel: &'static KernelSpec,
        problem: &Problem,
        opts: RunOptions,
        scale: Scale,
        batch: Batch,
    ) -> Result<CudaPlan<'_>> {
        self.check_alive()?;
        self.check_tile(kernel, problem, opts)?;
        scale.check(problem.c_dtype())?;
        let launched = if scale.is_plain() {
            *problem
        } else {
            problem.with_c(COut::Accumulator)
        };
        crate::Backend::check(self, kernel, &launched, opts)?;
        let launcher = self.launcher(kernel, &launched, &opts)?;
        self.fits_in_memory(&launcher, &launched, 1)?;
        let epilogue = if scale.is_plain() {
            None
        } else {
            let entry = match problem.c_dtype() {
                DType::U32 => "scale_u32",
                DType::Bf16 => "scale_bf16",
                DType::F16 => "scale_f16",
                DType::F32 | DType::Tf32 => "scale_f32",
            };
            let func = self.load_function("scale.cu", SCALE_SOURCE, &[], entry)?;
            Some((func, self.alloc_output(&launched)?))
        };
        let zero = kernel.cuda_source().is_some_and(|s| s.zero_output);
        // One launch for the batch where the kernel takes it as it is: C written directly (no
        // α/β pass, not accumulated into zeros).
        let batched = if scale.is_plain() && !zero {
            self.batched_launcher(kernel, problem, &opts, &batch)?
                .map(|l| (batch, l, Mutex::new(None)))
        } else {
            None
        };
        Ok(CudaPlan {
            backend: self,
            kernel,
            problem: *problem,
            launched,
            scale,
            launcher,
            zero,
            last: Mutex::new(Vec::new()),
            epilogue,
            batched,
        })
    }

    /// Copies `m` to the device ([`crate::Backend::upload`]).
    pub(super) fn upload_data(&self, m: &crate::matrix::AnyMatrix) -> Result<DeviceData> {
        self.check_alive()?;
        let buf = self.upload(m)?;
        Ok(DeviceData::new(
            m.dtype(),
            m.rows(),
            m.cols(),
            self.instance,
            Box::new(buf),
        ))
    }

    /// Copies the borrowed `m` to the device ([`crate::Backend::upload_ref`]).
    pub(super) fn upload_ref_data(&self, m: crate::view::AnyMatRef<'_>) -> Result<DeviceData> {
        self.check_alive()?;
        let buf = self.upload_ref(m)?;
        let (rows, cols) = m.shape();
        Ok(DeviceData::new(
            m.dtype(),
            rows,
            cols,
            self.instance,
            Box::new(buf),
        ))
    }

    /// A zeroed matrix on the device ([`crate::Backend::alloc_zeroed`]).
    pub(super) fn alloc_data(&self, dtype: DType, rows: usize, cols: usize) -> Result<DeviceData> {
        self.check_alive()?;
        let dtype = dtype.storage();
        // A problem whose C is this matrix: 16-bit C in its own type.
        let shape = Problem::new(rows, cols, 1, dtype).with_c(if dtype.is_16_bit() {
            COut::Input
        } else {
            COut::Accumulator
        });
        let mut buf = self.alloc_output(&shape)?;
        self.fill_output(&mut buf, true)?;
        Ok(DeviceData::new(
            dtype,
            rows,
            cols,
            self.instance,
            Box::new(buf),
        ))
    }

    /// Copies `d` to the host after the work before it ([`crate::Backend::download`]).
    pub(super) fn download_data(&self, d: &DeviceData) -> Result<crate::matrix::AnyMatrix> {
        self.check_alive()?;
        let buf: &DeviceBuf = d.buffer(self.instance, "the matrix")?;
        let (rows, cols) = d.shape();
        self.download_matrix(buf, rows, cols)
    }
}

impl PlanRun for CudaPlan<'_> {
    fn kernel(&self) -> &'static KernelSpec {
        self.kernel
    }

    fn problem(&self) -> &Problem {
        &self.problem
    }

    fn scale(&self) -> Scale {
        self.scale
    }

    fn one_launch(&self) -> bool {
        self.batched.is_some()
    }

    fn time(
        &self,
        a: &DeviceData,
        b: &DeviceData,
        c: &mut DeviceData,
        batch: Batch,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        let what = || format!("timing a plan of {} on {}", self.kernel.name, self.problem);
        self.backend.timed(
            &mut (),
            warmup,
            iters,
            |_| Ok(()),
            |_, _| self.run(a, b, c, batch),
            what,
        )
    }

    fn run(&self, a: &DeviceData, b: &DeviceData, c: &mut DeviceData, batch: Batch) -> Result<()> {
        let backend = self.backend;
        backend.check_alive()?;
        let p = &self.problem;
        batch.check(p)?;
        batch.check_operands(p, a, b, c)?;
        let s = &backend.stream;
        let pa = a.buffer::<DeviceBuf>(backend.instance, "A")?.ptr(s);
        let pb = b.buffer::<DeviceBuf>(backend.instance, "B")?.ptr(s);
        let pc = c.buffer::<DeviceBuf>(backend.instance, "C")?.ptr(s);
        if let Some((planned, launcher, maps)) = &self.batched {
            if *planned == batch {
                let key = (pa, pb, pc);
                let mut maps = maps.lock().unwrap_or_else(|e| e.into_inner());
                if maps.as_ref().is_none_or(|(k, _)| *k != key) {
                    let made = backend.batched_maps(launcher, p, key, &batch)?;
                    *maps = Some((key, made));
                }
                let made = maps.as_ref().and_then(|(_, m)| m.as_ref());
                return backend.launch_batched(launcher, p, key, &batch, made);
            }
        }
        let in_bytes = p.dtype.input_bytes() as u64;
        let c_bytes = p.c_dtype().input_bytes() as u64;
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.truncate(batch.count);
        // Otherwise one launch (and α/β pass) per product, in order on the stream; each product's
        // operands (tensor maps, staging) made once for its addresses.
        for i in 0..batch.count {
            let ai = pa + (i * batch.stride_a) as u64 * in_bytes;
            let bi = pb + (i * batch.stride_b) as u64 * in_bytes;
            let ci = pc + (i * batch.stride_c) as u64 * c_bytes;
            let target = match &self.epilogue {
                Some((_, w)) => w.ptr(s),
                None => ci,
            };
            if self.zero {
                let elem = self.launched.c_dtype().input_bytes().max(2);
                backend.zero_at(target, p.m * p.n, elem)?;
            }
            let key = (ai, bi, target);
            if last.get(i).is_none_or(|(k, _)| *k != key) {
                let ops = backend.operands_at(&self.launcher, &self.launched, ai, bi, target)?;
                if i < last.len() {
                    last[i] = (key, ops);
                } else {
                    last.push((key, ops));
                }
            }
            backend.launch(&self.launcher, &self.launched, &last[i].1)?;
            if let Some((func, _)) = &self.epilogue {
                self.scale_into(func, target, ci)?;
            }
        }
        Ok(())
    }
}

impl CudaPlan<'_> {
    /// Enqueues C = α·P + β·C over the m×n elements of the product `p` (the workspace) and C at
    /// `c` (kernels/scale.cu).
    fn scale_into(&self, func: &CudaFunction, p: u64, c: u64) -> Result<()> {
        let problem = &self.problem;
        let count = (problem.m * problem.n) as i64;
        let config = self.backend.elementwise_config(count as u64);
        let mut builder = self.backend.stream.launch_builder(func);
        builder.arg(&p).arg(&c).arg(&count);
        let (alpha32, beta32) = (self.scale.alpha as u32, self.scale.beta as u32);
        let (alpha, beta) = (self.scale.alpha as f32, self.scale.beta as f32);
        if problem.c_dtype() == DType::U32 {
            builder.arg(&alpha32).arg(&beta32);
        } else {
            builder.arg(&alpha).arg(&beta);
        }
        // SAFETY: scale_<C>(const ACC* P, OUT* C, long long count, α, β): the workspace holds
        // count products of the accumulator's type, C count elements of its own.
        unsafe { builder.launch(config) }
            .map(|_| ())
            .ctx(|| format!("launching the α/β pass of {problem}"))
    }
}
