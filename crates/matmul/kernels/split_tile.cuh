// split_tile.cuh — the tile load the pre-passes share (u8x4_split.cuh, tf32x3_split.cuh;
// registry: `includes`, before them): a 32×64 tile of an operand read through its strides,
// rows r0 + [0, 32) and k0 + [0, 64), zeros past `rows` and K; 256 threads, consecutive threads
// along whichever dimension is stored contiguously (cs == 1: along k, else along the rows), so
// the reads coalesce in either layout. The caller synchronizes before reading the tile.
template <typename E>
__device__ __forceinline__ void load_split_tile(E (&tile)[32][65], const E* __restrict__ X, int rows, int K, int r0,
                                                int k0, int rs, int cs)
{
    const int tid = threadIdx.x;
#pragma unroll
    for (int it = 0; it < 8; it++) {
        const int idx = tid + it * 256;
        int r, k;
        if (cs == 1) {
            r = idx / 64, k = idx % 64;
        } else {
            r = idx % 32, k = idx / 32;
        }
        const int gr = r0 + r, gk = k0 + k;
        tile[r][k] = gr < rows && gk < K ? X[(long long)gr * rs + (long long)gk * cs] : E(0);
    }
}
