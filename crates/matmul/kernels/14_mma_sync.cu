// mma-sync, mma-sync-wide — tensor-core ladder rung 1: warp-level mma.sync on tensor cores, fed
// from swizzled shared memory by a STAGES-deep cp.async pipeline.
// Changes from multistage (SIMT rung 5): the inner product of a K-slice runs on the tensor cores,
// one warp-wide mma.sync per 16×8×16 (bf16, f16) or 16×8×8 (tf32) product, with f32 accumulators
// in registers. Each operand stays in shared memory in its global orientation (rows along its
// contiguous dimension), so every copy is a straight 16-byte cp.async; a transpose, where the
// layout needs one, happens on the way out: ldmatrix vs ldmatrix.trans (16-bit), or which index a
// scalar 32-bit load walks (tf32: ldmatrix has no 32-bit transpose). No padding: an XOR swizzle of
// 16-byte chunks within each tile row avoids bank conflicts (`swz`).
// Bound: an H100 SM serves 128 B of shared memory per clock and retires one m16n8k16 (bf16) or
// m16n8k8 (tf32) per clock; per K-slice of a 128×128×32 block, bf16 needs 128 wavefronts of
// cp.async writes + 384 of ldmatrix for 256 MMAs, tf32 256 + 768 LDS.32 for 512: both cap at 50 %
// of the tensor-core peak. mma-sync-wide's 128×256 blocks (64×64 warp tiles) read less per MMA.
// Geometry: THREADS = 32·WARPS_M·WARPS_N; a warp owns a WM×WN = (BM/WARPS_M)×(BN/WARPS_N) tile of
// C, (WM/16)×(WN/8) m16n8 tiles; grid = (ceil(N/BN), ceil(M/BM)).
// Shared memory (dynamic): STAGES·(BM·BK + BK·BN) elements, stage s = [A tile, B tile]: A (BM, BK)
// when K-contiguous (a_cs = 1), else (BK, BM); B (BK, BN) when N-contiguous (b_cs = 1), else (BN, BK).
// Copy path per operand, chosen per launch: 16-byte cp.async where the stored rows and the base
// allow it; else 4-byte cp.async (one f32 or a 16-bit pair); else (16-bit, odd row length) element
// by element through registers, REG_COPY_UNROLL loads in flight. Out-of-range elements are zeros.
// Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM (float for tf32, matmul_u16 for bf16/f16), IN_BF16 | IN_F16 | IN_TF32, BM, BN,
// BK, STAGES (≥ 2), THREADS, WARPS_M (default 2), REG_COPY_UNROLL (default 4; mma-sync-wide 8).
// Constraints: sm_80 or newer; any M, N, K ≥ 1; each operand with a unit stride along its rows or
// its columns.

#if defined(IN_TF32)
#define MMA_TF32 1
#elif defined(IN_BF16) || defined(IN_F16)
#define MMA_TF32 0
#else
#error "mma-sync: compile with one of IN_BF16, IN_F16, IN_TF32"
#endif

#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef REG_COPY_UNROLL
#define REG_COPY_UNROLL 4
#endif

constexpr int ESZ = sizeof(ELEM);                    // bytes per stored element: 2 or 4
constexpr int CH = 16 / ESZ;                         // elements per 16-byte chunk
constexpr int WARPS_N = THREADS / 32 / WARPS_M;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // the warp tile of C
constexpr int MI = WM / 16, NI = WN / 8;             // m16×n8 MMA tiles per warp
constexpr int A_TILE = BM * BK, B_TILE = BK * BN;    // elements per stage and operand
constexpr int STAGE = A_TILE + B_TILE;               // elements per stage

