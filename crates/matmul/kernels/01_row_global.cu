// row-global — seed 001 (Judge Girl CUDA-MATMUL), ROW, first listing.
// Rung 0 of the ladder: one thread computes one whole row of C and accumulates every term straight
// into C in global memory (C is zeroed by the host first). Each of the K terms of each of the N
// outputs costs a global read-modify-write of C: the slowest correct kernel, kept as the baseline.
// Geometry: 1-D, 64 threads per block, one thread per row; grid = ceil(M / 64).
// Traffic model per output element: K loads of A, K loads of B, K loads and K stores of C.
// Parameters: ELEM (float | unsigned int). Constraints: none (rows past M return at once).
// No __restrict__: as in the seed, the compiler must assume C may alias A or B, so every term
// really goes to memory (with __restrict__ it could keep the sum in a register and become `row`).
// Operands are read through strides, so op(A) and op(B) may be transposed:
//   op(A)[i][l] = A[i*a_rs + l*a_cs], op(B)[l][j] = B[l*b_rs + j*b_cs].

extern "C" __global__ void row_global(const ELEM* A, const ELEM* B, ELEM* C,
                                      int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;  // one row of C per thread
    if (row >= M) return;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < K; j++)
            C[row * N + i] += A[row * a_rs + j * a_cs] * B[j * b_rs + i * b_cs];
}
