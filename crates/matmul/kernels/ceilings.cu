// ceilings — not a GEMM: micro-kernels that measure this GPU's own compute limits for the roofline
// (the bandwidth ceiling is a device-to-device copy, timed from Rust).
// fma_peak: CHAINS independent fused multiply-add chains per thread (enough instruction-level
//   parallelism to keep the FP32 pipes busy); 2 FLOPs per FMA. The result is written so the
//   compiler cannot drop the loop. SASS should show FFMA only in the loop body.
// imad_peak: the same with 32-bit integer multiply-add (IMAD), the instruction of u32 GEMM;
//   2 operations per IMAD.
// Geometry: 1-D, any block size (Rust uses 1024 threads × 8 blocks per SM). Parameters: CHAINS
// (default 8).
#ifndef CHAINS
#define CHAINS 8
#endif

extern "C" __global__ void fma_peak(float* out, int iters, float b, float c)
{
    float acc[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; j++) acc[j] = threadIdx.x * 1e-3f + j;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int j = 0; j < CHAINS; j++) acc[j] = fmaf(acc[j], b, c);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; j++) s += acc[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void imad_peak(unsigned int* out, int iters, unsigned int b, unsigned int c)
{
    unsigned int acc[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; j++) acc[j] = threadIdx.x + j;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int j = 0; j < CHAINS; j++) acc[j] = acc[j] * b + c;
    }
    unsigned int s = 0;
#pragma unroll
    for (int j = 0; j < CHAINS; j++) s ^= acc[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
