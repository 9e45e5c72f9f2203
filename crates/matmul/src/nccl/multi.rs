//! One GEMM across several GPUs of one host, over NCCL ([`super::comm`]): one thread per GPU,
//! each with its own [`CudaBackend`] (context and compute stream), a second stream for
//! communication, and its rank of one communicator. The local products are this crate's own
//! kernels (the `auto` choice for the whole problem, or the kernel named) through the one-GPU
//! launch path, on the backend's stream.
//!
//! The layouts ([`Layout`]), for C = A·B with A m×k and B k×n (both op N), on G GPUs:
//! - `row-split`: rank r holds rows M_r of A and all of B and computes C[M_r, :]. No
//!   communication: the baseline.
//! - `ag-gemm` (AllGather + GEMM, a tensor-parallel column layer): rank r holds A[M_r, :] and
//!   B[:, N_r] and computes C[:, N_r]. A's row shards travel around the ring (ncclSend/ncclRecv
//!   on the communication stream) while the compute stream multiplies the shard already there,
//!   starting with its own at once; an event per received shard orders its product after it.
//! - `gemm-rs` (GEMM + ReduceScatter, K-sharded): rank r holds A[:, K_r] and B[K_r, :]; its
//!   partial product is computed in row pieces, and each piece is summed into its owner's
//!   C[M_c, :] (ncclReduce to rank c) while the next piece is computed. u32 sums wrap modulo
//!   2^32 in NCCL as in the kernels, so u32 stays exact; floating partials are summed in C's
//!   type (f32 unless the problem asks for C in bf16/f16).
//!
//! Every dimension that is split is split in G near-equal parts (the first `len % G` one longer);
//! each part must be at least one row or column, so a split dimension must be at least G.
//! Every operand of a local product is its own allocation (aligned as TMA wants).
//!
//! A rank that fails records the error; the others see it at their next wait (they poll their
//! streams and a shared flag rather than block) and abort their communicators, so nothing hangs:
//! waits end after [`MultiOptions::timeout`] with an error naming the rank.

use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::sys as cu_sys;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr};

use super::comm::{self as nccl, Comm, NcclType, UniqueId};
use super::rendezvous;
pub use super::rendezvous::Rendezvous;
use crate::backend::{Backend, Inputs, RunOptions};
use crate::backends::cuda::launch::{Launcher, Operands};
use crate::backends::cuda::libs::Context;
use crate::backends::cuda::{device, CudaBackend};
use crate::dispatch;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::matrix::{AnyMatrix, Matrix};
use crate::problem::{Op, Problem};
use crate::registry::KernelSpec;

/// How the operands and C are distributed over the GPUs (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Rows of A and C split, B replicated; no communication.
    RowSplit,
    /// A row-sharded and gathered in a ring while multiplying; B and C column-sharded.
    AgGemm,
    /// K split; partial products summed into row-sharded C as they finish.
    GemmRs,
}

impl Layout {
    /// Every layout, baseline first.
    pub const ALL: [Layout; 3] = [Layout::RowSplit, Layout::AgGemm, Layout::GemmRs];

    /// The CLI name: `row-split`, `ag-gemm`, `gemm-rs`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::RowSplit => "row-split",
            Layout::AgGemm => "ag-gemm",
            Layout::GemmRs => "gemm-rs",
        }
    }

    /// A CLI name or alias (`rowsplit`, `allgather`, `ag`, `reducescatter`, `rs`), any case.
    pub fn parse(s: &str) -> Result<Layout> {
        let key = s.to_ascii_lowercase().replace(['_', '-'], "");
        match key.as_str() {
            "rowsplit" | "row" => Ok(Layout::RowSplit),
            "aggemm" | "allgather" | "ag" => Ok(Layout::AgGemm),
            "gemmrs" | "reducescatter" | "rs" => Ok(Layout::GemmRs),
            _ => Err(Error::Invalid(format!(
                "unknown layout `{s}` (expected row-split, ag-gemm or gemm-rs)"
            ))),
        }
    }
}

/// How a multi-GPU product runs.
#[derive(Debug, Clone)]
pub struct MultiOptions {
    /// GPUs (ranks), devices 0..gpus; at least 2.
    pub gpus: usize,
    /// The distribution.
    pub layout: Layout,
    /// The local kernel: a registry name or `auto` (chosen for the whole problem).
    pub kernel: String,
    /// `gemm-rs`: row pieces per rank's shard of C (None: up to 4, pieces of at least 1024 rows).
    pub pieces: Option<usize>,
    /// The longest any rank waits for its peers or its streams.
    pub timeout: Duration,
}

impl MultiOptions {
    /// `auto` kernel, default pieces, the configured timeout ([`Config::nccl_timeout`](crate::Config::nccl_timeout); 300 s unless set).
    pub fn new(gpus: usize, layout: Layout) -> MultiOptions {
        let timeout = crate::config::get()
            .nccl_timeout
            .filter(|t| !t.is_zero())
            .unwrap_or(Duration::from_secs(300));
        MultiOptions {
            gpus,
            layout,
            kernel: "auto".into(),
            pieces: None,
            timeout,
        }
    }
}

/// `len` in `parts` near-equal consecutive ranges, the first `len % parts` one longer.
pub fn split(len: usize, parts: usize) -> Vec<Range<usize>> {
    let (q, r) = (len / parts, len % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let l = q + usize::from(i < r);
            let range = start..start + l;
            start += l;
            range
        })
        .collect()
}