static_assert(MMA_TF32 ? ESZ == 4 : ESZ == 2, "ELEM must be float for tf32, 16 bits for bf16/f16");
static_assert(STAGES >= 2, "at least two stages");
static_assert(THREADS == 32 * WARPS_M * WARPS_N, "THREADS must be 32·WARPS_M·WARPS_N");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles are made of 16×16 (two m16n8) tiles");
static_assert(BK % 16 == 0, "BK: whole k16 steps (bf16/f16) and 8-element tf32 chunk pairs");
static_assert((A_TILE * ESZ) % 1024 == 0 && (B_TILE * ESZ) % 1024 == 0, "tiles keep 1 KiB alignment");

// The PTX wrappers (cp.async, ldmatrix, mma.sync) are sm80.cuh's.
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- Swizzled tiles ----------------------------------------------------------------------------
// A tile is (ROWS, LEN): rows of LEN elements = CPR 16-byte chunks, row-major, no padding. Logical
// chunk c of row r is stored at chunk swz(r, c) of the same row. Shared memory serves 128 bytes
// (8 chunk slots) per wavefront; slot = (byte address / 16) % 8 (tiles are 1 KiB aligned).
//  * CPR ≥ 8 (rows of ≥ 128 B): c ^ rot(r % 8), rot(r) = (r & 3) << 1 | (r >> 2) & 1, a bijection of
//    0..7 that moves r's low two bits to the chunk's bits 1–2. Slot = (c % 8) ^ rot(r % 8).
//  * CPR < 8 (8/CPR rows per 128 B): c ^ ((r / (8/CPR)) % CPR). For CPR = 4 (64-byte rows: bf16
//    K-contiguous, BK = 32) slot = 4(r % 2) + (c ^ ((r/2) % 4)).
// Readers and their proofs (g = lane/4, t = lane%4; all tile row bases below are multiples of 8,
// and a row shift by a multiple of 8 leaves the swizzle unchanged):
//  * ldmatrix (one 128-byte wavefront per 8×8 matrix): 8 consecutive rows r0..r0+7, one logical
//    chunk c. CPR ≥ 8: slots (c % 8) ^ rot(i), i = 0..7, all distinct. CPR = 4: rows 2p, 2p+1
//    (p = 0..3) give slots 4·0 + (c ^ p), 4·1 + (c ^ p): all 8 distinct.
//  * tf32 K-contiguous operand, (rows m or n, LEN = BK): lane (g, t) reads row r0 + g, element t of
//    chunk c (fixed per load): bank = 4·slot + t with slot = c ^ rot(g) (CPR = 8) distinct over g:
//    32 distinct banks. (CPR = 4: slot 4(g % 2) + (c ^ g/2), also distinct.)
//  * tf32 M- or N-contiguous operand, (rows k, LEN = BM or BN ≥ 32, CPR ≥ 8): lane (g, t) reads row
//    k0 + t (+4), column n0 + g, n0 % 8 = 0: chunk n0/4 + g/4 (an even chunk c plus h = g/4),
//    element g % 4. Slot = (c % 8 + h) ^ rot(t) = bit 0: h (rot(t) is even for t < 4; rot(t + 4) is
//    odd: bit 0 flips for all alike), bits 1–2: (c/2 ^ t) % 4, distinct over t. So 8 distinct
//    slots over (h, t), and bank = 4·slot + g % 4: 32 distinct banks. (A plain c ^ r would map
//    (h, t) = (0, 1) and (1, 0) to one slot: a 2-way conflict.)
//  * cp.async 16-byte writes (8 threads per wavefront): consecutive threads take consecutive chunks
//    of a row (CPR ≥ 8: 8 chunks of one row, XORed by one value: distinct; CPR = 4: two rows).
template <int CPR>
__device__ __forceinline__ int swz(int row, int c)
{
    const unsigned r = static_cast<unsigned>(row);
    if constexpr (CPR >= 8)
        return c ^ static_cast<int>(((r & 3u) << 1) | ((r >> 2) & 1u));
    else
        return c ^ static_cast<int>((r / (8 / CPR)) % CPR);
}

