// wgmma, wgmma-n128, wgmma-n64, wgmma-cluster — tensor-core rungs 2 and 3 (Hopper, sm_90a): TMA
// → mbarrier pipeline → wgmma, warp-specialized producer and consumer warpgroups, persistent grid.
// Changes from mma-sync: wgmma.mma_async (one warpgroup, 64×BN×16 per instruction) reads both
// operands from shared memory through descriptors: no ldmatrix, no fragments in registers, and it
// runs while the warps go on. TMA copies whole boxes of A and B, already in the 128-byte swizzle
// wgmma reads and zero-filled past the edges, and counts their bytes on an mbarrier. Warpgroup 0
// only loads (one thread; setmaxnreg cuts it to 40 registers), warpgroups 1 and 2 only compute
// (232 registers for 64×BN f32 accumulators each); they pass STAGES buffers back and forth through
// a "full" and an "empty" mbarrier per buffer. One block per SM walks the tiles of C in the
// grouped order (GROUP_M tile-rows at a time, so a wave shares panels of A and B in L2), and the
// loader runs ahead into the next tile while the consumers store the last.
// wgmma-cluster (CLUSTER = 2): clusters of two blocks take vertically adjacent tiles; each loads
// its own A and half of B, multicast to both (32 KB instead of 48 KB per stage from L2), and a
// buffer is free once the consumers of both blocks release it. The start's cluster barrier is
// split (arrive after the mbarrier init, wait before the first remote access), none at the exit.
// Layouts: K-major operands (op(A) = N, op(B) = T) load as one box of BK × rows (transpose bit 0),
// MN-major ones as BM/64 or BN/64 boxes of 64 × BK (bit 1); the plain product (A K-major, B
// MN-major) runs as C^T = B^T·A^T. The host's tensor maps (src/cuda/tma.rs) follow the same rules.
// C: epilogue.cuh (from registers, or STORE_BOXES staged boxes and TMA stores); f32 or C_NARROW.
// Split-K (`splits` > 1, cluster-free builds; the host plans it for problems with tiles for at most
// half the SMs and a long K, family/wgmma.rs): unit u is tile u % tiles over k-blocks piece
// u / tiles of `splits` near-equal pieces; each piece stores its f32 partial tile (C's orientation)
// into slab `piece` of `partial` (splits × M × N), and `wgmma_reduce`, launched behind, sums the
// slabs in piece order (deterministic) into C (piece_range: tile_order.cuh; store_partial and
// wgmma_reduce: epilogue.cuh).
// Strided batches (compiled with BATCHED = 1): the entry takes the batch's count and strides after
// the usual arguments, the maps have the product as a third dimension, and the persistent loop's
// units run over every product's tiles (BatchArgs); split-K is not planned for a batch.
// Geometry: THREADS = 384 (three warpgroups); a persistent grid of at most one block per SM.
// Shared memory (dynamic): STAGES·(BM + BN)·BK·2 bytes (128×256×64, 4 stages: 192 KB), + 1 KB to
// align to the swizzle's 1024-byte period, + STORE_BOXES·2·8 KB of C boxes.
// Traffic model per output element: K/BN + K/BM loads. Parameters: ELEM (16-bit), IN_BF16 | IN_F16,
// BM = 128, BN = 64 | 128 | 256, BK = 64, STAGES, THREADS, CLUSTER, STORE_BOXES, C_NARROW.
// Constraints: sm_90a; any M, N, K (rows that are not 16-byte multiples are staged by the host:
// src/cuda/staging.rs).

#if !defined(IN_BF16) && !defined(IN_F16)
#error "wgmma: compile with IN_BF16 or IN_F16"
#endif

static_assert(BM == 128 && BK == 64, "wgmma: two consumer warpgroups of 64 rows, one 128-byte swizzle row of K");
static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma: hopper.cuh's m64n{64,128,256}k16 instructions");
static_assert(THREADS == 384, "wgmma: one producer and two consumer warpgroups");
static_assert(STAGES >= 2, "wgmma: at least two buffers");

#ifndef CLUSTER
#define CLUSTER 1
#endif
// wgmma groups left in flight before a buffer is released: 0 hands a k-block's buffer back as
// soon as its own group completes; the cluster build keeps 1 (the previous k-block's), with which
// ptxas does not spill it.
constexpr int WAIT_DEPTH = CLUSTER > 1 ? 1 : 0;
static_assert(CLUSTER == 1 || CLUSTER == 2, "wgmma: clusters of one or two blocks");
#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

