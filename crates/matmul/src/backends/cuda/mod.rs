//! The CUDA backend: cudarc with every library loaded at run time. Kernels are CUDA C++ files
//! compiled by NVRTC for the device's own architecture ([`mod@compile`]), cached in memory (loaded
//! functions, per backend) and on disk (CUBINs); cuBLAS is the vendor baseline (`cublas.rs`);
//! [`device`] reads the device's properties without a context; [`ceilings`] measures the
//! device's own limits for the roofline.
//!
//! Nothing here panics on a machine without CUDA: every library is probed before its first use
//! ([`libs`]) and a missing one is `Error::NoGpu` (driver, device) or `Error::Cuda` (NVRTC,
//! cuBLAS). One backend owns one context and one stream; every launch is checked, and `run`
//! synchronizes and checks the context's error state before it returns.
//!
//! This file holds the backend and its `Backend` impl; beside it, `buffers.rs` (device buffers:
//! upload, poison or zero, download), `launch.rs` (one launch: grid and block from the kernel's
//! [`family`](crate::family), dynamic shared memory, operands and tensor maps from `tma.rs`,
//! cuBLAS) and `split_tail.rs` (the split tail's plan, workspace and tail launch).

mod batched;
mod buffers;
pub mod ceilings;
pub mod compile;
mod cublas;
pub mod device;
mod external;
mod int8;
pub(crate) mod launch;
pub mod libs;
mod pinned;
mod plan;
mod split_tail;
mod staging;
mod tma;
mod user;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys as cu_sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};

use compile::Build;
pub use compile::{
    arch_for, compile, compile_source, compile_source_with_options, compile_with_cache,
    nvrtc_version, ptx, ptx_source, CompileInfo, Compiled, DiskCache,
};
pub use device::{list_devices, DeviceInfo};
pub use int8::{cublaslt_int8_refusal, CUBLASLT_WORKSPACE_BYTES};
pub use pinned::PinnedMatrix;
pub use split_tail::{
    split_k_pieces, split_tail_plan, TailPlan, SPLIT_K_EIGHTHS, SPLIT_K_MIN_SLICES,
    TAIL_EXTRA_EIGHTHS, TAIL_MIN_SLICES, TAIL_PIECE_SLICES,
};

use crate::backend::{check_input_sets, check_inputs, Backend, Inputs, RunOptions};
use crate::dtype::Types;
use crate::error::{Error, Result, Unsupported};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::registry::{BackendKind, DeviceLimits, KernelSpec};
use libs::Context;
use split_tail::TailWorkspace;

/// A loaded kernel: the function, ptxas's report for it, and the dynamic shared memory it has
/// been allowed so far.
pub(crate) struct Loaded {
    entry: String,
    module: Arc<CudaModule>,
    func: CudaFunction,
    info: Option<CompileInfo>,
    max_dynamic_shared: Mutex<usize>,
}

/// One CUDA device: a context, a stream, loaded kernels and (lazily) a cuBLAS handle.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    loaded: Mutex<HashMap<String, Arc<Loaded>>>,
    blas: Mutex<Option<CudaBlas>>,
    tail_workspace: Mutex<Option<Arc<TailWorkspace>>>,
    /// The fault that left the context unusable (a kernel's illegal address or instruction:
    /// CUDA's sticky errors), once one has: every later call fails at once with it.
    lost: Mutex<Option<String>>,
    /// This backend's [`Backend::instance`]: the matrices it holds say so.
    instance: u64,
}

/// CUDA's sticky errors: after one, every call on the context fails until the process ends.
const STICKY_ERRORS: [&str; 9] = [
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
];

