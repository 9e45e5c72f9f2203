// multistage, multistage-raster — SIMT ladder rungs 5 and 6: a STAGES-deep cp.async pipeline.
// Changes from warptile: shared memory holds STAGES slices of A and B; the copies of slice t +
// STAGES − 1 are issued with cp.async (global → shared without registers; simt_tile.cuh) before
// the FMAs of slice t, so a slice's memory latency hides behind the math of the slices before it.
// One barrier per slice instead of two: the barrier that makes slice t visible also proves every
// warp has finished slice t − 1, whose buffer the next copy reuses.
// Why faster: warptile stalls at every slice (load, barrier, compute, barrier) unless other
// blocks on the SM fill the gap; at 128×128 tiles only one or two blocks fit, so the load latency
// (≈ 600 ns from DRAM on H100) is exposed once per slice. Deeper pipelines also need more shared
// memory: 3 stages at the default tiling are 50 KB (above the 48 KB default: an opt-in).
// multistage-raster (RASTER_GROUP = 8, and the tiling `matmul tune` found best on H100 for f32,
// 128x256x32/8x4/w64x64n1/s3/p4) changes the order in which blocks take tiles of C: the hardware
// starts blocks in blockIdx order, x fastest, so the ~132 resident blocks of a row-major raster
// span 4 block-rows and every block-column — all of B streams through L2 each wave. Renumbered,
// consecutive blocks walk down a group of 8 block-rows before moving right: a wave then touches
// 8 row-tiles of A and ~16 column-tiles of B, about 60 % of the bytes (predicted gain: a few
// percent, since DRAM is not the bound — the measured bandwidth is well below the roof).
// Geometry: THREADS = (BM/WM)·(BN/WN)·32; grid = (ceil(N/BN), ceil(M/BM)).
// Shared memory (dynamic): STAGES·BK·(BM + BN + 2·PAD) elements.
// Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM, BM, BN, BK, TM, TN, WM, WN, WNITER, STAGES (≥ 2), PAD, THREADS, RASTER_GROUP
// (0 = row-major block order), MIN_BLOCKS
// (the default 1: at a cap of 128 registers, 3 stages spill a word; 155 fit).
// Constraints: sm_80 or newer (cp.async); any M, N, K, either op.

#ifndef RASTER_GROUP
#define RASTER_GROUP 0
#endif

// The (row, column) of C's block tiles this block computes: blockIdx itself, or with RASTER_GROUP
// the grouped order (consecutive blocks go down RASTER_GROUP block-rows, then right).
__device__ __forceinline__ void block_tile(int& by, int& bx)
{
    by = blockIdx.y, bx = blockIdx.x;
    if (RASTER_GROUP > 0) {
        int pid = blockIdx.y * gridDim.x + blockIdx.x;
        int width = RASTER_GROUP * gridDim.x;  // blocks per group of block-rows
        int first = (pid / width) * RASTER_GROUP;
        int rows = min((int)gridDim.y - first, RASTER_GROUP);
        by = first + (pid % width) % rows;
        bx = (pid % width) / rows;
    }
}

static_assert(WM > 0 && STAGES >= 2, "multistage: warp tiling and at least two stages");
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as 4-element words");
static_assert(THREADS == (BM / WM) * (BN / WN) * 32, "one warp per WM×WN tile");

// The whole product for copy layouts A_PATH and B_PATH known at compile time (their copy loops
// unrolled into straight-line code, simt_tile.cuh), or -1 to follow the strides at run time.
template <int A_PATH, int B_PATH>
__device__ __forceinline__ void multistage_body(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                                ELEM* __restrict__ C, int M, int N, int K, int a_rs, int a_cs,
                                                int b_rs, int b_cs, TilePath a_path, TilePath b_path)
{
    constexpr int LDA = BM + PAD, LDB = BN + PAD;
    constexpr int STAGE = BK * (LDA + LDB);  // elements per stage: As then Bs
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* stages = reinterpret_cast<ELEM*>(smem);  // (STAGES, [As (BK, LDA), Bs (BK, LDB)])
    int by, bx;
    block_tile(by, bx);
    const int row0 = by * BM, col0 = bx * BN;
    const WarpTile wt(threadIdx.x);
    const int slices = (K + BK - 1) / BK;

    // The copies of slice t into stage buffer `buf`, as one cp.async group (an empty group past
    // the last slice keeps the wait counts uniform).
    auto issue = [&](int t, int buf) {
        if (t < slices) {
            ELEM* As = stages + buf * STAGE;
            load_tile<BK, BM, LDA, true, A_PATH>(As, A, a_path, a_cs, a_rs, t * BK, row0, K, M);
            load_tile<BK, BN, LDB, true, B_PATH>(As + BK * LDA, B, b_path, b_rs, b_cs, t * BK, col0, K, N);
        }
        cp_async_commit();
    };
    auto next = [](int buf) { return buf + 1 == STAGES ? 0 : buf + 1; };

    ELEM acc[WarpTile::RM][WarpTile::RN];
#pragma unroll
    for (int i = 0; i < WarpTile::RM; i++)
#pragma unroll
        for (int j = 0; j < WarpTile::RN; j++) acc[i][j] = 0;

#pragma unroll
    for (int t = 0; t < STAGES - 1; t++) issue(t, t);
    int read = 0, write = STAGES - 1;  // stage buffers of slice t and of slice t + STAGES - 1
    for (int t = 0; t < slices; t++) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of slice t have landed
        __syncthreads();              // everyone's have; everyone is done with slice t - 1
        issue(t + STAGES - 1, write);  // into slice t - 1's buffer
        const ELEM* As = stages + read * STAGE;
        wt.mma<LDA, LDB>(acc, As, As + BK * LDA);
        read = next(read);
        write = next(write);
    }
    cp_async_wait<0>();
    wt.store(C, acc, row0, col0, M, N);
}

// Two copies of the main loop: the N·N layouts fixed at compile time, and any (simt_tile.cuh).
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
multistage(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
           int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    const TilePath a_path = tile_path(a_cs, a_rs), b_path = tile_path(b_rs, b_cs);
    WITH_TILE_PATHS(a_path, b_path, multistage_body, A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path);
}
