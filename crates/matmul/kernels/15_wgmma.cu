// wgmma — tensor-core rung 2 (Hopper, sm_90a): TMA → mbarrier pipeline → wgmma, with
// warp-specialized producer and consumer warpgroups on a persistent grid.
// Changes from mma-sync (rung 1):
//   * wgmma.mma_async: one warpgroup (4 warps) issues a 64×256×16 product that reads both
//     operands straight from shared memory through descriptors — no ldmatrix, no fragments in
//     registers, and the instruction runs asynchronously while the warps go on;
//   * TMA (cp.async.bulk.tensor): one thread copies a whole 2-D box of A or B into shared
//     memory, already in the 128-byte-swizzled layout wgmma reads, zero-filling whatever lies
//     past the matrix; completion is counted in bytes on an mbarrier (no cp.async groups, no
//     block-wide barrier per slice);
//   * warp specialization: warpgroup 0 only loads (one thread, its registers cut to 40 by
//     setmaxnreg), warpgroups 1 and 2 only compute (registers raised to 232 for the 128 f32
//     accumulators of a 64×256 tile each); they hand STAGES buffers back and forth through a
//     "full" and an "empty" mbarrier per buffer;
//   * a persistent grid: one block per SM walks the tiles of C in a grouped order (GROUP_M
//     tile-rows at a time, so a wave of blocks shares panels of A and B in L2), and the loader
//     runs ahead into the next tile while the consumers store the last one.
// Why faster: mma.sync on H100 is limited by issuing fragments from registers (ldmatrix + mma per
// 16×8×16); wgmma keeps the tensor cores fed from shared memory with four warps per instruction,
// which is the only path to the H100's dense bf16 rate (989 TFLOP/s).
// Tile: BM×BN = 128×256 per block and work unit, BK = 64 (one 128-byte swizzle row of 16-bit
// elements) per stage, STAGES = 4: 4 × (16 + 32) KB = 192 KB of shared memory (+1 KB to align the
// buffers to the swizzle's 1024-byte period). THREADS = 384 (three warpgroups).
// Layouts: op(A) = N (A stored M×K) and op(B) = T (B stored N×K) are "K-major" (TMA boxes of
// 64 K-elements × BM or BN rows, wgmma transpose bit 0); op(A) = T and op(B) = N are "MN-major"
// (boxes of 64 M- or N-elements × BK rows, BM/64 or BN/64 of them side by side, transpose bit 1).
// The host builds the two tensor maps (src/cuda/tma.rs) with the same box shapes.
// wgmma-cluster (CLUSTER = 2) pairs the blocks into clusters of two that take vertically adjacent
// tiles of C (the same columns, so the same slices of B): each block loads its own A and half of
// B, multicast to both blocks' shared memory, so every block pulls 32 KB instead of 48 KB per
// stage from L2. A buffer is then free only when the consumers of both blocks are done with it:
// each consumer warpgroup arrives on the "empty" barrier of every block of the cluster.
// Parameters: ELEM (16-bit storage), IN_BF16 or IN_F16, BM = 128, BN = 256, BK = 64, STAGES,
// THREADS = 384, CLUSTER (1 or 2). Constraints: sm_90a; every stored row of A and B a multiple of 16 bytes (TMA);
// any M, N, K otherwise (the edges are TMA's zero fill and a bounds-checked store).

#if defined(IN_BF16)
#define WGMMA_TYPE "bf16"
#elif defined(IN_F16)
#define WGMMA_TYPE "f16"
#else
#error "wgmma: compile with IN_BF16 or IN_F16"
#endif

static_assert(BM == 128 && BN == 256 && BK == 64, "wgmma: the 128x256x64 tile is what the code below spells out");
static_assert(THREADS == 384, "wgmma: one producer and two consumer warpgroups");
static_assert(STAGES >= 2, "wgmma: at least two buffers");

#ifndef CLUSTER
#define CLUSTER 1
#endif
static_assert(CLUSTER == 1 || CLUSTER == 2, "wgmma: clusters of one or two blocks");
#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

typedef unsigned long long u64;

constexpr int SWIZZLE_ELEMS = 64;                         // 128 bytes of 16-bit elements
constexpr int A_STAGE_BYTES = BM * BK * 2;                // (BM, BK)
constexpr int B_STAGE_BYTES = BN * BK * 2;                // (BK, BN)
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int MN_CHUNK_BYTES = BK * 128;                  // one MN-major box: (BK, 64)
constexpr int GROUP_M = 8;                                // tile-rows per raster group
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;    // 128·40 + 256·232 ≤ 65536