impl CudaBackend {
    /// Opens CUDA device `ordinal`; a missing driver library or device is an error, never a panic.
    pub fn new(ordinal: usize) -> Result<CudaBackend> {
        let count = device::init_and_count()?;
        if count == 0 {
            return Err(Error::NoGpu(
                "the CUDA driver is installed but reports no device".into(),
            ));
        }
        if ordinal >= count {
            return Err(Error::NoGpu(format!(
                "device {ordinal} was requested; the driver reports {count} device(s)"
            )));
        }
        let info = device::query(ordinal)?;
        let ctx =
            CudaContext::new(ordinal).ctx(|| format!("creating a context on device {ordinal}"))?;
        // One stream per backend: cudarc's cross-stream event tracking would only add an event
        // record to every launch (and to every timed one).
        // SAFETY: every buffer of this backend is used on `stream` alone.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().ctx(|| "creating a stream".into())?;
        Ok(CudaBackend {
            ctx,
            stream,
            info,
            loaded: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
            tail_workspace: Mutex::new(None),
            lost: Mutex::new(None),
            instance: plan::new_instance(),
        })
    }

    /// The device's properties, read when the backend was opened.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The NVRTC target of this device ("sm_90a" on H100).
    pub fn arch(&self) -> &str {
        &self.info.arch
    }

    /// The cudarc context, for work of your own on this device (use [`CudaBackend::stream`] to
    /// stay ordered with this backend's launches).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device's free and total memory in bytes, as the driver reports them now
    /// (cuMemGetInfo): what every process on the device leaves free, not this backend's share.
    pub fn memory(&self) -> Result<(u64, u64)> {
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        let (free, total) = self
            .ctx
            .mem_get_info()
            .ctx(|| "asking the device for its free memory".into())?;
        Ok((free as u64, total as u64))
    }

    /// The stream every launch of this backend goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Compiles (or finds in the caches) and loads `entry` from any CUDA C++ source, e.g. the
    /// ceilings micro-kernels, for this device.
    pub fn load_function(
        &self,
        name: &str,
        text: &str,
        defines: &[(String, String)],
        entry: &str,
    ) -> Result<CudaFunction> {
        Ok(self.load(name, text, defines, &[], entry)?.func.clone())
    }

    /// ptxas's report for `kernel` as this backend compiles it.
    pub fn compile_info(
        &self,
        kernel: &KernelSpec,
        types: impl Into<Types>,
        opts: &RunOptions,
    ) -> Result<CompileInfo> {
        let loaded = self.load_kernel(kernel, types.into(), opts, Build::Main)?;
        loaded.info.clone().ok_or_else(|| Error::Cuda {
            context: format!("compiling {}", kernel.name),
            message: "ptxas reported nothing for the entry point".into(),
        })
    }

    /// What `run` hands a kernel as C before the launch, downloaded without launching anything:
    /// every element is the poison pattern (NaN / 0xDEADBEEF). Lets tests check the poisoning.
    pub fn poisoned_output(&self, problem: &Problem) -> Result<AnyMatrix> {
        let mut c = self.alloc_output(problem)?;
        self.fill_output(&mut c, false)?;
        self.download(&c, problem)
    }

    /// Compiles (or finds in the caches) and loads `build` of registry kernel `kernel`.
    fn load_kernel(
        &self,
        kernel: &KernelSpec,
        types: Types,
        opts: &RunOptions,
        build: Build,
    ) -> Result<Arc<Loaded>> {
        let src = kernel.cuda_source().ok_or_else(|| {
            Error::Invalid(format!("kernel `{}` has no CUDA source", kernel.name))
        })?;
        let defines = build.defines(kernel, types, opts)?;
        let entry = build.entry_point(kernel).ok_or_else(|| {
            Error::Invalid(format!("kernel `{}` has no {build:?} build", kernel.name))
        })?;
        let options = compile::kernel_options(kernel, opts)?;
        self.load(src.file, &src.full_text(), &defines, &options, &entry)
    }

