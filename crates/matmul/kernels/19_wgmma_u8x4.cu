// wgmma-u8x4 — exact wrapping u32 GEMM on Hopper's int8 tensor cores through wgmma (sm_90a), by
// the byte split of mma-u8x4 (18_mma_u8x4.cu: the same pre-pass, planes, pair order and shift
// groups; the arithmetic and its exactness are explained there).
// Changes from mma-u8x4: the products run as wgmma.mma_async m64n128k32 s32.u8.u8 (one warpgroup,
// 64×128×32 per instruction, no .satfinite: the s32 accumulators wrap), both operands read from
// shared memory through descriptors (K-major, 128-byte swizzle), no ldmatrix.
// Why faster: wgmma reaches most of the int8 peak (1,979 dense TOPS on an H100; ÷ 10 products
// ≈ 198 TOPS of u32), mma.sync about half of it.
// Not yet 15_wgmma.cu's pipeline: the plane tiles arrive by cp.async from every thread (not TMA),
// there is no producer warpgroup and no persistent grid, and each slice's wgmma group is waited
// for before the next slice's copies reuse a buffer. The cp.async tile layout is exactly the
// 128-byte swizzle wgmma reads (rows of 128 bytes of k, chunk c of row r at c ^ r % 8, 1024-byte
// aligned 8-row groups), so a TMA producer can replace the copies without touching the consumer.
// Geometry: THREADS = 256, two warpgroups, each 64 rows × BN of the BM×BN = 128×128 tile;
// grid = (⌈N/BN⌉, ⌈M/BM⌉).
// Shared memory (dynamic): STAGES·(BM + BN)·BK bytes (BK = 128 bytes of k) + 1 KB to align the
// buffers to the swizzle's 1024-byte period.
// Traffic model per output element: as mma-u8x4, 10·KP·(1/BN + 1/BM) plane bytes + the pre-pass.
// Parameters: BM = 128, BN = 128, BK = 128, STAGES, THREADS = 256.
// Constraints: u32 only; sm_90a.

#ifndef U8X4_KPAD
#error "u8x4_split.cuh first (registry includes)"
#endif

static_assert(BM == 128 && BN == 128 && BK == 128 && THREADS == 256,
              "wgmma-u8x4: two warpgroups of 64×128, one 128-byte swizzle row of k per slice");
static_assert(U8X4_KPAD % BK == 0, "BK divides KP's multiple");

constexpr int STAGE = (BM + BN) * BK;  // bytes per stage: [A tile (BM, BK), B tile (BN, BK)]
constexpr int ACC = BN / 2;            // s32 accumulators per thread (64×BN per warpgroup)

// The 10 byte pairs (i, j) in slice order and the pairs that end a shift group (18_mma_u8x4.cu).
constexpr unsigned PAIR_I = 0u | 0u << 2 | 1u << 4 | 0u << 6 | 1u << 8 | 2u << 10 | 0u << 12 | 1u << 14 | 2u << 16 | 3u << 18;
constexpr unsigned PAIR_S = 0u | 1u << 2 | 1u << 4 | 2u << 6 | 2u << 8 | 2u << 10 | 3u << 12 | 3u << 14 | 3u << 16 | 3u << 18;
constexpr unsigned GROUP_END = 1u << 0 | 1u << 2 | 1u << 5 | 1u << 9;

// Byte offset of (row, byte) in a (ROWS, 128) tile in the 128-byte swizzle.
__device__ __forceinline__ int sw128(int row, int byte)
{
    return row * 128 + (((byte >> 4) ^ (row & 7)) << 4) + (byte & 15);
}

template <int ROWS>
__device__ __forceinline__ void load_plane_tile(unsigned tile, const unsigned char* __restrict__ plane, int KP,
                                                int r0, int r_lim, int k0)
{
    constexpr int N16 = ROWS * 8;
#pragma unroll
    for (int it = 0; it < N16 / THREADS; it++) {
        const int idx = threadIdx.x + it * THREADS;
        const int row = idx / 8, c = idx % 8;
        const int gr = r0 + row;
        const bool in = gr < r_lim;
        const unsigned char* src = in ? plane + (long long)gr * KP + k0 + c * 16 : plane;
        cp_async16(tile + sw128(row, c * 16), src, in);
    }
}

// d (64×128 s32, 64 per thread) += A·B: A 64×32 u8 and B 32×128 u8 from shared memory, both
// K-major (descriptors). Integer wgmma has no scale or transpose operands; it wraps.
__device__ __forceinline__ void wgmma_m64n128k32_u8(unsigned (&d)[64], u64 desc_a, u64 desc_b)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.u8\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},\n"
        "%64, %65, 1;\n"
        "}\n"
