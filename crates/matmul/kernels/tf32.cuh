// tf32.cuh — f32 rounded to tf32 (10 mantissa bits) for the kernels that hand tf32 operands to
// the tensor cores from registers (14_mma_sync.cu; registry: `includes`). 16_wgmma_tf32.cu does
// not need it since 2026-11-25: its TMA maps are of type TFLOAT32 and round as they copy.
// sm_90 and newer: cvt.rn.tf32.f32, to nearest, ties to even, one native instruction
// (F2FP.TF32.F32.PACK_B in the SASS). sm_80/sm_89 have only cvt.rna.tf32.f32 (ties away), which
// ptxas expands to three (an Inf/NaN guard, an integer add of half an ulp, a mask): on
// wgmma-tf32's register operand those were 48 of a consumer warp's 146 instructions per k-block
// (docs/kernels.md 16b). Either way a value keeps its f32 layout; the tensor cores ignore the
// low 13 bits (they truncate what is not rounded, 16 and 16c).
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
