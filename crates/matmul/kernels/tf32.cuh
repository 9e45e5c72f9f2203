// tf32.cuh — f32 rounded to tf32 (10 mantissa bits) for a kernel that hands tf32 operands to the
// tensor cores from registers (14_mma_sync.cu; registry: `includes`; 16_wgmma_tf32.cu's TMA maps
// round as they copy). sm_90 and newer: cvt.rn.tf32.f32, to nearest, ties to even, one native
// instruction. sm_80/sm_89 have only cvt.rna.tf32.f32 (ties away), which ptxas expands to three
// (an Inf/NaN guard, an integer add of half an ulp, a mask). Either way the value keeps its f32
// layout; the tensor cores ignore (truncate) the low 13 bits.
__device__ __forceinline__ unsigned to_tf32(float x)
{
    unsigned u;
#if __CUDA_ARCH__ >= 900
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
#else
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
#endif
    return u;
}

// x = big + small for 3xTF32 (14_mma_sync.cu, TF32X3): returns big = to_tf32(x) and sets small =
// to_tf32(x − big); x − big is exact in f32 (at most 13 significant bits), so x − big − small is
// at most 2⁻¹¹·|x − big| ≤ 2⁻²²·|x|. An infinite x keeps small = 0 (∞ − ∞ is NaN); a finite x
// whose rounding overflows to ∞ (above tf32's largest finite value) takes big = x truncated to
// tf32 instead, so that big and small stay finite. NaN stays NaN.
// sm_80/sm_89 round with two integer operations instead of cvt.rna's guarded expansion (which
// made the 3xTF32 build spill there): half an ulp of tf32 added to the magnitude bits, then the low
// 13 bits cleared, is to nearest, ties away, as cvt.rna; ±∞ stays ±∞, and NaN is kept as it is.
__device__ __forceinline__ unsigned round_tf32(float x)
{
#if __CUDA_ARCH__ >= 900
    return to_tf32(x);
#else
    const unsigned u = __float_as_uint(x);
    return isnan(x) ? u : (u + 0x1000u) & 0xffffe000u;
#endif
}

__device__ __forceinline__ unsigned split_tf32(float x, unsigned& small)
{
    unsigned big = round_tf32(x);
    if (isinf(__uint_as_float(big)) && !isinf(x)) big = __float_as_uint(x) & 0xffffe000u;
    const float rest = x - __uint_as_float(big);
    small = round_tf32(isinf(x) ? 0.0f : rest);
    return big;
}
