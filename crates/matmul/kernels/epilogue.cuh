// epilogue.cuh — how the consumer warpgroups of the wgmma kernels (15_wgmma.cu, 16_wgmma_tf32.cu)
// write their accumulators to C; compiled after hopper.cuh (registry: `includes`). Both kernels
// hold the same m64nBN f32 fragment per consumer warpgroup (wgmma's layout does not depend on the
// input type), so one epilogue serves both, in the direct orientation (the tile is C's) and the
// swapped one (the tile is C^T's, written transposed):
//   * direct stores: bounds-checked pair or element stores from the registers (any N);
//   * staged (STORE_BOXES > 0, C's rows a multiple of 16 bytes): the warpgroup writes its 64×BN
//     into STORE_BOXES swizzled boxes of 64 rows × 128 bytes in shared memory, conflict-free, and
//     one thread hands each box to a TMA store; the warpgroup waits only until TMA has read a box
//     before refilling it, so the next tile's products start while C drains.
// C_NARROW = 1: C in ELEM (bf16/f16), each f32 rounded to nearest even on the way (cvt.rn).
// Parameters: BN, STORE_BOXES (boxes per consumer warpgroup, dividing BN/32; 0 = direct stores
// only), C_NARROW.

#ifndef STORE_BOXES
#define STORE_BOXES 0
#endif
static_assert(STORE_BOXES == 0 || (BN / 32) % STORE_BOXES == 0, "epilogue: STORE_BOXES must divide BN/32");
#ifndef C_NARROW
#define C_NARROW 0
#endif
#if C_NARROW
typedef ELEM OUT;  // C stored as bf16/f16 bits
#else
typedef float OUT;
#endif
constexpr int ACC = BN / 2;                               // f32 accumulators per consumer thread
constexpr int C_BYTES = sizeof(OUT);
constexpr int C_BOX_COLS = 128 / C_BYTES;                 // a 128-byte swizzle row: 32 f32 or 64 16-bit
constexpr int C_BOX_BYTES = 64 * 128;                     // 64 rows (one warpgroup's) × 128 bytes
// Boxes staged per round by store_staged (and the 16-bit store_staged_t): STORE_BOXES, or fewer
// when a warpgroup's 64×BN holds fewer (BN = 64 with 16-bit C is one box).
constexpr int C_STAGE_BOXES = STORE_BOXES < BN / C_BOX_COLS ? STORE_BOXES : BN / C_BOX_COLS;
static_assert(STORE_BOXES == 0 || (BN / C_BOX_COLS) % C_STAGE_BOXES == 0, "epilogue: the staged boxes must divide BN");

// ---- the epilogue: this warpgroup's 64×BN of the tile, d[4j + 2h + c] = C(row0 + 8h, col0 + 8j + c)
// with row0 = 16·warp + lane/4 and col0 = 2·(lane % 4) -------------------------------------------

#if C_NARROW
// Two f32 values rounded to nearest even into one bf16x2/f16x2 word, lo in the lower half.
__device__ __forceinline__ unsigned pack_pair(float lo, float hi)
{
    unsigned r;  // cvt packs its first source into the upper half
#if defined(IN_BF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}
#endif

// Two neighbouring elements of C (lo at the lower address), rounded to C's type: 8 bytes of f32
// or 4 bytes of bf16x2/f16x2 at p (aligned to their size).
__device__ __forceinline__ void put_pair(void* p, float lo, float hi)
{
#if C_NARROW
    *reinterpret_cast<unsigned*>(p) = pack_pair(lo, hi);
#else
    *reinterpret_cast<float2*>(p) = make_float2(lo, hi);
#endif
}

// One element of C, rounded to C's type.
__device__ __forceinline__ void put_one(OUT* p, float v)
{
#if C_NARROW
    unsigned short r;
#if defined(IN_BF16)
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
#else
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
#endif
    *p = r;
#else
    *p = v;
#endif
}

// Byte offset of element (row, col) in a staged box: 128-byte rows, the 16-byte chunk index of a
// row XORed with row % 8 (TMA's 128-byte swizzle).
__device__ __forceinline__ int box_offset(int row, int col)
{
    const int byte = col * C_BYTES;
    return row * 128 + (((byte / 16) ^ (row % 8)) * 16) + byte % 16;
}

// Bounds-checked pair stores straight from the registers (any N).
__device__ __forceinline__ void store_direct(const float (&d)[ACC], OUT* __restrict__ C, int M, int N, int row0,
                                             int col0)
{
    const bool pairs = (N % 2) == 0;  // pair stores are aligned to their size only for even N
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        int col = col0 + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int row = row0 + 8 * h;
            if (row >= M) continue;
            OUT* c = C + (size_t)row * N + col;
            if (pairs && col + 1 < N) {
                put_pair(c, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            } else {
                if (col < N) put_one(c, d[4 * j + 2 * h]);
                if (col + 1 < N) put_one(c + 1, d[4 * j + 2 * h + 1]);
            }
        }
    }
}