constexpr int SWIZZLE_ELEMS = 64;                         // 128 bytes of 16-bit elements
constexpr int A_STAGE_BYTES = BM * BK * 2;                // (BM, BK)
constexpr int B_STAGE_BYTES = BN * BK * 2;                // (BK, BN)
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int MN_CHUNK_BYTES = BK * 128;                  // one MN-major box: (BK, 64)
// The raster group's height in work units: a wave of 132 blocks over g tile-rows × 132/g
// tile-columns loads g·BM + (132/g)·BN distinct rows of A and B per k-block, least at
// g = sqrt(132·BN/BM): 16 for 128×256 tiles (a cluster's unit is two tile-rows). The 128×128 and
// 128×64 kernels serve problems of about one wave, where the order hardly matters: 8.
constexpr int GROUP_M = BN == 256 ? 16 / CLUSTER : 8;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;    // 128·40 + 256·232 ≤ 65536

// The mbarrier, TMA, cluster and wgmma wrappers are hopper.cuh's, C's epilogue is epilogue.cuh's.

// The work units of this block (a cluster takes CLUSTER vertically adjacent tiles): tile_order.cuh.
using Units = ClusterUnits<CLUSTER, GROUP_M>;

// A strided batch (BATCHED = 1 builds): `count` products, and work unit u of the persistent loop
// belongs to product u / (units · splits). The A and B sides' maps have the product as their third
// dimension (a side that every product shares, stride 0, has one: its step is 0); C's products are
// stride_c elements apart (the direct stores) and C's map has them as its third dimension too.
struct BatchArgs {
    int count;           // 1 unless BATCHED
    int a_step, b_step;  // the map's product for product z is z · step
    long long stride_c;  // elements from one product's C to the next
};

// Unit u's product and its unit within that product's units × splits.
__device__ __forceinline__ void unit_of_batch(int u, int per_product, int& z, int& w)
{
    z = BATCHED ? u / per_product : 0;
    w = BATCHED ? u % per_product : u;
}

// ---- producer: one thread issues every TMA copy ----------------------------------------------
template <int TA, int TB>
__device__ __forceinline__ void produce(unsigned char* smem, u64* full, u64* empty, const TmaMap* map_a,
                                        const TmaMap* map_b, Units units, unsigned rank, int kblocks, int splits,
                                        BatchArgs batch)
{
    constexpr int B_ROWS = BN / CLUSTER;                    // K-major B rows this block loads
    constexpr int B_CHUNKS = BN / SWIZZLE_ELEMS / CLUSTER;  // MN-major B chunks this block loads
    int it = 0;  // k-blocks loaded so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count * splits * batch.count; u += units.step) {
        int tm, tn, kb0, kb1, z, w;
        unit_of_batch(u, units.count * splits, z, w);
        units.tile(w % units.count, rank, tm, tn);
        piece_range(w / units.count, splits, kblocks, kb0, kb1);
        const int za = z * batch.a_step, zb = z * batch.b_step;
        for (int kb = kb0; kb < kb1; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // zero-filled bytes count too
            unsigned char* a = smem + s * STAGE_BYTES;     // (BM, BK) or BM/64 × (BK, 64)
            unsigned char* b = a + A_STAGE_BYTES;          // (BN, BK) or BN/64 × (BK, 64)
            if (TA == 0) {
                tma_load_at(a, map_a, &full[s], kb * BK, tm * BM, za);
            } else {
#pragma unroll
                for (int j = 0; j < BM / SWIZZLE_ELEMS; ++j)
                    tma_load_at(a + j * MN_CHUNK_BYTES, map_a, &full[s], tm * BM + j * SWIZZLE_ELEMS, kb * BK, za);
            }
            if (TB == 0) {
                tma_load_to_cluster_at<CLUSTER>(b + rank * B_ROWS * 128, map_b, &full[s], kb * BK,
                                                tn * BN + rank * B_ROWS, zb);
            } else {
#pragma unroll
                for (int j = rank * B_CHUNKS; j < (rank + 1) * B_CHUNKS; ++j)
                    tma_load_to_cluster_at<CLUSTER>(b + j * MN_CHUNK_BYTES, map_b, &full[s],
                                                    tn * BN + j * SWIZZLE_ELEMS, kb * BK, zb);
            }
        }
    }
    // Instead of a cluster barrier at the exit: once every block's consumers have released this
    // block's last STAGES buffers (fresh ones pass at once), no remote arrival or multicast can
    // reach it any more, and it may leave without waiting for the other block's epilogue.
    if (CLUSTER > 1) {
        for (int i = 0; i < STAGES; ++i, ++it) mbar_wait(&empty[it % STAGES], ((it / STAGES) & 1) ^ 1);
    }
}

