// A deliberate syntax error (line 9 lacks its `;`; NVRTC reports line 10): `matmul run` shows NVRTC's log, naming
// this file and line, and exits 2.
extern "C" __global__ void syntax(const ELEM* A, const ELEM* B, ELEM* C, int M, int N, int K,
                                  int a_rs, int a_cs, int b_rs, int b_cs)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N)
        C[row * N + col] = 0
}
