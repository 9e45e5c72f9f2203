//! Element types. `Tf32` is a compute mode on f32 storage (inputs rounded to 10 mantissa bits by the
//! tensor cores); every other variant names its storage type.

use std::fmt;
use std::str::FromStr;

use half::{bf16, f16};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The element type of a problem's inputs. Floating inputs produce an `f32` output (accumulated in
/// f32 or wider) unless C is asked in bf16/f16 ([`COut::Input`](crate::COut::Input)); `U32`
/// produces `u32` with wrapping (mod 2^32) arithmetic, as the judge requires.
///
/// ```
/// use matmul::DType;
///
/// let d: DType = "BF16".parse()?; // any case
/// assert_eq!((d.name(), d.input_bytes(), d.accumulator()), ("bf16", 2, DType::F32));
/// assert_eq!("tf32".parse::<DType>()?.input_bytes(), 4); // f32 storage
/// assert!("f64".parse::<DType>().is_err());
/// # Ok::<(), matmul::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE binary32, multiplied and accumulated in full f32 precision (or wider on the CPU).
    F32,
    /// 32-bit unsigned integers; products and sums wrap modulo 2^32.
    U32,
    /// f32 storage, multiplied on tensor cores with inputs rounded to 10 mantissa bits.
    Tf32,
    /// bfloat16 storage (8 mantissa bits), f32 accumulation.
    Bf16,
    /// IEEE binary16 storage (11 mantissa bits), f32 accumulation.
    F16,
}

impl DType {
    /// Every dtype; `FromStr` accepts exactly their names.
    pub const ALL: [DType; 5] = [DType::F32, DType::U32, DType::Tf32, DType::Bf16, DType::F16];

    /// The lowercase name the CLI, reports and `FromStr` use ("f32", "tf32", ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::U32 => "u32",
            DType::Tf32 => "tf32",
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
        }
    }

    /// Bytes of one stored input element.
    pub fn input_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 | DType::Tf32 => 4,
            DType::Bf16 | DType::F16 => 2,
        }
    }

    /// The element type matrices of this dtype are stored in: f32 for tf32 (rounded by the
    /// kernels, not in memory), else the dtype itself.
    pub fn storage(self) -> DType {
        match self {
            DType::Tf32 => DType::F32,
            d => d,
        }
    }

    /// The type products accumulate in, and C's type by default: u32 for u32, f32 for every
    /// floating type.
    pub fn accumulator(self) -> DType {
        if self.is_integer() {
            DType::U32
        } else {
            DType::F32
        }
    }

    /// Whether values of this type are stored in 16 bits (bf16, f16).
    pub fn is_16_bit(self) -> bool {
        self.input_bytes() == 2
    }

    /// Whether the arithmetic is exact integer arithmetic (u32): verified bit for bit, rated
    /// in OP/s.
    pub fn is_integer(self) -> bool {
        self == DType::U32
    }

    /// "GFLOP/s" or "GOP/s": integer products are operations, not floating-point operations.
    pub fn rate_unit(self) -> &'static str {
        if self.is_integer() {
            "OP"
        } else {
            "FLOP"
        }
    }

    /// The largest finite value of the stored type (u32: `u32::MAX`; tf32: f32's, its storage).
    pub fn max_finite(self) -> f64 {
        match self {
            DType::U32 => u32::MAX as f64,
            DType::F32 | DType::Tf32 => f32::MAX as f64,
            DType::Bf16 => bf16::MAX.to_f64(),
            DType::F16 => f16::MAX.to_f64(),
        }
    }

    /// Unit roundoff of the inputs as the kernel sees them (2^-p for p mantissa bits incl. the
    /// implicit one); 0 for exact integer arithmetic.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DType::U32 => 0.0,
            DType::F32 => f32::EPSILON as f64 / 2.0,
            DType::Tf32 => 2f64.powi(-11),
            DType::F16 => 2f64.powi(-11),
            DType::Bf16 => 2f64.powi(-8),
        }
    }
}

