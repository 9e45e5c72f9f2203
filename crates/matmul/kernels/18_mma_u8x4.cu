// mma-u8x4 — exact wrapping u32 GEMM (C = A·B mod 2^32) on the int8 tensor cores through
// mma.sync (sm_80+), by the byte split: a = Σ a_i·2^(8i), b = Σ b_j·2^(8j) (bytes a_i, b_j), and
// modulo 2^32 only the 10 byte products with i + j ≤ 3 remain: a·b ≡ Σ_s 2^(8s)·Σ_{i+j=s} a_i·b_j.
// Each byte product is a u8·u8 GEMM with s32 accumulators; mma.sync's integer MMA without
// .satfinite wraps on overflow, so every accumulator is exact modulo 2^32 for any K (u8·u8 sums
// pass 2^32 past K = 66,051), and so is the shifted total.
// Changes from multistage (SIMT, IMAD): the products run on the tensor cores (one m16n8k32
// u8·u8 → s32 mma.sync per 16×8×32), 10 of them per element product.
// Why faster: an H100 SM does 1024 dense int8 MACs a clock against 64 IMADs; ÷ 10 products that
// is 1.6× IMAD at most for mma.sync (mma.sync reaches about half the int8 peak, as mma-sync does
// for bf16), so this rung is the portable fallback and the wgmma rung the fast one.
// The pre-pass (u8x4_split.cuh, on the stream before this kernel, inside the timed region)
// writes the byte planes once: A as 4 planes of M×KP u8, B^T as 4 planes of N×KP u8, both
// K-contiguous, KP = K rounded up to 128 with zeros, so this kernel has no K edge and no
// transposes. The 10 products run as 4 shift groups, each one GEMM over K concatenated
// (s + 1)-fold: group s multiplies [A_0 … A_s] by [B_s … B_0]; a group's s32 accumulators are
// folded into the u32 result (res += acc << 8s) at its end and restarted. One pipeline walks the
// 10·KP/BK slices of all groups (slice t: pair t / (KP/BK), k slice t % (KP/BK)).
// Geometry: THREADS = 256, 8 warps as 2 (M) × 4 (N), warp tile WM×WN = (BM/2)×(BN/4):
// (WM/16)×(WN/8) m16n8 tiles; grid = (⌈N/BN⌉, ⌈M/BM⌉).
// Shared memory (dynamic): STAGES·(BM + BN)·BK bytes (+ 1 KB the host adds for wgmma-u8x4's alignment, unused here), stage = [A plane tile (BM, BK),
// B plane tile (BN, BK)], 16-byte chunks XOR-swizzled by row (BK = 128: chunk c ^ row % 8), so
// cp.async writes and ldmatrix reads are conflict-free.
// Traffic model per output element: the planes' 10·2·KP/BM-ish bytes per tile pass (each slice
// reads a BM×BK and a BN×BK byte tile: 10·KP·(1/BN + 1/BM) bytes per output), plus the pre-pass
// (read 4(M·K + K·N), write as many).
// Parameters: BM, BN, BK (bytes of k per slice; a multiple of 32 dividing 128), STAGES, THREADS.
// Constraints: u32 only; sm_80+ (integer mma.sync).

#ifndef U8X4_KPAD
#error "u8x4_split.cuh first (registry includes)"
#endif

constexpr int WARPS_M = 2, WARPS_N = THREADS / 32 / WARPS_M;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
constexpr int MI = WM / 16, NI = WN / 8;
constexpr int CPR = BK / 16;  // 16-byte chunks per tile row
constexpr int STAGE = (BM + BN) * BK;
static_assert(U8X4_KPAD % BK == 0 && BK % 32 == 0, "BK: a multiple of 32 that divides KP's multiple");
static_assert(CPR == 8, "the swizzle below is for 128-byte rows");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles of whole m16 rows and n8 pairs");

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The byte offset of 16-byte chunk c of tile row `row` (128-byte rows, 8 chunks): c ^ row % 8.
__device__ __forceinline__ int u8_off(int row, int byte)
{
    return row * BK + (((byte >> 4) ^ (row & 7)) << 4) + (byte & 15);
}