/// Refuses what the layouts cannot run: fewer than 2 GPUs, transposed operands, a split
/// dimension shorter than the GPU count.
pub fn check(problem: &Problem, opts: &MultiOptions) -> Result<()> {
    let g = opts.gpus;
    if g < 2 {
        return Err(Error::Invalid(format!(
            "a multi-GPU product needs at least 2 GPUs ({g} asked for)"
        )));
    }
    if problem.op_a != Op::N || problem.op_b != Op::N {
        return Err(Error::Invalid(
            "the multi-GPU layouts take A and B as stored (op N); transpose on the host".into(),
        ));
    }
    let split_dims: &[(&str, usize)] = match opts.layout {
        Layout::RowSplit => &[("M", problem.m)],
        Layout::AgGemm => &[("M", problem.m), ("N", problem.n)],
        Layout::GemmRs => &[("M", problem.m), ("K", problem.k)],
    };
    for &(name, len) in split_dims {
        if len < g {
            return Err(Error::Invalid(format!(
                "{}: {name} = {len} cannot be split over {g} GPUs (layout {} splits {name} into \
                 {g} parts of at least one row or column each)",
                problem,
                opts.layout.name()
            )));
        }
    }
    if opts.pieces == Some(0) {
        return Err(Error::Invalid("pieces must be at least 1".into()));
    }
    Ok(())
}

/// Devices present, NCCL loadable: the environment a multi-GPU product needs (`Error::NoGpu`
/// with too few devices, `Error::Cuda` without NCCL).
pub fn check_environment(gpus: usize) -> Result<&'static nccl::Nccl> {
    let count = device::init_and_count()?;
    if count < gpus {
        return Err(Error::NoGpu(format!(
            "{gpus} GPUs were asked for; the driver reports {count}"
        )));
    }
    nccl::library()
}

/// What [`multi_gemm`] returns.
#[derive(Debug, Clone)]
pub struct MultiOutput {
    /// The whole product, m×n, assembled on the host.
    pub c: AnyMatrix,
    /// The local kernel.
    pub kernel: &'static KernelSpec,
    /// Each rank's device, one line each.
    pub devices: Vec<String>,
}

/// C = A·B over `opts.gpus` GPUs in `opts.layout`, assembled on the host. Each GEMM output is
/// poisoned before it runs, as in the one-GPU path.
pub fn multi_gemm(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    opts: &MultiOptions,
) -> Result<MultiOutput> {
    crate::backend::check_inputs(problem, a, b)?;
    check(problem, opts)?;
    let per_rank = with_ranks(problem, a, b, opts, |rank, comm, shared| {
        rank.poison()?;
        rank.enqueue(comm, Mode::Full, None)?;
        rank.wait(comm, shared)?;
        Ok((rank.kernel, rank.backend.describe(), rank.download()?))
    })?;
    let mut c = alloc_any(problem.c_dtype(), problem.m, problem.n)?;
    let elem = problem.c_dtype().input_bytes();
    let dst = bytes_mut(&mut c);
    let mut devices = Vec::new();
    let mut kernel = None;
    for (spec, device, blocks) in per_rank {
        kernel = kernel.or(Some(spec));
        devices.push(device);
        for (rows, cols, data) in blocks {
            let w = cols.len() * elem;
            for (i, row) in rows.clone().enumerate() {
                let at = (row * problem.n + cols.start) * elem;
                dst[at..at + w].copy_from_slice(&data[i * w..(i + 1) * w]);
            }
        }
    }
    Ok(MultiOutput {
        c,
        kernel: kernel.expect("at least 2 ranks"),
        devices,
    })
}

/// One rank of a run with one process per GPU (the form that also runs across hosts): its rank,
/// the number of ranks, its device (an ordinal of this host), and where the ranks meet for the
/// NCCL unique id ([`Rendezvous`]: a shared file, or rank 0 over TCP), in exchange `round` of
/// the run (each product makes a communicator of its own).
#[derive(Debug, Clone)]
pub struct ProcessRank {
    /// This process's rank, 0..world.
    pub rank: usize,
    /// The number of processes (GPUs).
    pub world: usize,
    /// The CUDA device of this process.
    pub device: usize,
    /// Where rank 0 hands the unique id to the others.
    pub rendezvous: Rendezvous,
    /// Which exchange of the run this is (the same on every rank).
    pub round: u32,
}

/// The unique id of one communicator, from rank 0 to every rank through `pr.rendezvous`
/// ([`rendezvous::exchange`]), within `timeout`; what rank 0 refuses goes to `log`.
pub fn exchange_id(
    pr: &ProcessRank,
    timeout: Duration,
    log: &mut dyn FnMut(String),
) -> Result<UniqueId> {
    let make = || -> Result<rendezvous::IdBytes> {
        let id = nccl::library()?.unique_id()?;
        Ok(std::array::from_fn(|i| id.0.internal[i] as u8))
    };
    let rdv = pr.rendezvous.for_round(pr.round);
    let bytes = rendezvous::exchange(&rdv, pr.rank, pr.world, pr.round, timeout, make, log)?;
    let mut id = cudarc::nccl::sys::ncclUniqueId { internal: [0; 128] };
    for (d, b) in id.internal.iter_mut().zip(bytes) {
        *d = b as std::ffi::c_char;
    }
    Ok(UniqueId(id))
}

/// What [`multi_gemm_process`] returns: this rank's part of C.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// The local kernel.
    pub kernel: &'static KernelSpec,
    /// This rank's device.
    pub device: String,
    /// This rank's blocks of C: rows, columns, and the block row-major in C's type.
    pub blocks: Vec<(Range<usize>, Range<usize>, AnyMatrix)>,
}

