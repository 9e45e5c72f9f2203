// vectorized, vectorized-padded — SIMT ladder rung 3: 128-bit loads and stores everywhere.
// Changes from blocktile-2d: every global load of a tile is a 16-byte word (simt_tile.cuh), A's
// tile is transposed into shared memory as it is stored (As[k][m]), and the inner loop reads its
// TM values of A and TN of B as 16-byte words (LDS.128): 4 instructions for 16 values where
// blocktile-2d's compiler-chosen loads could not assume alignment. C is stored 16 bytes at a time.
// Transposed operands take the direct path instead (op(A) = T is already k-major).
// vectorized-padded adds PAD = 4 elements to each shared row: the transposed stores of A (4 rows
// of a k-group, lanes along m) then land in different banks (row stride 132 ≡ 4 mod 32 words)
// instead of all on the same ones (stride 128 ≡ 0).
// Why faster: fewer load instructions (the SM issues one instruction per cycle per scheduler and
// blocktile-2d spends about a fifth of them on loads), and conflict-free stores (padded).
// Default MIN_BLOCKS = 2 (a 128-register cap): uncapped, ptxas takes 130 registers, and above 128
// only one 256-thread block fits an SM's 64K registers: half the warps gone, slower than blocktile-2d.
// Geometry: THREADS = (BM/TM)·(BN/TN); grid = (ceil(N/BN), ceil(M/BM)).
// Shared memory (dynamic): BK·(BM + BN + 2·PAD) elements — As: (BK, BM + PAD), Bs: (BK, BN + PAD).
// Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM, BM, BN, BK, TM, TN, PAD, THREADS (TM, TN multiples of 4), MIN_BLOCKS.
// Constraints: none (any M, N, K, either op; 16-byte paths only where the layout allows them).

static_assert(WM == 0 && STAGES == 1, "vectorized has no warp tiling or pipeline");
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as 4-element words");
static_assert(THREADS == (BM / TM) * (BN / TN), "one thread per TM×TN tile");

extern "C" __global__ void REGISTER_BOUNDS
vectorized(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
           int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    constexpr int LDA = BM + PAD, LDB = BN + PAD;
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* As = reinterpret_cast<ELEM*>(smem);  // (BK, LDA): A's tile, k-major
    ELEM* Bs = As + BK * LDA;                   // (BK, LDB)
    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const TilePath a_path = tile_path(a_cs, a_rs), b_path = tile_path(b_rs, b_cs);

    ELEM acc[TM][TN];  // (TM, TN)
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0;

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<BK, BM, LDA, false>(As, A, a_path, a_cs, a_rs, k0, row0, K, M);
        load_tile<BK, BN, LDB, false>(Bs, B, b_path, b_rs, b_cs, k0, col0, K, N);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            ELEM a_frag[TM], b_frag[TN];  // (TM), (TN)
#pragma unroll
            for (int i = 0; i < TM; i += 4) load4(a_frag + i, &As[kk * LDA + tr * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4) load4(b_frag + j, &Bs[kk * LDB + tc * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store4(C, row0 + tr * TM + i, col0 + tc * TN + j, M, N,
                   Vec4{acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]});
}
