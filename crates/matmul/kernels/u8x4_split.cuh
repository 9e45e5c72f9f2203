// u8x4_split.cuh — the byte-split pre-pass of the u8x4 kernels (18_mma_u8x4.cu; registry:
// `includes`): one u32 operand, read through its strides, becomes 4 byte planes of u8, plane p
// holding byte p of every element, each plane `rows`×KP and K-contiguous (row r, k at
// plane + r·KP + k), KP = K rounded up to a multiple of 128 (or further, for equal split-K
// pieces) with zeros past K. A is split with
// rows = M (element (r, k) = A[r·a_rs + k·a_cs]); B as B^T, rows = N (element (r, k) =
// B[k·b_rs + r·b_cs]), so both operands reach the tensor cores K-major.
// Geometry: 256 threads; grid = (⌈rows/32⌉, min(KP/64, 65535)), a block walking k tiles of 64 in
// a grid-stride loop. Shared memory: a 32×64 tile of u32 (one column of padding).
// Traffic: reads the operand once (4 bytes an element, coalesced along whichever dimension is
// contiguous), writes 4 bytes an element (one u32 of 4 consecutive k per plane and thread).

#define U8X4_KPAD 128  // KP's multiple: the main kernels' BK divides it (Rust: BYTE_PLANE_K_PAD)

extern "C" __global__ void __launch_bounds__(256)
u8x4_split(const matmul_u32* __restrict__ X, matmul_u32* __restrict__ planes, int rows, int K, int KP, int rs,
           int cs)
{
    __shared__ matmul_u32 tile[32][65];
    const int tid = threadIdx.x;
    const int r0 = blockIdx.x * 32;
    const long long plane_words = (long long)rows * (KP / 4);
    for (int k0 = blockIdx.y * 64; k0 < KP; k0 += gridDim.y * 64) {
        load_split_tile(tile, X, rows, K, r0, k0, rs, cs);  // split_tile.cuh
        __syncthreads();
        // Write: per (row, 4 consecutive k) one u32 per plane, consecutive threads along k.
#pragma unroll
        for (int it = 0; it < 2; it++) {
            const int idx = tid + it * 256;
            const int r = idx / 16, w = idx % 16;
            const int gr = r0 + r;
            if (gr < rows) {
                const matmul_u32 v0 = tile[r][4 * w], v1 = tile[r][4 * w + 1], v2 = tile[r][4 * w + 2],
                                 v3 = tile[r][4 * w + 3];
                const long long at = (long long)gr * (KP / 4) + k0 / 4 + w;
                // Byte p of v0..v3 → bytes 0..3 of plane p's word (lower k at the lower address).
                const matmul_u32 lo = __byte_perm(v0, v1, 0x5140), hi = __byte_perm(v2, v3, 0x5140);
                // lo = v0.b0 v1.b0 v0.b1 v1.b1 (bytes 0..3), hi likewise for v2, v3.
                planes[at] = __byte_perm(lo, hi, 0x5410);
                planes[plane_words + at] = __byte_perm(lo, hi, 0x7632);
                const matmul_u32 lo2 = __byte_perm(v0, v1, 0x7362), hi2 = __byte_perm(v2, v3, 0x7362);
                planes[2 * plane_words + at] = __byte_perm(lo2, hi2, 0x5410);
                planes[3 * plane_words + at] = __byte_perm(lo2, hi2, 0x7632);
            }
        }
        __syncthreads();
    }
}
