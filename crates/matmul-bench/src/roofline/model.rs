//! The roofline model: the roofs in force (measured, else datasheet), the roof that bounds a
//! result at its intensity, and the points a plot shows.

use serde::{Deserialize, Serialize};

use matmul::DType;

use crate::ceilings::{Ceilings, BYTE_SPLIT_ROOF, TF32X3_ROOF};

/// Where a roof's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoofSource {
    /// Measured on this machine.
    Measured,
    /// The device's datasheet.
    Datasheet,
}

impl RoofSource {
    /// "measured" or "datasheet".
    pub fn name(self) -> &'static str {
        match self {
            RoofSource::Measured => "measured",
            RoofSource::Datasheet => "datasheet",
        }
    }
}

/// One roof: "memory" (value in GB/s) or a compute roof such as "fp32" (GFLOP/s or GOP/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Roof {
    /// "memory", or the compute roof's name (fp32, int32, tf32, bf16, f16).
    pub name: String,
    /// GB/s for memory, else G(FL)OP/s.
    pub value: f64,
    /// Where the value comes from.
    pub source: RoofSource,
}

/// The roofs in force: each value from the measurement where there is one, else the datasheet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Roofs {
    /// The bandwidth roof.
    pub memory: Option<Roof>,
    /// The compute roofs, one per name.
    pub compute: Vec<Roof>,
    /// Datasheet roofs that a measurement overrides (drawn dashed, for comparison).
    pub datasheet_overridden: Vec<Roof>,
}

/// The bytes an intensity divides a product's operations by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bytes {
    /// The compulsory traffic: A and B read once, C written once, in the dtypes' sizes
    /// (`Problem::min_bytes`). The same for every kernel of a problem, and a lower bound on what
    /// any kernel moves to or from DRAM when its operands are not already in a cache.
    #[default]
    Compulsory,
    /// DRAM bytes a profiler measured for this kernel (`bench --profile`).
    Measured,
}

impl Bytes {
    /// "compulsory" or "measured".
    pub fn name(self) -> &'static str {
        match self {
            Bytes::Compulsory => "compulsory",
            Bytes::Measured => "measured",
        }
    }
}

/// Where a result sits on the roofline's x axis, and whether the memory roof applies to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Operations per byte.
    pub intensity: f64,
    /// Which bytes `intensity` divides by.
    pub bytes: Bytes,
    /// The operands may have been served from a cache (the rotated input sets stayed below the
    /// run's cache size): no DRAM traffic is compulsory, so only the compute roof bounds it.
    pub in_cache: bool,
}

impl Placement {
    /// At `intensity` by the compulsory traffic, operands from DRAM.
    pub fn compulsory(intensity: f64) -> Placement {
        Placement {
            intensity,
            bytes: Bytes::Compulsory,
            in_cache: false,
        }
    }
}

/// Which roof bounds one result, and how close the result came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoofBound {
    /// The intensity the bound is evaluated at (ops/byte): flops over the DRAM bytes a profiler
    /// measured if one did, else over the compulsory bytes (`min_bytes`), the same for every
    /// kernel of a problem.
    pub intensity: f64,
    /// Which bytes `intensity` divides by: "compulsory" or "measured".
    #[serde(default)]
    pub bytes: Bytes,
    /// The rotated input sets stayed below the run's cache size, so the operands may have come
    /// from a cache: the memory roof does not bound the result, only the compute roof.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_cache: bool,
    /// "memory" when bandwidth × intensity is the lower roof, else the compute roof's name.
    pub roof: String,
    /// min(bandwidth × intensity, compute peak), G(FL)OP/s.
    pub bound_gops: f64,
    /// Achieved rate / bound × 100. No kernel can beat the compulsory traffic or the compute
    /// peak, so above 100 is a measurement problem (a roof measured low, a timing off), flagged
    /// as such by the reports ([`RoofBound::above_roof`]).
    pub percent: Option<f64>,
    /// The compute roof for this dtype and its value, whether or not it is the binding one.
    pub compute_roof: Option<String>,
    /// The value of `compute_roof`, G(FL)OP/s.
    pub compute_gops: Option<f64>,
    /// Where the binding roof's value comes from.
    pub source: RoofSource,
}

/// The compute roof's own name for `dtype`: fp32, int32, tf32, bf16, f16.
pub(crate) fn roof_name_for(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "fp32",
        DType::U32 => "int32",
        d => d.name(),
    }
}

