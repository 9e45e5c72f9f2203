//! The roofline model: the roofs in force (measured, else datasheet), the roof that bounds a
//! result at its intensity, and the points a plot shows.

use serde::{Deserialize, Serialize};

use matmul::DType;

use crate::ceilings::Ceilings;

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

/// Which roof bounds one result, and how close the result came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoofBound {
    /// The intensity the bound is evaluated at (ops/byte): the measured one if a profiler gave
    /// it, else the traffic model's.
    pub intensity: f64,
    /// "memory" when bandwidth × intensity is the lower roof, else the compute roof's name.
    pub roof: String,
    /// min(bandwidth × intensity, compute peak), G(FL)OP/s.
    pub bound_gops: f64,
    /// Achieved rate / bound × 100 (may exceed 100 when caches beat the traffic model).
    pub percent: Option<f64>,
    /// The compute roof for this dtype and its value, whether or not it is the binding one.
    pub compute_roof: Option<String>,
    /// The value of `compute_roof`, G(FL)OP/s.
    pub compute_gops: Option<f64>,
    /// Where the binding roof's value comes from.
    pub source: RoofSource,
}

fn roof_name_for(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "fp32",
        DType::U32 => "int32",
        d => d.name(),
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

    /// The bound at `intensity` for `dtype`, and the percentage `achieved_gops` reaches.
    pub fn bound(
        &self,
        dtype: DType,
        intensity: f64,
        achieved_gops: Option<f64>,
    ) -> Option<RoofBound> {
        let compute = self.compute_for(dtype);
        let memory = self
            .memory
            .as_ref()
            .map(|m| (m, m.value * intensity))
            .filter(|(_, v)| v.is_finite());
        let (roof, bound, source) = match (memory, compute) {
            (Some((m, mv)), Some(c)) if mv < c.value => ("memory".to_string(), mv, m.source),
            (_, Some(c)) => (c.name.clone(), c.value, c.source),
            (Some((m, mv)), None) => ("memory".to_string(), mv, m.source),
            (None, None) => return None,
        };
        Some(RoofBound {
            intensity,
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
    /// The roof that bounds it, for the legend's percentage.
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
        let b = roofs.bound(DType::F32, 1.0, Some(10.0)).unwrap();
        assert_eq!(b.roof, "memory");
        assert_eq!(b.bound_gops, 20.0);
        assert_eq!(b.percent, Some(50.0));
        let b = roofs.bound(DType::F32, 100.0, Some(100.0)).unwrap();
        assert_eq!(b.roof, "fp32");
        assert_eq!(b.percent, Some(50.0));
        let b = roofs.bound(DType::U32, 100.0, None).unwrap();
        assert_eq!((b.roof.as_str(), b.bound_gops), ("int32", 100.0));
        // No tensor roof on the CPU: bf16 is bounded by fp32.
        assert_eq!(roofs.bound(DType::Bf16, 1e3, None).unwrap().roof, "fp32");
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
            Roofs::effective(None, None).bound(DType::F32, 1.0, None),
            None
        );
    }
}
