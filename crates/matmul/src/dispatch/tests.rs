//! `auto` on fake backends: the model's choices on two device classes, the invariant that `auto`
//! is never slower by the model than any single candidate, tables served by device class, and
//! measured choices per shape bucket.

use super::model::{self, Candidate, DeviceModel};
use super::*;
use crate::registry::rules::test_limits::{A100, ADA, AMPERE, H200, HOPPER};
use crate::{Op, Precision, RunOptions};

/// A CUDA device for `auto` without one: its limits only (nothing runs).
pub(crate) struct FakeCuda(pub(crate) DeviceLimits);

impl Backend for FakeCuda {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn describe(&self) -> String {
        "fake".into()
    }
    fn limits(&self) -> Option<DeviceLimits> {
        Some(self.0)
    }
    fn run(
        &self,
        _: &KernelSpec,
        _: &Problem,
        _: &crate::AnyMatrix,
        _: &crate::AnyMatrix,
        _: crate::RunOptions,
    ) -> Result<crate::AnyMatrix> {
        Err(Error::Invalid("fake".into()))
    }
    fn time(
        &self,
        _: &KernelSpec,
        _: &Problem,
        _: &[crate::Inputs],
        _: usize,
        _: usize,
        _: crate::RunOptions,
    ) -> Result<Vec<f64>> {
        Err(Error::Invalid("fake".into()))
    }
}

/// The shapes the suite brings (bench/suites/shapes.txt) and a few more: decode, k-heavy,
/// unaligned, transposed.
fn shapes() -> Vec<(usize, usize, usize, Op, Op)> {
    let mut v = Vec::new();
    for (m, n, k) in [
        (1, 1, 1),
        (3, 5, 7),
        (256, 256, 256),
        (1024, 1024, 1024),
        (2048, 2048, 2048),
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (1, 4096, 4096),
        (8, 4096, 4096),
        (16, 14336, 4096),
        (48, 48, 100_000),
        (64, 64, 65536),
        (97, 211, 50021),
        (127, 4099, 8191),
        (4097, 4095, 4093),
        (8192, 64, 8192),
        (8192, 8192, 64),
        (256, 256, 262_144),
    ] {
        for (a, b) in [(Op::N, Op::N), (Op::N, Op::T), (Op::T, Op::N)] {
            v.push((m, n, k, a, b));
        }
    }
    v
}

fn pick(limits: DeviceLimits, p: &Problem, table: Option<&tune::TuneTable>) -> Choice {
    auto_with_table(&FakeCuda(limits), p.dtype, Some(p), table).unwrap()
}

/// The invariant: on every device class and shape, `auto`'s choice is (by the model) no slower
/// than any single candidate the registry has for the problem, and it can run the problem.
#[test]
fn auto_is_never_slower_by_the_model_than_any_candidate() {
    for limits in [HOPPER, H200, A100, ADA] {
        let device = DeviceModel::of(&limits);
        for dtype in [DType::F32, DType::U32, DType::Tf32, DType::Bf16, DType::F16] {
            for (m, n, k, a, b) in shapes() {
                let p = Problem::new(m, n, k, dtype).with_ops(a, b);
                let choice = pick(limits, &p, None);
                if model::candidates(&p, &limits, &[]).is_empty() {
                    // Nothing runs it here (tf32 tiles past an Ada part's shared memory): the
                    // list's last kernel, which refuses with the rule it breaks.
                    let e = choice
                        .kernel
                        .can_run(&p, Some(&limits), &RunOptions::default());
                    assert!(e.is_err(), "{p}: {}", choice.kernel.name);
                    continue;
                }
                let opts = choice.tiling.map(RunOptions::tiling).unwrap_or_default();
                choice
                    .kernel
                    .can_run(&p, Some(&limits), &opts)
                    .unwrap_or_else(|e| panic!("{p} on {limits:?}: {e}"));
                let chosen =
                    model::estimate(&Candidate::new(choice.kernel, choice.tiling), &p, &device)
                        .expect("a modelled kernel")
                        .seconds;
                for c in model::candidates(&p, &limits, &[]) {
                    if let Some(e) = model::estimate(&c, &p, &device) {
                        assert!(
                            chosen <= e.seconds * (1.0 + 1e-9),
                            "{p} on {:?}: auto {} ({chosen:e} s) vs {} {:?} ({:e} s)",
                            limits.class(),
                            choice.kernel.name,
                            c.kernel.name,
                            c.tiling.map(|t| t.to_string()),
                            e.seconds
                        );
                    }
                }
            }
        }
    }
}

