//! A user's WGSL kernel ([`UserKernel`], docs/own-kernels.md): the file's text with our
//! declarations appended (so naga's line numbers are the file's), compiled inside wgpu's error
//! scopes, dispatched over the user's workgroup grid with C poisoned (or zeroed).

use std::time::Instant;

use ::wgpu as wg;

use super::{err, WgpuBackend};
use crate::backend::{check_input_sets, check_inputs, Inputs};
use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::user::{Lang, UserKernel};

impl WgpuBackend {
    /// Compiles `kernel`; a WGSL error is an [`Error::Wgpu`] whose message is naga's report,
    /// naming the user's file and lines.
    pub fn user_compile(&self, kernel: &UserKernel) -> Result<wg::ComputePipeline> {
        if kernel.lang != Lang::Wgsl {
            return Err(Error::Invalid(format!(
                "{} is not a WGSL kernel",
                kernel.path
            )));
        }
        kernel.validate()?;
        let text = kernel.wgsl_text();
        let label = kernel.path.as_str();
        let context = format!("compiling {label} (WGSL)");
        self.scoped(&context, || {
            let module = self
                .device
                .create_shader_module(wg::ShaderModuleDescriptor {
                    label: Some(label),
                    source: wg::ShaderSource::Wgsl(text.into()),
                });
            // An explicit layout of the four bindings, so a kernel that does not use one of
            // them still takes the same bind group.
            let storage = |binding: u32, read_only: bool| wg::BindGroupLayoutEntry {
                binding,
                visibility: wg::ShaderStages::COMPUTE,
                ty: wg::BindingType::Buffer {
                    ty: wg::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            };
            let bgl = self
                .device
                .create_bind_group_layout(&wg::BindGroupLayoutDescriptor {
                    label: Some(label),
                    entries: &[
                        storage(0, true),
                        storage(1, true),
                        storage(2, false),
                        wg::BindGroupLayoutEntry {
                            binding: 3,
                            visibility: wg::ShaderStages::COMPUTE,
                            ty: wg::BindingType::Buffer {
                                ty: wg::BufferBindingType::Uniform,
                                has_dynamic_offset: false,
                                min_binding_size: None,
                            },
                            count: None,
                        },
                    ],
                });
            let layout = self
                .device
                .create_pipeline_layout(&wg::PipelineLayoutDescriptor {
                    label: Some(label),
                    bind_group_layouts: &[Some(&bgl)],
                    immediate_size: 0,
                });
            self.device
                .create_compute_pipeline(&wg::ComputePipelineDescriptor {
                    label: Some(label),
                    layout: Some(&layout),
                    module: &module,
                    entry_point: Some(&kernel.entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
        })
    }

    /// The workgroups along x, y, z, checked against the adapter's limit.
    fn user_groups(&self, kernel: &UserKernel, problem: &Problem) -> Result<[u32; 3]> {
        kernel.check_problem(problem)?;
        let g = kernel.launch(problem)?.grid;
        let max = self.caps.limits.max_compute_workgroups_per_dimension;
        if g.iter().any(|&x| x > max) {
            return Err(Error::Invalid(format!(
                "{}: --grid {g:?} workgroups; the adapter allows {max} per dimension",
                kernel.label()
            )));
        }
        let max_bind = self
            .caps
            .limits
            .max_storage_buffer_binding_size
            .min(self.caps.limits.max_buffer_size);
        let bytes = (problem.m.max(problem.k) as u64) * (problem.n.max(problem.k) as u64) * 4;
        if bytes > max_bind {
            return Err(Error::Invalid(format!(
                "{problem}: an operand of {bytes} bytes; the adapter binds at most {max_bind}"
            )));
        }
        Ok(g)
    }

    /// Runs `kernel` once on `problem` with C poisoned (zeroed with `zero_c`) and returns C.
    pub fn user_run(
        &self,
        kernel: &UserKernel,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
    ) -> Result<AnyMatrix> {
        check_inputs(problem, a, b)?;
        let groups = self.user_groups(kernel, problem)?;
        let pipeline = self.user_compile(kernel)?;
        let context = format!("running {} on {problem}", kernel.label());
        let c = self.scoped(&context, || {
            let (ab, bb, cb) = (
                self.upload("A", a),
                self.upload("B", b),
                self.output(problem, kernel.zero_c),
            );
            let params = self.params_buffer(problem);
            let bind = self.bind(&pipeline, &ab, &bb, &cb, &params);
            let enc = self.launch(&pipeline, &bind, groups, None);
            self.queue.submit([enc.finish()]);
            cb
        })?;
        self.wait(&context)?;
        let bytes = self.read_back(&c, (problem.m * problem.n * 4) as u64, &context)?;
        Self::to_matrix(problem, bytes)
    }

    /// Times `iters` dispatches of `kernel` after `warmup`, rotating among `inputs`: GPU
    /// timestamps where the adapter has them, else the wall clock around submit and wait.
    pub fn user_time(
        &self,
        kernel: &UserKernel,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        check_input_sets(problem, inputs)?;
        let groups = self.user_groups(kernel, problem)?;
        let pipeline = self.user_compile(kernel)?;
        let context = format!("timing {} on {problem}", kernel.label());
        let (binds, c, query, resolve) = self.scoped(&context, || {
            let c = self.output(problem, kernel.zero_c);
            let params = self.params_buffer(problem);
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
            let mut enc = self.launch(&pipeline, &binds[i % binds.len()], groups, query.as_ref());
            if kernel.zero_c {
                // Outside the pass, so outside the timestamps (the wall clock includes it).
                let mut z = self
                    .device
                    .create_command_encoder(&wg::CommandEncoderDescriptor { label: None });
                z.clear_buffer(&c, 0, None);
                self.queue.submit([z.finish()]);
            }
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
                let t0 = u64::from_ne_bytes(bytes[0..8].try_into().map_err(|e| err(&context, e))?);
                let t1 = u64::from_ne_bytes(bytes[8..16].try_into().map_err(|e| err(&context, e))?);
                let s = t1.saturating_sub(t0) as f64 * self.caps.period_ns * 1e-9;
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
