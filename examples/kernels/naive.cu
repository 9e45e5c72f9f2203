// naive: one thread per element of C, a row of A and a column of B from global memory.
// The ABI of docs/own-kernels.md: ELEM is float (f32) or unsigned int (u32), set by matmul;
// element (i, l) of A is A[i * a_rs + l * a_cs], (l, j) of B is B[l * b_rs + j * b_cs], C dense.
// Run: matmul run --kernel-file examples/kernels/naive.cu -m 500 -n 300 -k 200 --check-shapes
//      (default launch: --block 16,16 --grid "cdiv(N,16),cdiv(M,16)")
extern "C" __global__ void naive(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                 ELEM* __restrict__ C, int M, int N, int K,
                                 int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;
    ELEM sum = 0;
    for (int l = 0; l < K; l++)
        sum += A[row * a_rs + l * a_cs] * B[l * b_rs + col * b_cs];
    C[row * N + col] = sum;
}
