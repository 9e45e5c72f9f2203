// scale.cu — a plan's α and β (backends/cuda/plan.rs): C = α·P + β·C element by element, P the
// product the GEMM kernel wrote into the plan's workspace in the accumulator's type (f32 or u32).
// With β = 0, C's old contents are not read (BLAS's convention: a NaN there does not leak).
// Floating C: α·P rounded to f32, one fused multiply-add with β·C, one rounding to C's type
// (bf16/f16 by cvt.rn); u32: wrapping, α and β as integers. One thread an element, grid-stride.

__device__ __forceinline__ float bf16_in(matmul_u16 x) { return __uint_as_float((unsigned)x << 16); }
__device__ __forceinline__ float f16_in(matmul_u16 x)
{
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(x));
    return f;
}
__device__ __forceinline__ matmul_u16 bf16_out(float v)
{
    matmul_u16 r;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ matmul_u16 f16_out(float v)
{
    matmul_u16 r;
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
    return r;
}

#define EACH(i) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; \
                     i += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void scale_f32(const float* __restrict__ P, float* __restrict__ C, long long count, float alpha,
                                     float beta)
{
    EACH(i)
    {
        const float p = alpha * P[i];
        C[i] = beta == 0.0f ? p : fmaf(beta, C[i], p);
    }
}

extern "C" __global__ void scale_bf16(const float* __restrict__ P, matmul_u16* __restrict__ C, long long count,
                                      float alpha, float beta)
{
    EACH(i)
    {
        const float p = alpha * P[i];
        C[i] = bf16_out(beta == 0.0f ? p : fmaf(beta, bf16_in(C[i]), p));
    }
}

extern "C" __global__ void scale_f16(const float* __restrict__ P, matmul_u16* __restrict__ C, long long count,
                                     float alpha, float beta)
{
    EACH(i)
    {
        const float p = alpha * P[i];
        C[i] = f16_out(beta == 0.0f ? p : fmaf(beta, f16_in(C[i]), p));
    }
}

extern "C" __global__ void scale_u32(const matmul_u32* __restrict__ P, matmul_u32* __restrict__ C, long long count,
                                     matmul_u32 alpha, matmul_u32 beta)
{
    EACH(i)
    {
        const matmul_u32 p = alpha * P[i];
        C[i] = beta == 0u ? p : p + beta * C[i];
    }
}
