// blocktile-2d — SIMT ladder, rung 1: 2-D block tiling with register blocking.
// Changes from tiled (one output per thread, two shared loads per FMA): each thread computes a
// TM×TN register tile of C. Per step of the inner loop it loads TM values of A and TN of B from
// shared memory into registers and does TM·TN FMAs with them: (TM+TN) shared loads per TM·TN FMAs
// instead of 2 per 1, so shared-memory bandwidth stops being the limit. The block computes a
// BM×BN tile of C; A's tile is stored transposed (As[k][m]) so a thread's TM values of A are
// contiguous in shared memory and load as 128-bit words.
// Why faster: 8×8 per thread → 16 shared loads per 64 FMAs (vs 128 for tiled), and global traffic
// per output falls to K·(1/BN + 1/BM) loads (BM = BN = 128: 2K/128 vs 2K/16 for tiled).
// Geometry: THREADS = (BM/TM)·(BN/TN) threads per block (256); grid = (ceil(N/BN), ceil(M/BM)).
// Shared memory: BK·(BM + BN) elements (As: (BK, BM), Bs: (BK, BN)) = 8 KB for f32 at 128/128/8.
// Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM, BM, BN, BK, TM, TN (BM % TM = BN % TN = 0; THREADS divides BM·BK and BK·BN).
// Constraints: none: loads past the edges read zeros, stores past the edges are skipped.

#define THREADS ((BM / TM) * (BN / TN))

extern "C" __global__ void __launch_bounds__(THREADS)
blocktile_2d(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
             int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    __shared__ __align__(16) ELEM As[BK][BM];  // (BK, BM): A's tile, transposed
    __shared__ __align__(16) ELEM Bs[BK][BN];  // (BK, BN)
    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);  // this thread's (TM, TN) tile in the block
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    ELEM acc[TM][TN];  // (TM, TN)
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A tile: consecutive threads walk k fastest (contiguous in A when op(A) is not transposed).
#pragma unroll
        for (int idx = tid; idx < BM * BK; idx += THREADS) {
            int m = idx / BK, kk = idx % BK;
            int gr = row0 + m, gk = k0 + kk;
            As[kk][m] = (gr < M && gk < K) ? A[gr * a_rs + gk * a_cs] : (ELEM)0;
        }
        // B tile: consecutive threads walk n fastest (coalesced when op(B) is not transposed).
#pragma unroll
        for (int idx = tid; idx < BK * BN; idx += THREADS) {
            int kk = idx / BN, n = idx % BN;
            int gk = k0 + kk, gc = col0 + n;
            Bs[kk][n] = (gk < K && gc < N) ? B[gk * b_rs + gc * b_cs] : (ELEM)0;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            ELEM a_frag[TM], b_frag[TN];  // (TM), (TN)
#pragma unroll
            for (int i = 0; i < TM; i++) a_frag[i] = As[kk][tr * TM + i];
#pragma unroll
            for (int j = 0; j < TN; j++) b_frag[j] = Bs[kk][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int gr = row0 + tr * TM + i;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            int gc = col0 + tc * TN + j;
            if (gr < M && gc < N) C[gr * N + gc] = acc[i][j];
        }
    }
}