/// The element types one kernel build serves: its inputs' and C's. C is the inputs' accumulator
/// type unless the problem asks for C in the input dtype (`Problem::c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Types {
    /// The inputs' dtype (A and B).
    pub input: DType,
    /// C's element type: `input.accumulator()`, or the 16-bit input dtype itself.
    pub c: DType,
}

impl Types {
    /// Whether C is narrower than the accumulator (bf16 or f16 C).
    pub fn narrow_c(self) -> bool {
        self.c != self.input.accumulator()
    }
}

impl From<DType> for Types {
    fn from(input: DType) -> Types {
        Types {
            input,
            c: input.accumulator(),
        }
    }
}

impl fmt::Display for Types {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.narrow_c() {
            write!(f, "{} (C {})", self.input, self.c)
        } else {
            write!(f, "{}", self.input)
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        DType::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| Error::UnknownDType(s.to_string()))
    }
}

mod sealed {
    /// Only this crate's element types are [`super::Element`]s: the kernels exist for them alone.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// A scalar that a host matrix can hold: f32, u32, f16 and bf16 (sealed: the kernels exist for
/// these alone).
pub trait Element:
    sealed::Sealed + Copy + Send + Sync + Default + PartialEq + fmt::Debug + 'static
{
    /// The dtype whose storage this is (`Tf32` shares `f32`'s storage and is chosen by the problem).
    const STORAGE: DType;
    /// The value as f64: exact for every element type here (f32, u32, bf16, f16).
    fn to_f64(self) -> f64;
    /// The nearest value of this type (round to nearest for floats; u32 truncates toward zero
    /// and wraps modulo 2^32).
    fn from_f64(v: f64) -> Self;
    /// `m` as a view of any element type.
    #[doc(hidden)]
    fn any_ref(m: crate::core::view::MatRef<'_, Self>) -> crate::core::view::AnyMatRef<'_>;
    /// `m` as a view to write of any element type.
    #[doc(hidden)]
    fn any_mut(m: crate::core::view::MatMut<'_, Self>) -> crate::core::view::AnyMatMut<'_>;
}

impl Element for f32 {
    fn any_ref(m: crate::core::view::MatRef<'_, Self>) -> crate::core::view::AnyMatRef<'_> {
        crate::core::view::AnyMatRef::F32(m)
    }
    fn any_mut(m: crate::core::view::MatMut<'_, Self>) -> crate::core::view::AnyMatMut<'_> {
        crate::core::view::AnyMatMut::F32(m)
    }
    const STORAGE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Element for u32 {
    fn any_ref(m: crate::core::view::MatRef<'_, Self>) -> crate::core::view::AnyMatRef<'_> {
        crate::core::view::AnyMatRef::U32(m)
    }
    fn any_mut(m: crate::core::view::MatMut<'_, Self>) -> crate::core::view::AnyMatMut<'_> {
        crate::core::view::AnyMatMut::U32(m)
    }
    const STORAGE: DType = DType::U32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    /// Wraps modulo 2^32, like every u32 operation in this crate.
    fn from_f64(v: f64) -> Self {
        (v as i64) as u32
    }
}

impl Element for f16 {
    fn any_ref(m: crate::core::view::MatRef<'_, Self>) -> crate::core::view::AnyMatRef<'_> {
        crate::core::view::AnyMatRef::F16(m)
    }
    fn any_mut(m: crate::core::view::MatMut<'_, Self>) -> crate::core::view::AnyMatMut<'_> {
        crate::core::view::AnyMatMut::F16(m)
    }
    const STORAGE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}

impl Element for bf16 {
    fn any_ref(m: crate::core::view::MatRef<'_, Self>) -> crate::core::view::AnyMatRef<'_> {
        crate::core::view::AnyMatRef::Bf16(m)
    }
    fn any_mut(m: crate::core::view::MatMut<'_, Self>) -> crate::core::view::AnyMatMut<'_> {
        crate::core::view::AnyMatMut::Bf16(m)
    }
    const STORAGE: DType = DType::Bf16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
}