/// This process's rank of C = A·B run with one process per GPU (`opts.gpus` is ignored:
/// `pr.world` ranks): every process passes the same A and B; the id comes through
/// [`exchange_id`] (what rank 0 refuses goes to `log`). A rank that fails ends its
/// communicator; the others see NCCL's error or time out after `opts.timeout` with an error
/// naming them.
pub fn multi_gemm_process(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    opts: &MultiOptions,
    pr: &ProcessRank,
    log: &mut dyn FnMut(String),
) -> Result<ProcessOutput> {
    crate::backend::check_inputs(problem, a, b)?;
    let opts = MultiOptions {
        gpus: pr.world,
        ..opts.clone()
    };
    check(problem, &opts)?;
    if pr.rank >= pr.world {
        return Err(Error::Invalid(format!(
            "rank {} is not below the world size {}",
            pr.rank, pr.world
        )));
    }
    let id = exchange_id(pr, opts.timeout, log)?;
    let shared = Shared::new(1, opts.timeout);
    let rank = Rank::new(pr.rank, pr.device, false, problem, a, b, &opts)?;
    let comm = Comm::from_rank(&id, pr.rank, pr.world)?;
    rank.poison()?;
    rank.enqueue(&comm, Mode::Full, None)?;
    rank.wait(&comm, &shared)?;
    let blocks = rank.download()?;
    // Every rank through before the communicator goes: a sum of one u32 over all of them.
    let flag = rank
        .backend
        .stream()
        .clone_htod(&[1u32])
        .ctx(|| "allocating the barrier's flag".into())?;
    let cs = rank.backend.stream();
    let ptr = flag.device_ptr(cs).0;
    // SAFETY: one live u32 of this device, summed in place.
    unsafe { comm.all_reduce(ptr, ptr, 1, NcclType::U32, cs.cu_stream()) }?;
    rank.wait(&comm, &shared)?;
    comm.finish()?;
    let dtype = problem.c_dtype();
    let elem = dtype.input_bytes();
    let blocks = blocks
        .into_iter()
        .map(|(rows, cols, data)| {
            let mut m = alloc_any(dtype, rows.len(), cols.len())?;
            bytes_mut(&mut m).copy_from_slice(&data[..rows.len() * cols.len() * elem]);
            Ok((rows, cols, m))
        })
        .collect::<Result<_>>()?;
    Ok(ProcessOutput {
        kernel: rank.kernel,
        device: rank.backend.describe(),
        blocks,
    })
}

/// Per-iteration times (seconds) of one multi-GPU product, each the slowest rank's: the product
/// as it runs (communication overlapped), its local products alone and its communication alone.
#[derive(Debug, Clone)]
pub struct MultiTiming {
    /// The local kernel.
    pub kernel: &'static KernelSpec,
    /// Each rank's device.
    pub devices: Vec<String>,
    /// The product with communication overlapped.
    pub overlapped: Vec<f64>,
    /// The same local products without any communication.
    pub compute: Vec<f64>,
    /// The same communication without any product.
    pub comm: Vec<f64>,
}

/// Times `iters` runs (after `warmup`) of each of the overlapped product, its compute alone and
/// its communication alone, interleaved; each run starts with every rank at a barrier and its
/// time is the slowest rank's (CUDA events on each rank's streams).
pub fn multi_time(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    opts: &MultiOptions,
    warmup: usize,
    iters: usize,
) -> Result<MultiTiming> {
    crate::backend::check_inputs(problem, a, b)?;
    check(problem, opts)?;
    if iters == 0 {
        return Err(Error::Invalid("timing needs at least one iteration".into()));
    }
    let modes = [Mode::Full, Mode::ComputeOnly, Mode::CommOnly];
    let per_rank = with_ranks(problem, a, b, opts, |rank, comm, shared| {
        let timer = (rank.event(true)?, rank.event(true)?);
        for _ in 0..warmup {
            shared.gate(rank.rank)?;
            rank.enqueue(comm, Mode::Full, None)?;
            rank.wait(comm, shared)?;
        }
        let mut times = vec![Vec::with_capacity(iters); modes.len()];
        for _ in 0..iters {
            for (slot, mode) in modes.iter().enumerate() {
                shared.gate(rank.rank)?;
                rank.enqueue(comm, *mode, Some(&timer))?;
                rank.wait(comm, shared)?;
                let ms = timer
                    .0
                    .elapsed_ms(&timer.1)
                    .ctx(|| "reading a timing event".into())?;
                times[slot].push(ms as f64 / 1e3);
            }
        }
        Ok((rank.kernel, rank.backend.describe(), times))
    })?;
    let slowest = |slot: usize| -> Vec<f64> {
        (0..iters)
            .map(|i| {
                per_rank
                    .iter()
                    .map(|(_, _, t)| t[slot][i])
                    .fold(0.0, f64::max)
            })
            .collect()
    };
    Ok(MultiTiming {
        kernel: per_rank[0].0,
        devices: per_rank.iter().map(|(_, d, _)| d.clone()).collect(),
        overlapped: slowest(0),
        compute: slowest(1),
        comm: slowest(2),
    })
}

/// Times the whole problem on device 0 alone with the kernel `kernel` would choose there (the
/// 1-GPU run scaling is measured against). Returns the kernel and the per-iteration seconds.
pub fn single_gpu_time(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    kernel: &str,
    warmup: usize,
    iters: usize,
) -> Result<(&'static KernelSpec, Vec<f64>)> {
    let backend = CudaBackend::new(0)?;
    let choice = dispatch::choose(kernel, &backend, problem.dtype, Some(problem))?;
    let opts = RunOptions {
        tiling: choice.tiling,
        ..Default::default()
    };
    let inputs = [Inputs {
        a: a.clone(),
        b: b.clone(),
    }];
    let times = backend.time(choice.kernel, problem, &inputs, warmup, iters, opts)?;
    Ok((choice.kernel, times))
}

/// The link between `gpus` GPUs of this host (devices 0..gpus), measured by two ag-gemm
/// transfers alone (ring sends of A's row shards, NCCL on the communication streams): 64 MiB
/// shards for the bandwidth, 4 KiB ones for the fixed cost of a transfer.
pub fn probe_link(gpus: usize, timeout: Duration) -> Result<super::layout::LinkModel> {
    let mut opts = MultiOptions::new(gpus, Layout::AgGemm);
    opts.timeout = timeout;
    // bf16 A of gpus·rows × k: each rank's shard rows·k·2 bytes; N just splittable (tiny products).
    let comm = |rows: usize, k: usize| -> Result<(f64, f64)> {
        let p = Problem::new(rows * gpus, gpus * 8, k, DType::Bf16);
        let a = AnyMatrix::generate(
            DType::Bf16,
            p.m,
            p.k,
            crate::matrix::Init::SmallInt { seed: 1 },
        )?;
        let b = AnyMatrix::generate(
            DType::Bf16,
            p.k,
            p.n,
            crate::matrix::Init::SmallInt { seed: 1 },
        )?;
        let t = multi_time(&p, &a, &b, &opts, 1, 5)?;
        let mut c = t.comm;
        c.sort_by(f64::total_cmp);
        let steps = (gpus - 1) as f64;
        Ok((c[c.len() / 2] / steps, (rows * k * 2) as f64))
    };
    let (small_s, _) = comm(2, 1024)?;
    let (big_s, big_bytes) = comm(4096, 8192)?;
    let latency_s = small_s.max(0.0);
    Ok(super::layout::LinkModel {
        bytes_per_s: big_bytes / (big_s - latency_s).max(1e-9),
        latency_s,
    })
}

