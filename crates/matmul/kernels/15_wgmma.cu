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
//     tile-rows at a time, so a wave of blocks shares panels of A and B in L2; 16 for 128×256
//     tiles since 2026-11-24, 8 before), and the loader
//     runs ahead into the next tile while the consumers store the last one.
// Why faster: mma.sync on H100 is limited by issuing fragments from registers (ldmatrix + mma per
// 16×8×16); wgmma keeps the tensor cores fed from shared memory with four warps per instruction,
// which is the only path to the H100's dense bf16 rate (989 TFLOP/s).
// Tile: BM×BN = 128×256 per block and work unit, BK = 64 (one 128-byte swizzle row of 16-bit
// elements) per stage, STAGES = 4: 4 × (16 + 32) KB = 192 KB of shared memory (+1 KB to align the
// buffers to the swizzle's 1024-byte period, + STORE_BOXES × 2 × 8 KB to stage C).
// THREADS = 384 (three warpgroups).
// Layouts: op(A) = N (A stored M×K) and op(B) = T (B stored N×K) are "K-major" (TMA boxes of
// 64 K-elements × BM or BN rows, wgmma transpose bit 0); op(A) = T and op(B) = N are "MN-major"
// (boxes of 64 M- or N-elements × BK rows, BM/64 or BN/64 of them side by side, transpose bit 1).
// The host builds the two tensor maps (src/cuda/tma.rs) with the same box shapes.
// wgmma-cluster (CLUSTER = 2) pairs the blocks into clusters of two that take vertically adjacent
// tiles of C (the same columns, so the same slices of B): each block loads its own A and half of
// B, multicast to both blocks' shared memory, so every block pulls 32 KB instead of 48 KB per
// stage from L2. A buffer is then free only when the consumers of both blocks are done with it:
// each consumer warpgroup arrives on the "empty" barrier of every block of the cluster.
// The cluster's barriers are split (SPLIT_SYNC): a relaxed arrive after the mbarrier init, each
// warp's wait just before it first needs the other block, and no barrier at the exit (the producer
// waits until its last buffers are released everywhere); the whole-cluster barriers they replace
// cost ~1,100 cycles at the start and ~2,300 at the exit of every block (docs/kernels.md 15m).
// The TMA-store epilogue (STORE_BOXES > 0): instead of 64 scattered 8-byte global stores per
// thread, each consumer warpgroup writes its 64×BN results into STORE_BOXES swizzled boxes of
// 64 rows × 32 floats in shared memory (conflict-free: a warp's 8-byte writes land in distinct
// 16-byte chunks of each row pair) and one thread hands each box to TMA, which streams it to C
// asynchronously; the warpgroup waits only until TMA has *read* a box before refilling it, not
// for the global writes, so the next tile's products start while C drains. C's rows must be a
// multiple of 16 bytes (N % 4 == 0 for f32 C, N % 8 == 0 for bf16/f16 C); otherwise the kernel
// falls back to bounds-checked stores. (The epilogue's code is in epilogue.cuh, shared with
// 16_wgmma_tf32.cu since 2026-11-25.)
// C in the input dtype (C_NARROW = 1, `--c-dtype input`): the f32 sums are rounded to nearest
// even into bf16/f16 pairs by cvt.rn.{bf16x2,f16x2}.f32 on the way to shared memory or global
// memory; a staged box is then 64 rows × 64 columns (still one 128-byte swizzle row), so C moves
// half the bytes. In the swapped orientation a thread's pair runs down a column of C, and lanes
// lane ^ 4 (the neighbouring column) trade halves with one shuffle so each holds a row pair.
// wgmma-n128 (BN = 128) is the same kernel with 128×128 tiles: twice as many work units, for
// problems whose 128×256 tiles would leave most SMs idle (1024³ has 32 of them for 132 SMs).
// Parameters: ELEM (16-bit storage), IN_BF16 or IN_F16, BM = 128, BN = 128 or 256, BK = 64,
// STAGES, THREADS = 384, CLUSTER (1 or 2), STORE_BOXES (C boxes staged per consumer warpgroup, a
// divisor of BN/32; 0 = direct stores), C_NARROW (C in ELEM). Constraints: sm_90a; every stored row of A and B a
// multiple of 16 bytes (TMA); any M, N, K otherwise (the edges are TMA's zero fill and a
// bounds-checked store or TMA's clipping of C).

#if defined(IN_BF16)
#define WGMMA_TYPE "bf16"
#elif defined(IN_F16)
#define WGMMA_TYPE "f16"
#else
#error "wgmma: compile with IN_BF16 or IN_F16"
#endif