// The element offset of (row, col) in a swizzled (ROWS, LEN) tile.
template <int LEN>
__device__ __forceinline__ int sw_off(int row, int col)
{
    static_assert(LEN % CH == 0, "tile rows are whole 16-byte chunks");
    constexpr int CPR = LEN / CH;
    static_assert(CPR >= 8 ? CPR % 8 == 0 : 8 % CPR == 0, "swizzle: CPR a power of two or a multiple of 8");
    const unsigned c = static_cast<unsigned>(col);
    return row * LEN + swz<CPR>(row, static_cast<int>(c / CH)) * CH + static_cast<int>(c % CH);
}

// ---- Global → shared copies --------------------------------------------------------------------

enum CopyPath { COPY16, COPY4, COPY_REGS };

// The copy path of an operand whose stored rows are `ld` elements apart and whose contiguous
// dimension has `len` elements (so a chunk is wholly in or out of range when `len` is a multiple).
__device__ __forceinline__ CopyPath copy_path(const ELEM* g, int ld, int len)
{
    const unsigned long long p = reinterpret_cast<unsigned long long>(g);
    if (ld % CH == 0 && len % CH == 0 && p % 16 == 0) return COPY16;
    if ((ld * ESZ) % 4 == 0 && (len * ESZ) % 4 == 0 && p % 4 == 0) return COPY4;
    return COPY_REGS;  // 16-bit with an odd row length (or a 2-byte-aligned base)
}

// Copies the (ROWS, LEN) tile whose (0, 0) is g[r0·ld + c0] into the swizzled smem tile; elements at
// or past (r_lim, c_lim) become zero. Every thread of the block calls it.
template <int ROWS, int LEN>
__device__ __forceinline__ void load_tile(ELEM* tile, const ELEM* __restrict__ g, CopyPath path, int ld, int r0,
                                          int c0, int r_lim, int c_lim)
{
    const int tid = threadIdx.x;
    if (path == COPY16) {
        // Consecutive threads take consecutive chunks of a row: coalesced 16-byte reads.
        constexpr int CPR = LEN / CH, N16 = ROWS * CPR;  // chunks in the tile
#pragma unroll
        for (int it = 0; it < (N16 + THREADS - 1) / THREADS; it++) {
            const int idx = tid + it * THREADS;
            if (N16 % THREADS != 0 && idx >= N16) break;
            const int row = idx / CPR, c = idx % CPR;   // (ROWS, CPR)
            const int gr = r0 + row, gc = c0 + c * CH;  // global (row, col)
            const bool in = gr < r_lim && gc < c_lim;
            const ELEM* src = in ? g + (long long)gr * ld + gc : g;
            cp_async16(smem_u32(tile + row * LEN + swz<CPR>(row, c) * CH), src, in);
        }
    } else if (path == COPY4) {
        // 4-byte units (one float or two 16-bit values; `len` even keeps a pair wholly in or out).
        constexpr int U = 4 / ESZ, UPR = LEN / U, N4 = ROWS * UPR;
#pragma unroll 4
        for (int it = 0; it < (N4 + THREADS - 1) / THREADS; it++) {
            const int idx = tid + it * THREADS;
            if (N4 % THREADS != 0 && idx >= N4) break;
            const int row = idx / UPR, col = (idx % UPR) * U;  // (ROWS, LEN)
            const int gr = r0 + row, gc = c0 + col;
            const bool in = gr < r_lim && gc < c_lim;
            const ELEM* src = in ? g + (long long)gr * ld + gc : g;
            cp_async4(smem_u32(tile + sw_off<LEN>(row, col)), src, in);
        }
    } else {
        if constexpr (ESZ == 2) {
            // Odd row lengths: one element at a time through registers (synchronous, but the
            // buffer is free: every warp passed the barrier after its last read of it), with
            // REG_COPY_UNROLL loads in flight per thread (more gains on odd rows at the wide tile
            // and costs registers at the narrow one).
            constexpr int N1 = ROWS * LEN;
#pragma unroll REG_COPY_UNROLL
            for (int it = 0; it < (N1 + THREADS - 1) / THREADS; it++) {
                const int idx = tid + it * THREADS;
                if (N1 % THREADS != 0 && idx >= N1) break;
                const int row = idx / LEN, col = idx % LEN;  // (ROWS, LEN)
                const int gr = r0 + row, gc = c0 + col;
                tile[sw_off<LEN>(row, col)] = gr < r_lim && gc < c_lim ? g[(long long)gr * ld + gc] : (ELEM)0;
            }
        }
    }
}

