// A deliberately endless kernel: the watchdog (--timeout) kills the process running it, exit 1.
extern "C" __global__ void endless(const ELEM* A, const ELEM* B, ELEM* C, int M, int N, int K,
                                   int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    volatile int spin = 1;
    ELEM sum = 0;
    while (spin)
        sum += A[0];
    if (row < M && col < N)
        C[row * N + col] = sum;
}