/// The model follows the device: split-K and small tiles where tiles are few, the byte split
/// for u32 where it is fast and IMAD split-K where one tile holds all of C, mma.sync off Hopper.
#[test]
fn auto_follows_the_shape_and_the_device() {
    let name = |l, m, n, k, d| pick(l, &Problem::new(m, n, k, d), None).kernel.name;
    // u32 by shape: the int8 tensor cores on large products and, split over K, on few tiles
    // with a long K; IMAD where one tile holds all of C.
    assert_eq!(name(HOPPER, 4096, 4096, 4096, DType::U32), "wgmma-u8x4-tma");
    assert_eq!(name(A100, 4096, 4096, 4096, DType::U32), "mma-u8x4");
    assert_eq!(name(H200, 256, 256, 262_144, DType::U32), "wgmma-u8x4-tma");
    assert_ne!(name(A100, 256, 256, 262_144, DType::U32), "mma-u8x4");
    for dtype in [DType::U32, DType::F32] {
        let heavy = name(H200, 48, 48, 100_000, dtype);
        assert!(
            heavy.starts_with("multistage") || heavy == "decode",
            "{heavy}"
        );
    }
    // Decode-sized M streams B at the memory bandwidth.
    for dtype in [DType::F32, DType::U32, DType::Tf32] {
        assert_eq!(name(H200, 1, 4096, 4096, dtype), "decode", "{dtype}");
        assert_eq!(name(A100, 16, 14336, 4096, dtype), "decode", "{dtype}");
    }
    assert_ne!(name(H200, 65, 4096, 4096, DType::F32), "decode");
    // f32 squares: on Hopper FP32 emulated on tf32 (3xTF32) from 4096 up, the SIMT ladder's best
    // rung under `Precision::Strict` and off Hopper.
    for n in [4096, 8192] {
        assert_eq!(name(H200, n, n, n, DType::F32), "wgmma-3xtf32", "{n}");
        let strict = Problem::square(n, DType::F32).with_precision(Precision::Strict);
        let k = pick(H200, &strict, None).kernel.name;
        assert!(k.starts_with("multistage"), "{n} strict: {k}");
        let k = name(A100, n, n, n, DType::F32);
        assert!(k.starts_with("multistage"), "{n} on A100: {k}");
    }
    // 16-bit: wgmma on Hopper, mma.sync elsewhere.
    assert!(name(HOPPER, 4096, 4096, 4096, DType::Bf16).starts_with("wgmma"));
    assert!(name(A100, 4096, 4096, 4096, DType::Bf16).starts_with("mma-sync"));
    assert!(name(ADA, 4096, 4096, 4096, DType::F16).starts_with("mma-sync"));
    // tf32: wgmma-tf32 except op(A) = T with op(B) = N, which only mma.sync runs.
    let tn = Problem::square(4096, DType::Tf32).with_ops(Op::T, Op::N);
    assert!(pick(HOPPER, &tn, None).kernel.name.starts_with("mma-sync"));
    assert!(name(HOPPER, 4096, 4096, 4096, DType::Tf32).starts_with("wgmma-tf32"));
    // Small problems take tiles that fill the SMs: 1024³ bf16 has 32 tiles of 128×256.
    let small = name(HOPPER, 1024, 1024, 1024, DType::Bf16);
    assert_ne!(small, "wgmma", "1024³ bf16");
}