// ---- The kernel body, per layout ---------------------------------------------------------------
// A_KC: A is K-contiguous (A stored M×K, a_cs = 1, lda = a_rs), else M-contiguous (lda = a_cs).
// B_KC: B is K-contiguous (B stored N×K, b_rs = 1, ldb = b_cs), else N-contiguous (ldb = b_rs).
template <bool A_KC, bool B_KC>
__device__ __forceinline__ void mma_body(unsigned char* smem, const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K, int lda, int ldb)
{
    ELEM* tiles = reinterpret_cast<ELEM*>(smem);  // (STAGES, [A tile, B tile])
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, tq = lane % 4;  // the lane's group and thread-in-group (MMA fragments)
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;  // (WM, WN) within (BM, BN)
    const CopyPath a_path = copy_path(A, lda, A_KC ? K : M);
    const CopyPath b_path = copy_path(B, ldb, B_KC ? K : N);
    const int slices = (K + BK - 1) / BK;

    // The copies of slice t into stage buffer `buf`, as one cp.async group (an empty group past
    // the last slice keeps the wait counts uniform).
    auto issue = [&](int t, int buf) {
        if (t < slices) {
            ELEM* As = tiles + buf * STAGE;
            ELEM* Bs = As + A_TILE;
            const int k0 = t * BK;
            if constexpr (A_KC)
                load_tile<BM, BK>(As, A, a_path, lda, row0, k0, M, K);  // (BM, BK)
            else
                load_tile<BK, BM>(As, A, a_path, lda, k0, row0, K, M);  // (BK, BM)
            if constexpr (B_KC)
                load_tile<BN, BK>(Bs, B, b_path, ldb, col0, k0, N, K);  // (BN, BK)
            else
                load_tile<BK, BN>(Bs, B, b_path, ldb, k0, col0, K, N);  // (BK, BN)
        }
        cp_async_commit();
    };

    float acc[MI][NI][4];  // (MI, NI, m16n8 fragment): c0, c1 at (g, 2t, 2t+1), c2, c3 at row g + 8
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;

#if MMA_TF32
    // Fragments of m16n8k8 (g = lane/4, t = lane%4): a0 (m g, k t), a1 (g+8, t), a2 (g, t+4),
    // a3 (g+8, t+4); b0 (k t, n g), b1 (k t+4, n g). Each is a scalar 32-bit LDS, rounded to tf32.
    // The lane's offsets: the parts that shift a tile row by a multiple of 8 (no swizzle change)
    // are compile-time constants added at the load; the rest is precomputed here (t = tq):
    //   a_off, A_KC: [kk][q][0] = (m wm + g, k 8kk + 4q + t), the load adds (16mi + 8h)·BK;
    //          else: [q][mi][h] = (k 4q + t, m wm + 16mi + 8h + g), the load adds 8kk·BM.
    //   b_off, B_KC: [kk][q] = (n wn + g, k 8kk + 4q + t), the load adds 8ni·BK;
    //          else: [q][ni] = (k 4q + t, n wn + 8ni + g), the load adds 8kk·BN.
    constexpr int KSTEPS = BK / 8;
    int a_off[A_KC ? KSTEPS : 2][A_KC ? 2 : MI][A_KC ? 1 : 2];
    int b_off[B_KC ? KSTEPS : 2][B_KC ? 2 : NI];
#pragma unroll
    for (int x = 0; x < (A_KC ? KSTEPS : 2); x++)
#pragma unroll
        for (int y = 0; y < (A_KC ? 2 : MI); y++)
#pragma unroll
            for (int h = 0; h < (A_KC ? 1 : 2); h++)
                a_off[x][y][h] = A_KC ? sw_off<BK>(wm + g, x * 8 + y * 4 + tq)             // (BM, BK)
                                      : sw_off<BM>(x * 4 + tq, wm + y * 16 + h * 8 + g);  // (BK, BM)
#pragma unroll
    for (int x = 0; x < (B_KC ? KSTEPS : 2); x++)
#pragma unroll
        for (int y = 0; y < (B_KC ? 2 : NI); y++)
            b_off[x][y] = B_KC ? sw_off<BK>(wn + g, x * 8 + y * 4 + tq)   // (BN, BK)
                               : sw_off<BN>(x * 4 + tq, wn + y * 8 + g);  // (BK, BN)

    // acc += the products of the K-slice in stage buffer `buf`.
    auto compute = [&](int buf) {
        const float* As = reinterpret_cast<const float*>(tiles + buf * STAGE);  // (BM, BK) or (BK, BM)
        const float* Bs = As + A_TILE;                                          // (BN, BK) or (BK, BN)
#pragma unroll
        for (int kk = 0; kk < KSTEPS; kk++) {
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int q = 0; q < 2; q++)  // k + 4q
#pragma unroll
                    for (int h = 0; h < 2; h++)  // m + 8h
                        a[mi][h + 2 * q] = to_tf32(As[A_KC ? a_off[kk][q][0] + (mi * 16 + h * 8) * BK
                                                           : a_off[q][mi][h] + kk * 8 * BM]);
#pragma unroll
            for (int ni = 0; ni < NI; ni++)
#pragma unroll
                for (int q = 0; q < 2; q++)
                    b[ni][q] = to_tf32(Bs[B_KC ? b_off[kk][q] + ni * 8 * BK : b_off[q][ni] + kk * 8 * BN]);
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) mma_m16n8(acc[mi][ni], a[mi], b[ni]);
        }
    };