#define R8(i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), \
              "+r"(d[i + 6]), "+r"(d[i + 7])
        : R8(0), R8(8), R8(16), R8(24), R8(32), R8(40), R8(48), R8(56)
#undef R8
        : "l"(desc_a), "l"(desc_b));
}

extern "C" __global__ void __launch_bounds__(THREADS)
wgmma_u8x4(const matmul_u32* __restrict__ A, const matmul_u32* __restrict__ B, matmul_u32* __restrict__ C, int M,
           int N, int K, int a_rs, int a_cs, int b_rs, int b_cs, const unsigned char* __restrict__ planes, int KP)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    // The buffers at the swizzle's 1024-byte period (the host asks for 1 KB more).
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const unsigned char* a_planes = planes;
    const unsigned char* b_planes = planes + 4ll * M * KP;
    const long long a_plane = (long long)M * KP, b_plane = (long long)N * KP;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int nk = KP / BK;
    const int slices = 10 * nk;

    auto issue = [&](int t, int buf) {
        if (t < slices) {
            const int p = t / nk, k0 = (t - p * nk) * BK;
            const int i = (PAIR_I >> (2 * p)) & 3, j = ((PAIR_S >> (2 * p)) & 3) - i;
            const unsigned As = base + buf * STAGE, Bs = As + BM * BK;
            load_plane_tile<BM>(As, a_planes + i * a_plane, KP, row0, M, k0);
            load_plane_tile<BN>(Bs, b_planes + j * b_plane, KP, col0, N, k0);
        }
        cp_async_commit();
    };

    unsigned acc[ACC], res[ACC];
#pragma unroll
    for (int e = 0; e < ACC; e++) acc[e] = 0u, res[e] = 0u;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) issue(s, s);
    int read = 0, write = STAGES - 1;
    for (int t = 0; t < slices; t++) {
        cp_async_wait<STAGES - 2>();
        // The copies are generic-proxy writes; wgmma reads through the async proxy.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();  // everyone's copies of slice t landed; every wgmma of slice t − 1 is done
        issue(t + STAGES - 1, write);
        const unsigned As = base + read * STAGE, Bs = As + BM * BK;
#pragma unroll
        for (int e = 0; e < ACC; e++) fence_operand(acc[e]);
        wgmma_fence();
        // K-major, 128-byte swizzle: 8-row groups 1024 bytes apart (SBO); the next 32 bytes of k
        // 32 bytes further in the row (2 in the descriptor's address field).
        const u64 da = smem_desc(As + wg * 64 * 128, 16, 1024), db = smem_desc(Bs, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) wgmma_m64n128k32_u8(acc, da + kk * 2, db + kk * 2);
        wgmma_commit();
        wgmma_wait<0>();
#pragma unroll
        for (int e = 0; e < ACC; e++) fence_operand(acc[e]);
        read = read + 1 == STAGES ? 0 : read + 1;
        write = write + 1 == STAGES ? 0 : write + 1;
        const int p = t / nk;
        if (t + 1 == (p + 1) * nk && ((GROUP_END >> p) & 1)) {
            const int shift = 8 * ((PAIR_S >> (2 * p)) & 3);
#pragma unroll
            for (int e = 0; e < ACC; e++) {
                res[e] += acc[e] << shift;
                acc[e] = 0u;
            }
        }
    }
    cp_async_wait<0>();

    // The accumulator layout of m64nN: d[4j + 2h + {0, 1}] at row 16·warp + lane/4 + 8h, columns
    // 8j + 2·(lane % 4) + {0, 1} of the warpgroup's 64×BN.
    const int r_base = row0 + wg * 64 + warp * 16 + lane / 4, c_base = col0 + 2 * (lane % 4);
    const bool pairs = N % 2 == 0 && reinterpret_cast<unsigned long long>(C) % 8 == 0;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        const int c = c_base + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = r_base + 8 * h;
            if (r >= M) continue;
            matmul_u32* Cr = C + (long long)r * N;
            const matmul_u32 v0 = res[4 * j + 2 * h], v1 = res[4 * j + 2 * h + 1];
            if (pairs && c + 1 < N) {
                *reinterpret_cast<uint2*>(Cr + c) = make_uint2(v0, v1);
            } else {
                if (c < N) Cr[c] = v0;
                if (c + 1 < N) Cr[c + 1] = v1;
            }
        }
    }
}
