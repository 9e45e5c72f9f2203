// simt-tma — SIMT ladder rung 7 (Hopper, sm_90a): multistage-raster's warp and lane tiles, with the
// tiles of A and B brought into shared memory by TMA instead of cp.async.
// Changes from multistage-raster:
// - Loads: one thread issues two TMA box copies per K-slice into a STAGES-deep ring; they complete
//   on the slice's mbarrier, which every thread waits on. The copies' address arithmetic and
//   bounds selects leave the loop (TMA zero-fills past M, N and K). One barrier per slice frees
//   the oldest buffer for thread 0's next copy.
// - No transpose: TMA copies boxes as stored, so an operand with K contiguous (A for op(A) = N, B
//   for op(B) = T) arrives as rows of BK elements along K ("k-rows"). A lane reads 4 consecutive k
//   of one of its rows with one LDS.128 and takes the k-steps in groups of 4: per group as many
//   LDS.128 as multistage, grouped by row instead of by k.
// - Conflict-free k-rows without a swizzle: the lanes that read at once take consecutive rows
//   (r = base + i·LANES + g; LANES = 4 along M, 8 along N), and a row is BK/4 16-byte units with
//   BK/4 odd, so up to 8 consecutive rows start in distinct units of a 128-byte line.
// - C: along a k-rows side a lane's rows are interleaved, so for op(B) = T C is stored element by
//   element; for op(B) = N by rows of 4 (element by element at SCALAR_C's tilings, simt_tile.cuh).
// On the H100 its loop has fewer instructions but a lower issue rate than multistage-raster's;
// `--kernel auto` and the tune table do not pick it.
// Geometry: as multistage (THREADS = (BM/WM)·(BN/WN)·32; grid = (ceil(N/BN), ceil(M/BM)), renumbered
// by RASTER_GROUP). Shared memory (dynamic): STAGES·BK·(BM + BN) elements, then the STAGES
// mbarriers, plus 128 bytes of alignment slack. Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM, BM, BN, BK, TM, TN, WM, WN, WNITER, STAGES, THREADS, MIN_BLOCKS, RASTER_GROUP.
// Constraints: sm_90a; stored rows of A and B multiples of 16 bytes (TMA), which makes a_cs == 1
// exactly when op(A) = N and b_rs == 1 exactly when op(B) = T (the layouts the kernel and the
// host's maps, src/cuda/tma.rs `simt_maps`, read); BM, BN ≤ 256 (a box edge); BK/4 odd; PAD 0.

#ifndef RASTER_GROUP
#define RASTER_GROUP 8
#endif

static_assert(WM > 0 && STAGES >= 2, "simt-tma: warp tiling and at least two stages");
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as 4-element words");
static_assert(THREADS == (BM / WM) * (BN / WN) * 32, "one warp per WM×WN tile");
static_assert(BK % 4 == 0 && (BK / 4) % 2 == 1, "BK/4 odd: k-rows of BK elements are read without conflicts");
static_assert(BM <= 256 && BN <= 256, "a TMA box edge is at most 256 elements");
static_assert((BM * BK * sizeof(ELEM)) % 128 == 0 && (BN * BK * sizeof(ELEM)) % 128 == 0,
              "every TMA destination is 128-byte aligned");

namespace tma_tile {
// The warp and lane tiles are multistage's (simt_tile.cuh's WarpTile); only the lane-to-row
// mapping of a k-rows side differs (Side below).
constexpr int WSUBM = WarpTile::WSUBM, WSUBN = WarpTile::WSUBN;
constexpr int LANES_N = WarpTile::LANES_N, LANES_M = 32 / LANES_N;
constexpr int RM = WarpTile::RM, RN = WarpTile::RN;  // a lane's register tile
constexpr int A_ELEMS = BM * BK, STAGE_ELEMS = BK * (BM + BN);
constexpr unsigned STAGE_BYTES = STAGE_ELEMS * sizeof(ELEM);
constexpr int GROUPS = BK / 4;  // k-steps are taken 4 at a time (one LDS.128 along a k-row)
}  // namespace tma_tile

// One side (A: rows m, R = RM; B: columns n, R = RN) of a lane's register tile: where its R
// rows lie in the block's tile and how its fragments are read from shared memory.
// K_ROWS: the side is stored [rows][BK] (k contiguous); else [BK][rows] (k-major).
template <bool K_ROWS, int R, int T, int SUB, int LANES, int ROWS>
struct Side {
    int base;  // the lane's first row, relative to the block's tile

    // w0: the warp's first row; g: the lane's index along this side; T, SUB: the register tile
    // edge and sub-tile stride of the k-major mapping (multistage's).
    __device__ __forceinline__ Side(int w0, int g) : base(K_ROWS ? w0 + g : w0 + g * T) {}

    // Row of register i (constant offsets from `base`).
    __device__ __forceinline__ static constexpr int offset(int i)
    {
        return K_ROWS ? i * LANES : (i / T) * SUB + i % T;
    }

    // f[i][q] = the side's value at row i, k = 4·group + q, from the stage's tile `s`. (One lane
    // pointer, then constant offsets: written as one element index, ptxas kept a register per
    // k-major row, rebuilt each slice.)
    __device__ __forceinline__ void load(ELEM (&f)[R][4], const ELEM* s, int group) const
    {
        const ELEM* p = s + (K_ROWS ? base * BK : base);
        if (K_ROWS) {
#pragma unroll
            for (int i = 0; i < R; i++) load4(f[i], p + offset(i) * BK + group * 4);
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int i = 0; i < R; i += 4) {
                    ELEM v[4];
                    load4(v, p + (group * 4 + q) * ROWS + offset(i));
#pragma unroll
                    for (int e = 0; e < 4; e++) f[i + e][q] = v[e];
                }
        }
    }
};