#else
    // Fragments of m16n8k16, two 16-bit values per register: A (16×16) is 4 8×8 matrices, j = 0..3
    // at (m + 8(j & 1), k + 8(j >> 1)); a pair of n8 tiles of B (16n × 16k) is 4 at
    // (n + 8(j >> 1), k + 8(j & 1)), so registers 0, 1 are b0b1, b2b3 of n-tile 2np and 2, 3 of
    // 2np + 1. Lane l gives the address of row l % 8 of matrix j = l / 8. A K-contiguous tile row
    // holds a matrix row (m, 8 k): plain ldmatrix; an M-contiguous one holds a column (k, 8 m):
    // ldmatrix.trans hands lane l the transposed pair. Likewise for B (K-contiguous: plain).
    constexpr int KSTEPS = BK / 16;
    const int i8 = lane % 8, j4 = lane / 8;
    int a_off[A_KC ? KSTEPS : MI];      // bytes; A_KC: [kk], + mi·16·BK; else [mi], + kk·16·BM
    int b_off[B_KC ? KSTEPS : NI / 2];  // bytes; B_KC: [kk], + np·16·BK; else [np], + kk·16·BN
#pragma unroll
    for (int x = 0; x < (A_KC ? KSTEPS : MI); x++)
        a_off[x] = ESZ * (A_KC ? sw_off<BK>(wm + (j4 & 1) * 8 + i8, x * 16 + (j4 >> 1) * 8)
                               : sw_off<BM>((j4 >> 1) * 8 + i8, wm + x * 16 + (j4 & 1) * 8));
