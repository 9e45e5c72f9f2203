// row — seed 001 (Judge Girl CUDA-MATMUL), ROW with the sum cached in a register.
// Changes from row-global: the running sum lives in a register and C is written once per element,
// removing 2·K global accesses to C per output ("Cache `sum` in register may speed up a lot").
// Geometry: 1-D, 64 threads per block, one thread per row; grid = ceil(M / 64).
// Traffic model per output element: K loads of A + K loads of B (A reads are per-thread rows:
// uncoalesced across the warp; B reads are a broadcast of one column element).
// Parameters: ELEM. Constraints: none.

extern "C" __global__ void row(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
                               int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    for (int i = 0; i < N; i++) {
        ELEM sum = 0;
        for (int j = 0; j < K; j++)
            sum += A[row * a_rs + j * a_cs] * B[j * b_rs + i * b_cs];
        C[row * N + i] = sum;
    }
}
