// naive — seeds 000/003 (Sarek) and 002/004 (Mojo p16 --naive).
// The textbook kernel with a 2-D thread mapping: thread (x, y) of the grid computes C[y][x] from a
// row of A and a column of B read straight from global memory. Compared with ele (1-D), only the
// index arithmetic differs: no division or modulo per thread.
// Geometry: 2-D, TILE×TILE threads (TILE = 16, Sarek's block); grid = (ceil(N/TILE), ceil(M/TILE)).
// Traffic model per output element: K loads of A + K loads of B (seed 004: 2·K loads, intensity
// 2K FLOP / 2K·4 B = 0.25 FLOP/B before caches).
// Parameters: ELEM, TILE (block edge only; no shared memory). Constraints: none.

extern "C" __global__ void naive(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
                                 int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;  // y-dimension
    int col = blockIdx.x * blockDim.x + threadIdx.x;  // x-dimension
    if (row < M && col < N) {
        ELEM sum = 0;
        for (int i = 0; i < K; i++)
            sum += A[row * a_rs + i * a_cs] * B[i * b_rs + col * b_cs];
        C[row * N + col] = sum;
    }
}
