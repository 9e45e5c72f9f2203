//! Two int8 measurements that are not u32 products, for judging the byte-split kernels
//! (`*-u8x4*`): cuBLASLt's int8 GEMM, the int8 tensor cores' practical ceiling, and the byte-split
//! pre-pass (`u8x4_split`) timed alone.
//!
//! **cuBLASLt int8** ([`CudaBackend::cublaslt_int8`], [`CudaBackend::time_cublaslt_int8`]): one
//! `cublasLtMatmul` of C (m×n s32, row-major) = A (m×k s8, row-major) · B, B given as Bᵀ (n×k s8,
//! row-major): both operands K-major, as the byte planes are. In cuBLAS's column-major terms that
//! is Cᵀ (n×m, ld n) = op(X)·Y with X = the Bᵀ buffer read as a k×n matrix (ld k, `CUBLAS_OP_T`)
//! and Y = the A buffer read as k×m (ld k, `CUBLAS_OP_N`): the "TN" form, the one layout cuBLASLt's
//! int8 tensor-core (IMMA) kernels take in plain column order; `CUBLAS_COMPUTE_32I`, s32 alpha = 1
//! and beta = 0 (C is never read), a 32 MiB workspace, the heuristic's first algorithm. It is
//! refused unless k and n are multiples of 4 (the leading dimensions IMMA needs). It computes an
//! s8 product, not the wrapping u32 one: the bench shows it as a ceiling row (`cublaslt-int8`),
//! never as a u32 answer, and a u32 kernel on the int8 tensor cores runs 10 such products
//! (the byte products aᵢ·bⱼ with i + j ≤ 3), so cuBLASLt's rate ÷ 10 bounds it.

use std::ffi::c_void;

use cudarc::cublaslt::{result as lt, sys};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::launch::Launcher;
use super::libs::{self, Context};
use super::CudaBackend;
use crate::backend::{check_input_sets, Inputs, RunOptions};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::matrix::SplitMix64;
use crate::problem::Problem;
use crate::registry::KernelSpec;

/// cuBLASLt's workspace for the int8 baseline (NVIDIA's recommendation for Hopper).
pub const CUBLASLT_WORKSPACE_BYTES: usize = 32 << 20;

/// One planned cuBLASLt int8 product: handle, descriptors, the heuristic's algorithm and the
/// workspace, released in `Drop`.
struct Plan {
    handle: sys::cublasLtHandle_t,
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: sys::cublasLtMatmulAlgo_t,
    workspace: CudaSlice<u8>,
}

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: each object was created by this plan and is destroyed once; errors on the way
        // out change nothing the caller could act on.
        unsafe {
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
            let _ = lt::destroy_matmul_desc(self.desc);
            let _ = lt::destroy_handle(self.handle);
        }
    }
}

/// The rule cuBLASLt's int8 kernels impose on the baseline's shape, or None when it holds.
pub fn cublaslt_int8_refusal(m: usize, n: usize, k: usize) -> Option<String> {
    if m == 0 || n == 0 || k == 0 {
        return Some("cuBLASLt int8 needs m, n, k >= 1".into());
    }
    if !k.is_multiple_of(4) || !n.is_multiple_of(4) {
        return Some(format!(
            "cuBLASLt int8 (TN, IMMA) needs k and n to be multiples of 4 (its leading dimensions); got {m}x{n}x{k}"
        ));
    }
    if i64::try_from(m.max(n).max(k)).is_err() {
        return Some("dimension too large for cuBLASLt".into());
    }
    None
}