/// The operation a compute roof counts, for its label's unit: "OP" for the integer roofs
/// (int32, int8 and the byte split's int8/10), "FLOP" for the rest.
pub(crate) fn roof_op(name: &str) -> &'static str {
    if name == "int32" || name == "int8" || name == BYTE_SPLIT_ROOF {
        "OP"
    } else {
        "FLOP"
    }
}

impl Roofs {
    /// Field by field, the measured value where there is one, else the datasheet's.
    pub fn effective(measured: Option<&Ceilings>, datasheet: Option<&Ceilings>) -> Roofs {
        let mut roofs = Roofs::default();
        let mut names: Vec<String> = Vec::new();
        for c in measured.iter().chain(datasheet.iter()) {
            for (name, _) in c.roofs() {
                if !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                    names.push(name);
                }
            }
        }
        let find = |c: Option<&Ceilings>, name: &str| {
            c.and_then(|c| {
                c.roofs()
                    .into_iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            })
        };
        for name in names {
            let (m, d) = (find(measured, &name), find(datasheet, &name));
            let roof = match (m, d) {
                (Some(v), _) => Roof {
                    name: name.clone(),
                    value: v,
                    source: RoofSource::Measured,
                },
                (None, Some(v)) => Roof {
                    name: name.clone(),
                    value: v,
                    source: RoofSource::Datasheet,
                },
                (None, None) => continue,
            };
            if let (Some(mv), Some(dv)) = (m, d) {
                if mv != dv {
                    roofs.datasheet_overridden.push(Roof {
                        name: name.clone(),
                        value: dv,
                        source: RoofSource::Datasheet,
                    });
                }
            }
            if name == "memory" {
                roofs.memory = Some(roof);
            } else {
                roofs.compute.push(roof);
            }
        }
        roofs
    }

    /// The compute roof for `dtype`: its own (fp32, int32, tf32, bf16, f16), else fp32 for the
    /// floating types (the CPU has no tensor cores).
    pub fn compute_for(&self, dtype: DType) -> Option<&Roof> {
        let own = roof_name_for(dtype);
        let by = |n: &str| self.compute.iter().find(|r| r.name.eq_ignore_ascii_case(n));
        by(own).or_else(|| if dtype.is_integer() { None } else { by("fp32") })
    }

    /// The compute roof named `name` (as a [`RoofBound::compute_roof`] names it), if in force.
    pub fn compute_named(&self, name: &str) -> Option<&Roof> {
        self.compute
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }

    /// The compute roof for `kernel` (a registry name: for an `auto` record, the kernel it
    /// chose, [`crate::Record::ran_kernel`]) on `dtype`: the byte-split roof (int8 ÷ 10,
    /// [`BYTE_SPLIT_ROOF`]) for u32 on the int8 tensor cores where the ceilings have an int8 peak,
    /// the 3xTF32 roof (tf32 ÷ 3, [`TF32X3_ROOF`]) for f32 emulated on the tf32 tensor cores where
    /// they have a tf32 peak, else [`Roofs::compute_for`].
    pub fn compute_for_kernel(&self, kernel: &str, dtype: DType) -> Option<&Roof> {
        if kernel == crate::ceilings::INT8_CEILING {
            // cuBLASLt's int8 GEMM (the bench's ceiling row) sits under the int8 tensor peak.
            return self.compute.iter().find(|r| r.name == "int8");
        }
        let spec = matmul::registry::find(kernel).ok();
        let emulated = match dtype {
            DType::U32 if spec.is_some_and(|k| k.is_byte_split()) => Some(BYTE_SPLIT_ROOF),
            DType::F32 if spec.is_some_and(|k| k.is_tf32x3()) => Some(TF32X3_ROOF),
            _ => None,
        };
        emulated
            .and_then(|roof| {
                self.compute
                    .iter()
                    .find(|r| r.name.eq_ignore_ascii_case(roof))
            })
            .or_else(|| self.compute_for(dtype))
    }

    /// The bound for `dtype` at `at` (the memory roof left out when the operands may have been
    /// in a cache), and the percentage `achieved_gops` reaches.
    pub fn bound(
        &self,
        dtype: DType,
        at: Placement,
        achieved_gops: Option<f64>,
    ) -> Option<RoofBound> {
        self.bound_with(self.compute_for(dtype), at, achieved_gops)
    }

    /// [`Roofs::bound`] for the result of `kernel` (a registry name), under its own compute roof
    /// ([`Roofs::compute_for_kernel`]).
    pub fn bound_for_kernel(
        &self,
        kernel: &str,
        dtype: DType,
        at: Placement,
        achieved_gops: Option<f64>,
    ) -> Option<RoofBound> {
        self.bound_with(self.compute_for_kernel(kernel, dtype), at, achieved_gops)
    }

    fn bound_with(
        &self,
        compute: Option<&Roof>,
        at: Placement,
        achieved_gops: Option<f64>,
    ) -> Option<RoofBound> {
        let memory = self
            .memory
            .as_ref()
            .filter(|_| !at.in_cache)
            .map(|m| (m, m.value * at.intensity))
            .filter(|(_, v)| v.is_finite());
        let (roof, bound, source) = match (memory, compute) {
            (Some((m, mv)), Some(c)) if mv < c.value => ("memory".to_string(), mv, m.source),
            (_, Some(c)) => (c.name.clone(), c.value, c.source),
            (Some((m, mv)), None) => ("memory".to_string(), mv, m.source),
            (None, None) => return None,
        };
        Some(RoofBound {
            intensity: at.intensity,
            bytes: at.bytes,
            in_cache: at.in_cache,
            roof,
            bound_gops: bound,
            percent: achieved_gops
                .filter(|_| bound > 0.0)
                .map(|a| a / bound * 100.0),
            compute_roof: compute.map(|c| c.name.clone()),
            compute_gops: compute.map(|c| c.value),
            source,
        })
    }
}