    /// Compiles (or finds in the caches) and loads `entry` of source `text` with `defines` and
    /// the `extra` NVRTC options.
    fn load(
        &self,
        name: &str,
        text: &str,
        defines: &[(String, String)],
        extra: &[String],
        entry: &str,
    ) -> Result<Arc<Loaded>> {
        let key = format!("{name}|{entry}|{defines:?}|{extra:?}");
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = loaded.get(&key) {
            return Ok(l.clone());
        }
        let cache = DiskCache::configured();
        let arch = self.info.arch.as_str();
        let mut compiled = compile_source_with_options(name, text, defines, extra, arch, &cache)?;
        let module = match self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
        {
            Ok(m) => m,
            Err(_) if compiled.from_disk_cache => {
                // A cached CUBIN the driver refuses: drop it and compile afresh.
                cache.evict(name, arch, compiled.key);
                let uncached = DiskCache::disabled();
                compiled =
                    compile_source_with_options(name, text, defines, extra, arch, &uncached)?;
                self.ctx
                    .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
                    .ctx(|| format!("loading the CUBIN of {name}"))?
            }
            Err(e) => return Err(e).ctx(|| format!("loading the CUBIN of {name}")),
        };
        let func = module
            .load_function(entry)
            .ctx(|| format!("finding `{entry}` in {name}"))?;
        let l = Arc::new(Loaded {
            entry: entry.to_string(),
            module,
            func,
            info: compiled.function(entry).cloned(),
            max_dynamic_shared: Mutex::new(self.info.shared_per_block),
        });
        loaded.insert(key, l.clone());
        Ok(l)
    }

    /// Refuses, before any allocation, a problem whose `sets` input sets (A and B, and the
    /// staged copies a TMA kernel makes of rows it cannot read), one C and some slack for the
    /// driver do not fit the device's free memory now (after the launcher's own workspaces).
    fn fits_in_memory(
        &self,
        launcher: &launch::Launcher,
        problem: &Problem,
        sets: usize,
    ) -> Result<()> {
        let elem = problem.dtype.input_bytes();
        let tma = matches!(launcher, launch::Launcher::Kernel { tma: Some(_), .. });
        let simt = matches!(
            launcher,
            launch::Launcher::Kernel {
                tma: None,
                stage_rows: true,
                ..
            }
        );
        let stored = |a_side: bool, (r, c): (usize, usize)| {
            let staged = if simt {
                // The larger of a transposed and a padded copy.
                if launch::simt_stages(problem, a_side) {
                    staging::staged_bytes((c, r), elem)
                        .max(staging::staged_bytes((r, c), elem))
                        .max(r * c * elem)
                } else {
                    0
                }
            } else if tma {
                staging::staged_bytes((r, c), elem)
            } else {
                0
            };
            (r * c * elem + staged) as u64
        };
        let inputs = stored(true, problem.a_stored()) + stored(false, problem.b_stored());
        let c = (problem.m as u64) * (problem.n as u64) * problem.c_dtype().input_bytes() as u64;
        const SLACK: u64 = 256 << 20;
        let needed = (sets as u64) * inputs + c + SLACK;
        let (free, _) = self.memory()?;
        if needed > free {
            let what = if sets == 1 {
                "A, B and C".to_string()
            } else {
                format!("{sets} input sets of A and B and one C")
            };
            return Err(Error::DeviceMemory {
                problem: *problem,
                what,
                needed,
                free,
            });
        }
        Ok(())
    }

    /// Waits for the stream and surfaces any error a kernel or a deferred release left behind.
    /// A sticky error (a kernel's fault) marks the backend lost: [`Error::ContextLost`] then and
    /// on every later call.
    fn sync(&self, what: impl Fn() -> String) -> Result<()> {
        let result = self
            .stream
            .synchronize()
            .ctx(&what)
            .and_then(|_| self.ctx.check_err().ctx(&what));
        match result {
            Err(Error::Cuda { context, message })
                if STICKY_ERRORS.iter().any(|e| message.contains(e)) =>
            {
                let fault = format!("{context}: {message}");
                *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(fault.clone());
                Err(Error::ContextLost { fault })
            }
            other => other,
        }
    }