static_assert(BM == 128 && BK == 64, "wgmma: two consumer warpgroups of 64 rows, one 128-byte swizzle row of K");
static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma: the wgmma instructions below are m64n{64,128,256}k16");
static_assert(THREADS == 384, "wgmma: one producer and two consumer warpgroups");
static_assert(STAGES >= 2, "wgmma: at least two buffers");

#ifndef CLUSTER
#define CLUSTER 1
#endif
// Experiment switches (MATMUL_KERNEL_DEFINES; docs/kernels.md measured each against the default):
// WAIT_DEPTH = wgmma groups left in flight before a buffer is released (0, the default without
// clusters since 2026-11-25: a k-block's buffer goes back as soon as its own group is complete;
// 1: one group later, the previous k-block's, as before: 0.1-0.7 % slower at every shape of the
// run of record, docs/kernels.md 15t; still the clusters' default, since with 0 ptxas spills the
// cluster build: 12 bytes stored, 56 loaded), DIRECT_STORES = 1 ignores the staged epilogue,
// RASTER_GROUP = tile-rows per group; PROBE = 1 (below) records a timeline instead.
#ifndef WAIT_DEPTH
#define WAIT_DEPTH (CLUSTER > 1 ? 1 : 0)
#endif
// SPLIT_SYNC (CLUSTER > 1 only; docs/kernels.md 15m): 1 (default) = the start's cluster barrier
// split (below, at the kernel's entry) and none at the exit; 0 = a whole cluster barrier after
// the mbarrier init and another at the exit, as before 15m (they cost ~1,100 and ~2,300 cycles).
#ifndef SPLIT_SYNC
#define SPLIT_SYNC 1
#endif
constexpr bool SPLIT_CLUSTER_SYNC = CLUSTER > 1 && SPLIT_SYNC;  // the split barriers are in use
// PROBE = 1, a timeline probe (docs/kernels.md 15l; never a build whose rate is quoted): thread 0
// of each block keeps its SM clock at the points below in shared memory and, at the exit, writes
// them (as cycles since its entry) with %globaltimer at the entry and its SM's id to row blockIdx.x
// of the module-scope array wgmma_probe, which the host prints after the last timed launch with
// MATMUL_PROBE=wgmma_probe (scripts/probe-summary.py reads it). No printf: its stack frame in local
// memory delayed the very start it was measuring (15k). Costs 1-3 % (15l).
#ifndef PROBE
#define PROBE 0
#endif
enum ProbePoint {
    P_ENTRY_NS,       // %globaltimer at the entry, ns
    P_FIRST_COPY,     // the producer issues the first TMA copy
    P_FIRST_STAGE,    // consumer warpgroup 0 sees the first stage land
    P_MAINLOOP_END,   // ... its last tile's last wgmma retired
    P_STORES_ISSUED,  // ... its last C stores issued
    P_STORES_DONE,    // ... and completed
    P_EXIT,           // thread 0 past the final barrier
    P_SM,             // %smid
    P_BARRIERS,       // the mbarriers initialized
    P_SYNCED,         // past the start's barrier (split cluster barriers: the producer warp's wait)
    P_PRODUCER_REGS,  // the producer past setmaxnreg.dec
    P_CONSUMER_REGS,  // consumer warpgroup 0 past setmaxnreg.inc
    P_PREFETCHED,     // the tensor-map prefetches issued
    P_FIRST_TILE,     // the producer enters its first tile (ptxas reads this clock before the
                      // tile's coordinate divisions, not after: 15m)
    PROBE_POINTS
};
constexpr int PROBE_BLOCKS = 132;  // rows of wgmma_probe: the persistent grid has at most one block per SM
#if PROBE
__device__ unsigned long long wgmma_probe[PROBE_BLOCKS * PROBE_POINTS];
__shared__ unsigned long long probe_t[PROBE_POINTS];
__shared__ unsigned long long probe_ns;  // %globaltimer at the entry (in shared memory, not in a
                                         // register the 40-register producer thread would carry)
#define PROBE_AT(p) (probe_t[p] = clock64())
#else
#define PROBE_AT(p) ((void)0)
#endif
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
// The raster group's height in work units. A wave of 132 blocks covering g tile-rows × 132/g
// tile-columns loads g·BM + (132/g)·BN distinct rows of A and B per k-block; that is least at
// g = sqrt(132·BN/BM), 16 for 128×256 tiles (measured: +3 % at 4096, +6 % at 8192 and +4 % at
// 4096²×14336 over g = 8, docs/kernels.md 15h). A cluster's unit is two tile-rows. The 128×128
// and 128×64 kernels serve problems of about one wave, where the order hardly matters: 8.
#ifndef RASTER_GROUP
#define RASTER_GROUP (BN == 256 ? 16 / CLUSTER : 8)
#endif
constexpr int GROUP_M = RASTER_GROUP;                     // work-unit rows per raster group
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;    // 128·40 + 256·232 ≤ 65536