/// Without a problem, and off CUDA, `auto` takes the backend's list.
#[test]
fn default_lists_exist_and_take_their_dtype() {
    for backend in [BackendKind::Cpu, BackendKind::Cuda] {
        for dtype in DType::ALL {
            for name in default_kernels(backend, dtype) {
                let k = find(name).unwrap();
                assert!(k.supports(dtype), "{} does not take {dtype}", k.name);
                assert_eq!(k.backend, backend, "{}", k.name);
            }
        }
    }
    let c = auto_with_table(&FakeCuda(HOPPER), DType::F32, None, None).unwrap();
    assert_eq!(c.kernel.name, "multistage-raster");
    let c = auto_with_table(&FakeCuda(AMPERE), DType::U32, None, None).unwrap();
    assert_eq!(c.kernel.name, "wgmma-u8x4-tma");
}

/// The table this project measured on an H100 serves every sm_90 part with 132 SMs (an H200),
/// not one with another SM count or architecture; its tilings enter the ranking calibrated.
#[test]
fn the_h100_table_serves_its_device_class() {
    let table = tune::builtin("NVIDIA H100 80GB HBM3").expect("the built-in H100 table");
    assert_eq!(H200.class().as_deref(), Some("sm_90-132"));
    assert_eq!(
        tune::builtin_for_class(&H200.class().unwrap()),
        Some(table.clone())
    );
    assert!(tune::builtin_for_class(&A100.class().unwrap()).is_none());
    assert!(tune::builtin_for_class(&ADA.class().unwrap()).is_none());
    // Calibrated candidates: each entry of the dtype, measured rates turned into efficiencies.
    let p = Problem::square(4096, DType::F32);
    let cal = table.calibrated(&p, &DeviceModel::of(&H200));
    assert!(!cal.is_empty());
    assert!(cal
        .iter()
        .all(|c| c.tiling.is_some() && c.calibration > 0.0));
    // With the table the choice is one of its tilings or the model's, and runs: 3xTF32 where
    // emulation is allowed, a tuned SIMT tiling where it is not.
    let c = pick(H200, &p, Some(&table));
    assert_eq!(c.kernel.name, "wgmma-3xtf32");
    let strict = p.with_precision(Precision::Strict);
    let c = pick(H200, &strict, Some(&table));
    assert!(c.kernel.name.starts_with("multistage"), "{}", c.kernel.name);
}

/// A measured choice for a shape bucket wins over the model for every problem of the bucket,
/// and only where its kernel can run the problem.
#[test]
fn measured_choices_override_the_model() {
    let mut table = tune::TuneTable::default();
    let p = Problem::new(16, 14336, 4096, DType::Bf16).with_ops(Op::N, Op::T);
    table.insert_choice(tune::MeasuredChoice {
        dtype: DType::Bf16,
        bucket: tune::bucket(&p),
        shape: "16x14336x4096 NT".into(),
        kernel: "mma-sync".into(),
        tiling: None,
        seconds: 1e-5,
        timed: vec![],
    });
    assert_eq!(pick(HOPPER, &p, Some(&table)).kernel.name, "mma-sync");
    // 15×16000×4000 rounds to the same bucket; 64 rows do not.
    let near = Problem::new(15, 16000, 4000, DType::Bf16).with_ops(Op::N, Op::T);
    assert_eq!(tune::bucket(&near), tune::bucket(&p));
    assert_eq!(pick(HOPPER, &near, Some(&table)).kernel.name, "mma-sync");
    let far = Problem::new(64, 14336, 4096, DType::Bf16).with_ops(Op::N, Op::T);
    assert_ne!(tune::bucket(&far), tune::bucket(&p));
    // Another dtype's bucket is not this one's.
    let f16 = Problem::new(16, 14336, 4096, DType::F16).with_ops(Op::N, Op::T);
    assert_ne!(pick(HOPPER, &f16, Some(&table)).kernel.name, "mma-sync");
}