// ---- consumers: each warpgroup owns 64 rows × BN columns of the tile --------------------------
// SWAP: the block computes C^T's tile (tm, tn) = C's rows tn·BN + [0, BN), columns tm·BM + [0, BM).
template <int TA, int TB, bool SWAP>
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, OUT* __restrict__ C, int M,
                                        int N, const TmaMap* map_c, Units units, unsigned rank, int kblocks,
                                        int splits, float* __restrict__ partial, BatchArgs batch)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the tile
    const int tid = threadIdx.x % 128, lane = threadIdx.x % 32, warp = tid / 32;
    unsigned char* boxes = smem + STAGES * STAGE_BYTES + wg * STORE_BOXES * C_BOX_BYTES;
    const bool staged = STORE_BOXES > 0 && (N * C_BYTES) % 16 == 0;
    float d[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) d[i] = 0.0f;
    // This warpgroup is done with buffer s: tell the producer of every block that writes it
    // (thread r arrives on block r's barrier).
    auto release = [&](int s) {
        if (CLUSTER > 1) {
            if (tid < CLUSTER) mbar_arrive_cluster(&empty[s], tid);
        } else if (tid == 0) {
            mbar_arrive(&empty[s]);
        }
    };
    unsigned it = 0;  // k-blocks consumed so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count * splits * batch.count; u += units.step) {
        int tm, tn, kb0, kb1, z, w;
        unit_of_batch(u, units.count * splits, z, w);  // z again after the main loop
        const int piece = w / units.count;
        units.tile(w % units.count, rank, tm, tn);
        piece_range(piece, splits, kblocks, kb0, kb1);
        for (int kb = kb0; kb < kb1; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            unsigned a = smem_u32(smem + s * STAGE_BYTES), b = a + A_STAGE_BYTES;
#pragma unroll
            for (int i = 0; i < ACC; ++i) fence_operand(d[i]);
            wgmma_fence();
            // K-major: rows of 128 bytes, 8-row groups 1024 bytes apart (SBO), the next 16
            // elements of K 32 bytes further in the (swizzled) row.
            // MN-major: BK rows of 128 bytes per 64-wide chunk; 8-row groups of K 1024 bytes
            // apart (SBO), chunks MN_CHUNK_BYTES apart (LBO), the next 16 rows of K 2048 bytes
            // further. A step of `bytes` adds bytes / 16 to the descriptor's address field.
            const u64 da = TA == 0 ? smem_desc(a + wg * 64 * 128, 16, 1024)
                                   : smem_desc(a + wg * MN_CHUNK_BYTES, MN_CHUNK_BYTES, 1024);
            const u64 db = TB == 0 ? smem_desc(b, 16, 1024) : smem_desc(b, MN_CHUNK_BYTES, 1024);
            constexpr int A_STEP = (TA == 0 ? 32 : 2048) / 16, B_STEP = (TB == 0 ? 32 : 2048) / 16;
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                wgmma_m64k16<BN, TA, TB>(d, da + kk * A_STEP, db + kk * B_STEP, (kb > kb0 || kk > 0) ? 1 : 0);
            wgmma_commit();
            if constexpr (WAIT_DEPTH == 1) {
                // Keep this k-block's products in flight while waiting for the previous one's,
                // then hand that one's buffer back to the producer.
                wgmma_wait<1>();
                if (kb > kb0) release((it - 1) % STAGES);
            } else {
                // Wait for this k-block's products and hand its buffer straight back.
                wgmma_wait<0>();
                release(s);
            }
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC; ++i) fence_operand(d[i]);
        if constexpr (WAIT_DEPTH == 1) release((it - 1) % STAGES);
        if (tm * BM >= (SWAP ? N : M)) continue;  // a cluster's spare tile past the last row
        if (splits > 1) {
            float* slab = partial + (size_t)piece * M * N;
            if (SWAP) store_partial<true>(d, slab, M, N, tn * BN + 2 * (lane % 4), tm * BM + wg * 64 + warp * 16 + lane / 4);
            else store_partial<false>(d, slab, M, N, tm * BM + wg * 64 + warp * 16 + lane / 4, tn * BN + 2 * (lane % 4));
            continue;
        }
        // The product, computed again rather than held through the main loop (the cluster
        // build's consumers have no register to spare for it).
        z = BATCHED ? u / (units.count * splits) : 0;
        OUT* const Cz = C + (BATCHED ? z * batch.stride_c : 0);
        if (SWAP) store_c<true>(d, staged, boxes, map_c, Cz, M, N, wg, warp, lane, tn * BN, tm * BM + wg * 64, z);
        else store_c<false>(d, staged, boxes, map_c, Cz, M, N, wg, warp, lane, tm * BM + wg * 64, tn * BN, z);
    }
    if (staged && tid == 0) bulk_wait_all();  // the boxes must outlive TMA's reads of them
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
wgmma(const ELEM* __restrict__ A, const ELEM* __restrict__ B, OUT* __restrict__ C, int M, int N, int K,
      int a_rs, int a_cs, int b_rs, int b_cs, const __grid_constant__ TmaMap map_a,
      const __grid_constant__ TmaMap map_b, const __grid_constant__ TmaMap map_c, int splits,
      float* __restrict__ partial
#if BATCHED
      ,
      int batch_count, long long stride_a, long long stride_b, long long stride_c
#endif
)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    // The swizzle pattern repeats every 1024 bytes and the descriptors assume it starts there.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

    const bool a_mn = a_cs != 1;  // A stored K×M (op(A) = T)
    const bool b_mn = b_rs != 1;  // B stored K×N (op(B) = N)
    // A K-major and B MN-major (the plain row-major product): computed as C^T = B^T·A^T, so that
    // the MN-major operand is wgmma's 64-row A side and the 256-wide B side is read K-major
    // (K-major B ran ~4 % faster than MN-major B). The host builds map_a over B and map_b over A
    // by the same rule (src/cuda/tma.rs, `swaps_operands`).
    const bool swap = !a_mn && b_mn;
