// warptile — SIMT ladder rung 4: warp tiling.
// Changes from vectorized-padded: the block's tile is split among warps (WM×WN each), and a warp's
// tile among its lanes in WMITER×WNITER sub-tiles (simt_tile.cuh, WarpTile): lanes adjacent along
// N read adjacent 16-byte words of B (one shared-memory wavefront per 8 lanes, no conflicts), the
// A values a warp needs per k are only WM/TM·... distinct words, broadcast; and each lane's outputs
// are spread over the warp's tile, so a warp touches a compact WM×WN region of shared memory.
// Default 128x128x16/4x4/w64x32n2 (256 threads, 8 warps of 64×32, 8×8 outputs a lane as 2×2
// sub-tiles of 4×4): per k a lane loads 2 + 2 LDS.128 for 64 FMAs (vectorized at 8×8: 2 + 4).
// Why faster: vectorized's lanes read B at a 32-byte stride (TN = 8): two wavefronts where one
// would do; warp tiling makes every shared read a single wavefront and BK = 16 halves the
// barriers per FMA.
// Geometry: THREADS = (BM/WM)·(BN/WN)·32; grid = (ceil(N/BN), ceil(M/BM)).
// Shared memory (dynamic): BK·(BM + BN + 2·PAD) elements.
// Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM, BM, BN, BK, TM, TN, WM, WN, WNITER, PAD, THREADS, MIN_BLOCKS (registers are
// capped at 65536 / (THREADS·MIN_BLOCKS); the default 2 gives 128 and two blocks per SM).
// Constraints: none (any M, N, K, either op).

static_assert(WM > 0 && STAGES == 1, "warptile: warp tiling, one stage");
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as 4-element words");
static_assert(THREADS == (BM / WM) * (BN / WN) * 32, "one warp per WM×WN tile");

// The whole product for copy layouts A_PATH and B_PATH known at compile time (their copy loops
// unrolled into straight-line code, simt_tile.cuh), or -1 to follow the strides at run time.
template <int A_PATH, int B_PATH>
__device__ __forceinline__ void warptile_body(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                              ELEM* __restrict__ C, int M, int N, int K, int a_rs, int a_cs,
                                              int b_rs, int b_cs, TilePath a_path, TilePath b_path)
{
    constexpr int LDA = BM + PAD, LDB = BN + PAD;
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* As = reinterpret_cast<ELEM*>(smem);  // (BK, LDA): A's tile, k-major
    ELEM* Bs = As + BK * LDA;                   // (BK, LDB)
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const WarpTile wt(threadIdx.x);

    ELEM acc[WarpTile::RM][WarpTile::RN];
#pragma unroll
    for (int i = 0; i < WarpTile::RM; i++)
#pragma unroll
        for (int j = 0; j < WarpTile::RN; j++) acc[i][j] = 0;

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<BK, BM, LDA, false, A_PATH>(As, A, a_path, a_cs, a_rs, k0, row0, K, M);
        load_tile<BK, BN, LDB, false, B_PATH>(Bs, B, b_path, b_rs, b_cs, k0, col0, K, N);
        __syncthreads();
        wt.mma<LDA, LDB>(acc, As, Bs);
        __syncthreads();
    }
    wt.store(C, acc, row0, col0, M, N);
}

// Two copies of the main loop, the N·N layouts fixed at compile time and any (simt_tile.cuh), when
// a block may use up to 255 registers a thread (MIN_BLOCKS = 1); under the 128-register cap of
// MIN_BLOCKS = 2 the unrolled copies' addresses spill (the registry default), so one.
extern "C" __global__ void REGISTER_BOUNDS
warptile(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
         int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    const TilePath a_path = tile_path(a_cs, a_rs), b_path = tile_path(b_rs, b_cs);
#if MIN_BLOCKS == 1
    WITH_TILE_PATHS(a_path, b_path, warptile_body, A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path);
#else
    warptile_body<-1, -1>(A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path);
#endif
}