impl RoofBound {
    /// Whether the result is above the roof that bounds it: by construction only a measurement
    /// problem can put it there (a roof measured too low, a timing too short or off).
    pub fn above_roof(&self) -> bool {
        self.percent.is_some_and(|p| p > 100.0)
    }
}

/// One plotted result.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotPoint {
    /// The number printed beside the marker and in the legend (1-based).
    pub number: usize,
    /// Registry name.
    pub kernel: String,
    /// The element type (the marker's shape).
    pub dtype: DType,
    /// "MxNxK" as in the record.
    pub shape: String,
    /// ops/byte.
    pub intensity: f64,
    /// G(FL)OP/s.
    pub rate_gops: f64,
    /// The roof that bounds it, for the legend's percentage; its `compute_roof` is the compute
    /// roof the plot draws for it (that of the kernel that ran, `auto`'s choice for `auto`).
    pub bound: Option<RoofBound>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::datasheet;

    fn cpu() -> Ceilings {
        Ceilings {
            device: "cpu".into(),
            memory_bandwidth_gbs: Some(20.0),
            fp32_gflops: Some(200.0),
            int32_gops: Some(100.0),
            tensor: vec![],
            source: "measured".into(),
        }
    }

    #[test]
    fn bound_picks_the_lower_roof() {
        let roofs = Roofs::effective(Some(&cpu()), None);
        // Ridge at 10 FLOP/B for fp32.
        let at = Placement::compulsory;
        let b = roofs.bound(DType::F32, at(1.0), Some(10.0)).unwrap();
        assert_eq!(b.roof, "memory");
        assert_eq!(b.bound_gops, 20.0);
        assert_eq!(b.percent, Some(50.0));
        assert!(!b.above_roof());
        let b = roofs.bound(DType::F32, at(100.0), Some(100.0)).unwrap();
        assert_eq!(b.roof, "fp32");
        assert_eq!(b.percent, Some(50.0));
        let b = roofs.bound(DType::U32, at(100.0), None).unwrap();
        assert_eq!((b.roof.as_str(), b.bound_gops), ("int32", 100.0));
        // No tensor roof on the CPU: bf16 is bounded by fp32.
        assert_eq!(
            roofs.bound(DType::Bf16, at(1e3), None).unwrap().roof,
            "fp32"
        );
        // Operands that may sit in a cache: only the compute roof bounds them.
        let cached = Placement {
            in_cache: true,
            ..at(1.0)
        };
        let b = roofs.bound(DType::F32, cached, Some(30.0)).unwrap();
        assert_eq!(
            (b.roof.as_str(), b.bound_gops, b.in_cache),
            ("fp32", 200.0, true)
        );
        assert_eq!(b.percent, Some(15.0));
        // Above the roof: a measurement problem, flagged.
        assert!(roofs
            .bound(DType::F32, at(1.0), Some(21.0))
            .unwrap()
            .above_roof());
    }

    #[test]
    fn measured_overrides_datasheet_field_by_field() {
        let ds = datasheet("NVIDIA H100 80GB HBM3").unwrap();
        let measured = Ceilings {
            device: "H100".into(),
            memory_bandwidth_gbs: Some(3_000.0),
            fp32_gflops: None,
            int32_gops: None,
            tensor: vec![],
            source: "measured".into(),
        };
        let roofs = Roofs::effective(Some(&measured), Some(&ds));
        let m = roofs.memory.as_ref().unwrap();
        assert_eq!((m.value, m.source), (3_000.0, RoofSource::Measured));
        let tf32 = roofs.compute_for(DType::Tf32).unwrap();
        assert_eq!(
            (tf32.value, tf32.source),
            (494_700.0, RoofSource::Datasheet)
        );
        assert_eq!(roofs.datasheet_overridden.len(), 1);
        assert_eq!(
            Roofs::effective(None, None).bound(DType::F32, Placement::compulsory(1.0), None),
            None
        );
    }

    /// A byte-split u32 kernel (wgmma-u8x4, mma-u8x4) sits under the int8 tensor peak ÷ 10, not
    /// under the int32 (IMAD) roof it runs twice as fast as; the IMAD kernels stay under int32,
    /// and without an int8 peak (the CPU) the byte-split kernels fall back to int32.
    #[test]
    fn byte_split_kernels_have_their_own_roof() {
        let ds = datasheet("NVIDIA H100 80GB HBM3").unwrap();
        let roofs = Roofs::effective(None, Some(&ds));
        let at = Placement::compulsory(1e4);
        for kernel in ["wgmma-u8x4", "mma-u8x4"] {
            let b = roofs
                .bound_for_kernel(kernel, DType::U32, at, Some(68_900.0))
                .unwrap();
            assert_eq!(b.compute_roof.as_deref(), Some(BYTE_SPLIT_ROOF), "{kernel}");
            assert_eq!(b.roof, BYTE_SPLIT_ROOF);
            assert!((b.bound_gops - 197_890.0).abs() < 1e-6, "{}", b.bound_gops);
            assert!(!b.above_roof(), "{kernel}: {:?}", b.percent);
        }
        // The same rate under int32 is "above the roof" (the report's old flag).
        let imad = roofs
            .bound_for_kernel("multistage-raster", DType::U32, at, Some(68_900.0))
            .unwrap();
        assert_eq!(imad.compute_roof.as_deref(), Some("int32"));
        assert!(imad.above_roof());
        // The byte-split roof only for u32.
        assert_eq!(
            roofs
                .compute_for_kernel("wgmma-u8x4", DType::F32)
                .map(|r| r.name.as_str()),
            Some("fp32")
        );
        let cpu_roofs = Roofs::effective(Some(&cpu()), None);
        assert_eq!(
            cpu_roofs
                .compute_for_kernel("wgmma-u8x4", DType::U32)
                .map(|r| r.name.as_str()),
            Some("int32")
        );
    }

    /// The 3xTF32 kernel (f32 emulated on the tf32 tensor cores) sits under the tf32 peak ÷ 3, not
    /// under the fp32 (SIMT) roof it runs above (measured 87 TFLOP/s at 8192 on an H100); SIMT f32
    /// kernels stay under fp32, and without a tf32 peak (the CPU) it falls back to fp32.
    #[test]
    fn tf32x3_kernels_have_their_own_roof() {
        let ds = datasheet("NVIDIA H100 80GB HBM3").unwrap();
        let roofs = Roofs::effective(None, Some(&ds));
        let at = Placement::compulsory(1e4);
        let b = roofs
            .bound_for_kernel("wgmma-3xtf32", DType::F32, at, Some(87_000.0))
            .unwrap();
        assert_eq!(b.compute_roof.as_deref(), Some(TF32X3_ROOF));
        assert_eq!(b.roof, TF32X3_ROOF);
        assert!(
            (b.bound_gops - 494_700.0 / 3.0).abs() < 1e-6,
            "{}",
            b.bound_gops
        );
        assert!(!b.above_roof(), "{:?}", b.percent);
        // The same rate under fp32 is "above the roof" (the report's old flag).
        let simt = roofs
            .bound_for_kernel("multistage-raster", DType::F32, at, Some(87_000.0))
            .unwrap();
        assert_eq!(simt.compute_roof.as_deref(), Some("fp32"));
        assert!(simt.above_roof());
        let cpu_roofs = Roofs::effective(Some(&cpu()), None);
        assert_eq!(
            cpu_roofs
                .compute_for_kernel("wgmma-3xtf32", DType::F32)
                .map(|r| r.name.as_str()),
            Some("fp32")
        );
    }
}
