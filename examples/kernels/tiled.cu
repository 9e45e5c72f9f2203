// tiled: TILE×TILE tiles of A and B staged in dynamic shared memory, zero-padded at the edges so
// any M, N, K runs. TILE comes from -D; the shared memory from --shared.
// Run: matmul run --kernel-file examples/kernels/tiled.cu -D TILE=16 --block TILE,TILE \
//        --grid "cdiv(N,TILE),cdiv(M,TILE)" --shared "2*TILE*TILE*4" -m 500 -n 300 -k 200 --check-shapes
extern "C" __global__ void tiled(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                 ELEM* __restrict__ C, int M, int N, int K,
                                 int a_rs, int a_cs, int b_rs, int b_cs)
{
    extern __shared__ unsigned char smem[];
    ELEM* tile_a = reinterpret_cast<ELEM*>(smem);  // TILE×TILE
    ELEM* tile_b = tile_a + TILE * TILE;           // TILE×TILE
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    ELEM sum = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int a_col = t * TILE + tx, b_row = t * TILE + ty;
        tile_a[ty * TILE + tx] = (row < M && a_col < K) ? A[row * a_rs + a_col * a_cs] : (ELEM)0;
        tile_b[ty * TILE + tx] = (b_row < K && col < N) ? B[b_row * b_rs + col * b_cs] : (ELEM)0;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; i++)
            sum += tile_a[ty * TILE + i] * tile_b[i * TILE + tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}