    /// [`Error::ContextLost`] once a kernel has faulted on this backend.
    fn check_alive(&self) -> Result<()> {
        match &*self.lost.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(fault) => Err(Error::ContextLost {
                fault: fault.clone(),
            }),
            None => Ok(()),
        }
    }

    fn check_tile(&self, kernel: &KernelSpec, problem: &Problem, opts: RunOptions) -> Result<()> {
        // Checked here, before `can_run` divides by it.
        if opts.tile == Some(0) {
            return Err(Unsupported {
                kernel: kernel.name.to_string(),
                problem: problem.to_string(),
                rule: "TILE must be at least 1".into(),
            }
            .into());
        }
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn describe(&self) -> String {
        self.info.summary()
    }

    fn identity(&self) -> Option<crate::registry::rules::DeviceIdentity> {
        Some(self.info.identity())
    }

    fn instance(&self) -> u64 {
        self.instance
    }

    fn upload(&self, m: &AnyMatrix) -> Result<crate::backends::DeviceData> {
        self.upload_data(m)
    }

    fn upload_ref(&self, m: crate::view::AnyMatRef<'_>) -> Result<crate::backends::DeviceData> {
        self.upload_ref_data(m)
    }

    fn alloc_zeroed(
        &self,
        dtype: crate::DType,
        rows: usize,
        cols: usize,
    ) -> Result<crate::backends::DeviceData> {
        self.alloc_data(dtype, rows, cols)
    }

    fn download(&self, d: &crate::backends::DeviceData) -> Result<AnyMatrix> {
        self.download_data(d)
    }

    fn copy_block(
        &self,
        src: &crate::backends::DeviceData,
        from: crate::view::Block,
        dst: &mut crate::backends::DeviceData,
        at: (usize, usize),
    ) -> Result<()> {
        self.copy_block_data(src, from, dst, at)
    }

    fn download_into(
        &self,
        d: &crate::backends::DeviceData,
        dst: crate::view::AnyMatMut<'_>,
    ) -> Result<()> {
        self.download_into_data(d, dst)
    }

    fn synchronize(&self) -> Result<()> {
        self.sync(|| "waiting for the stream".into())
    }

    fn data_ptr(&self, d: &crate::backends::DeviceData) -> Result<u64> {
        self.data_ptr_of(d)
    }

    unsafe fn wrap_external(
        &self,
        ptr: u64,
        dtype: crate::DType,
        shape: (usize, usize),
        keep: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<crate::backends::DeviceData> {
        // SAFETY: the caller's, as the trait method's.
        unsafe { self.wrap_external_data(ptr, dtype, shape, keep) }
    }

    /// A plan that launches on the device's stream without synchronizing: the kernel compiled
    /// and its workspaces made once; tensor maps and staging made once per set of buffers.
    fn plan(
        &self,
        kernel: &'static KernelSpec,
        problem: &Problem,
        opts: RunOptions,
        scale: crate::backends::Scale,
        batch: crate::backends::Batch,
    ) -> Result<Box<dyn crate::backends::PlanRun + '_>> {
        Ok(Box::new(
            self.make_plan(kernel, problem, opts, scale, batch)?,
        ))
    }

    fn limits(&self) -> Option<DeviceLimits> {
        Some(DeviceLimits {
            max_shared_per_block: self.info.shared_per_block_optin,
            sm90a: self.info.arch == "sm_90a",
            sms: self.info.sm_count,
            compute_capability: self.info.compute_capability,
            sm_clock_mhz: self.info.sm_clock_khz / 1000,
            dram_gbs: self.info.peak_memory_bandwidth_gbs() as u32,
        })
    }

    fn run(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> Result<AnyMatrix> {
        self.check_alive()?;
        self.check_tile(kernel, problem, opts)?;
        self.check(kernel, problem, opts)?;
        check_inputs(problem, a, b)?;
        let launcher = self.launcher(kernel, problem, &opts)?;
        self.fits_in_memory(&launcher, problem, 1)?;
        let (da, db) = (self.upload(a)?, self.upload(b)?);
        let mut c = self.alloc_output(problem)?;
        let zero = kernel.cuda_source().is_some_and(|s| s.zero_output);
        self.fill_output(&mut c, zero)?;
        let ops = self.operands(&launcher, problem, &da, &db, &c)?;
        self.launch(&launcher, problem, &ops)?;
        self.sync(|| format!("running {} on {problem}", kernel.name))?;
        self.download(&c, problem)
    }

    fn time_int8_ceiling(
        &self,
        mnk: (usize, usize, usize),
        sets: usize,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        self.time_cublaslt_int8(mnk, sets, warmup, iters)
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
        self.check_alive()?;
        self.check_tile(kernel, problem, opts)?;
        self.check(kernel, problem, opts)?;
        check_input_sets(problem, inputs)?;
        let launcher = self.launcher(kernel, problem, &opts)?;
        self.fits_in_memory(&launcher, problem, inputs.len())?;
        let bufs = inputs
            .iter()
            .map(|set| Ok((self.upload(&set.a)?, self.upload(&set.b)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut c = self.alloc_output(problem)?;
        let sets = bufs
            .iter()
            .map(|(a, b)| self.operands(&launcher, problem, a, b, &c))
            .collect::<Result<Vec<_>>>()?;
        let zero = kernel.cuda_source().is_some_and(|s| s.zero_output);
        self.fill_output(&mut c, zero)?;
        // Accumulating kernels start from zero each time (outside the timed region).
        let reset = |c: &mut buffers::DeviceBuf| {
            if zero {
                self.fill_output(c, true)
            } else {
                Ok(())
            }
        };
        let launch = |_: &buffers::DeviceBuf, i: usize| {
            self.launch(&launcher, problem, &sets[i % sets.len()])
        };
        let times = self.timed(&mut c, warmup, iters, reset, launch, || {
            format!("timing {} on {problem}", kernel.name)
        })?;
        Ok(times)
    }
}

impl CudaBackend {
    /// The timing loop every CUDA timer shares: `warmup` untimed runs of `launch`, then `iters`
    /// timed ones, each between two CUDA events on the stream; `reset` runs before each, outside
    /// the timed region (an accumulating kernel's C zeroed). `state` is what both need (C), lent
    /// to each in turn. Seconds per timed run; `what` names the work in a failure.
    pub(crate) fn timed<S>(
        &self,
        state: &mut S,
        warmup: usize,
        iters: usize,
        mut reset: impl FnMut(&mut S) -> Result<()>,
        mut launch: impl FnMut(&S, usize) -> Result<()>,
        what: impl Fn() -> String,
    ) -> Result<Vec<f64>> {
        let event = || -> Result<CudaEvent> {
            self.ctx
                .new_event(Some(cu_sys::CUevent_flags::CU_EVENT_DEFAULT))
                .ctx(|| "creating a timing event".into())
        };
        let events = (0..iters)
            .map(|_| Ok((event()?, event()?)))
            .collect::<Result<Vec<_>>>()?;
        for i in 0..warmup {
            reset(state)?;
            launch(state, i)?;
        }
        let s = &self.stream;
        for (i, (start, end)) in events.iter().enumerate() {
            reset(state)?;
            start.record(s).ctx(|| "recording a timing event".into())?;
            launch(state, warmup + i)?;
            end.record(s).ctx(|| "recording a timing event".into())?;
        }
        self.sync(what)?;
        events
            .iter()
            .map(|(start, end)| {
                start
                    .elapsed_ms(end)
                    .map(|ms| ms as f64 / 1e3)
                    .ctx(|| "reading a timing event".into())
            })
            .collect()
    }
}
