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