// d (16×8, s32) += a (16×32, u8, row) · b (32×8, u8, col); wraps (no .satfinite).
__device__ __forceinline__ void mma_u8(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The 10 byte pairs (i, j) in slice order, two bits each: group s = i + j ascending.
constexpr unsigned PAIR_I = 0u | 0u << 2 | 1u << 4 | 0u << 6 | 1u << 8 | 2u << 10 | 0u << 12 | 1u << 14 | 2u << 16 | 3u << 18;
constexpr unsigned PAIR_S = 0u | 1u << 2 | 1u << 4 | 2u << 6 | 2u << 8 | 2u << 10 | 3u << 12 | 3u << 14 | 3u << 16 | 3u << 18;
// The pairs that end a group: 0, 2, 5, 9.
constexpr unsigned GROUP_END = 1u << 0 | 1u << 2 | 1u << 5 | 1u << 9;

// Copies a (ROWS, BK) byte tile whose row 0 is plane row r0 into the swizzled smem tile; rows
// at or past r_lim become zero. Every thread of the block calls it.
template <int ROWS>
__device__ __forceinline__ void load_plane_tile(unsigned tile, const unsigned char* __restrict__ plane, int KP,
                                                int r0, int r_lim, int k0)
{
    constexpr int N16 = ROWS * CPR;
#pragma unroll
    for (int it = 0; it < (N16 + THREADS - 1) / THREADS; it++) {
        const int idx = threadIdx.x + it * THREADS;
        if (N16 % THREADS != 0 && idx >= N16) break;
        const int row = idx / CPR, c = idx % CPR;
        const int gr = r0 + row;
        const bool in = gr < r_lim;
        const unsigned char* src = in ? plane + (long long)gr * KP + k0 + c * 16 : plane;
        cp_async16(tile + u8_off(row, c * 16), src, in);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
mma_u8x4(const matmul_u32* __restrict__ A, const matmul_u32* __restrict__ B, matmul_u32* __restrict__ C, int M,
         int N, int K, int a_rs, int a_cs, int b_rs, int b_cs, const unsigned char* __restrict__ planes, int KP)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned char* a_planes = planes;                              // 4 × (M, KP)
    const unsigned char* b_planes = planes + 4ll * M * KP;               // 4 × (N, KP)
    const long long a_plane = (long long)M * KP, b_plane = (long long)N * KP;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, tq = lane % 4;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int nk = KP / BK;        // k slices per pair
    const int slices = 10 * nk;    // all pairs
    const unsigned smem_base = smem_u32(smem);

    auto issue = [&](int t, int buf) {
        if (t < slices) {
            const int p = t / nk, k0 = (t - p * nk) * BK;
            const int i = (PAIR_I >> (2 * p)) & 3, j = ((PAIR_S >> (2 * p)) & 3) - i;
            const unsigned As = smem_base + buf * STAGE, Bs = As + BM * BK;
            load_plane_tile<BM>(As, a_planes + i * a_plane, KP, row0, M, k0);
            load_plane_tile<BN>(Bs, b_planes + j * b_plane, KP, col0, N, k0);
        }
        cp_async_commit();
    };

    int acc[MI][NI][4];
    matmul_u32 res[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0, res[mi][ni][e] = 0u;

    // Fragments of m16n8k32 (u8), 4 bytes per register: A (16×32) as 4 8×16-byte matrices at
    // (m + 8(j & 1), k + 16(j >> 1)) — the layout of 16-bit m16n8k16 with k counted in bytes — so
    // plain ldmatrix (b16) of the K-contiguous tile serves; B (n8 × k32) pairs of n tiles likewise,
    // 4 matrices at (n + 8(j >> 1), k + 16(j & 1)).
    const int i8 = lane % 8, j4 = lane / 8;
    const int a_row = wm + (j4 & 1) * 8 + i8, a_k = (j4 >> 1) * 16;  // + mi·16 rows, + kk·32 bytes
    const int b_row = wn + (j4 >> 1) * 8 + i8, b_k = (j4 & 1) * 16;  // + np·16 rows

    auto compute = [&](int buf) {
        const unsigned As = smem_base + buf * STAGE, Bs = As + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
                ldsm_x4<false>(a[mi], As + u8_off(a_row + mi * 16, kk * 32 + a_k));
#pragma unroll
            for (int np = 0; np < NI / 2; np++) {
                unsigned r[4];
                ldsm_x4<false>(r, Bs + u8_off(b_row + np * 16, kk * 32 + b_k));
                b[2 * np][0] = r[0], b[2 * np][1] = r[1];
                b[2 * np + 1][0] = r[2], b[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) mma_u8(acc[mi][ni], a[mi], b[ni]);
        }
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) issue(s, s);
    int read = 0, write = STAGES - 1;
    for (int t = 0; t < slices; t++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        issue(t + STAGES - 1, write);
        compute(read);
        read = read + 1 == STAGES ? 0 : read + 1;
        write = write + 1 == STAGES ? 0 : write + 1;
        const int p = t / nk;
        if (t + 1 == (p + 1) * nk && ((GROUP_END >> p) & 1)) {
            // The end of shift group s: res += acc · 2^(8s) (mod 2^32), and restart acc.
            const int shift = 8 * ((PAIR_S >> (2 * p)) & 3);
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        res[mi][ni][e] += static_cast<matmul_u32>(acc[mi][ni][e]) << shift;
                        acc[mi][ni][e] = 0;
                    }
        }
    }
    cp_async_wait<0>();

    // Epilogue: c0, c1 at (g, 2tq, 2tq + 1), c2, c3 at row g + 8; uint2 where both columns exist
    // and are 8-byte aligned.
    const bool pairs = N % 2 == 0 && reinterpret_cast<unsigned long long>(C) % 8 == 0;
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = row0 + wm + mi * 16 + h * 8 + g;
            if (r >= M) continue;
            matmul_u32* Cr = C + (long long)r * N;
#pragma unroll
            for (int ni = 0; ni < NI; ni++) {
                const int c = col0 + wn + ni * 8 + 2 * tq;
                const matmul_u32 v0 = res[mi][ni][2 * h], v1 = res[mi][ni][2 * h + 1];
                if (pairs && c + 1 < N) {
                    *reinterpret_cast<uint2*>(Cr + c) = make_uint2(v0, v1);
                } else {
                    if (c < N) Cr[c] = v0;
                    if (c + 1 < N) Cr[c + 1] = v1;
                }
            }
        }
}
