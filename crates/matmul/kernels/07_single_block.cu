// single-block — seeds 002/004 (Mojo GPU puzzles, p16 --single-block).
// Changes from naive: the whole of A and B is first copied into shared memory by one block, one
// element per thread, then every output reads only shared memory. Valid only while the matrices
// fit in the block (the puzzle: SIZE 2 in a 3×3 block).
// Geometry: one block of TILE×TILE threads (TILE = TPB = 3 in the puzzle); grid = (1, 1).
// Shared memory: 2·TILE² elements (a_shared, b_shared: (TILE, TILE) each).
// Traffic model per output element: (M·K + K·N) / (M·N) loads: each input element once.
// Parameters: ELEM, TILE. Constraints (checked in Rust): M, N, K <= TILE.

extern "C" __global__ void single_block(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
                                        int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    __shared__ ELEM a_shared[TILE][TILE], b_shared[TILE][TILE];  // (TILE, TILE) each
    int local_row = threadIdx.y, local_col = threadIdx.x;
    if (local_row < M && local_col < K)
        a_shared[local_row][local_col] = A[local_row * a_rs + local_col * a_cs];
    if (local_row < K && local_col < N)
        b_shared[local_row][local_col] = B[local_row * b_rs + local_col * b_cs];
    __syncthreads();
    if (local_row < M && local_col < N) {
        ELEM acc = 0;
        for (int k = 0; k < K; k++)
            acc += a_shared[local_row][k] * b_shared[k][local_col];
        C[local_row * N + local_col] = acc;
    }
}