#if BATCHED
    // Swapped, wgmma's A side is B's map and its B side A's.
    const int a_step = (swap ? stride_b : stride_a) != 0, b_step = (swap ? stride_a : stride_b) != 0;
    const BatchArgs batch{batch_count, a_step, b_step, stride_c};
    splits = 1;  // the host plans no split-K for a batch; known here, the partials' path is dead code
#else
    const BatchArgs batch{1, 0, 0, 0};
#endif
    const Units units = swap ? Units((N + BM - 1) / BM, (M + BN - 1) / BN) : Units((M + BM - 1) / BM, (N + BN - 1) / BN);
    const int kblocks = (K + BK - 1) / BK;
    const unsigned rank = rank_in_cluster<CLUSTER>();

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);             // the producer's arrive.expect_tx (+ the TMA bytes)
            mbar_init(&empty[s], 2 * CLUSTER);  // each consumer warpgroup of each block
        }
        fence_mbarrier_init();
    }
    // No copy or remote arrival may reach a barrier before it is initialized. A cluster's barrier
    // is split: every thread arrives now and waits below, after setmaxnreg and the prefetches.
    if (CLUSTER > 1) cluster_arrive();
    else __syncthreads();

    if (threadIdx.x < 128) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            // The tensor maps into the TMA unit's cache now, not on the first copy.
            prefetch_tensormap(&map_a);
            prefetch_tensormap(&map_b);
        }
        if (CLUSTER > 1) {
            // Before the first multicast: the other block's barriers are initialized. By whole
            // warps: a wait in thread 0 alone is compiled as a warp-collective that waits for the
            // other 31 lanes, which are parked at the exit's __syncthreads (that build hung).
            __syncwarp();
            cluster_wait();
        }
        if (threadIdx.x == 0) {
            // The swapped product's A side (B^T) is MN-major and its B side (A^T) K-major.
            if (a_mn && b_mn) produce<1, 1>(smem, full, empty, &map_a, &map_b, units, rank, kblocks, splits, batch);
            else if (a_mn || swap) produce<1, 0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks, splits, batch);
            else produce<0, 0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks, splits, batch);
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        if (CLUSTER > 1) cluster_wait();  // before the first full-wait and remote release
        if (a_mn && b_mn) consume<1, 1, false>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial, batch);
        else if (a_mn) consume<1, 0, false>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial, batch);
        else if (swap) consume<1, 0, true>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial, batch);
        else consume<0, 0, false>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial, batch);
    }
    // A block must outlive the copies into it and the arrivals on its barriers (with a cluster
    // the producer's last waits see to the other block's; this barrier is the block's own).
    __syncthreads();
}
