// A reference point for issue 5, not part of the library: CUTLASS's own SIMT SGEMM (the C++
// templates, compiled by nvcc/ptxas like our kernels), timed beside cuBLAS in interleaved rounds.
//
// Why: at 16384³ cuBLAS runs CUTLASS's `cutlass_80_simt_sgemm_256x128_8x4_nn_align1` and reaches
// 54.2 TFLOP/s, against 51.7 for its own xmma kernel at 4096 and 8192 (docs/kernels.md,
// "Per-instruction stall sampling"). 54.2 is the rate issue 5's goal asks for at 4096. If a
// ptxas-compiled CUTLASS kernel gets there at 4096 and 8192 too, the goal is within reach of
// source-level CUDA, and its SASS (readable here, unlike cuBLAS's copy) shows what to learn;
// if it does not, the 16384 figure is that size's alone.
//
// Build (here, no GPU needed): lab/cutlass-build.sh (nvcc, CUDA headers, cuBLAS and CUTLASS's
// headers from PyPI wheels) writes dist/cutlass/cutlass-sgemm.
// Run (GPU host): dist/cutlass/cutlass-sgemm ROUNDS SIZE...   e.g. cutlass-sgemm 3 4096 8192
// Every variant's C is checked against cuBLAS's (largest |difference| / largest |C|) before timing.
// Column-major A, B, C (cuBLAS's "nn", which is what our row-major N·N product runs as).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm.h"

#define CHECK(x)                                                                                  \
    do {                                                                                          \
        cudaError_t e = (x);                                                                      \
        if (e != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e));    \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

using Col = cutlass::layout::ColumnMajor;

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
using SimtSgemm = cutlass::gemm::device::Gemm<
    float, Col, float, Col, float, Col, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<BM, BN, BK>, cutlass::gemm::GemmShape<WM, WN, BK>, cutlass::gemm::GemmShape<1, 1, 1>,
    cutlass::epilogue::thread::LinearCombination<float, 1, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, STAGES, 1, 1>;

struct Variant {
    std::string name;
    std::function<bool(int, const float*, const float*, float*)> run;  // n, A, B, C; false on error
};

template <class G>
Variant variant(const char* name)
{
    return {name, [](int n, const float* A, const float* B, float* C) {
                G gemm;
                typename G::Arguments args({n, n, n}, {A, n}, {B, n}, {C, n}, {C, n}, {1.0f, 0.0f});
                if (gemm.can_implement(args) != cutlass::Status::kSuccess) return false;
                return gemm(args) == cutlass::Status::kSuccess;
            }};
}