// Through STORE_BOXES swizzled boxes of 64 rows × C_BOX_COLS in `boxes` and TMA stores to C at
// (row c_row, column c_col); needs C's rows to be a multiple of 16 bytes. A warp's pair writes
// (8 or 4 bytes) of one instruction cover 8 rows whose chunks (col / chunk) ^ (row % 8) differ:
// conflict-free.
__device__ __forceinline__ void store_staged(const float (&d)[ACC], unsigned char* boxes, const TmaMap* map_c, int wg,
                                             int warp, int lane, int c_row, int c_col, int cz)
{
#if STORE_BOXES > 0
    const bool lead = threadIdx.x % 128 == 0;  // the thread that issues (and waits for) the stores
    const int r0 = warp * 16 + lane / 4, q = lane % 4;
#pragma unroll
    for (int round = 0; round < BN / C_BOX_COLS / C_STAGE_BOXES; ++round) {
        if (lead) bulk_wait_read();  // the previous round's (or tile's) boxes have been read
        warpgroup_sync(wg);
#pragma unroll
        for (int b = 0; b < C_STAGE_BOXES; ++b) {
            unsigned char* box = boxes + b * C_BOX_BYTES;
            const int j0 = (round * C_STAGE_BOXES + b) * (C_BOX_COLS / 8);  // first 8-column group
#pragma unroll
            for (int jj = 0; jj < C_BOX_COLS / 8; ++jj) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    int i = 4 * (j0 + jj) + 2 * h;
                    put_pair(box + box_offset(r0 + 8 * h, 8 * jj + 2 * q), d[i], d[i + 1]);
                }
            }
        }
        fence_async_shared();
        warpgroup_sync(wg);
        if (lead) {
#pragma unroll
            for (int b = 0; b < C_STAGE_BOXES; ++b)
                tma_store_at(map_c, boxes + b * C_BOX_BYTES, c_col + (round * C_STAGE_BOXES + b) * C_BOX_COLS, c_row, cz);
            bulk_commit();
        }
    }
#endif
}

// The same for the swapped orientation (C^T = B^T·A^T): d[4j + 2h + c] = C(m0 + 8j + 2·(lane % 4) + c,
// n0 + 16·warp + lane/4 + 8h), so a thread's pairs run down a column of C.
__device__ __forceinline__ void store_direct_t(const float (&d)[ACC], OUT* __restrict__ C, int M, int N, int m0,
                                               int n0)
{
    const int n = n0 + (threadIdx.x % 128) / 32 * 16 + (threadIdx.x % 32) / 4, q = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                int row = m0 + 8 * j + 2 * q + c, col = n + 8 * h;
                if (row < M && col < N) put_one(C + (size_t)row * N + col, d[4 * j + 2 * h + c]);
            }
        }
    }
}

