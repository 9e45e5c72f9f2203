// tf32x3_split.cuh — the 3xTF32 pre-pass and fixup (21_wgmma_3xtf32.cu; registry: `includes`,
// after tf32.cuh).
// tf32x3_split: one f32 operand, read through its strides, becomes two K-major planes of f32
// holding tf32 values, big = tf32(x) and small = tf32(x − big), each `rows`×KP (row r, k at
// plane + r·KP + k; the small plane `rows`·KP floats after the big one), KP = K rounded up to a
// multiple of 32 (or further, for equal split-K pieces) with zeros past K. A is split with
// rows = M (element (r, k) = A[r·a_rs + k·a_cs]); B as Bᵀ, rows = N (element (r, k) =
// B[k·b_rs + r·b_cs]), so both operands reach the tensor cores K-major whatever their layout.
// A row holding a value the split cannot carry (±∞, or a nonzero |x| < 2⁻¹⁰⁴: `unsplittable`)
// sets its flag (flags[r], zeroed by the host before the pass) and `any`.
// Geometry: 256 threads (at most 64 registers: four blocks an SM, for the memory's sake); grid =
// (⌈rows/32⌉, min(KP/64, 65535)), a block walking k tiles of 64 in a grid-stride loop. Shared
// memory: a 32×64 tile of f32 (one column of padding).
// Traffic: reads the operand once (4 bytes an element, coalesced along whichever dimension is
// contiguous), writes 8 bytes an element (16-byte stores along k).

#define TF32X3_KPAD 32  // KP's multiple: the main kernel's BK divides it (Rust: TF32X3_K_PAD)

// x = big + small: big = tf32(x) to nearest, small = tf32(x − big) (x − big is exact in f32), so
// |x − big − small| ≤ 2⁻¹¹·|x − big| ≤ 2⁻²²·|x| (while x − big is not subnormal: |x| ≥ 2⁻¹⁰⁴).
// A finite x whose rounding overflows to ∞ takes big = x truncated to tf32, so both stay finite;
// an infinite x keeps small = 0 (∞ − ∞ is NaN; its row is flagged for the fixup); NaN stays NaN.
__device__ __forceinline__ float split_big(float x, float& small)
{
    unsigned big = to_tf32(x);
    if (isinf(__uint_as_float(big)) && !isinf(x)) big = __float_as_uint(x) & 0xffffe000u;
    small = __uint_as_float(to_tf32(isinf(x) ? 0.0f : x - __uint_as_float(big)));
    return __uint_as_float(big);
}

// Whether x is one the split cannot carry to SGEMM's result: ±∞ (small(∞) = 0 meets ∞ in a cross
// term), or a nonzero |x| < 2⁻¹⁰⁴, whose x − big is subnormal in f32 and loses bits in small's
// tf32 rounding (a subnormal x keeps only about 10 of its bits). Its row (column) is
// recomputed by the fixup.
__device__ __forceinline__ bool unsplittable(float x)
{
    const float a = fabsf(x);
    return isinf(x) || (a != 0.0f && a < 0x1p-104f);
}

extern "C" __global__ void __launch_bounds__(256, 4)
tf32x3_split(const float* __restrict__ X, float* __restrict__ planes, int rows, int K, int KP, int rs, int cs,
             unsigned* __restrict__ any, unsigned* __restrict__ flags)
{
    __shared__ float tile[32][65];
    const int tid = threadIdx.x;
    const int r0 = blockIdx.x * 32;
    const long long plane = (long long)rows * KP;
    for (int k0 = blockIdx.y * 64; k0 < KP; k0 += gridDim.y * 64) {
        load_split_tile(tile, X, rows, K, r0, k0, rs, cs);  // split_tile.cuh
        __syncthreads();
        // Write: per (row, 4 consecutive k) one float4 to each plane, consecutive threads along k.
#pragma unroll
        for (int it = 0; it < 2; it++) {
            const int idx = tid + it * 256;
            const int r = idx / 16, w = idx % 16;
            const int gr = r0 + r;
            if (gr < rows && k0 + 4 * w < KP) {
                float4 big, small;
                big.x = split_big(tile[r][4 * w], small.x);
                big.y = split_big(tile[r][4 * w + 1], small.y);
                big.z = split_big(tile[r][4 * w + 2], small.z);
                big.w = split_big(tile[r][4 * w + 3], small.w);
                const long long at = (long long)gr * KP + k0 + 4 * w;
                *reinterpret_cast<float4*>(planes + at) = big;
                *reinterpret_cast<float4*>(planes + plane + at) = small;
                if (unsplittable(tile[r][4 * w]) || unsplittable(tile[r][4 * w + 1]) ||
                    unsplittable(tile[r][4 * w + 2]) || unsplittable(tile[r][4 * w + 3])) {
                    flags[gr] = 1u;
                    *any = 1u;
                }
            }
        }
        __syncthreads();
    }
}

// The fixup behind the product: where `any` is set, every element of C whose row of A (flags[r])
// or column of B (flags[M + c]) holds an unsplittable value is recomputed as Σ_k A(r, k)·B(k, c)
// by FMA in k order, as SGEMM computes it: SGEMM's ∞ and NaN (a sum holding ∞ is ±∞ or NaN
// whatever the order) and its subnormal products. Otherwise one read of `any` per thread.
// Grid-stride over C, one thread an element: a matrix whose every row is flagged (all of it
// below 2⁻¹⁰⁴) runs at this loop's speed, a plain dot product per element.
extern "C" __global__ void __launch_bounds__(256)
tf32x3_fixup(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K,
             int a_rs, int a_cs, int b_rs, int b_cs, const unsigned* __restrict__ any,
             const unsigned* __restrict__ flags)
{
    if (*any == 0u) return;
    const long long count = (long long)M * N;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        const int r = (int)(i / N), c = (int)(i % N);
        if (flags[r] == 0u && flags[M + c] == 0u) continue;
        float sum = 0.0f;
        for (int k = 0; k < K; ++k)
            sum = fmaf(A[(long long)r * a_rs + (long long)k * a_cs], B[(long long)k * b_rs + (long long)c * b_cs], sum);
        C[i] = sum;
    }
}