// A TMA tensor map (CUtensorMap: 128 opaque bytes), passed by value as a __grid_constant__.
struct __align__(64) TmaMap {
    u64 words[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u64* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

// One arrival that also announces `bytes` of TMA traffic the phase must wait for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// Arrives on the barrier at the same offset as `bar` in block `rank` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, unsigned rank)
{
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// Every thread of every block of the cluster (a block-wide barrier when CLUSTER = 1).
__device__ __forceinline__ void cluster_sync()
{
    if (CLUSTER > 1) {
        asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
    } else {
        __syncthreads();
    }
}

__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r = 0;
    if (CLUSTER > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// Spins until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as
// completed, so the first wait of a producer on an "empty" buffer falls through).
__device__ __forceinline__ void mbar_wait(u64* bar, unsigned parity)
{
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" ::"r"(smem_u32(bar)),
        "r"(parity)
        : "memory");
}

// ---- TMA -----------------------------------------------------------------------------------
// Copies the box at (inner c0, outer c1) of `map` to `dst`, completing `bytes` on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const TmaMap* map, u64* bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            smem_u32(dst)),
        "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
        : "memory");
}

// The same copy written to the same offset in every block of `mask` (and completing there).
__device__ __forceinline__ void tma_load_multicast(void* dst, const TmaMap* map, u64* bar, int c0, int c1,
                                                   unsigned short mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(
            smem_u32(dst)),
        "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}

// B's share of one block: all of it, or with a cluster its part, multicast to every block.
__device__ __forceinline__ void tma_load_b(void* dst, const TmaMap* map, u64* bar, int c0, int c1)
{
    if (CLUSTER > 1) tma_load_multicast(dst, map, bar, c0, c1, (1u << CLUSTER) - 1);
    else tma_load(dst, map, bar, c0, c1);
}

// ---- wgmma ---------------------------------------------------------------------------------
// A shared-memory matrix descriptor with the 128-byte swizzle: start address, leading- and
// stride-dimension byte offsets (each encoded >> 4), swizzle mode 1 in bits 62–63.
__device__ __forceinline__ u64 smem_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
           ((u64)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of an accumulator across the asynchronous
// wgmma (it cannot see that wgmma writes the registers after the asm statement returns).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC32(i) ACC8(i), ACC8(i + 8), ACC8(i + 16), ACC8(i + 24)

// d (64×256 f32, 128 per thread) = A·B (+ d when accumulate): A 64×16 and B 16×256 from shared
// memory; TA / TB = 1 when the operand is MN-major.
template <int TA, int TB>
__device__ __forceinline__ void wgmma_64x256x16(float (&d)[128], u64 desc_a, u64 desc_b, int accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." WGMMA_TYPE "." WGMMA_TYPE "\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},\n"
        "%128, %129, p, 1, 1, %131, %132;\n"
        "}\n"
        : ACC32(0), ACC32(32), ACC32(64), ACC32(96)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA), "n"(TB));
}

// ---- the tile order ------------------------------------------------------------------------
// Tile `t` of the grouped raster: GROUP_M tile-rows at a time, down each column of the group.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn)
{
    int width = GROUP_M * tiles_n;  // tiles per group of tile-rows
    int first = (t / width) * GROUP_M;
    int rows = min(tiles_m - first, GROUP_M);
    tm = first + (t % width) % rows;
    tn = (t % width) / rows;
}

// The work units of this block: a cluster takes CLUSTER vertically adjacent tiles (one unit of
// the grouped raster over ceil(tiles_m / CLUSTER) × tiles_n units), block `rank` the rank-th; a
// tile past the last row (odd tiles_m) still loads and multicasts, and stores nothing.
struct Units {
    int first, step, count, units_m, tiles_n;
    __device__ Units(int tiles_m, int tn_count)
    {
        units_m = (tiles_m + CLUSTER - 1) / CLUSTER;
        tiles_n = tn_count;
        first = blockIdx.x / CLUSTER;
        step = gridDim.x / CLUSTER;
        count = units_m * tiles_n;
    }
    __device__ void tile(int u, unsigned rank, int& tm, int& tn) const
    {
        int um;
        tile_coords(u, units_m, tiles_n, um, tn);
        tm = um * CLUSTER + rank;
    }
};

// ---- producer: one thread issues every TMA copy ----------------------------------------------
template <int TA, int TB>
__device__ __forceinline__ void produce(unsigned char* smem, u64* full, u64* empty, const TmaMap* map_a,
                                        const TmaMap* map_b, Units units, unsigned rank, int kblocks)
{
    constexpr int B_ROWS = BN / CLUSTER;                    // K-major B rows this block loads
    constexpr int B_CHUNKS = BN / SWIZZLE_ELEMS / CLUSTER;  // MN-major B chunks this block loads
    int it = 0;  // k-blocks loaded so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count; u += units.step) {
        int tm, tn;
        units.tile(u, rank, tm, tn);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // zero-filled bytes count too
            unsigned char* a = smem + s * STAGE_BYTES;     // (BM, BK) or BM/64 × (BK, 64)
            unsigned char* b = a + A_STAGE_BYTES;          // (BN, BK) or BN/64 × (BK, 64)
            if (TA == 0) {
                tma_load(a, map_a, &full[s], kb * BK, tm * BM);
            } else {
#pragma unroll
                for (int j = 0; j < BM / SWIZZLE_ELEMS; ++j)
                    tma_load(a + j * MN_CHUNK_BYTES, map_a, &full[s], tm * BM + j * SWIZZLE_ELEMS, kb * BK);
            }
            if (TB == 0) {
                tma_load_b(b + rank * B_ROWS * 128, map_b, &full[s], kb * BK, tn * BN + rank * B_ROWS);
            } else {
#pragma unroll
                for (int j = rank * B_CHUNKS; j < (rank + 1) * B_CHUNKS; ++j)
                    tma_load_b(b + j * MN_CHUNK_BYTES, map_b, &full[s], tn * BN + j * SWIZZLE_ELEMS, kb * BK);
            }
        }
    }
}

