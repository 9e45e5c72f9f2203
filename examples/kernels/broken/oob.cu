// A deliberate out-of-bounds write (far past the end of C): the CUDA context's sticky error
// (an illegal address) is reported, exit 1, and the faulted context dies with the child process.
extern "C" __global__ void oob(const ELEM* A, const ELEM* B, ELEM* C, int M, int N, int K,
                               int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N)
        C[(long long)(row * N + col) + (1LL << 40)] = 0;
}