impl CudaBackend {
    /// Plans C = A·B in s8 → s32 for m×n×k (module docs: the TN form).
    fn plan_int8(&self, m: usize, n: usize, k: usize) -> Result<Plan> {
        if let Some(rule) = cublaslt_int8_refusal(m, n, k) {
            return Err(Error::Invalid(rule));
        }
        libs::cublas()?;
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        let what = || format!("planning cuBLASLt's int8 GEMM {m}x{n}x{k}");
        // SAFETY: the workspace is scratch for cuBLASLt alone.
        let workspace = unsafe { self.stream.alloc::<u8>(CUBLASLT_WORKSPACE_BYTES) }.ctx(what)?;
        let handle = lt::create_handle().ctx(what)?;
        let desc = match lt::create_matmul_desc(
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32I,
            sys::cudaDataType::CUDA_R_32I,
        ) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: created just above, destroyed once.
                unsafe {
                    let _ = lt::destroy_handle(handle);
                }
                return Err(e).ctx(what);
            }
        };
        let (m, n, k) = (m as u64, n as u64, k as u64);
        let mut plan = Plan {
            handle,
            desc,
            layouts: [std::ptr::null_mut(); 3],
            algo: sys::cublasLtMatmulAlgo_t { data: [0; 8] },
            workspace,
        };
        // X: the Bᵀ buffer as k×n (ld k), transposed; Y: the A buffer as k×m (ld k); C: n×m (ld n).
        let shapes = [
            (sys::cudaDataType::CUDA_R_8I, k, n, k),
            (sys::cudaDataType::CUDA_R_8I, k, m, k),
            (sys::cudaDataType::CUDA_R_32I, n, m, n),
        ];
        for (slot, (t, rows, cols, ld)) in plan.layouts.iter_mut().zip(shapes) {
            *slot = lt::create_matrix_layout(t, rows, cols, ld as i64).ctx(what)?;
        }
        // cublasOperation_t, an int32 attribute.
        let op_t = cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T as i32;
        let op_n = cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N as i32;
        let ws = CUBLASLT_WORKSPACE_BYTES as u64;
        // SAFETY: the attributes' values are of the types cuBLASLt documents for them
        // (int32 cublasOperation_t, uint64_t), passed with their sizes; every object is live.
        let heuristic = unsafe {
            lt::set_matmul_desc_attribute(
                plan.desc,
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &op_t as *const _ as *const c_void,
                std::mem::size_of_val(&op_t),
            )
            .ctx(what)?;
            lt::set_matmul_desc_attribute(
                plan.desc,
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                &op_n as *const _ as *const c_void,
                std::mem::size_of_val(&op_n),
            )
            .ctx(what)?;
            let pref = lt::create_matmul_pref().ctx(what)?;
            let found = lt::set_matmul_pref_attribute(
                pref,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                std::mem::size_of::<u64>(),
            )
            .and_then(|_| {
                let [x, y, c] = plan.layouts;
                lt::get_matmul_algo_heuristic(plan.handle, plan.desc, x, y, c, c, pref)
            });
            let _ = lt::destroy_matmul_pref(pref);
            found.ctx(|| {
                format!(
                    "{}: cublasLtMatmulAlgoGetHeuristic found no algorithm",
                    what()
                )
            })?
        };
        if heuristic.workspaceSize > CUBLASLT_WORKSPACE_BYTES {
            return Err(Error::Cuda {
                context: what(),
                message: format!(
                    "the heuristic's algorithm wants {} bytes of workspace",
                    heuristic.workspaceSize
                ),
            });
        }
        plan.algo = heuristic.algo;
        Ok(plan)
    }

    /// Enqueues one planned product: `a` (m×k s8), `bt` (n×k s8), `c` (m×n s32) device addresses.
    fn enqueue_int8(&self, plan: &Plan, a: u64, bt: u64, c: u64) -> Result<()> {
        let (alpha, beta) = (1i32, 0i32);
        let ws = plan.workspace.device_ptr(&self.stream).0;
        let [x, y, lc] = plan.layouts;
        // SAFETY: the buffers are live allocations of the planned shapes on this stream; alpha
        // and beta are host s32 scalars (the scale type of CUBLAS_COMPUTE_32I); beta = 0, so C is
        // written, never read.
        unsafe {
            lt::matmul(
                plan.handle,
                plan.desc,
                &alpha as *const i32 as *const c_void,
                &beta as *const i32 as *const c_void,
                bt as *const c_void,
                x,
                a as *const c_void,
                y,
                c as *const c_void,
                lc,
                c as *mut c_void,
                lc,
                &plan.algo,
                ws as *mut c_void,
                CUBLASLT_WORKSPACE_BYTES,
                self.stream.cu_stream() as sys::cudaStream_t,
            )
        }
        .ctx(|| "cublasLtMatmul (s8 x s8 -> s32)".into())
    }

    /// cuBLASLt's int8 GEMM once: C (m×n, row-major) = A (m×k, row-major) · B with B given as
    /// `bt` = Bᵀ (n×k, row-major), s8 inputs, s32 sums (wrapping on overflow is not promised:
    /// keep k·127² within i32). C is poisoned (0xDEADBEEF) before the call, so an element it
    /// does not write shows. For checking the baseline; the bench times it with
    /// [`CudaBackend::time_cublaslt_int8`].
    pub fn cublaslt_int8(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &[i8],
        bt: &[i8],
    ) -> Result<Vec<i32>> {
        self.check_alive()?;
        if a.len() != m * k || bt.len() != n * k {
            return Err(Error::Invalid(format!(
                "cuBLASLt int8 {m}x{n}x{k}: A has {} bytes and Bᵀ {} (want {} and {})",
                a.len(),
                bt.len(),
                m * k,
                n * k
            )));
        }
        let plan = self.plan_int8(m, n, k)?;
        let what = || format!("cuBLASLt int8 {m}x{n}x{k}");
        let da = self.stream.clone_htod(a).ctx(what)?;
        let db = self.stream.clone_htod(bt).ctx(what)?;
        let dc = self
            .stream
            .clone_htod(&vec![0xDEAD_BEEFu32 as i32; m * n])
            .ctx(what)?;
        let s = &self.stream;
        self.enqueue_int8(
            &plan,
            da.device_ptr(s).0,
            db.device_ptr(s).0,
            dc.device_ptr(s).0,
        )?;
        self.sync(what)?;
        self.stream.clone_dtoh(&dc).ctx(what)
    }

    /// Times cuBLASLt's int8 GEMM of m×n×k ([`CudaBackend::cublaslt_int8`]'s layout): `warmup`
    /// untimed calls, then `iters` timed ones (CUDA events around each), rotating among `sets`
    /// input pairs of random bytes (pass enough to exceed the L2 cache). Seconds per call.
    pub fn time_cublaslt_int8(
        &self,
        (m, n, k): (usize, usize, usize),
        sets: usize,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        self.check_alive()?;
        let sets = sets.max(1);
        let problem = Problem::new(m, n, k, DType::U32);
        let set_bytes = (m * k + n * k) as u64;
        let needed = sets as u64 * set_bytes
            + 4 * (m * n) as u64
            + CUBLASLT_WORKSPACE_BYTES as u64
            + (256 << 20);
        let (free, _) = self.memory()?;
        if needed > free {
            return Err(Error::DeviceMemory {
                problem,
                what: format!("{sets} int8 input sets, an s32 C and cuBLASLt's workspace"),
                needed,
                free,
            });
        }
        let plan = self.plan_int8(m, n, k)?;
        let what = || format!("timing cuBLASLt int8 {m}x{n}x{k}");
        let mut rng = SplitMix64::new(0x1B8_5EED ^ (m * 31 + n * 17 + k) as u64);
        let mut random = |len: usize| -> Vec<i8> {
            let mut v = Vec::with_capacity(len + 8);
            while v.len() < len {
                v.extend(rng.next_u64().to_le_bytes().map(|b| b as i8));
            }
            v.truncate(len);
            v
        };
        let bufs = (0..sets)
            .map(|_| {
                let a = self.stream.clone_htod(&random(m * k)).ctx(what)?;
                let bt = self.stream.clone_htod(&random(n * k)).ctx(what)?;
                Ok((a, bt))
            })
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: cuBLASLt writes every element of C (beta = 0); nothing reads it here.
        let c = unsafe { self.stream.alloc::<i32>(m * n) }.ctx(what)?;
        let s = &self.stream;
        let cp = c.device_ptr(s).0;
        let ptrs: Vec<(u64, u64)> = bufs
            .iter()
            .map(|(a, b)| (a.device_ptr(s).0, b.device_ptr(s).0))
            .collect();
        let launch = |_: &(), i: usize| {
            let (a, b) = ptrs[i % ptrs.len()];
            self.enqueue_int8(&plan, a, b, cp)
        };
        self.timed(&mut (), warmup, iters, |_| Ok(()), launch, what)
    }

    /// Times the byte-split pre-pass of `kernel` (a `*-u8x4*` kernel) on `problem` alone: the
    /// `u8x4_split` launches that write A's and Bᵀ's byte planes, exactly as a product enqueues
    /// them before its main kernel, `warmup` untimed and `iters` timed, rotating among `inputs`.
    /// Seconds per pre-pass. Set beside [`Backend::time`](crate::Backend::time) of the same
    /// kernel, it is the share of the product that splitting on the fly could save at most.
    pub fn time_byte_split_prepass(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        use crate::backend::Backend;
        self.check_alive()?;
        let opts = RunOptions::default();
        self.check(kernel, problem, opts)?;
        check_input_sets(problem, inputs)?;
        let launcher = self.launcher(kernel, problem, &opts)?;
        let Launcher::Kernel {
            planes: Some(planes),
            ..
        } = &launcher
        else {
            return Err(Error::Invalid(format!(
                "`{}` is not a byte-split kernel: it has no pre-pass",
                kernel.name
            )));
        };
        self.fits_in_memory(&launcher, problem, inputs.len())?;
        let bufs = inputs
            .iter()
            .map(|set| Ok((self.upload(&set.a)?, self.upload(&set.b)?)))
            .collect::<Result<Vec<_>>>()?;
        let c = self.alloc_output(problem)?;
        let ops = bufs
            .iter()
            .map(|(a, b)| self.operands(&launcher, problem, a, b, &c))
            .collect::<Result<Vec<_>>>()?;
        let launch = |_: &(), i: usize| {
            let o = &ops[i % ops.len()];
            self.launch_split(planes, problem, (o.a, o.b), o.strides)
                .map(|_| ())
        };
        self.timed(
            &mut (),
            warmup,
            iters,
            |_| Ok(()),
            launch,
            || format!("timing {}'s pre-pass on {problem}", kernel.name),
        )
    }
}