// ---- consumers: each warpgroup owns 64 rows × 256 columns of the tile ------------------------
template <int TA, int TB>
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, float* __restrict__ C, int M,
                                        int N, Units units, unsigned rank, int kblocks)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the tile
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    // This warpgroup is done with buffer s: tell the producer of every block that writes it.
    auto release = [&](int s) {
        if (threadIdx.x % 128 != 0) return;
        if (CLUSTER > 1) {
#pragma unroll
            for (unsigned r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[s], r);
        } else {
            mbar_arrive(&empty[s]);
        }
    };
    int it = 0;
    for (int u = units.first; u < units.count; u += units.step) {
        int tm, tn;
        units.tile(u, rank, tm, tn);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            unsigned a = smem_u32(smem + s * STAGE_BYTES), b = a + A_STAGE_BYTES;
#pragma unroll
            for (int i = 0; i < 128; ++i) fence_operand(d[i]);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                // K-major: rows of 128 bytes, 8-row groups 1024 bytes apart (SBO), the next 16
                // elements of K 32 bytes further in the (swizzled) row.
                // MN-major: BK rows of 128 bytes per 64-wide chunk; 8-row groups of K 1024 bytes
                // apart (SBO), chunks MN_CHUNK_BYTES apart (LBO), the next 16 rows of K 2048
                // bytes further.
                u64 da = TA == 0 ? smem_desc(a + wg * 64 * 128 + kk * 32, 16, 1024)
                                 : smem_desc(a + wg * MN_CHUNK_BYTES + kk * 2048, MN_CHUNK_BYTES, 1024);
                u64 db = TB == 0 ? smem_desc(b + kk * 32, 16, 1024)
                                 : smem_desc(b + kk * 2048, MN_CHUNK_BYTES, 1024);
                wgmma_64x256x16<TA, TB>(d, da, db, (kb > 0 || kk > 0) ? 1 : 0);
            }
            wgmma_commit();
            // Keep this k-block's products in flight while waiting for the previous one's, then
            // hand that one's buffer back to the producer.
            wgmma_wait<1>();
            if (kb > 0) release((it - 1) % STAGES);
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < 128; ++i) fence_operand(d[i]);
        release((it - 1) % STAGES);
        // Epilogue: d[4j + 2h + c] is C(row0 + 8h, col0 + 8j + c) of this thread.
        const int row0 = tm * BM + wg * 64 + warp * 16 + lane / 4;
        const int col0 = tn * BN + (lane % 4) * 2;
        const bool pairs = (N % 2) == 0;  // float2 stores are 8-byte aligned only for even N
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            int col = col0 + 8 * j;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int row = row0 + 8 * h;
                if (row >= M) continue;
                float* c = C + (size_t)row * N + col;
                if (pairs && col + 1 < N) {
                    *reinterpret_cast<float2*>(c) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
                } else {
                    if (col < N) c[0] = d[4 * j + 2 * h];
                    if (col + 1 < N) c[1] = d[4 * j + 2 * h + 1];
                }
            }
        }
    }
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
wgmma(const ELEM* __restrict__ A, const ELEM* __restrict__ B, float* __restrict__ C, int M, int N, int K,
      int a_rs, int a_cs, int b_rs, int b_cs, const __grid_constant__ TmaMap map_a,
      const __grid_constant__ TmaMap map_b)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    // The swizzle pattern repeats every 1024 bytes and the descriptors assume it starts there.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

    const Units units((M + BM - 1) / BM, (N + BN - 1) / BN);
    const int kblocks = (K + BK - 1) / BK;
    const unsigned rank = cluster_rank();
    const bool a_mn = a_cs != 1;  // A stored K×M (op(A) = T)
    const bool b_mn = b_rs != 1;  // B stored K×N (op(B) = N)

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);             // the producer's arrive.expect_tx (+ the TMA bytes)
            mbar_init(&empty[s], 2 * CLUSTER);  // each consumer warpgroup of each block
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    cluster_sync();  // no copy or remote arrival may reach a barrier before it is initialized

    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            if (a_mn) {
                if (b_mn) produce<1, 1>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
                else produce<1, 0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
            } else {
                if (b_mn) produce<0, 1>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
                else produce<0, 0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
        if (a_mn) {
            if (b_mn) consume<1, 1>(smem, full, empty, C, M, N, units, rank, kblocks);
            else consume<1, 0>(smem, full, empty, C, M, N, units, rank, kblocks);
        } else {
            if (b_mn) consume<0, 1>(smem, full, empty, C, M, N, units, rank, kblocks);
            else consume<0, 0>(smem, full, empty, C, M, N, units, rank, kblocks);
        }
    }
    // A block must outlive the other blocks' copies into it and arrivals on its barriers.
    cluster_sync();
}