// ---- clusters (the shared mbarrier and TMA helpers: hopper.cuh; C's epilogue: epilogue.cuh) ---
// Every thread of every block of the cluster (a block-wide barrier when CLUSTER = 1). The split
// halves (cluster_arrive, cluster_wait), the rank, the remote arrive and B's share of a block
// (tma_load_to_cluster: all of B, or with a cluster its part, multicast): hopper.cuh.
__device__ __forceinline__ void cluster_sync()
{
    if (CLUSTER > 1) {
        asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
    } else {
        __syncthreads();
    }
}

// ---- wgmma (the descriptor, fences and accumulator lists: hopper.cuh) ----------------------
// d (64×BN f32, BN/2 per thread) = A·B (+ d when accumulate): A 64×16 and B 16×BN from shared
// memory; TA / TB = 1 when the operand is MN-major.
template <int TA, int TB>
__device__ __forceinline__ void wgmma_64xBNx16(float (&d)[ACC], u64 desc_a, u64 desc_b, int accumulate)
{
#if BN == 256
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." WGMMA_TYPE "." WGMMA_TYPE "\n"
        WGMMA_ACC_128 ",\n"
        "%128, %129, p, 1, 1, %131, %132;\n"
        "}\n"
        : ACC32(0), ACC32(32), ACC32(64), ACC32(96)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA), "n"(TB));
#elif BN == 128
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." WGMMA_TYPE "." WGMMA_TYPE "\n"
        WGMMA_ACC_64 ",\n"
        "%64, %65, p, 1, 1, %67, %68;\n"
        "}\n"
        : ACC32(0), ACC32(32)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA), "n"(TB));
#else
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." WGMMA_TYPE "." WGMMA_TYPE "\n"
        WGMMA_ACC_32 ",\n"
        "%32, %33, p, 1, 1, %35, %36;\n"
        "}\n"
        : ACC32(0)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA), "n"(TB));
#endif
}

// The work units of this block (a cluster takes CLUSTER vertically adjacent tiles): tile_order.cuh.
using Units = ClusterUnits<CLUSTER, GROUP_M>;

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
        if (PROBE && it == 0) PROBE_AT(P_FIRST_TILE);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            if (PROBE && it == 0) PROBE_AT(P_FIRST_COPY);
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
                tma_load_to_cluster<CLUSTER>(b + rank * B_ROWS * 128, map_b, &full[s], kb * BK,
                                             tn * BN + rank * B_ROWS);
            } else {
#pragma unroll
                for (int j = rank * B_CHUNKS; j < (rank + 1) * B_CHUNKS; ++j)
                    tma_load_to_cluster<CLUSTER>(b + j * MN_CHUNK_BYTES, map_b, &full[s], tn * BN + j * SWIZZLE_ELEMS,
                                                 kb * BK);
            }
        }
    }
    // Instead of a cluster barrier at the exit: once every block's consumers have released this
    // block's last STAGES buffers (fresh ones pass at once), no remote arrival or multicast can
    // reach it any more, and it may leave without waiting for the other block's epilogue.
    if (SPLIT_CLUSTER_SYNC) {
        for (int i = 0; i < STAGES; ++i, ++it) mbar_wait(&empty[it % STAGES], ((it / STAGES) & 1) ^ 1);
    }
}

// ---- consumers: each warpgroup owns 64 rows × BN columns of the tile --------------------------
// SWAP: the block computes C^T's tile (tm, tn) = C's rows tn·BN + [0, BN), columns tm·BM + [0, BM).
template <int TA, int TB, bool SWAP>
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, OUT* __restrict__ C, int M,
                                        int N, const TmaMap* map_c, Units units, unsigned rank, int kblocks)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the tile
    const int tid = threadIdx.x % 128, lane = threadIdx.x % 32, warp = tid / 32;
    unsigned char* boxes = smem + STAGES * STAGE_BYTES + wg * STORE_BOXES * C_BOX_BYTES;
    const bool staged = STORE_BOXES > 0 && !DIRECT_STORES && (N * C_BYTES) % 16 == 0;
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
    for (int u = units.first; u < units.count; u += units.step) {
        int tm, tn;
        units.tile(u, rank, tm, tn);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            if (PROBE && it == 0 && tid == 0 && wg == 0) PROBE_AT(P_FIRST_STAGE);
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
                wgmma_64xBNx16<TA, TB>(d, da + kk * A_STEP, db + kk * B_STEP, (kb > 0 || kk > 0) ? 1 : 0);
            wgmma_commit();
#if WAIT_DEPTH == 1
            // Keep this k-block's products in flight while waiting for the previous one's, then
            // hand that one's buffer back to the producer.
            wgmma_wait<1>();
            if (kb > 0) release((it - 1) % STAGES);
#else
            // Wait for this k-block's products and hand its buffer straight back: the producer
            // gets each buffer one k-block sooner.
            wgmma_wait<0>();
            release(s);
#endif
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC; ++i) fence_operand(d[i]);
#if WAIT_DEPTH == 1
        release((it - 1) % STAGES);
