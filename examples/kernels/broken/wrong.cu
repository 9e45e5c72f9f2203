// A deliberately wrong kernel (it skips the last k): verification fails, exit 1.
extern "C" __global__ void wrong(const ELEM* A, const ELEM* B, ELEM* C, int M, int N, int K,
                                 int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;
    ELEM sum = 0;
    for (int l = 0; l < K - 1; l++)
        sum += A[row * a_rs + l * a_cs] * B[l * b_rs + col * b_cs];
    C[row * N + col] = sum;
}