/// [`probe_link`] once per set of GPUs: kept in `cache_dir` (named by the count and device 0's
/// name) where one is given, and for the process's lifetime in any case.
pub fn host_link(
    gpus: usize,
    cache_dir: Option<&std::path::Path>,
    timeout: Duration,
) -> Result<super::layout::LinkModel> {
    use super::layout;
    static KNOWN: Mutex<Vec<(String, layout::LinkModel)>> = Mutex::new(Vec::new());
    let name = device::list_devices()?
        .first()
        .map(|d| d.name.clone())
        .unwrap_or_default();
    let key = format!("{gpus}x {name}");
    if let Some((_, l)) = KNOWN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return Ok(*l);
    }
    let cached = cache_dir.and_then(|d| layout::load_cached(d, &key));
    let link = match cached {
        Some(l) => l,
        None => {
            let l = probe_link(gpus, timeout)?;
            if let Some(d) = cache_dir {
                // A cache that cannot be written costs a probe next time, nothing more.
                let _ = layout::save_cached(d, &key, &l);
            }
            l
        }
    };
    KNOWN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((key, link));
    Ok(link)
}

/// A product's time on one GPU with `limits`, as `auto`'s cost model estimates it for the
/// kernel it would choose (2mnk at the device's FP32 SIMT rate where the model has nothing).
pub fn model_compute(limits: crate::registry::DeviceLimits) -> impl Fn(&Problem) -> f64 {
    move |p: &Problem| {
        dispatch::ranked(p, &limits, None)
            .first()
            .map(|(_, e)| e.seconds)
            .unwrap_or_else(|| p.flops() / 20e12)
    }
}

/// `--layout auto`: the placement of `problem` over devices 0..gpus that the model
/// ([`super::layout::choose`]) finds fastest, with the host's measured link ([`host_link`]).
pub fn auto_placement(
    problem: &Problem,
    gpus: usize,
    pieces: Option<usize>,
    timeout: Duration,
) -> Result<(super::layout::Estimate, super::layout::LinkModel)> {
    let backend = CudaBackend::new(0)?;
    let limits = backend
        .limits()
        .ok_or_else(|| Error::Invalid("device 0 reports no limits".into()))?;
    drop(backend);
    let dir = crate::config::get().cache_dir.clone();
    let link = host_link(gpus, dir.as_deref(), timeout)?;
    let compute = model_compute(limits);
    let pick = super::layout::choose(problem, gpus, pieces, &link, &compute);
    Ok((pick, link))
}

/// What one enqueue runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Products and communication, overlapped.
    Full,
    /// The products alone.
    ComputeOnly,
    /// The communication alone.
    CommOnly,
}

/// The barrier and failure flag the ranks share.
struct Shared {
    world: usize,
    timeout: Duration,
    state: Mutex<GateState>,
    cv: Condvar,
}

struct GateState {
    arrived: usize,
    generation: u64,
    /// The first failure: its rank and message.
    failure: Option<(usize, String)>,
}