// Split-K's partial tile (15_wgmma.cu): the warpgroup's 64×BN f32 accumulators into a slab of
// M×N f32 in C's orientation, bounds-checked; (r0, c0) is the thread's first element of C:
// direct C(r0 + 8h, c0 + 8j + c), swapped (the tile is C^T's) C(r0 + 8j + c, c0 + 8h).
template <bool SWAP>
__device__ __forceinline__ void store_partial(const float (&d)[ACC], float* __restrict__ P, int M, int N, int r0,
                                              int c0)
{
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                const int row = SWAP ? r0 + 8 * j + c : r0 + 8 * h;
                const int col = SWAP ? c0 + 8 * h : c0 + 8 * j + c;
                if (row < M && col < N) P[(size_t)row * N + col] = d[4 * j + 2 * h + c];
            }
        }
    }
}

#if !C_NARROW
// Staged, f32: box (nb, mb) holds C's rows m0 + 64·mb + [0, 64) and columns n0 + 32·nb + [0, 32);
// warps 2·nb and 2·nb + 1 hold its values, so each round fills both nb of STORE_BOXES / 2 mb and
// every warp writes. For a fixed (j, h, c) the 32 lanes hit 8 distinct 16-byte chunks × 4 words:
// conflict-free 4-byte writes.
__device__ __forceinline__ void store_staged_t(const float (&d)[ACC], unsigned char* boxes, const TmaMap* map_c,
                                               int wg, int warp, int lane, int m0, int n0, int cz)
{
#if STORE_BOXES > 0
    static_assert(STORE_BOXES % 2 == 0, "epilogue: the swapped epilogue stages boxes in column pairs");
    const bool lead = threadIdx.x % 128 == 0;
    const int q = lane % 4;
#pragma unroll
    for (int round = 0; round < BN / 64 / (STORE_BOXES / 2); ++round) {
        if (lead) bulk_wait_read();
        warpgroup_sync(wg);
#pragma unroll
        for (int b = 0; b < STORE_BOXES; ++b) {
            const int nb = b % 2, mb = round * (STORE_BOXES / 2) + b / 2;
            if (warp / 2 != nb) continue;
            unsigned char* box = boxes + b * C_BOX_BYTES;
#pragma unroll
            for (int jj = 0; jj < 8; ++jj) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
#pragma unroll
                    for (int c = 0; c < 2; ++c) {
                        int row = 8 * jj + 2 * q + c, col = (warp % 2) * 16 + lane / 4 + 8 * h;
                        *reinterpret_cast<float*>(box + box_offset(row, col)) = d[4 * (8 * mb + jj) + 2 * h + c];
                    }
                }
            }
        }
        fence_async_shared();
        warpgroup_sync(wg);
        if (lead) {
#pragma unroll
            for (int b = 0; b < STORE_BOXES; ++b)
                tma_store_at(map_c, boxes + b * C_BOX_BYTES, n0 + (b % 2) * C_BOX_COLS,
                             m0 + (round * (STORE_BOXES / 2) + b / 2) * 64, cz);
            bulk_commit();
        }
    }