#endif
        if (PROBE && tid == 0 && wg == 0) PROBE_AT(P_MAINLOOP_END);
        if (tm * BM >= (SWAP ? N : M)) continue;  // a cluster's spare tile past the last row
        if (SWAP) store_c<true>(d, staged, boxes, map_c, C, M, N, wg, warp, lane, tn * BN, tm * BM + wg * 64);
        else store_c<false>(d, staged, boxes, map_c, C, M, N, wg, warp, lane, tm * BM + wg * 64, tn * BN);
    }
    if (PROBE && tid == 0 && wg == 0) PROBE_AT(P_STORES_ISSUED);
    if (staged && tid == 0) bulk_wait_all();  // the boxes must outlive TMA's reads of them
    if (PROBE && tid == 0 && wg == 0) PROBE_AT(P_STORES_DONE);
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
wgmma(const ELEM* __restrict__ A, const ELEM* __restrict__ B, OUT* __restrict__ C, int M, int N, int K,
      int a_rs, int a_cs, int b_rs, int b_cs, const __grid_constant__ TmaMap map_a,
      const __grid_constant__ TmaMap map_b, const __grid_constant__ TmaMap map_c)
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
    const Units units = swap ? Units((N + BM - 1) / BM, (M + BN - 1) / BN) : Units((M + BM - 1) / BM, (N + BN - 1) / BN);
    const int kblocks = (K + BK - 1) / BK;
    const unsigned rank = rank_in_cluster<CLUSTER>();

#if PROBE
    if (threadIdx.x == 0) {
        unsigned long long ns;
        asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
        probe_ns = ns;
        PROBE_AT(P_ENTRY_NS);  // the entry clock (the exit writes the ns there)
    }
#endif
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);             // the producer's arrive.expect_tx (+ the TMA bytes)
            mbar_init(&empty[s], 2 * CLUSTER);  // each consumer warpgroup of each block
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        PROBE_AT(P_BARRIERS);
    }
    // No copy or remote arrival may reach a barrier before it is initialized. Split: arrive now,
    // wait below, after setmaxnreg and the tensor-map prefetch.
    if (SPLIT_CLUSTER_SYNC) cluster_arrive();
    else cluster_sync();
    if (PROBE && threadIdx.x == 0 && !SPLIT_CLUSTER_SYNC) PROBE_AT(P_SYNCED);

    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            PROBE_AT(P_PRODUCER_REGS);
            // Fetch the tensor maps into the TMA unit's cache now, not on the first copy.
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(&map_a)) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(&map_b)) : "memory");
            PROBE_AT(P_PREFETCHED);
        }
        if (SPLIT_CLUSTER_SYNC) {
            // Before the first multicast: the other block's barriers are initialized. By whole
            // warps: a wait in thread 0 alone is compiled as a warp-collective that waits for the
            // other 31 lanes, which are parked at the exit's __syncthreads (that build hung).
            __syncwarp();
            cluster_wait();
            if (threadIdx.x == 0) PROBE_AT(P_SYNCED);
        }
        if (threadIdx.x == 0) {
            // The swapped product's A side (B^T) is MN-major and its B side (A^T) K-major.
            if (a_mn && b_mn) produce<1, 1>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
            else if (a_mn || swap) produce<1, 0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
            else produce<0, 0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
        if (PROBE && threadIdx.x == 128) PROBE_AT(P_CONSUMER_REGS);
        if (SPLIT_CLUSTER_SYNC) cluster_wait();  // before the first full-wait and remote release
        if (a_mn && b_mn) consume<1, 1, false>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
        else if (a_mn) consume<1, 0, false>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
        else if (swap) consume<1, 0, true>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
        else consume<0, 0, false>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
    }
    // A block must outlive the other blocks' copies into it and arrivals on its barriers (with
    // SPLIT_SYNC the producer's last waits see to that, and this barrier is the block's own).
    if (SPLIT_CLUSTER_SYNC) __syncthreads();
    else cluster_sync();
#if PROBE
    if (threadIdx.x == 0 && blockIdx.x < PROBE_BLOCKS) {
        PROBE_AT(P_EXIT);
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
        unsigned long long* row = wgmma_probe + PROBE_POINTS * blockIdx.x;
        for (int p = 0; p < PROBE_POINTS; ++p)  // (probe_t[P_SM] is never written: %smid goes there)
            row[p] = p == P_ENTRY_NS ? probe_ns : p == P_SM ? smid : probe_t[p] - probe_t[P_ENTRY_NS];
    }
#endif
}