#pragma unroll
    for (int x = 0; x < (B_KC ? KSTEPS : NI / 2); x++)
        b_off[x] = ESZ * (B_KC ? sw_off<BK>(wn + (j4 >> 1) * 8 + i8, x * 16 + (j4 & 1) * 8)
                               : sw_off<BN>((j4 & 1) * 8 + i8, wn + x * 16 + (j4 >> 1) * 8));
    const unsigned smem_base = smem_u32(tiles);

    // acc += the products of the K-slice in stage buffer `buf`.
    auto compute = [&](int buf) {
        const unsigned As = smem_base + buf * STAGE * ESZ, Bs = As + A_TILE * ESZ;
#pragma unroll
        for (int kk = 0; kk < KSTEPS; kk++) {
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
                ldsm_x4<!A_KC>(a[mi],
                               As + (A_KC ? a_off[kk] + mi * 16 * BK * ESZ : a_off[mi] + kk * 16 * BM * ESZ));
#pragma unroll
            for (int np = 0; np < NI / 2; np++) {
                unsigned r[4];
                ldsm_x4<!B_KC>(r, Bs + (B_KC ? b_off[kk] + np * 16 * BK * ESZ   // (BN, BK)
                                             : b_off[np] + kk * 16 * BN * ESZ));  // (BK, BN)
                b[2 * np][0] = r[0], b[2 * np][1] = r[1];
                b[2 * np + 1][0] = r[2], b[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) mma_m16n8(acc[mi][ni], a[mi], b[ni]);
        }
    };
#endif

    // The pipeline (as multistage): STAGES − 1 slices in flight ahead of the one being multiplied.
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) issue(s, s);
    int read = 0, write = STAGES - 1;  // stage buffers of slice t and of slice t + STAGES − 1
    for (int t = 0; t < slices; t++) {
        cp_async_wait<STAGES - 2>();   // this thread's copies of slice t have landed
        __syncthreads();               // everyone's have; everyone is done with slice t − 1
        issue(t + STAGES - 1, write);  // into slice t − 1's buffer
        compute(read);
        read = read + 1 == STAGES ? 0 : read + 1;
        write = write + 1 == STAGES ? 0 : write + 1;
    }
    cp_async_wait<0>();  // only empty groups remain; leave nothing in flight

    // Epilogue: the lane's C fragments, float2 where both columns exist and are 8-byte aligned.
    const bool pairs = N % 2 == 0 && reinterpret_cast<unsigned long long>(C) % 8 == 0;
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = row0 + wm + mi * 16 + h * 8 + g;  // row of c[2h], c[2h + 1]
            if (r >= M) continue;
            float* Cr = C + (long long)r * N;
#pragma unroll
            for (int ni = 0; ni < NI; ni++) {
                const int c = col0 + wn + ni * 8 + 2 * tq;  // (BM, BN) → C's column
                const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
                if (pairs && c + 1 < N) {
                    *reinterpret_cast<float2*>(Cr + c) = make_float2(v0, v1);
                } else {
                    if (c < N) Cr[c] = v0;
                    if (c + 1 < N) Cr[c + 1] = v1;
                }
            }
        }
}

extern "C" __global__ void __launch_bounds__(THREADS)
mma_sync(const ELEM* __restrict__ A, const ELEM* __restrict__ B, float* __restrict__ C, int M, int N, int K,
         int a_rs, int a_cs, int b_rs, int b_cs)
{
    extern __shared__ __align__(128) unsigned char smem[];
    // One uniform branch per launch picks the layout pair; a unit stride on both sides (M = 1 or
    // K = 1) is served by either reading.
    const bool a_kc = a_cs == 1, b_kc = b_rs == 1;
    const int lda = a_kc ? a_rs : a_cs, ldb = b_kc ? b_cs : b_rs;
    if (a_kc) {
        if (b_kc)
            mma_body<true, true>(smem, A, B, C, M, N, K, lda, ldb);
        else
            mma_body<true, false>(smem, A, B, C, M, N, K, lda, ldb);
    } else {
        if (b_kc)
            mma_body<false, true>(smem, A, B, C, M, N, K, lda, ldb);
        else
            mma_body<false, false>(smem, A, B, C, M, N, K, lda, ldb);
    }
}
