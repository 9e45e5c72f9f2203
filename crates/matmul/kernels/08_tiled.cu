// tiled — seed 001's TILING, seeds 000/003's 16×16 shared-memory kernel (Sarek), and seeds
// 002/004's tiled puzzle (Mojo p16 --tiled, TPB = 3): one algorithm, three seeds.
// Changes from naive / ele / elepack: a TILE×TILE block shares both a tile of A (its rows) and a
// tile of B (its columns) through shared memory, so each global element loaded serves TILE
// outputs. Three supersteps per tile, each ended by a barrier in the seeds' sense: load A, load B
// (both zero-padded past the edges, so any M, N, K works), multiply-accumulate.
// Seed 001's TILING assumed N % TILE == 0 and had no edge checks; the padding adds them.
// Geometry: 2-D, TILE×TILE threads (TILE = 16; the puzzles use 3); grid = (ceil(N/TILE), ceil(M/TILE)).
// Shared memory: 2·TILE² elements (tile_a, tile_b: (TILE, TILE) each).
// Traffic model per output element: 2·K/TILE loads (seed 004: intensity grows with TILE).
// Parameters: ELEM, TILE. Constraints: none.

extern "C" __global__ void tiled(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
                                 int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    __shared__ ELEM tile_a[TILE][TILE], tile_b[TILE][TILE];  // (TILE, TILE) each
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    ELEM sum = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int a_col = t * TILE + tx, b_row = t * TILE + ty;
        tile_a[ty][tx] = (row < M && a_col < K) ? A[row * a_rs + a_col * a_cs] : (ELEM)0;
        tile_b[ty][tx] = (b_row < K && col < N) ? B[b_row * b_rs + col * b_cs] : (ELEM)0;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; i++)
            sum += tile_a[ty][i] * tile_b[i][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}