template <bool A_ROWS, bool B_ROWS>
__device__ __forceinline__ void simt_tma_body(ELEM* __restrict__ C, int M, int N, int K, const TmaMap* map_a,
                                              const TmaMap* map_b)
{
    using namespace tma_tile;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    // The TMA destinations must be 128-byte aligned; the launch adds 128 bytes of slack.
    ELEM* stages = reinterpret_cast<ELEM*>(smem_raw + ((128 - (smem_u32(smem_raw) & 127)) & 127));
    u64* full = reinterpret_cast<u64*>(stages + STAGES * STAGE_ELEMS);  // slice landed (TMA bytes)

    int by = blockIdx.y, bx = blockIdx.x;
    if (RASTER_GROUP > 0) tile_coords(by * gridDim.x + bx, gridDim.y, gridDim.x, RASTER_GROUP, by, bx);
    const int row0 = by * BM, col0 = bx * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const Side<A_ROWS, RM, TM, WSUBM, LANES_M, BM> a_side((warp / (BN / WN)) * WM, lane / LANES_N);
    const Side<B_ROWS, RN, TN, WSUBN, LANES_N, BN> b_side((warp % (BN / WN)) * WN, lane % LANES_N);
    const int slices = (K + BK - 1) / BK;

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++) mbar_init(&full[s], 1);  // thread 0's arrive.expect_tx + the bytes
        fence_mbarrier_init();
    }
    __syncthreads();

    // Slice u into stage buffer s: A's box at (k, m) or (m, k), B's at (n, k) or (k, n) (inner
    // coordinate first), completing STAGE_BYTES (zero-filled parts included) on full[s].
    auto issue = [&](int u, int s) {
        ELEM* As = stages + s * STAGE_ELEMS;
        mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
        if (A_ROWS) tma_load(As, map_a, &full[s], u * BK, row0);
        else tma_load(As, map_a, &full[s], row0, u * BK);
        if (B_ROWS) tma_load(As + A_ELEMS, map_b, &full[s], u * BK, col0);
        else tma_load(As + A_ELEMS, map_b, &full[s], col0, u * BK);
    };
    if (tid == 0) {
#pragma unroll
        for (int u = 0; u < STAGES - 1; u++)
            if (u < slices) issue(u, u);
    }

    ELEM acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; i++)
#pragma unroll
        for (int j = 0; j < RN; j++) acc[i][j] = 0;

    int read = 0, write = STAGES - 1;  // stage buffers of slice t and of slice t + STAGES − 1
    unsigned phase = 0;                // parity of the current use of buffer `read`
    for (int t = 0; t < slices; t++) {
        // Everyone is done with slice t − 1, so thread 0 refills its buffer (`write`) with slice
        // t + STAGES − 1.
        __syncthreads();
        if (tid == 0 && t + STAGES - 1 < slices) issue(t + STAGES - 1, write);
        mbar_wait(&full[read], phase);  // slice t has landed
        const ELEM* As = stages + read * STAGE_ELEMS;
        const ELEM* Bs = As + A_ELEMS;
#pragma unroll
        for (int g = 0; g < GROUPS; g++) {
            ELEM fa[RM][4], fb[RN][4];
            a_side.load(fa, As, g);
            b_side.load(fb, Bs, g);
            // Row by row: a row's 4 values serve 4·RN FMAs (ptxas reorders them anyway).
#pragma unroll
            for (int i = 0; i < RM; i++)
#pragma unroll
                for (int q = 0; q < 4; q++)
#pragma unroll
                    for (int j = 0; j < RN; j++) acc[i][j] += fa[i][q] * fb[j][q];
        }
        read = read + 1 == STAGES ? 0 : read + 1;
        write = write + 1 == STAGES ? 0 : write + 1;
        if (read == 0) phase ^= 1;
    }

#pragma unroll
    for (int i = 0; i < RM; i++) {
        const int r = row0 + a_side.base + a_side.offset(i);
        if (B_ROWS) {
            if (r >= M) continue;
#pragma unroll
            for (int j = 0; j < RN; j++) {
                const int c = col0 + b_side.base + b_side.offset(j);
                if (c < N) C[r * N + c] = acc[i][j];
            }
        } else {
#pragma unroll
            for (int j = 0; j < RN; j += 4)
                store_row4<SCALAR_C>(C, r, col0 + b_side.base + b_side.offset(j), M, N, &acc[i][j]);
        }
    }
}

// The pointers and strides are the SIMT ABI's; A and B are read through the maps only, and the
// strides only tell the layouts apart (see the header).
extern "C" __global__ void REGISTER_BOUNDS
simt_tma(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C, int M, int N, int K,
         int a_rs, int a_cs, int b_rs, int b_cs, const __grid_constant__ TmaMap map_a,
         const __grid_constant__ TmaMap map_b, const __grid_constant__ TmaMap map_c)
{
    const bool a_rows = a_cs == 1, b_rows = b_rs == 1;
    if (a_rows && !b_rows) simt_tma_body<true, false>(C, M, N, K, &map_a, &map_b);
    else if (a_rows) simt_tma_body<true, true>(C, M, N, K, &map_a, &map_b);
    else if (!b_rows) simt_tma_body<false, false>(C, M, N, K, &map_a, &map_b);
    else simt_tma_body<false, true>(C, M, N, K, &map_a, &map_b);
}