__global__ void fill(float* p, size_t count, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = (h & 0xffff) / 32768.0f - 1.0f;
    }
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s ROUNDS SIZE...\n", argv[0]);
        return 2;
    }
    const int rounds = atoi(argv[1]);
    if (rounds < 1) {
        fprintf(stderr, "ROUNDS must be a whole number >= 1, got '%s'\n", argv[1]);
        return 2;
    }
    std::vector<int> sizes;  // all arguments checked before any CUDA call
    for (int a = 2; a < argc; ++a) {
        const int n = atoi(argv[a]);
        if (n < 1 || n > 32768) {
            fprintf(stderr, "SIZE must be in 1..32768, got '%s'\n", argv[a]);
            return 2;
        }
        sizes.push_back(n);
    }
    std::vector<Variant> variants = {
        variant<SimtSgemm<256, 128, 8, 64, 64, 4>>("cutlass 256x128x8 w64x64 s4"),
        variant<SimtSgemm<128, 256, 8, 64, 64, 4>>("cutlass 128x256x8 w64x64 s4"),
        variant<SimtSgemm<256, 128, 8, 64, 64, 3>>("cutlass 256x128x8 w64x64 s3"),
        variant<SimtSgemm<128, 128, 8, 32, 64, 4>>("cutlass 128x128x8 w32x64 s4"),
        variant<SimtSgemm<256, 128, 16, 64, 64, 3>>("cutlass 256x128x16 w64x64 s3"),
    };
    cublasHandle_t handle;
    if (cublasStatus_t st = cublasCreate(&handle); st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed (status %d): is there a GPU and its driver?\n", (int)st);
        return 1;
    }
    Variant cublas{"cublas sgemm", [&](int n, const float* A, const float* B, float* C) {
                       const float one = 1.0f, zero = 0.0f;
                       return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n) ==
                              CUBLAS_STATUS_SUCCESS;
                   }};
    variants.insert(variants.begin(), cublas);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    printf("%-32s %6s %s  %s\n", "kernel", "size", "TFLOP/s by round", "median, check");
    for (const int n : sizes) {
        const size_t count = (size_t)n * n;
        float *A, *B, *C, *R;
        CHECK(cudaMalloc(&A, count * 4));
        CHECK(cudaMalloc(&B, count * 4));
        CHECK(cudaMalloc(&C, count * 4));
        CHECK(cudaMalloc(&R, count * 4));
        fill<<<1024, 256>>>(A, count, 1);
        fill<<<1024, 256>>>(B, count, 2);
        if (!cublas.run(n, A, B, R)) return 1;
        CHECK(cudaDeviceSynchronize());
        std::vector<float> ref(count), out(count);
        CHECK(cudaMemcpy(ref.data(), R, count * 4, cudaMemcpyDeviceToHost));
        float scale = 0;
        for (float v : ref) scale = std::max(scale, std::fabs(v));
        // Check each variant once (C poisoned first), then time in rounds, order rotated.
        std::vector<double> error(variants.size());
        std::vector<bool> ok(variants.size());
        for (size_t v = 0; v < variants.size(); ++v) {
            CHECK(cudaMemset(C, 0xff, count * 4));
            ok[v] = variants[v].run(n, A, B, C);
            CHECK(cudaDeviceSynchronize());
            if (!ok[v]) continue;
            CHECK(cudaMemcpy(out.data(), C, count * 4, cudaMemcpyDeviceToHost));
            double e = 0;
            for (size_t i = 0; i < count; ++i) e = std::max(e, (double)std::fabs(out[i] - ref[i]));
            error[v] = e / scale;
            if (!(error[v] < 1e-5)) ok[v] = false;  // NaN (the poison) fails too
        }
        const int reps = std::max(3, (int)(2e12 / (2.0 * n * n * n)));  // ~2 TFLOP per timing
        std::vector<std::vector<double>> rate(variants.size());
        cudaEvent_t t0, t1;
        CHECK(cudaEventCreate(&t0));
        CHECK(cudaEventCreate(&t1));
        for (int r = 0; r < rounds; ++r) {
            for (size_t i = 0; i < variants.size(); ++i) {
                size_t v = (i + r) % variants.size();
                if (!ok[v]) continue;
                variants[v].run(n, A, B, C);  // warm-up
                CHECK(cudaEventRecord(t0));
                for (int k = 0; k < reps; ++k) variants[v].run(n, A, B, C);
                CHECK(cudaEventRecord(t1));
                CHECK(cudaEventSynchronize(t1));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, t0, t1));
                rate[v].push_back(2.0 * n * n * (double)n * reps / (ms * 1e-3) / 1e12);
            }
        }
        for (size_t v = 0; v < variants.size(); ++v) {
            printf("%-32s %6d ", variants[v].name.c_str(), n);
            if (!ok[v]) {
                printf("FAILED (cannot run, or error %.3g)\n", error[v]);
                continue;
            }
            for (double x : rate[v]) printf(" %5.1f", x);
            std::vector<double> s = rate[v];
            std::sort(s.begin(), s.end());
            printf("   %5.1f  error %.2g\n", s[s.size() / 2], error[v]);
        }
        cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(R);
    }
    return 0;
}
