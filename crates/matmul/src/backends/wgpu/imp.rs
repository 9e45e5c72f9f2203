//! The wgpu backend proper (cargo feature `wgpu`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ::wgpu as wg;
use wg::util::DeviceExt;

use super::shaders::{self, Staging};

mod user;
use crate::backend::{check_input_sets, check_inputs, Backend, Inputs, RunOptions};
use crate::dtype::DType;
use crate::error::{Error, Result, Unsupported};
use crate::matrix::{AnyMatrix, Matrix};
use crate::problem::Problem;
use crate::registry::{BackendKind, DeviceLimits, KernelSpec, WgslShape, WgslSource};

/// An adapter as `matmul devices` lists it.
#[derive(Debug, Clone)]
pub struct AdapterDesc {
    /// The driver's name for it ("llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100 ...").
    pub name: String,
    /// Vulkan, Metal, Dx12, ...
    pub api: String,
    /// DiscreteGpu, IntegratedGpu, Cpu, ...
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// The subgroup sizes (min, max) where the adapter offers subgroup operations
    /// (`Features::SUBGROUP`); None where it does not.
    pub subgroups: Option<(u32, u32)>,
    /// The cooperative-matrix configurations (`MxNxK A→C`, e.g. `16x16x16 f16→f32`) where the
    /// adapter offers `Features::EXPERIMENTAL_COOPERATIVE_MATRIX`; None where it does not.
    pub cooperative_matrices: Option<Vec<String>>,
}

impl std::fmt::Display for AdapterDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {}; {}); ",
            self.name, self.api, self.device_type, self.driver
        )?;
        match self.subgroups {
            Some((lo, hi)) if lo == hi => write!(f, "subgroups of {lo}")?,
            Some((lo, hi)) => write!(f, "subgroups of {lo} to {hi}")?,
            None => write!(f, "no subgroups")?,
        }
        match &self.cooperative_matrices {
            Some(c) if c.is_empty() => write!(f, ", cooperative matrices (no configuration)"),
            Some(c) => write!(f, ", cooperative matrices {}", c.join(", ")),
            None => write!(f, ", no cooperative matrices"),
        }
    }
}