#endif
}
#else
// Staged, bf16/f16: box mb holds C's rows m0 + 64·mb + [0, 64) and all 64 of this warpgroup's
// columns n0 + [0, 64). Lane (g, q) = (lane / 4, lane % 4) holds rows r, r + 1 (r = 8j + 2q) of
// column n0 + 16·warp + 8h + g; it packs them into one word (row r low, r + 1 high) and trades
// words with lane ^ 4 (column g ^ 1), so that an even g stores row r, columns (g, g + 1) (both
// low halves) and an odd g row r + 1, columns (g − 1, g) (both high halves). (Shuffling the f32
// accumulators themselves made NVVM carry them as integers through the main loop, and ptxas
// then serialized every wgmma: warning C7514.)
// For a fixed (j, h) the 32 lanes write 8 rows (q, g & 1) × one 16-byte chunk (2·warp + h), and
// the swizzle sends the 8 rows' chunks to 8 distinct places: conflict-free.
__device__ __forceinline__ void store_staged_t(const float (&d)[ACC], unsigned char* boxes, const TmaMap* map_c,
                                               int wg, int warp, int lane, int m0, int n0, int cz)
{
#if STORE_BOXES > 0
    const bool lead = threadIdx.x % 128 == 0;
    const int q = lane % 4, g = lane / 4, odd = g & 1;
#pragma unroll
    for (int round = 0; round < BN / 64 / C_STAGE_BOXES; ++round) {
        if (lead) bulk_wait_read();
        warpgroup_sync(wg);
#pragma unroll
        for (int b = 0; b < C_STAGE_BOXES; ++b) {
            const int mb = round * C_STAGE_BOXES + b;
            unsigned char* box = boxes + b * C_BOX_BYTES;
#pragma unroll
            for (int jj = 0; jj < 8; ++jj) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int i = 4 * (8 * mb + jj) + 2 * h;
                    const unsigned mine = pack_pair(d[i], d[i + 1]);
                    const unsigned theirs = __shfl_xor_sync(0xffffffffu, mine, 4);
                    // __byte_perm picks bytes of {theirs, mine}: 0-3 mine, 4-7 theirs.
                    const unsigned pair = __byte_perm(mine, theirs, odd ? 0x3276 : 0x5410);
                    const int row = 8 * jj + 2 * q + odd, col = warp * 16 + 8 * h + (g & ~1);
                    *reinterpret_cast<unsigned*>(box + box_offset(row, col)) = pair;
                }
            }
        }
        fence_async_shared();
        warpgroup_sync(wg);
        if (lead) {
#pragma unroll
            for (int b = 0; b < C_STAGE_BOXES; ++b)
                tma_store_at(map_c, boxes + b * C_BOX_BYTES, n0, m0 + (round * C_STAGE_BOXES + b) * 64, cz);
            bulk_commit();
        }
    }
#endif
}
#endif

// This warpgroup's 64×BN accumulators to C. Direct (SWAP false): C's rows r + [0, 64), columns
// c + [0, BN). Swapped: C's rows r + [0, BN), columns c + [0, 64) (d holds the tile of C^T). With
// `staged` (STORE_BOXES > 0, C's rows a multiple of 16 bytes) through the boxes at `boxes`;
// the caller waits for the last stores (bulk_wait_all, thread 0 of the warpgroup) before the
// boxes' shared memory is released. `cz`: the product of a batch whose C the staged stores write
// (BATCHED builds; the direct stores get C already at that product).
template <bool SWAP>
__device__ __forceinline__ void store_c(const float (&d)[ACC], bool staged, unsigned char* boxes, const TmaMap* map_c,
                                        OUT* __restrict__ C, int M, int N, int wg, int warp, int lane, int r, int c,
                                        int cz = 0)
{
    if (SWAP) {
        if (staged) store_staged_t(d, boxes, map_c, wg, warp, lane, r, c, cz);
        else store_direct_t(d, C, M, N, r, c);
    } else {
        if (staged) store_staged(d, boxes, map_c, wg, warp, lane, r, c, cz);
        else store_direct(d, C, M, N, r + warp * 16 + lane / 4, c + (lane % 4) * 2);
    }
}

// Split-K's second step (15_wgmma.cu, 16_wgmma_tf32.cu, 21_wgmma_3xtf32.cu): C[i] = the sum over
// the `splits` slabs of `partial` (piece order), rounded to C's type; one thread an element, a
// grid-stride loop. Compensated (Neumaier): each addition's rounding error is kept in `err` and
// added at the end, so the sum errs by about one rounding whatever the number of pieces (the
// kernel is bound by memory: the extra FLOPs are free). A sum that is not finite skips the
// compensation (∞ − ∞ would make it NaN) and stays ±∞ or NaN.
extern "C" __global__ void __launch_bounds__(256) wgmma_reduce(const float* __restrict__ partial, OUT* __restrict__ C,
                                                              int count, int splits)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        float sum = 0.0f, err = 0.0f;
        for (int p = 0; p < splits; ++p) {
            const float x = partial[(size_t)p * count + i];
            const float t = sum + x;
            if (isfinite(t)) err += fabsf(sum) >= fabsf(x) ? (sum - t) + x : (x - t) + sum;
            sum = t;
        }
        put_one(C + i, sum + err);
    }
}
