// ele — seed 001 (Judge Girl CUDA-MATMUL), ELE; also `naive-1d` (seeds 000/003's naive product
// with a 1-D thread mapping).
// Changes from row: one thread per element of C instead of per row, so there are M·N threads
// instead of M: far more parallelism. Consecutive threads take consecutive columns of one row:
// their B loads are coalesced and their A load is a broadcast.
// Geometry: 1-D, 256 threads per block; grid = ceil(M·N / 256).
// Traffic model per output element: K loads of A + K loads of B (2·K·sizeof(ELEM) bytes).
// Parameters: ELEM. Constraints: none (idx past M·N returns).

extern "C" __global__ void ele(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
                               int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= M * N) return;
    int row = idx / N, col = idx % N;
    ELEM sum = 0;
    for (int i = 0; i < K; i++)
        sum += A[row * a_rs + i * a_cs] * B[i * b_rs + col * b_cs];
    C[idx] = sum;
}