fn desc(adapter: &wg::Adapter) -> AdapterDesc {
    let info = adapter.get_info();
    let subgroups = adapter
        .features()
        .contains(wg::Features::SUBGROUP)
        .then_some((info.subgroup_min_size, info.subgroup_max_size));
    let cooperative_matrices = adapter
        .features()
        .contains(wg::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        .then(|| {
            let name = |t: wg::CooperativeScalarType| format!("{t:?}").to_lowercase();
            adapter
                .cooperative_matrix_properties()
                .iter()
                .map(|c| {
                    format!(
                        "{}x{}x{} {}→{}",
                        c.m_size,
                        c.n_size,
                        c.k_size,
                        name(c.ab_type),
                        name(c.cr_type)
                    )
                })
                .collect()
        });
    let driver = [info.driver.as_str(), info.driver_info.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    AdapterDesc {
        name: info.name.clone(),
        api: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver: if driver.is_empty() {
            "driver unnamed".into()
        } else {
            driver
        },
        subgroups,
        cooperative_matrices,
    }
}

fn instance() -> wg::Instance {
    // WGPU_BACKEND (vulkan, metal, dx12) narrows the APIs tried; the flags follow WGPU_DEBUG /
    // WGPU_VALIDATION. Validation stays on: it is what turns a bad dispatch into an error.
    wg::Instance::new(wg::InstanceDescriptor::new_without_display_handle_from_env())
}

/// Every adapter wgpu finds (all the APIs built in, as `WGPU_BACKEND` narrows them).
pub fn adapters() -> Vec<AdapterDesc> {
    pollster::block_on(instance().enumerate_adapters(wg::Backends::all()))
        .iter()
        .map(desc)
        .collect()
}

fn rank(t: wg::DeviceType) -> u8 {
    match t {
        wg::DeviceType::DiscreteGpu => 0,
        wg::DeviceType::IntegratedGpu => 1,
        wg::DeviceType::VirtualGpu => 2,
        wg::DeviceType::Cpu => 3,
        wg::DeviceType::Other => 4,
    }
}

/// What the backend's device was opened with.
struct Caps {
    limits: wg::Limits,
    timestamps: bool,
    period_ns: f64,
    /// Cooperative matrices of 16×16×16 f16→f32, f16 shaders and subgroups of 32: what
    /// `wgpu-coopmat` needs (the device was opened with those features).
    coop_f16: bool,
}

/// A compiled pipeline's key: the kernel's entry, the dtype and the tile (TPB) it was built for.
type PipelineKey = (&'static str, DType, u32, Option<(Staging, Staging)>);

/// The wgpu backend: WGSL kernels on the first adapter wgpu finds (a discrete GPU first), or the
/// one whose name contains `WGPU_ADAPTER_NAME` (case-insensitive).
pub struct WgpuBackend {
    adapter: AdapterDesc,
    device: wg::Device,
    queue: wg::Queue,
    caps: Caps,
    pipelines: Mutex<HashMap<PipelineKey, Arc<wg::ComputePipeline>>>,
    lost: Arc<Mutex<Option<String>>>,
    uncaptured: Arc<Mutex<Option<String>>>,
}

/// The error of a wgpu call.
fn err(context: impl Into<String>, message: impl std::fmt::Display) -> Error {
    Error::Wgpu {
        context: context.into(),
        message: message.to_string(),
    }
}

impl WgpuBackend {
    /// Opens the adapter (see the type's docs); no adapter is an [`Error::Wgpu`], never a panic.
    pub fn new() -> Result<WgpuBackend> {
        let inst = instance();
        let mut all = pollster::block_on(inst.enumerate_adapters(wg::Backends::all()));
        if all.is_empty() {
            return Err(err(
                "opening an adapter",
                "no adapter found (no Vulkan, Metal or DX12 driver; on Linux install a Vulkan \
                 driver and loader, e.g. mesa-vulkan-drivers libvulkan1 for lavapipe)",
            ));
        }
        let wanted = crate::config::get()
            .wgpu_adapter
            .clone()
            .filter(|s| !s.is_empty());
        if let Some(name) = &wanted {
            let lower = name.to_lowercase();
            let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
            all.retain(|a| a.get_info().name.to_lowercase().contains(&lower));
            if all.is_empty() {
                return Err(err(
                    "opening an adapter",
                    format!(
                        "no adapter's name contains WGPU_ADAPTER_NAME={name:?} (found: {})",
                        names.join(", ")
                    ),
                ));
            }
        }
        all.sort_by_key(|a| rank(a.get_info().device_type));
        let adapter = all.swap_remove(0);
        let info = adapter.get_info();
        let coop = wg::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wg::Features::SHADER_F16;
        let coop_f16 = adapter.features().contains(coop)
            && info.subgroup_min_size == 32
            && info.subgroup_max_size == 32
            && adapter.cooperative_matrix_properties().iter().any(|c| {
                (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
                    && c.ab_type == wg::CooperativeScalarType::F16
                    && c.cr_type == wg::CooperativeScalarType::F32
            });
        // Subgroup operations where offered: no registry kernel uses them, a user's WGSL kernel
        // may (naga takes the subgroup builtins once the device has the feature).
        let mut features =
            adapter.features() & (wg::Features::TIMESTAMP_QUERY | wg::Features::SUBGROUP);
        if coop_f16 {
            features |= coop;
        }
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wg::DeviceDescriptor {
            label: Some("matmul"),
            required_features: features,
            required_limits: limits.clone(),
            // SAFETY: the experimental cooperative-matrix feature is asked for only where the
            // adapter reports the configuration `wgpu-coopmat` uses, and only that kernel uses it;
            // its results are checked against the CPU reference by the wgpu tests.
            experimental_features: if coop_f16 {
                unsafe { wg::ExperimentalFeatures::enabled() }
            } else {
                wg::ExperimentalFeatures::disabled()
            },
            ..Default::default()
        }))
        .map_err(|e| err(format!("opening {}", info.name), e))?;
        let lost = Arc::new(Mutex::new(None));
        let l = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            *l.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{reason:?}: {message}"));
        });
        let uncaptured = Arc::new(Mutex::new(None));
        let u = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wg::Error| {
            u.lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e.to_string());
        }));
        let timestamps = features.contains(wg::Features::TIMESTAMP_QUERY);
        let period_ns = queue.get_timestamp_period() as f64;
        Ok(WgpuBackend {
            adapter: desc(&adapter),
            device,
            queue,
            caps: Caps {
                limits,
                timestamps,
                period_ns,
                coop_f16,
            },
            pipelines: Mutex::new(HashMap::new()),
            lost,
            uncaptured,
        })
    }

    /// Whether the adapter is a software one (lavapipe, WARP, SwiftShader): `auto` skips those.
    pub fn is_software(&self) -> bool {
        self.adapter.device_type == "Cpu"
    }

    /// The adapter's name ("llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100 80GB HBM3").
    pub fn adapter_name(&self) -> &str {
        &self.adapter.name
    }

    /// The adapter this backend runs on.
    pub fn adapter(&self) -> &AdapterDesc {
        &self.adapter
    }

    /// Whether kernel times come from GPU timestamp queries (else: wall clock around submit and
    /// wait).
    pub fn timestamps(&self) -> bool {
        self.caps.timestamps
    }

    /// Fails when the device was lost or wgpu reported an error outside a scope.
    fn health(&self, context: &str) -> Result<()> {
        if let Some(why) = self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Err(err(context, format!("the device was lost ({why})")));
        }
        if let Some(e) = self
            .uncaptured
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return Err(err(context, e));
        }
        Ok(())
    }

    /// A pair of timestamp queries (where the adapter has them) and the 16-byte buffer they
    /// resolve into, for timing one launch.
    pub(super) fn timestamp_queries(&self) -> (Option<wg::QuerySet>, wg::Buffer) {
        let query = self.caps.timestamps.then(|| {
            self.device.create_query_set(&wg::QuerySetDescriptor {
                label: Some("timestamps"),
                ty: wg::QueryType::Timestamp,
                count: 2,
            })
        });
        let resolve = self.device.create_buffer(&wg::BufferDescriptor {
            label: Some("timestamps"),
            size: 16,
            usage: wg::BufferUsages::QUERY_RESOLVE | wg::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        (query, resolve)
    }

    /// Runs `f` inside validation and out-of-memory error scopes; a captured error is an
    /// [`Error::Wgpu`] with `context`.
    fn scoped<T>(&self, context: &str, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wg::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wg::ErrorFilter::Validation);
        let out = f();
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = validation.or(oom) {
            return Err(err(context, e));
        }
        self.health(context)?;
        Ok(out)
    }

    /// Blocks until the queue is idle; a lost device, or no completion within
    /// [`Config::wgpu_timeout`](crate::Config::wgpu_timeout) (default 600 s), is an error, not a hang. (Each poll
    /// waits up to 10 s, then the device's health is checked; a slow software adapter may need
    /// several.)
    fn wait(&self, context: &str) -> Result<()> {
        let limit = crate::config::get()
            .wgpu_timeout
            .map_or(600.0, |t| t.as_secs_f64());
        let start = Instant::now();
        loop {
            let left = (limit - start.elapsed().as_secs_f64()).max(0.001);
            let poll = wg::PollType::Wait {
                submission_index: None,
                timeout: Some(std::time::Duration::from_secs_f64(left.min(10.0))),
            };
            match self.device.poll(poll) {
                Ok(_) => break,
                Err(wg::PollError::Timeout) if start.elapsed().as_secs_f64() < limit => {
                    self.health(context)?;
                }
                Err(e) => {
                    return Err(err(
                        context,
                        format!("{e} (waited {:.0} s)", start.elapsed().as_secs_f64()),
                    ))
                }
            }
        }
        self.health(context)
    }

    fn tile_of(kernel: &KernelSpec, opts: &RunOptions) -> u32 {
        kernel.tile(opts).unwrap_or(0)
    }

    fn source(kernel: &KernelSpec) -> Result<&WgslSource> {
        kernel.wgsl_source().ok_or_else(|| Error::WrongBackend {
            kernel: kernel.name.to_string(),
            backend: "wgpu".into(),
        })
    }

    /// The compiled pipeline of `kernel` for `problem` at `tile` (its dtype and, for the
    /// cooperative-matrix kernel, its operands' staging), cached; a WGSL error names the kernel.
    fn pipeline(
        &self,
        kernel: &'static KernelSpec,
        problem: &Problem,
        tile: u32,
    ) -> Result<Arc<wg::ComputePipeline>> {
        let src = Self::source(kernel)?;
        let dtype = problem.dtype;
        let variant = shaders::variant(src, problem);
        let key = (kernel.name, dtype, tile, variant);
        if let Some(p) = self
            .pipelines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(p.clone());
        }
        let text = shaders::text_for(src, dtype, tile, variant);
        let label = format!("kernel `{}` ({}, {dtype})", kernel.name, src.file);
        // SAFETY: the registry's kernels guard every global access by the problem's bounds and
        // index workgroup memory within its declared sizes; each is verified against the CPU
        // reference on awkward shapes with C poisoned (tests/wgpu.rs).
        let pipeline = unsafe { self.compile_trusted(&label, &text) }?;
        let p = Arc::new(pipeline);
        self.pipelines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, p.clone());
        Ok(p)
    }

    /// Compiles WGSL `text` (entry point `main`) into a compute pipeline, with wgpu's run-time
    /// checks (every index clamped into its array, every loop bounded); an error is an
    /// [`Error::Wgpu`] whose context names `label` (the kernel) and whose message is naga's.
    pub fn compile(&self, label: &str, text: &str) -> Result<wg::ComputePipeline> {
        self.compile_with(label, text, None)
    }

    /// [`compile`](Self::compile) without wgpu's run-time checks: naga clamps every array index
    /// and bounds every loop by default, which cost the cooperative-matrix kernel 2.3× and its
    /// staged successor 3.4× on an H200 (docs/wgpu.md).
    ///
    /// # Safety
    /// Every access of `text` must be in bounds and every loop must end, for every problem the
    /// kernel is launched on.
    unsafe fn compile_trusted(&self, label: &str, text: &str) -> Result<wg::ComputePipeline> {
        self.compile_with(label, text, Some(wg::ShaderRuntimeChecks::unchecked()))
    }

    fn compile_with(
        &self,
        label: &str,
        text: &str,
        trusted: Option<wg::ShaderRuntimeChecks>,
    ) -> Result<wg::ComputePipeline> {
        let context = format!("compiling {label} (WGSL)");
        self.scoped(&context, || {
            let desc = wg::ShaderModuleDescriptor {
                label: Some(label),
                source: wg::ShaderSource::Wgsl(text.into()),
            };
            let module = match trusted {
                // SAFETY: the caller of `compile_trusted` vouches for the shader.
                Some(checks) => unsafe { self.device.create_shader_module_trusted(desc, checks) },
                None => self.device.create_shader_module(desc),
            };
            self.device
                .create_compute_pipeline(&wg::ComputePipelineDescriptor {
                    label: Some(label),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                })
        })
    }

    /// C as a run of `problem` starts it: poisoned, read back without a launch (for the tests).
    pub fn poisoned_output(&self, problem: &Problem) -> Result<AnyMatrix> {
        let c = self.output(problem, false);
        let bytes = self.read_back(&c, (problem.m * problem.n * 4) as u64, "reading C back")?;
        Self::to_matrix(problem, bytes)
    }

    fn to_matrix(problem: &Problem, bytes: Vec<u8>) -> Result<AnyMatrix> {
        let words = from_bytes_u32(&bytes);
        Ok(match problem.dtype {
            DType::U32 => AnyMatrix::U32(Matrix::from_vec(problem.m, problem.n, words)?),
            _ => AnyMatrix::F32(Matrix::from_vec(
                problem.m,
                problem.n,
                words.into_iter().map(f32::from_bits).collect(),
            )?),
        })
    }

    /// Workgroups along x and y for `kernel` on `problem`.
    fn dispatch(&self, src: &WgslSource, problem: &Problem, tile: u32) -> (u32, u32) {
        let max = self.caps.limits.max_compute_workgroups_per_dimension.max(1) as usize;
        let (m, n) = (problem.m, problem.n);
        let (x, y) = match src.shape {
            WgslShape::Row { threads } => (m.div_ceil(threads as usize), 1),
            WgslShape::Element { threads } => {
                let groups = (m * n).div_ceil(threads as usize);
                let x = groups.min(max);
                (x, groups.div_ceil(x))
            }
            WgslShape::Tile2d { .. } | WgslShape::Tiled { .. } => {
                (n.div_ceil(tile as usize), m.div_ceil(tile as usize))
            }
            WgslShape::RegTile { bm, bn, .. } | WgslShape::CoopMat { bm, bn, .. } => {
                (n.div_ceil(bn as usize), m.div_ceil(bm as usize))
            }
        };
        (x as u32, y as u32)
    }

    fn params(problem: &Problem) -> [u32; 8] {
        let (sa, sb) = (problem.a_strides(), problem.b_strides());
        [
            problem.m as u32,
            problem.n as u32,
            problem.k as u32,
            sa.row as u32,
            sa.col as u32,
            sb.row as u32,
            sb.col as u32,
            0,
        ]
    }

    /// A storage buffer holding `m`'s elements; 16-bit ones padded with zeros to whole 16 bytes
    /// (the scalar kernels read them as `array<u32>`, the cooperative-matrix kernel as
    /// `array<vec4<u32>>`).
    fn upload(&self, what: &str, m: &AnyMatrix) -> wg::Buffer {
        let bytes: &[u8] = match m {
            AnyMatrix::F32(x) => as_bytes(&x.data),
            AnyMatrix::U32(x) => as_bytes(&x.data),
            AnyMatrix::F16(x) => as_bytes(&x.data),
            AnyMatrix::Bf16(x) => as_bytes(&x.data),
        };
        let padded;
        let whole = if matches!(m, AnyMatrix::F16(_) | AnyMatrix::Bf16(_)) {
            16
        } else {
            4
        };
        let contents = if bytes.len().is_multiple_of(whole) {
            bytes
        } else {
            padded = [bytes, &vec![0u8; whole - bytes.len() % whole]].concat();
            &padded[..]
        };
        self.device
            .create_buffer_init(&wg::util::BufferInitDescriptor {
                label: Some(what),
                contents,
                usage: wg::BufferUsages::STORAGE,
            })
    }

    /// C, poisoned (NaN for f32, 0xDEADBEEF for u32) so an element the kernel misses fails, or
    /// with `zero` zeroed (a user's kernel that accumulates into C; COPY_DST lets it be cleared
    /// again between launches).
    pub(super) fn output(&self, problem: &Problem, zero: bool) -> wg::Buffer {
        let fill: u32 = match (zero, problem.dtype) {
            (true, _) => 0,
            (false, DType::U32) => crate::matrix::POISON_U32,
            (false, _) => crate::matrix::POISON_F32.to_bits(),
        };
        let data = vec![fill; (problem.m * problem.n).max(1)];
        self.device
            .create_buffer_init(&wg::util::BufferInitDescriptor {
                label: Some("C"),
                contents: as_bytes(&data),
                usage: wg::BufferUsages::STORAGE
                    | wg::BufferUsages::COPY_SRC
                    | wg::BufferUsages::COPY_DST,
            })
    }

    /// The uniform buffer of `problem`'s sizes and strides ([`Self::params`]).
    pub(super) fn params_buffer(&self, problem: &Problem) -> wg::Buffer {
        self.device
            .create_buffer_init(&wg::util::BufferInitDescriptor {
                label: Some("params"),
                contents: as_bytes(&Self::params(problem)),
                usage: wg::BufferUsages::UNIFORM,
            })
    }

    fn bind(
        &self,
        pipeline: &wg::ComputePipeline,
        a: &wg::Buffer,
        b: &wg::Buffer,
        c: &wg::Buffer,
        params: &wg::Buffer,
    ) -> wg::BindGroup {
        let layout = pipeline.get_bind_group_layout(0);
        self.device.create_bind_group(&wg::BindGroupDescriptor {
            label: Some("matmul"),
            layout: &layout,
            entries: &[
                wg::BindGroupEntry {
                    binding: 0,
                    resource: a.as_entire_binding(),
                },
                wg::BindGroupEntry {
                    binding: 1,
                    resource: b.as_entire_binding(),
                },
                wg::BindGroupEntry {
                    binding: 2,
                    resource: c.as_entire_binding(),
                },
                wg::BindGroupEntry {
                    binding: 3,
                    resource: params.as_entire_binding(),
                },
            ],
        })
    }

    /// Reads `bytes` bytes of `buffer` back to the host (copy, submit, map, wait).
    fn read_back(&self, buffer: &wg::Buffer, bytes: u64, context: &str) -> Result<Vec<u8>> {
        let staging = self.scoped(context, || {
            let staging = self.device.create_buffer(&wg::BufferDescriptor {
                label: Some("readback"),
                size: bytes,
                usage: wg::BufferUsages::MAP_READ | wg::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut enc = self
                .device
                .create_command_encoder(&wg::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
            self.queue.submit([enc.finish()]);
            staging
        })?;
        let done = Arc::new(Mutex::new(None));
        let d = done.clone();
        staging.map_async(wg::MapMode::Read, .., move |r| {
            *d.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        });
        self.wait(context)?;
        match done.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(err(context, e)),
            None => return Err(err(context, "the read-back did not complete")),
        }
        let out = staging
            .get_mapped_range(..)
            .map_err(|e| err(context, e))?
            .to_vec();
        staging.unmap();
        Ok(out)
    }

    /// One dispatch of `pipeline` over `groups` (x, y, z workgroups); with `query` its begin and
    /// end timestamps. Our kernels and users' both launch through it.
    pub(super) fn launch(
        &self,
        pipeline: &wg::ComputePipeline,
        bind: &wg::BindGroup,
        groups: [u32; 3],
        query: Option<&wg::QuerySet>,
    ) -> wg::CommandEncoder {
        let mut enc = self
            .device
            .create_command_encoder(&wg::CommandEncoderDescriptor { label: None });
        {
            let mut pass = enc.begin_compute_pass(&wg::ComputePassDescriptor {
                label: None,
                timestamp_writes: query.map(|q| wg::ComputePassTimestampWrites {
                    query_set: q,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind, &[]);
            pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
        }
        enc
    }

    /// The adapter's rules beyond the registry's: invocations and workgroup memory per
    /// workgroup, workgroups per dimension, and the size of each storage binding.
    fn device_rules(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
    ) -> Result<()> {
        let src = Self::source(kernel)?;
        let l = &self.caps.limits;
        let fail = |rule: String| -> Error {
            Unsupported {
                kernel: kernel.name.to_string(),
                problem: problem.to_string(),
                rule,
            }
            .into()
        };
        if matches!(src.shape, WgslShape::CoopMat { .. }) && !self.caps.coop_f16 {
            return Err(fail(
                "needs cooperative matrices of 16x16x16 f16->f32 (wgpu's \
                 EXPERIMENTAL_COOPERATIVE_MATRIX), f16 shaders and subgroups of 32; this adapter \
                 lacks them (`matmul devices` lists what it has)"
                    .into(),
            ));
        }
        let tile = Self::tile_of(kernel, opts);
        if matches!(
            src.shape,
            WgslShape::Tile2d { .. } | WgslShape::Tiled { .. }
        ) && !(1..=32).contains(&tile)
        {
            return Err(fail(format!("TILE {tile}: TILE must be 1 to 32")));
        }
        let inv = src.shape.invocations(tile);
        if inv > l.max_compute_invocations_per_workgroup {
            return Err(fail(format!(
                "{inv} invocations per workgroup; the adapter allows {} (max_compute_invocations_per_workgroup)",
                l.max_compute_invocations_per_workgroup
            )));
        }
        let shared = src.shape.workgroup_bytes(tile);
        if shared > l.max_compute_workgroup_storage_size as usize {
            return Err(fail(format!(
                "{shared} bytes of workgroup memory; the adapter allows {} (max_compute_workgroup_storage_size)",
                l.max_compute_workgroup_storage_size
            )));
        }
        let (ar, ac) = problem.a_stored();
        let (br, bc) = problem.b_stored();
        let max_bind = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
        for (what, r, c) in [("A", ar, ac), ("B", br, bc), ("C", problem.m, problem.n)] {
            let bytes = (r as u64).saturating_mul(c as u64).saturating_mul(4);
            if bytes > max_bind {
                return Err(fail(format!(
                    "{what} ({r}x{c}) is {bytes} bytes; the adapter binds at most {max_bind} bytes per storage buffer (max_storage_buffer_binding_size, max_buffer_size): the wgpu kernels do not split operands, run it on CUDA or the CPU"
                )));
            }
        }
        if self.adapter.name.to_lowercase().contains("llvmpipe") {
            let iters = loop_iterations(src.shape, problem, tile);
            if iters > LLVMPIPE_MAX_LOOP {
                return Err(fail(format!(
                    "its longest loop would run {iters} times per invocation; llvmpipe (lavapipe) stops a loop after {LLVMPIPE_MAX_LOOP} (counted over all its entries), which would leave C wrong"
                )));
            }
        }
        let (x, y) = self.dispatch(src, problem, tile);
        let max = l.max_compute_workgroups_per_dimension;
        if x > max || y > max {
            return Err(fail(format!(
                "the dispatch would need {x}x{y} workgroups; the adapter allows {max} per dimension"
            )));
        }
        Ok(())
    }

    /// Everything a dispatch of `kernel` needs but the inputs.
    fn prepare(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: RunOptions,
    ) -> Result<(Arc<wg::ComputePipeline>, (u32, u32), wg::Buffer)> {
        self.check(kernel, problem, opts)?;
        let kernel = crate::registry::find(kernel.name)?;
        let tile = Self::tile_of(kernel, &opts);
        let pipeline = self.pipeline(kernel, problem, tile)?;
        let groups = self.dispatch(Self::source(kernel)?, problem, tile);
        Ok((pipeline, groups, self.params_buffer(problem)))
    }
}

/// llvmpipe (Mesa's software rasterizer, lavapipe's back end) ends any loop after this many
/// iterations per invocation, summed over all the loop's entries (gallivm's guard against
/// endless shaders), without an error: measured with Mesa 22.3 (`wgpu-ele` at K = 70000 before
/// its K loop ran in chunks of 16).
const LLVMPIPE_MAX_LOOP: u64 = 65535;

/// The iterations of the longest-running loop of a kernel per invocation, as llvmpipe counts
/// them (small loops of a constant trip count are unrolled and do not count; measured on Mesa
/// 22.3: the chunked K loops of ELE, naive and ROW and the tile loop of TILING run K = 70000,
/// the register tile's BK loop does not unroll, so `wgpu-regtile` (BK = 8) stops between
/// K = 52000 and 54000; it is refused from K = 43691).
fn loop_iterations(shape: WgslShape, problem: &Problem, tile: u32) -> u64 {
    let (n, k) = (problem.n as u64, problem.k as u64);
    match shape {
        WgslShape::Row { .. } => n * k.div_ceil(16),
        WgslShape::Element { .. } | WgslShape::Tile2d { .. } => k.div_ceil(16),
        WgslShape::Tiled { .. } => k.div_ceil(tile.max(1) as u64),
        // The BK loop around the register tile's products is too large to unroll: it counts,
        // and more (measured, BK = 8: K = 52000 runs, 54000 does not, about BK + 2 per tile); BK + 4
        // per tile keeps a margin.
        WgslShape::RegTile { bk, .. } => k.div_ceil(bk as u64) * (bk as u64 + 4),
        WgslShape::CoopMat { bk, .. } => k.div_ceil(bk as u64) * (bk as u64 / 16 + 4),
    }
}

fn as_bytes<T: Copy>(data: &[T]) -> &[u8] {
    // SAFETY: T is f32, u32, f16 or bf16 (plain data, no padding); the slice covers exactly its
    // elements.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

fn from_bytes_u32(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Backend for WgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }

    /// A [`HostPlan`](crate::backends::HostPlan): each run is `run` (uploads, runs, downloads), then α and β on the host.
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

    fn describe(&self) -> String {
        let l = &self.caps.limits;
        format!(
            "{}; {} KiB workgroup memory, {} invocations/workgroup, storage bindings to {} MiB; timing: {}",
            self.adapter,
            l.max_compute_workgroup_storage_size / 1024,
            l.max_compute_invocations_per_workgroup,
            l.max_storage_buffer_binding_size >> 20,
            if self.caps.timestamps {
                "timestamp queries"
            } else {
                "wall clock around submit and wait (no timestamp queries)"
            }
        )
    }

    fn limits(&self) -> Option<DeviceLimits> {
        Some(DeviceLimits {
            max_shared_per_block: self.caps.limits.max_compute_workgroup_storage_size as usize,
            sm90a: false,
            sms: 0,
            compute_capability: (0, 0),
            sm_clock_mhz: 0,
            dram_gbs: 0,
        })
    }

    fn check(&self, kernel: &KernelSpec, problem: &Problem, opts: RunOptions) -> Result<()> {
        if kernel.backend != BackendKind::Wgpu {
            return Err(Error::WrongBackend {
                kernel: kernel.name.to_string(),
                backend: "wgpu".into(),
            });
        }
        kernel.can_run(problem, self.limits().as_ref(), &opts)?;
        self.device_rules(kernel, problem, &opts)
    }

    fn run(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> Result<AnyMatrix> {
        check_inputs(problem, a, b)?;
        let (pipeline, groups, params) = self.prepare(kernel, problem, opts)?;
        let context = format!("running `{}` on {}", kernel.name, problem);
        let c = self.scoped(&context, || {
            let (ab, bb, cb) = (
                self.upload("A", a),
                self.upload("B", b),
                self.output(problem, false),
            );
            let bind = self.bind(&pipeline, &ab, &bb, &cb, &params);
            let enc = self.launch(&pipeline, &bind, [groups.0, groups.1, 1], None);
            self.queue.submit([enc.finish()]);
            cb
        })?;
        self.wait(&context)?;
        let bytes = self.read_back(&c, (problem.m * problem.n * 4) as u64, &context)?;
        Self::to_matrix(problem, bytes)
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
        check_input_sets(problem, inputs)?;
        let (pipeline, groups, params) = self.prepare(kernel, problem, opts)?;
        let context = format!("timing `{}` on {}", kernel.name, problem);
        let (binds, _c, query, resolve) = self.scoped(&context, || {
            let c = self.output(problem, false);
            let binds: Vec<_> = inputs
                .iter()
                .map(|s| {
                    let (ab, bb) = (self.upload("A", &s.a), self.upload("B", &s.b));
                    self.bind(&pipeline, &ab, &bb, &c, &params)
                })
                .collect();
            let (query, resolve) = self.timestamp_queries();
            (binds, c, query, resolve)
        })?;
        let mut times = Vec::with_capacity(iters);
        for i in 0..warmup + iters {
            let bind = &binds[i % binds.len()];
            let mut enc = self.launch(&pipeline, bind, [groups.0, groups.1, 1], query.as_ref());
            if let Some(q) = &query {
                enc.resolve_query_set(q, 0..2, &resolve, 0);
            }
            let start = Instant::now();
            self.queue.submit([enc.finish()]);
            self.wait(&context)?;
            let wall = start.elapsed().as_secs_f64();
            if i < warmup {
                continue;
            }
            let seconds = if query.is_some() {
                let bytes = self.read_back(&resolve, 16, &context)?;
                let t0 = u64::from_ne_bytes(bytes[0..8].try_into().expect("8 bytes"));
                let t1 = u64::from_ne_bytes(bytes[8..16].try_into().expect("8 bytes"));
                let s = t1.saturating_sub(t0) as f64 * self.caps.period_ns * 1e-9;
                // A driver that writes no timestamps (zeros) falls back to the wall clock.
                if s > 0.0 {
                    s
                } else {
                    wall
                }
            } else {
                wall
            };
            times.push(seconds);
        }
        Ok(times)
    }
}