impl Shared {
    fn new(world: usize, timeout: Duration) -> Shared {
        Shared {
            world,
            timeout,
            state: Mutex::new(GateState {
                arrived: 0,
                generation: 0,
                failure: None,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `rank`'s failure (the first one wins) and wakes every waiting rank.
    fn fail(&self, rank: usize, message: String) {
        let mut s = self.lock();
        if s.failure.is_none() {
            s.failure = Some((rank, message));
        }
        self.cv.notify_all();
    }

    fn peer_failed(&self) -> Option<Error> {
        self.lock().failure.as_ref().map(|(r, _)| Error::Cuda {
            context: "waiting for the other ranks".into(),
            message: format!("rank {r} failed"),
        })
    }

    /// Waits until every rank has arrived; an error when a rank failed or after the timeout.
    fn gate(&self, rank: usize) -> Result<()> {
        let mut s = self.lock();
        if let Some((r, _)) = &s.failure {
            return Err(Error::Cuda {
                context: format!("rank {rank} at a barrier"),
                message: format!("rank {r} failed"),
            });
        }
        s.arrived += 1;
        if s.arrived == self.world {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let generation = s.generation;
        let start = Instant::now();
        loop {
            s = self
                .cv
                .wait_timeout(s, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
            if s.generation != generation {
                return Ok(());
            }
            if let Some((r, _)) = &s.failure {
                return Err(Error::Cuda {
                    context: format!("rank {rank} at a barrier"),
                    message: format!("rank {r} failed"),
                });
            }
            if start.elapsed() > self.timeout {
                let message = format!(
                    "rank {rank} waited {:?} at a barrier for the other ranks",
                    self.timeout
                );
                s.failure = Some((rank, message.clone()));
                self.cv.notify_all();
                return Err(Error::Cuda {
                    context: "a multi-GPU barrier".into(),
                    message,
                });
            }
        }
    }
}

/// Runs `body` on every rank, one thread per GPU: each opens its device, chooses the kernel and
/// uploads its shards, all meet at a barrier (a failure there ends every rank before NCCL is
/// touched), then each joins the communicator, runs `body` and destroys the communicator (or
/// aborts it after an error). The error returned is the first rank's to fail, naming it.
fn with_ranks<T: Send>(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    opts: &MultiOptions,
    body: impl Fn(&mut Rank, &Comm, &Shared) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let nccl = check_environment(opts.gpus)?;
    let id = nccl.unique_id()?;
    let shared = Shared::new(opts.gpus, opts.timeout);
    let results: Vec<Result<T>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..opts.gpus)
            .map(|r| {
                let (shared, body) = (&shared, &body);
                scope.spawn(move || {
                    // A panic is caught here, so that the other ranks hear of it at once.
                    let run = || rank_main(r, problem, a, b, opts, &id, shared, body);
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
                        .unwrap_or_else(|_| {
                            Err(Error::Cuda {
                                context: format!("rank {r}"),
                                message: "the rank's thread panicked".into(),
                            })
                        });
                    if let Err(e) = &out {
                        shared.fail(r, e.to_string());
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(r, h)| {
                h.join().unwrap_or_else(|_| {
                    let e = Error::Cuda {
                        context: format!("rank {r}"),
                        message: "the rank's thread panicked".into(),
                    };
                    shared.fail(r, e.to_string());
                    Err(e)
                })
            })
            .collect()
    });
    if let Some((r, message)) = shared.lock().failure.clone() {
        return Err(Error::Cuda {
            context: format!(
                "{} on {} GPUs ({}): rank {r} failed",
                opts.layout.name(),
                opts.gpus,
                problem
            ),
            message,
        });
    }
    results.into_iter().collect()
}

#[allow(clippy::too_many_arguments)]
fn rank_main<T>(
    r: usize,
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    opts: &MultiOptions,
    id: &UniqueId,
    shared: &Shared,
    body: &(impl Fn(&mut Rank, &Comm, &Shared) -> Result<T> + Sync),
) -> Result<T> {
    let prepared = Rank::new(r, r, true, problem, a, b, opts);
    if let Err(e) = &prepared {
        shared.fail(r, e.to_string());
    }
    shared.gate(r)?;
    let mut rank = prepared?;
    rank.backend
        .context()
        .bind_to_thread()
        .ctx(|| "binding the context".into())?;
    let comm = Comm::from_rank(id, r, opts.gpus)?;
    // The last barrier: a communicator is destroyed cleanly only when every rank got through.
    match body(&mut rank, &comm, shared).and_then(|v| shared.gate(r).map(|()| v)) {
        // Everything enqueued has completed (body waits): a clean destroy.
        Ok(v) => comm.finish().map(|()| v),
        // `comm` is dropped here: aborted, which ends any NCCL kernel still waiting for a peer.
        Err(e) => Err(e),
    }
}

/// Lets the other GPUs of the run read and write the memory pool this device's buffers come
/// from (cudarc allocates stream-ordered, from the device's current pool, which only the device
/// itself may access by default). NCCL reads and writes the user buffers of ranks in the same
/// process directly over P2P (what `NCCL_P2P_DIRECT_DISABLE=1` turns off), which faults on pool
/// memory without this. Peers that cannot access this device are skipped (NCCL does not use P2P
/// for them).
fn share_pool_with_peers(rank: usize, world: usize) -> Result<()> {
    use cudarc::driver::result::device;
    let dev = device::get(rank as i32).ctx(|| format!("cuDeviceGet({rank})"))?;
    let mut pool: cu_sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: writes one pool handle.
    unsafe { cu_sys::cuDeviceGetMemPool(&mut pool, dev) }
        .result()
        .ctx(|| format!("cuDeviceGetMemPool({rank})"))?;
    for peer in (0..world).filter(|&p| p != rank) {
        let peer_dev = device::get(peer as i32).ctx(|| format!("cuDeviceGet({peer})"))?;
        let mut can = 0;
        // SAFETY: writes one int.
        unsafe { cu_sys::cuDeviceCanAccessPeer(&mut can, peer_dev, dev) }
            .result()
            .ctx(|| format!("cuDeviceCanAccessPeer({peer}, {rank})"))?;
        if can == 0 {
            continue;
        }
        let desc = cu_sys::CUmemAccessDesc {
            location: cu_sys::CUmemLocation {
                type_: cu_sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: peer as i32,
            },
            flags: cu_sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: `pool` is this device's pool; one descriptor.
        unsafe { cu_sys::cuMemPoolSetAccess(pool, &desc, 1) }
            .result()
            .ctx(|| format!("letting device {peer} access device {rank}'s memory pool"))?;
    }
    Ok(())
}

/// One local product: its problem, launcher (index) and operands.
struct Step {
    problem: Problem,
    launcher: usize,
    ops: Operands,
}

/// One rank: its device, streams, buffers and the local products of its layout.
struct Rank {
    rank: usize,
    world: usize,
    layout: Layout,
    backend: CudaBackend,
    comm_stream: Arc<CudaStream>,
    kernel: &'static KernelSpec,
    /// `gemm-rs`: row pieces per shard of C.
    pieces: usize,
    /// One launcher per distinct local problem, and whether its kernel accumulates into C.
    launchers: Vec<(Problem, Launcher, bool)>,
    /// `row-split`: [A_r]; `ag-gemm`: A's row shards (own uploaded, the others received);
    /// `gemm-rs`: the row pieces of A[:, K_r], shard-major.
    a: Vec<CudaSlice<u8>>,
    /// B_r (all of B for `row-split`), kept alive for the steps' operands.
    _b: CudaSlice<u8>,
    /// The local products' outputs, one per entry of `a`.
    c: Vec<CudaSlice<u8>>,
    /// `gemm-rs`: this rank's pieces of C (the reductions' destinations).
    out: Vec<CudaSlice<u8>>,
    /// Where each output block goes in C: rows, columns; for `gemm-rs`, of `out`.
    blocks: Vec<(Range<usize>, Range<usize>)>,
    steps: Vec<Step>,
    /// Ordering events, one per step (plus one for the start and one for the join).
    events: Vec<CudaEvent>,
    c_type: NcclType,
}

/// The rows `rows` of a row-major matrix of `cols` columns of `elem`-byte elements.
fn host_rows(data: &[u8], cols: usize, elem: usize, rows: Range<usize>) -> &[u8] {
    &data[rows.start * cols * elem..rows.end * cols * elem]
}

/// The columns `take` of the rows `rows` of a row-major matrix of `cols` columns, packed.
fn host_block(
    data: &[u8],
    cols: usize,
    elem: usize,
    rows: Range<usize>,
    take: Range<usize>,
) -> Vec<u8> {
    let w = take.len() * elem;
    let mut out = Vec::with_capacity(rows.len() * w);
    for i in rows {
        let at = (i * cols + take.start) * elem;
        out.extend_from_slice(&data[at..at + w]);
    }
    out
}

impl Rank {
    /// Rank `rank` of `opts.gpus` on device `device`; `peers_in_process`: the other ranks are
    /// threads of this process, on devices 0..gpus (their access to this device's pool is opened).
    fn new(
        rank: usize,
        device: usize,
        peers_in_process: bool,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: &MultiOptions,
    ) -> Result<Rank> {
        let world = opts.gpus;
        let backend = CudaBackend::new(device)?;
        backend
            .context()
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        if peers_in_process {
            share_pool_with_peers(rank, world)?;
        }
        let comm_stream = backend
            .context()
            .new_stream()
            .ctx(|| "creating the communication stream".into())?;
        let choice = dispatch::choose(&opts.kernel, &backend, problem.dtype, Some(problem))?;
        let run_opts = RunOptions {
            tiling: choice.tiling,
            ..Default::default()
        };
        let kernel = choice.kernel;
        let (m, n, k) = (problem.m, problem.n, problem.k);
        let a_elem = problem.dtype.input_bytes();
        let c_elem = problem.c_dtype().input_bytes();
        let c_type = match problem.c_dtype() {
            DType::U32 => NcclType::U32,
            DType::Bf16 => NcclType::Bf16,
            DType::F16 => NcclType::F16,
            DType::F32 | DType::Tf32 => NcclType::F32,
        };
        let (ha, hb) = (bytes(a), bytes(b));
        let s = backend.stream().clone();
        let upload = |data: &[u8]| -> Result<CudaSlice<u8>> {
            // SAFETY: filled by the copy right after.
            let mut d = unsafe { s.alloc::<u8>(data.len()) }
                .ctx(|| format!("allocating {} bytes on device {rank}", data.len()))?;
            s.memcpy_htod(data, &mut d)
                .ctx(|| format!("copying {} bytes to device {rank}", data.len()))?;
            Ok(d)
        };
        let alloc = |len: usize| -> Result<CudaSlice<u8>> {
            // SAFETY: written (poison, zeros, a product or a receive) before anything reads it.
            unsafe { s.alloc::<u8>(len) }.ctx(|| format!("allocating {len} bytes on device {rank}"))
        };
        let sub = |mm: usize, nn: usize, kk: usize| Problem {
            m: mm,
            n: nn,
            k: kk,
            ..*problem
        };
        let rows_m = split(m, world);
        let mut a_bufs = Vec::new();
        let mut c_bufs = Vec::new();
        let mut out = Vec::new();
        let mut blocks = Vec::new();
        let mut problems = Vec::new();
        let mut pieces = 1;
        let b_buf;
        match opts.layout {
            Layout::RowSplit => {
                let rows = rows_m[rank].clone();
                a_bufs.push(upload(host_rows(ha, k, a_elem, rows.clone()))?);
                b_buf = upload(hb)?;
                c_bufs.push(alloc(rows.len() * n * c_elem)?);
                problems.push(sub(rows.len(), n, k));
                blocks.push((rows, 0..n));
            }
            Layout::AgGemm => {
                let cols = split(n, world)[rank].clone();
                for (j, rows) in rows_m.iter().enumerate() {
                    a_bufs.push(if j == rank {
                        upload(host_rows(ha, k, a_elem, rows.clone()))?
                    } else {
                        alloc(rows.len() * k * a_elem)?
                    });
                    c_bufs.push(alloc(rows.len() * cols.len() * c_elem)?);
                    problems.push(sub(rows.len(), cols.len(), k));
                    blocks.push((rows.clone(), cols.clone()));
                }
                b_buf = upload(&host_block(hb, n, a_elem, 0..k, cols))?;
            }
            Layout::GemmRs => {
                let ks = split(k, world)[rank].clone();
                let least = rows_m.iter().map(|r| r.len()).min().unwrap_or(1);
                pieces = opts
                    .pieces
                    .unwrap_or_else(|| (least / 1024).clamp(1, 4))
                    .clamp(1, least);
                for (c, shard) in rows_m.iter().enumerate() {
                    for part in split(shard.len(), pieces) {
                        let rows = shard.start + part.start..shard.start + part.end;
                        a_bufs.push(upload(&host_block(
                            ha,
                            k,
                            a_elem,
                            rows.clone(),
                            ks.clone(),
                        ))?);
                        c_bufs.push(alloc(rows.len() * n * c_elem)?);
                        problems.push(sub(rows.len(), n, ks.len()));
                        if c == rank {
                            out.push(alloc(rows.len() * n * c_elem)?);
                            blocks.push((rows, 0..n));
                        }
                    }
                }
                b_buf = upload(host_rows(hb, n, a_elem, ks))?;
            }
        }
        let mut launchers: Vec<(Problem, Launcher, bool)> = Vec::new();
        let mut steps = Vec::new();
        for (i, p) in problems.into_iter().enumerate() {
            let launcher = match launchers.iter().position(|(q, ..)| *q == p) {
                Some(at) => at,
                None => {
                    // The kernel chosen for the whole problem; under `auto`, where it refuses
                    // a local product (a tiny shard), `auto`'s choice for that product.
                    let (spec, opts) = match backend.check(kernel, &p, run_opts) {
                        Ok(()) => (kernel, run_opts),
                        Err(_) if opts.kernel.eq_ignore_ascii_case("auto") => {
                            let c = dispatch::choose("auto", &backend, p.dtype, Some(&p))?;
                            let o = RunOptions {
                                tiling: c.tiling,
                                ..Default::default()
                            };
                            backend.check(c.kernel, &p, o)?;
                            (c.kernel, o)
                        }
                        Err(e) => return Err(e),
                    };
                    let zero = spec.cuda_source().is_some_and(|s| s.zero_output);
                    launchers.push((p, backend.launcher(spec, &p, &opts)?, zero));
                    launchers.len() - 1
                }
            };
            let ptr = |d: &CudaSlice<u8>| d.device_ptr(&s).0;
            let ops = backend.operands_at(
                &launchers[launcher].1,
                &p,
                ptr(&a_bufs[i]),
                ptr(&b_buf),
                ptr(&c_bufs[i]),
            )?;
            steps.push(Step {
                problem: p,
                launcher,
                ops,
            });
        }
        let mut rank = Rank {
            rank,
            world,
            layout: opts.layout,
            backend,
            comm_stream,
            kernel,
            pieces,
            launchers,
            a: a_bufs,
            _b: b_buf,
            c: c_bufs,
            out,
            blocks,
            steps,
            events: Vec::new(),
            c_type,
        };
        rank.events = (0..rank.steps.len() + 2)
            .map(|_| rank.event(false))
            .collect::<Result<_>>()?;
        s.synchronize()
            .ctx(|| format!("uploading the shards of rank {}", rank.rank))?;
        Ok(rank)
    }

    fn event(&self, timing: bool) -> Result<CudaEvent> {
        let flags = if timing {
            cu_sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            cu_sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        self.backend
            .context()
            .new_event(Some(flags))
            .ctx(|| "creating an event".into())
    }

    fn memset(&self, buf: &CudaSlice<u8>, value: u8) -> Result<()> {
        let s = self.backend.stream();
        let ptr = buf.device_ptr(s).0;
        // SAFETY: `ptr` is a live allocation of `buf.len()` bytes of this device.
        unsafe { cu_sys::cuMemsetD8Async(ptr, value, buf.len(), s.cu_stream()) }
            .result()
            .ctx(|| "cuMemsetD8Async".into())
    }

    /// Fills every output (local products' and reductions') with 0xFF bytes: NaN for floats,
    /// 0xFFFFFFFF for u32.
    fn poison(&self) -> Result<()> {
        for buf in self.c.iter().chain(&self.out) {
            self.memset(buf, 0xFF)?;
        }
        Ok(())
    }

    fn gemm(&self, i: usize) -> Result<()> {
        let step = &self.steps[i];
        let launcher = &self.launchers[step.launcher].1;
        self.backend.launch(launcher, &step.problem, &step.ops)
    }

    /// Enqueues one product in `mode` on the compute and communication streams, the
    /// communication stream joined back into the compute stream at the end; `timer` events
    /// bracket it on the compute stream.
    fn enqueue(
        &self,
        comm: &Comm,
        mode: Mode,
        timer: Option<&(CudaEvent, CudaEvent)>,
    ) -> Result<()> {
        let (cs, ms) = (self.backend.stream(), &self.comm_stream);
        let (g, r) = (self.world, self.rank);
        let n_steps = self.steps.len();
        let (start, join) = (&self.events[n_steps], &self.events[n_steps + 1]);
        let rec = |e: &CudaEvent, s: &CudaStream| e.record(s).ctx(|| "recording an event".into());
        let wait = |s: &CudaStream, e: &CudaEvent| s.wait(e).ctx(|| "waiting on an event".into());
        if mode != Mode::CommOnly {
            // Outputs of kernels that accumulate into C start from zero.
            for (buf, step) in self.c.iter().zip(&self.steps) {
                if self.launchers[step.launcher].2 {
                    self.memset(buf, 0)?;
                }
            }
        }
        // After the zeroing, as the 1-GPU timing leaves C's fill outside its timed region.
        if let Some((t0, _)) = timer {
            rec(t0, cs)?;
        }
        rec(start, cs)?;
        wait(ms, start)?;
        let cu_ms = ms.cu_stream();
        match self.layout {
            Layout::RowSplit => {
                if mode != Mode::CommOnly {
                    self.gemm(0)?;
                }
            }
            Layout::AgGemm => {
                for s in 0..g {
                    let j = (r + g - s) % g;
                    if s + 1 < g && mode != Mode::ComputeOnly {
                        let from = (r + g - s - 1) % g;
                        let (next, prev) = ((r + 1) % g, (r + g - 1) % g);
                        let send = &self.a[j];
                        let recv = &self.a[from];
                        comm.group_start()?;
                        // SAFETY: shard `j` is complete on this stream (uploaded, or received
                        // by the previous step); shard `from` is read by nothing until the
                        // event below.
                        let sent = unsafe {
                            comm.send(send.device_ptr(ms).0, send.len(), NcclType::U8, next, cu_ms)
                        };
                        let got = unsafe {
                            comm.recv(recv.device_ptr(ms).0, recv.len(), NcclType::U8, prev, cu_ms)
                        };
                        let ended = comm.group_end();
                        sent.and(got).and(ended)?;
                        rec(&self.events[s + 1], ms)?;
                    }
                    if mode != Mode::CommOnly {
                        if s > 0 && mode == Mode::Full {
                            wait(cs, &self.events[s])?;
                        }
                        self.gemm(j)?;
                    }
                }
            }
            Layout::GemmRs => {
                let elem = self.c_type_bytes();
                for i in 0..n_steps {
                    let owner = i / self.pieces;
                    if mode != Mode::CommOnly {
                        self.gemm(i)?;
                        rec(&self.events[i], cs)?;
                    }
                    if mode != Mode::ComputeOnly {
                        if mode == Mode::Full {
                            wait(ms, &self.events[i])?;
                        }
                        let part = &self.c[i];
                        let dst = if owner == r {
                            &self.out[i % self.pieces]
                        } else {
                            part
                        };
                        // SAFETY: piece `i` is complete on this stream (the event above) and
                        // not written again this run; the root's destination is read by nothing
                        // else.
                        unsafe {
                            comm.reduce(
                                part.device_ptr(ms).0,
                                dst.device_ptr(ms).0,
                                part.len() / elem,
                                self.c_type,
                                owner,
                                cu_ms,
                            )
                        }?;
                    }
                }
            }
        }
        rec(join, ms)?;
        wait(cs, join)?;
        if let Some((_, t1)) = timer {
            rec(t1, cs)?;
        }
        Ok(())
    }

    fn c_type_bytes(&self) -> usize {
        match self.c_type {
            NcclType::U8 => 1,
            NcclType::F16 | NcclType::Bf16 => 2,
            NcclType::U32 | NcclType::F32 => 4,
        }
    }

    /// Waits for the compute stream (which the communication stream joined) by polling, so that
    /// a peer's failure, an NCCL error or the timeout ends the wait with an error.
    fn wait(&self, comm: &Comm, shared: &Shared) -> Result<()> {
        let cs = self.backend.stream();
        let start = Instant::now();
        let mut pause = Duration::from_micros(20);
        loop {
            // SAFETY: a live stream of this rank's context.
            let state = unsafe { cu_sys::cuStreamQuery(cs.cu_stream()) };
            match state {
                cu_sys::CUresult::CUDA_SUCCESS => {
                    return self
                        .backend
                        .context()
                        .check_err()
                        .ctx(|| format!("rank {} after its product", self.rank));
                }
                cu_sys::CUresult::CUDA_ERROR_NOT_READY => {}
                e => {
                    return Err(Error::Cuda {
                        context: format!("rank {} waiting for its streams", self.rank),
                        message: format!("{e:?}"),
                    })
                }
            }
            comm.async_error()?;
            if let Some(e) = shared.peer_failed() {
                return Err(e);
            }
            if start.elapsed() > shared.timeout {
                return Err(Error::Cuda {
                    context: format!("rank {} of {}", self.rank, self.world),
                    message: format!(
                        "its product did not finish within {:?} (a peer stuck?)",
                        shared.timeout
                    ),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// This rank's blocks of C: (rows, columns, row-major bytes).
    #[allow(clippy::type_complexity)]
    fn download(&self) -> Result<Vec<(Range<usize>, Range<usize>, Vec<u8>)>> {
        let s = self.backend.stream();
        let sources = match self.layout {
            Layout::GemmRs => &self.out,
            _ => &self.c,
        };
        let mut blocks = Vec::new();
        for (buf, (rows, cols)) in sources.iter().zip(&self.blocks) {
            let mut host = vec![0u8; buf.len()];
            s.memcpy_dtoh(buf, &mut host)
                .ctx(|| format!("copying C's block from rank {}", self.rank))?;
            blocks.push((rows.clone(), cols.clone(), host));
        }
        s.synchronize()
            .ctx(|| format!("copying C from rank {}", self.rank))?;
        Ok(blocks)
    }
}

fn as_bytes<T: Copy>(s: &[T]) -> &[u8] {
    // SAFETY: f32, u32, f16 and bf16 are plain bytes without padding.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}

fn as_bytes_mut<T: Copy>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every bit pattern is a valid f32, u32, f16 or bf16.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, std::mem::size_of_val(s)) }
}

fn bytes(m: &AnyMatrix) -> &[u8] {
    match m {
        AnyMatrix::F32(x) => as_bytes(&x.data),
        AnyMatrix::U32(x) => as_bytes(&x.data),
        AnyMatrix::F16(x) => as_bytes(&x.data),
        AnyMatrix::Bf16(x) => as_bytes(&x.data),
    }
}

fn bytes_mut(m: &mut AnyMatrix) -> &mut [u8] {
    match m {
        AnyMatrix::F32(x) => as_bytes_mut(&mut x.data),
        AnyMatrix::U32(x) => as_bytes_mut(&mut x.data),
        AnyMatrix::F16(x) => as_bytes_mut(&mut x.data),
        AnyMatrix::Bf16(x) => as_bytes_mut(&mut x.data),
    }
}

/// A zeroed rows×cols host matrix of `dtype`'s storage.
fn alloc_any(dtype: DType, rows: usize, cols: usize) -> Result<AnyMatrix> {
    Ok(match dtype {
        DType::U32 => AnyMatrix::U32(Matrix::zeros(rows, cols)?),
        DType::F32 | DType::Tf32 => AnyMatrix::F32(Matrix::zeros(rows, cols)?),
        DType::F16 => AnyMatrix::F16(Matrix::zeros(rows, cols)?),
        DType::Bf16 => AnyMatrix::Bf16(Matrix::zeros(rows, cols)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_in_near_equal_parts() {
        assert_eq!(split(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(split(4, 4), vec![0..1, 1..2, 2..3, 3..4]);
        assert_eq!(split(8, 2), vec![0..4, 4..8]);
    }

    #[test]
    fn layouts_parse_names_and_aliases() {
        for l in Layout::ALL {
            assert_eq!(Layout::parse(l.name()).unwrap(), l);
        }
        assert_eq!(Layout::parse("AllGather").unwrap(), Layout::AgGemm);
        assert_eq!(Layout::parse("reducescatter").unwrap(), Layout::GemmRs);
        assert_eq!(Layout::parse("rowsplit").unwrap(), Layout::RowSplit);
        assert!(Layout::parse("ring").is_err());
    }

    #[test]
    fn check_refuses_what_cannot_split() {
        let p = Problem::new(3, 64, 64, DType::F32);
        let mut o = MultiOptions::new(4, Layout::RowSplit);
        assert!(check(&p, &o).unwrap_err().to_string().contains("M = 3"));
        o.gpus = 1;
        assert!(check(&p, &o).is_err());
        let p = Problem::new(64, 64, 3, DType::F32);
        let o = MultiOptions::new(4, Layout::GemmRs);
        assert!(check(&p, &o).unwrap_err().to_string().contains("K = 3"));
        assert!(check(&p, &MultiOptions::new(4, Layout::AgGemm)).is_ok());
    }

    #[test]
    fn host_blocks_pick_rows_and_columns() {
        let data: Vec<u8> = (0..12).collect(); // 3×4 of bytes
        assert_eq!(host_rows(&data, 4, 1, 1..2), &[4, 5, 6, 7]);
        assert_eq!(host_block(&data, 4, 1, 0..3, 1..3), vec![1, 2, 5, 6, 9, 10]);
    }
}