/// The CPU: `auto` is the fast kernel; a named kernel is found by name or alias in any case
/// and refuses a backend it does not run on.
#[test]
fn select_on_the_cpu() {
    let p = Problem::new(3, 5, 7, DType::U32);
    let sel = select("AUTO", BackendChoice::Cpu, DType::U32, Some(&p)).unwrap();
    assert_eq!((sel.kernel.name, sel.tiling), ("cpu", None));
    assert_eq!(sel.backend.kind(), BackendKind::Cpu);
    assert!(sel.notes.is_empty());
    let sel = select("Reference", BackendChoice::Auto, DType::U32, Some(&p)).unwrap();
    assert_eq!(sel.kernel.name, "cpu-reference");
    assert_eq!(sel.backend.kind(), BackendKind::Cpu);
    let e = select("tiled", BackendChoice::Cpu, DType::F32, None).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e}");
    assert!(e.to_string().contains("runs on the cuda backend"), "{e}");
    assert!(matches!(
        select("quantum", BackendChoice::Cpu, DType::F32, None),
        Err(Error::UnknownKernel(_))
    ));
    let cpu = crate::cpu::CpuBackend;
    assert!(matches!(
        choose("TILING", &cpu, DType::U32, Some(&p)),
        Err(Error::WrongBackend { .. })
    ));
    assert_eq!(
        choose("cpu-fast", &cpu, DType::U32, Some(&p))
            .unwrap()
            .kernel
            .name,
        "cpu"
    );
}

/// What the model picks for the suite on an H200 (printed with --nocapture; a reading aid).
#[test]
fn print_the_model_choices() {
    for dtype in [DType::F32, DType::U32, DType::Tf32, DType::Bf16] {
        for (m, n, k, a, b) in shapes().into_iter().filter(|s| s.3 == Op::N) {
            let p = Problem::new(m, n, k, dtype).with_ops(a, b);
            let ranked = model::rank(&p, &H200, &[]);
            let top: Vec<String> = ranked
                .iter()
                .take(3)
                .map(|(c, e)| {
                    format!(
                        "{}{} {:.1}us/s{}",
                        c.kernel.name,
                        c.tiling.map(|t| format!("@{t}")).unwrap_or_default(),
                        e.seconds * 1e6,
                        e.splits
                    )
                })
                .collect();
            println!("{p}: {}", top.join(" | "));
        }
    }
}

/// `autotune` on a device with no identity (nothing can be kept for it) is `auto`.
#[test]
fn autotune_without_an_identity_is_auto() {
    let p = Problem::new(777, 555, 3333, DType::F32);
    let backend = FakeCuda(H200);
    let tuned = autotune(&backend, &p).unwrap();
    let plain = auto(&backend, DType::F32, Some(&p)).unwrap();
    assert_eq!(tuned.kernel.name, plain.kernel.name);
    assert_eq!(tuned.tiling, plain.tiling);
}

/// `auto` for a batch picks a kernel that runs the batch in one launch, on Hopper and Ampere, and
/// one whose tiles do not pad each small product (512 × 128³ bf16: a 128-wide tile, not 256).
#[test]
fn batches_choose_kernels_with_a_batched_build() {
    for limits in [HOPPER, H200, AMPERE, A100] {
        for (m, n, k, dtype, count) in [
            (512, 512, 512, DType::Bf16, 64),
            (128, 128, 128, DType::Bf16, 512),
            (512, 512, 512, DType::F32, 64),
            (128, 128, 128, DType::F32, 512),
            (2048, 2048, 128, DType::F32, 32),
        ] {
            let p = Problem::new(m, n, k, dtype);
            let c = auto_batched(&FakeCuda(limits), &p, count).unwrap();
            let batched = c.kernel.cuda_source().is_some_and(|s| s.batched);
            // Ampere has no batched tensor-core build: bf16 falls back to auto's single choice.
            if limits.sm90a || dtype == DType::F32 {
                assert!(batched, "{p} × {count}: {}", c.kernel.name);
            }
            if let (true, Some(t)) = (m == 128, c.kernel.tc_tile()) {
                assert!(
                    t.bn <= 128 && t.bm <= 128,
                    "{p} × {count}: {}",
                    c.kernel.name
                );
            }
        }
    }
    // One product is auto's choice.
    let p = Problem::square(1024, DType::Bf16);
    let one = auto_batched(&FakeCuda(HOPPER), &p, 1).unwrap();
    assert_eq!(one.kernel.name, pick(HOPPER, &p, None).kernel.name);
}
