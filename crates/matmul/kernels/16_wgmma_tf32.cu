// wgmma-tf32 — tensor-core rung 4 (Hopper, sm_90a): the wgmma pipeline of 15_wgmma.cu for tf32,
// with one operand taken from registers because tf32 wgmma reads shared memory K-major only.
// Changes from wgmma (rung 2, bf16/f16) and why:
//   * wgmma.mma_async .tf32 has no transpose bits: an operand it reads through a shared-memory
//     descriptor must be K-major (stored with K contiguous). Its first operand may instead come
//     from registers, in whatever layout we load it. So one operand (S) is read by descriptor and
//     must be stored K-major; the other (R) is loaded from shared memory into the register
//     fragment layout by the consumers themselves (ldmatrix or ld.shared).
//   * Two orientations, chosen per launch from the strides:
//       direct  (op(B) = T, B stored N×K):  D = C;    R = op(A) (A stored M×K or K×M), S = B;
//       swapped (op(A) = N, op(B) = N):     D = C^T;  R = op(B)^T (B stored K×N: N-contiguous),
//                                           S = op(A)^T, K-major because A is stored M×K.
//     op(A) = T with op(B) = N leaves no K-major operand for the descriptor: can_run refuses it
//     (Constraint::TcTf32Layout) and `--kernel auto` runs mma-sync there.
//     D[p][q] (p along R's rows, q along S's rows) is stored to C[p][q] (direct) or C[q][p]
//     (swapped).
//   * The epilogue (since 2026-11-25, docs/kernels.md 16d) is 15_wgmma.cu's, from epilogue.cuh:
//     the accumulators have the same layout, so each consumer warpgroup stages its 64×256 f32 in
//     STORE_BOXES = 2 swizzled boxes of 64 × 32 floats and TMA stores them to C through a third
//     tensor map, while the warpgroup goes on to the next tile once TMA has read the boxes. Before,
//     the consumers stored from registers (swapped: 4-byte scalar stores, a warp writing 4 rows ×
//     32 bytes per instruction) and the tensor cores waited for the whole tile's stores.
//   * Rounding (since 2026-11-25, docs/kernels.md 16c): both tensor maps have the TMA data type
//     TFLOAT32, so the TMA rounds every f32 to tf32 (to nearest, ties to even, low 13 bits zeroed)
//     as it copies it into shared memory. S (read by descriptor) therefore reaches the tensor
//     cores rounded, and R needs no cvt in the consumers. Before, the maps copied raw f32: R was
//     rounded by cvt.rn.tf32.f32 on its way to the registers, but the tensor cores truncate the
//     low 13 bits of S (measured: 4.1e-4 relative error against mma-sync's and cuBLAS's 2.6e-4),
//     and no instruction could round S short of rewriting it in shared memory (64 KB more
//     traffic per k-block). Now the error is cuBLAS's to three digits, and the kernel ran 1–3 %
//     faster under the card's power cap (presumably operands with 13 zero bits switch less
//     logic in shared memory and the tensor cores; the power itself was not measured).
//     tests/gpu.rs `wgmma_tf32_rounding` checks that the result matches the CPU emulation with
//     both operands rounded and not the one with S truncated.
//   * The A registers of a wgmma must not be rewritten until a wait_group has retired it (PTX).
//     With one k-block's group kept in flight (wait_group 1), k-blocks alternate between two
//     fragment sets (16 registers each), the loop taking k-blocks in pairs; ptxas keeps both sets
//     live and issues the wgmmas back to back. (A loop whose control flow had a path, impossible
//     at run time, that rewrote a set before its retiring wait made ptxas serialize every wgmma
//     with warning C7513: check NVRTC's log after changing this loop.)
//   * A buffer's "empty" barrier counts one arrival per consumer warp (8), each after a
//     __syncwarp: the consumers now read R with ordinary loads, which must be ordered before the
//     producer's next TMA write into the buffer (rung 2's single arrival per warpgroup covered
//     only the wgmma's own reads, which its wait_group retires).
//   * wgmma-tf32-cluster (CLUSTER = 2, since 2026-11-25, docs/kernels.md 16e): blocks run in
//     clusters of two that take vertically adjacent tiles of D (the same S rows), as cuBLAS's tf32
//     kernel does; each block loads its own R and half of S (128 rows), multicast into both blocks'
//     shared memory, so a block pulls 32 KB instead of 48 KB per stage from L2. A buffer is free
//     only when the consumer warps of both blocks have released it (lane r of each warp arrives on
//     block r's "empty" barrier: 16 arrivals). The start's cluster barrier is split and there is
//     none at the exit, as in 15_wgmma.cu (SPLIT_SYNC).
// Why faster than mma-sync (0.33× cuBLAS for tf32): the same reasons as rung 2 — TMA fills a
// 4-stage mbarrier ring, one producer thread feeds two consumer warpgroups, and each wgmma
// m64n256k8 is 64·256·8 MACs from one instruction per warpgroup, with S streamed by the tensor
// cores straight from shared memory; only R (a third of each stage) passes through registers.
// Count per 128×256×32 k-block (per SM): 1 M tf32 MACs = 1024 clocks at the H100's 1024 tf32
// MAC/clk/SM (495 TFLOP/s dense); shared memory moves 48 KB of TMA writes + 2 × 32 KB of S read
// by the two warpgroups' wgmmas + 16 KB of R fragment loads = 128 KB, 1024 clocks at 128 B/clk —
// the same ratio as rung 2 (bf16, BK = 64), which measured 0.91–0.99× cuBLAS. Prediction (not
// measured): 0.85–0.95× cuBLAS tf32 at 4096–8192, about 300–345 TFLOP/s; about 0.5× at 1024
// (32 tiles for 132 SMs).
// Tile: D is 128×256 per work unit (BM = 128 rows of R: two consumer warpgroups × m64; BN = 256
// rows of S: the wgmma's n256), BK = 32 (one 128-byte swizzle row of f32) per stage, STAGES = 4:
// 4 × (16 + 32) KB = 192 KB of shared memory (+1 KB to align the ring to the swizzle's 1024-byte
// period, + 2 × 2 × 8 KB of C boxes). The C tile is 128×256 (direct) or 256×128 (swapped).
// THREADS = 384.
// Shared memory of one stage: [R: 16 KB][S: 32 KB], each in TMA's 128-byte swizzle (logical
// 16-byte chunk c of a 128-byte row r is stored at chunk c ^ (r % 8); the ring is 1024-aligned).
//   S: BN rows (q) × 32 K-elements: the K-major layout of 15_wgmma.cu (rows of 128 bytes, 8-row
//      groups 1024 bytes apart, the k8 step j at +32·j bytes).
//   R, K-major (direct, op(A) = N): BM rows (p) × 32 K-elements, one box. Fragments by
//      ldmatrix.x4 (non-transposing; on 32-bit data lane (g, t) = (lane/4, lane%4) receives word t
//      of row g of each 8×4-word matrix, which is the tf32 fragment a(g, t)). Each 8-lane phase
//      reads 8 rows of one logical chunk: stored chunks c ^ r differ → no bank conflict.
//   R, P-major (swapped: B stored K×N; direct with op(A) = T: A stored K×M): BM/32 boxes of 32
//      K-rows × 32 P-elements (4 KB each). Fragments by ld.shared.b32 (ldmatrix cannot transpose
//      32-bit elements). A plain load of a0 (rows k = t, elements p = g) hits 2-way bank
//      conflicts: the k rows t = 0..3 only XOR chunks with 0..3, so rows t and t^1 share banks.
//      Instead lanes with odd t load a2 (k + 4) first and a0 second: each load then reads rows
//      {0, 2, 5, 7} or {1, 3, 4, 6} (their XOR values differ in bit 2 between the two members of
//      every colliding pair) → 8 distinct chunks × 4 words = 32 banks. A select puts the values
//      back in fragment order. Proof in `frag_offsets_pmajor`.
// Register fragment of wgmma .m64nNk8 .tf32 (PTX ISA, "Register fragments", same as mma.m16n8k8
// per warp): warp w of the warpgroup owns rows 16w..16w+15; lane (g, t) holds a0 = (16w + g, t),
// a1 = (16w + g + 8, t), a2 = (16w + g, t + 4), a3 = (16w + g + 8, t + 4) of the 64×8 k-step.
// Parameters: ELEM = float, IN_TF32, BM = 128, BN = 256, BK = 32, STAGES, THREADS = 384,
// STORE_BOXES (C boxes per consumer warpgroup; 0 = stores from registers), CLUSTER (1 or 2).
// Constraints: sm_90a; op(A) = N or op(B) = T; every stored row of A and B a multiple of 16 bytes
// (4 floats, TMA); any M, N, K otherwise (edges: TMA's zero fill, and TMA's clipping of C or,
// where C's rows are not a multiple of 16 bytes, bounds-checked stores).
// Kernel ABI: the usual (A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs), then the tensor maps of A and
// B (boxes per role, src/cuda/tma.rs `tf32_maps`) and of C (the staged epilogue's boxes; zeroed,
// and not read, where the kernel stores from registers).

#if !defined(IN_TF32)
#error "wgmma-tf32: compile with IN_TF32"
#endif

static_assert(sizeof(ELEM) == 4, "wgmma-tf32: f32 storage");
static_assert(BM == 128 && BN == 256 && BK == 32, "wgmma-tf32: the 128x256x32 tile is what the code below spells out");
static_assert(THREADS == 384, "wgmma-tf32: one producer and two consumer warpgroups");
static_assert(STAGES >= 2, "wgmma-tf32: at least two buffers");
#ifndef CLUSTER
#define CLUSTER 1
#endif
static_assert(CLUSTER == 1 || CLUSTER == 2, "wgmma-tf32: clusters of one or two blocks");
#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

constexpr int R_STAGE_BYTES = BM * BK * 4;               // (BM, BK) or BM/32 × (BK, 32)
constexpr int S_STAGE_BYTES = BN * BK * 4;               // (BN, BK)
constexpr int STAGE_BYTES = R_STAGE_BYTES + S_STAGE_BYTES;
constexpr int P_BOX_ELEMS = 32;                          // P-elements per 128-byte row
constexpr int P_BOX_BYTES = BK * 128;                    // one P-major box: (BK, 32)
// Tile-rows per raster group: 16, the least distinct A and B per k-block for a 132-block wave
// of 128×256 tiles (15_wgmma.cu's rule; measured +5 % at 4096 over 8, level at 8192,
// docs/kernels.md 15h). RASTER_GROUP overrides it (MATMUL_KERNEL_DEFINES).
#ifndef RASTER_GROUP
#define RASTER_GROUP (16 / CLUSTER)
#endif
constexpr int GROUP_M = RASTER_GROUP;                    // work-unit rows per raster group
constexpr int CONSUMER_WARPS = 8;                        // two warpgroups
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;   // 128·40 + 256·232 ≤ 65536

// ---- register fragments --------------------------------------------------------------------
// Four 8×8 b16 matrices (8 rows × 4 words): lanes 8j..8j+7 give the row addresses of matrix j,
// which lands in r[j]; lane l receives word l%4 of row l/4.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

__device__ __forceinline__ unsigned lds32(unsigned addr)
{
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

// fence_operand for the fragment registers (hopper.cuh has the accumulators' float one): keeps
// the compiler from moving a register write across the wgmma fence and the asynchronous wgmma.
__device__ __forceinline__ void fence_operand(unsigned& r) { asm volatile("" : "+r"(r)::"memory"); }

// Byte offsets (within the R tile, k-step 0) of this lane's ldmatrix row for a K-major R: the
// warp's rows p0..p0+15 (p0 = 64·wg + 16·warp); lanes 8j..8j+7 address matrix j = (a0, a1, a2,
// a3): rows p0 + l%8 (+8 for j odd), logical chunk 2·kk + j/2 of the row. Stored chunk:
// (2kk + j/2) ^ (row % 8) = (j/2 ^ l%8) ^ 2kk, so k-step kk is offset `kk` of the four.
__device__ __forceinline__ void frag_offsets_kmajor(unsigned (&off)[4], int p0, int lane)
{
    const int row = p0 + lane % 8 + 8 * ((lane / 8) & 1);  // (BM) row of the R tile
    const int chunk = (lane / 16) ^ (lane % 8);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) off[kk] = row * 128 + ((chunk ^ (2 * kk)) << 4);
}

// Byte offsets (within the R tile, k-step 0) of this lane's four ld.shared.b32 for a P-major R:
// off[2h + s] is load s (0, 1) of the pair (a_h, a_{h+2}), h = 0, 1. Element (p, k) of R is at
//   box p/32 · P_BOX_BYTES + k·128 + ((p%32)/4 ^ k%8)·16 + (p%4)·4.
// Lane (g, t) needs p = p0 + g + 8h and k = t (a_h) or t + 4 (a_{h+2}); load s reads k = t + 4u
// with u = (t & 1) ^ s. p0 % 32 is 0 or 16, so (p%32)/4 = c0 ^ g/4 with c0 = (p0%32)/4 + 2h even,
// and the stored chunk is c0 ^ g/4 ^ t ^ 4u. For a fixed load the 8 (g/4, t) pairs meet: g/4 ^ t
// takes each value 0..3 twice, from two lanes whose t differ in parity, hence in u, hence in bit
// 2 of the chunk. So the 8 chunks are distinct and, with word g%4, cover 32 distinct banks.
// Advancing k by 8 (the next k-step) adds 1024 bytes and keeps k%8.
__device__ __forceinline__ void frag_offsets_pmajor(unsigned (&off)[4], int p0, int lane)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int s = 0; s < 2; ++s) {
            const int p = p0 + g + 8 * h;
            const int k = t + 4 * ((t & 1) ^ s);
            off[2 * h + s] = (p / P_BOX_ELEMS) * P_BOX_BYTES + k * 128 + ((((p % 32) / 4) ^ k) << 4) + (p % 4) * 4;
        }
    }
}

// The fragment (a0..a3, already rounded to tf32 by the TMA) of k-step kk from the R tile at
// shared address `r`.
template <int R_PMAJOR>
__device__ __forceinline__ void load_fragment(unsigned (&a)[4], unsigned r, const unsigned (&off)[4], int kk,
                                              bool odd_t)
{
    if (R_PMAJOR) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned x0 = lds32(r + off[2 * h] + kk * 1024);
            const unsigned x1 = lds32(r + off[2 * h + 1] + kk * 1024);
            a[h] = odd_t ? x1 : x0;      // k = t
            a[h + 2] = odd_t ? x0 : x1;  // k = t + 4
        }
    } else {
        ldsm_x4(a, r + off[kk]);
    }
}

// ---- wgmma (the descriptor, fences and accumulator lists: hopper.cuh) ----------------------
// d (64×256 f32, 128 per thread) = a·S (+ d when accumulate): a 64×8 tf32 from registers (the
// fragment above), S 8×256 from shared memory, K-major (tf32 has no transpose bits).
__device__ __forceinline__ void wgmma_64x256x8(float (&d)[ACC], const unsigned (&a)[4], u64 desc_s, int accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32\n"
        WGMMA_ACC_128 ",\n"
        "{%128, %129, %130, %131}, %132, p, 1, 1;\n"
        "}\n"
        : ACC32(0), ACC32(32), ACC32(64), ACC32(96)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_s), "r"(accumulate));
}

// The work units of this block (a cluster takes CLUSTER vertically adjacent tiles of D, the same S
// rows): tile_order.cuh. Here the tile-rows are D's (p) and the tile-columns its q.
using Units = ClusterUnits<CLUSTER, GROUP_M>;

// ---- producer: one thread issues every TMA copy ----------------------------------------------
template <int R_PMAJOR>
__device__ __forceinline__ void produce(unsigned char* smem, u64* full, u64* empty, const TmaMap* map_r,
                                        const TmaMap* map_s, Units units, unsigned rank, int kblocks)
{
    constexpr int S_ROWS = BN / CLUSTER;  // S rows this block loads (and multicasts to the cluster)
    int it = 0;  // k-blocks loaded so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count; u += units.step) {
        int tp, tq;
        units.tile(u, rank, tp, tq);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            int s = it % STAGES;
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // zero-filled bytes count too
            unsigned char* r = smem + s * STAGE_BYTES;     // (BM, BK) or BM/32 × (BK, 32)
            unsigned char* sd = r + R_STAGE_BYTES;         // (BN, BK)
            if (R_PMAJOR) {
#pragma unroll
                for (int j = 0; j < BM / P_BOX_ELEMS; ++j)
                    tma_load(r + j * P_BOX_BYTES, map_r, &full[s], tp * BM + j * P_BOX_ELEMS, kb * BK);
            } else {
                tma_load(r, map_r, &full[s], kb * BK, tp * BM);
            }
            tma_load_to_cluster<CLUSTER>(sd + rank * S_ROWS * 128, map_s, &full[s], kb * BK, tq * BN + rank * S_ROWS);
        }
    }
    // With a cluster, instead of a cluster barrier at the exit (15_wgmma.cu's SPLIT_SYNC): once
    // every block's consumers have released this block's last STAGES buffers (fresh ones pass at
    // once), no remote arrival or multicast can reach it any more.
    if (CLUSTER > 1) {
        for (int i = 0; i < STAGES; ++i, ++it) mbar_wait(&empty[it % STAGES], ((it / STAGES) & 1) ^ 1);
    }
}

// ---- consumers: each warpgroup owns 64 rows (p) × 256 columns (q) of the D tile --------------
template <int SWAPPED, int R_PMAJOR>
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, float* __restrict__ C, int M,
                                        int N, const TmaMap* map_c, Units units, unsigned rank, int kblocks)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the D tile
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    unsigned char* boxes = smem + STAGES * STAGE_BYTES + wg * STORE_BOXES * C_BOX_BYTES;
    const bool staged = STORE_BOXES > 0 && !DIRECT_STORES && (N * C_BYTES) % 16 == 0;
    const int p0 = wg * 64 + warp * 16;  // this warp's 16 rows of the D tile
    const bool odd_t = (lane & 1) != 0;  // t = lane % 4 is odd
    unsigned off[4];
    if (R_PMAJOR) frag_offsets_pmajor(off, p0, lane);
    else frag_offsets_kmajor(off, p0, lane);
    float d[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) d[i] = 0.0f;
    // This warp is done with buffer s: its lanes' fragment loads (ordinary ld.shared, unlike the
    // wgmma's own reads of S) are ordered before lane 0's arrival by the warp barrier, so the
    // producer's next TMA write into s comes after them (per warp; 8 arrivals free a buffer).
    auto release = [&](int s) {
        __syncwarp();
        if (CLUSTER > 1) {
            if (lane < CLUSTER) mbar_arrive_cluster(&empty[s], lane);  // lane r: block r's barrier
        } else if (lane == 0) {
            mbar_arrive(&empty[s]);
        }
    };
    // One k-block: its fragments into `a`, four wgmmas, and the previous k-block's buffer back.
    // `a` must not be written again before this k-block's wgmma group is complete (PTX: the A
    // registers of an in-flight wgmma are off limits), so k-blocks alternate between two
    // fragment sets: set X is rewritten two k-blocks later, after the wait_group 1 that follows
    // the next k-block's commit has retired this one.
    unsigned it = 0;  // k-blocks consumed so far: buffer it % STAGES, its use number it / STAGES
    auto k_block = [&](unsigned (&a)[BK / 8][4], int kb) {
        int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        unsigned r = smem_u32(smem + s * STAGE_BYTES), sd = r + R_STAGE_BYTES;
        // The whole k-block's fragments first: they are written before the fence, and the fence
        // comes before the first wgmma that reads them.
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) load_fragment<R_PMAJOR>(a[kk], r, off, kk, odd_t);
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk)
#pragma unroll
            for (int i = 0; i < 4; ++i) fence_operand(a[kk][i]);
#pragma unroll
        for (int i = 0; i < ACC; ++i) fence_operand(d[i]);
        wgmma_fence();
        // S (K-major): rows of 128 bytes, 8-row groups 1024 bytes apart (SBO), the k8 step kk 32
        // bytes further in the (swizzled) row: the descriptor's address field (bytes / 16) + 2·kk.
        const u64 s_desc = smem_desc(sd, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) wgmma_64x256x8(d, a[kk], s_desc + 2 * kk, (kb > 0 || kk > 0) ? 1 : 0);
        wgmma_commit();
        // Keep this k-block's products in flight while waiting for the previous one's, then hand
        // that one's buffer back to the producer. (Waiting for its own and releasing it at once,
        // 15_wgmma.cu's WAIT_DEPTH=0, ran 0.4-0.9 % slower here: docs/kernels.md 16d.)
        wgmma_wait<1>();
        if (kb > 0) release((it - 1) % STAGES);
        ++it;
    };
    unsigned a_even[BK / 8][4], a_odd[BK / 8][4];
    const int P = SWAPPED ? N : M;  // D's rows
    for (int u = units.first; u < units.count; u += units.step) {
        int tp, tq;
        units.tile(u, rank, tp, tq);
        int kb = 0;
        for (; kb + 1 < kblocks; kb += 2) {
            k_block(a_even, kb);
            k_block(a_odd, kb + 1);
        }
        if (kb < kblocks) k_block(a_even, kb);
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC; ++i) fence_operand(d[i]);
        release((it - 1) % STAGES);
        if (tp * BM >= P) continue;  // a cluster's spare tile past the last row
        // Epilogue (epilogue.cuh): d[4j + 2h + c] is D(p, q) with p = p0 + lane/4 + 8h and
        // q = 8j + 2(lane%4) + c, the layout of 15_wgmma.cu's accumulators; swapped, D = C^T.
        if (SWAPPED) store_c<true>(d, staged, boxes, map_c, C, M, N, wg, warp, lane, tq * BN, tp * BM + wg * 64);
        else store_c<false>(d, staged, boxes, map_c, C, M, N, wg, warp, lane, tp * BM + wg * 64, tq * BN);
    }
    if (staged && threadIdx.x % 128 == 0) bulk_wait_all();  // the boxes must outlive TMA's reads of them
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
wgmma_tf32(const float* A, const float* B, float* C, int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs,
           const __grid_constant__ TmaMap map_a, const __grid_constant__ TmaMap map_b,
           const __grid_constant__ TmaMap map_c)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    // The swizzle pattern repeats every 1024 bytes and the descriptors assume it starts there.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

    // Stored layouts (TMA's 16-byte rows make them unambiguous: every stored row has ≥ 4 elements).
    const bool a_kmajor = a_cs == 1;  // A stored M×K (op(A) = N)
    const bool b_kmajor = b_rs == 1;  // B stored N×K (op(B) = T)
    if (!a_kmajor && !b_kmajor) return;  // op(A) = T, op(B) = N: refused by the host (can_run)
    const bool swapped = !b_kmajor;      // D = C^T: R = op(B)^T, S = op(A)^T
    const int P = swapped ? N : M, Q = swapped ? M : N;  // D is P×Q
    const Units units((P + BM - 1) / BM, (Q + BN - 1) / BN);
    const int kblocks = (K + BK - 1) / BK;
    const unsigned rank = rank_in_cluster<CLUSTER>();

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);   // the producer's arrive.expect_tx (+ the TMA bytes)
            mbar_init(&empty[s], CONSUMER_WARPS * CLUSTER);  // each consumer warp of each block
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    // No copy or remote arrival may reach a barrier before it is initialized. With a cluster the
    // barrier is split: every thread arrives now and waits below, before its first multicast or
    // remote arrival (15_wgmma.cu's SPLIT_SYNC).
    if (CLUSTER > 1) cluster_arrive();
    else __syncthreads();

    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
        if (CLUSTER > 1) {
            // Before the first multicast: the other block's barriers are initialized. By whole
            // warps (a wait in thread 0 alone is compiled as a warp-collective: 15_wgmma.cu).
            __syncwarp();
            cluster_wait();
        }
        if (threadIdx.x == 0) {
            if (swapped) produce<1>(smem, full, empty, &map_b, &map_a, units, rank, kblocks);
            else if (a_kmajor) produce<0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
            else produce<1>(smem, full, empty, &map_a, &map_b, units, rank, kblocks);
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
        if (CLUSTER > 1) cluster_wait();  // before the first remote release
        if (swapped) consume<1, 1>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
        else if (a_kmajor) consume<0, 0>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
        else consume<0, 1>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks);
    }
    // A block must outlive the copies into it and the arrivals on its barriers (with a cluster
    // the producer's last waits see to the other block's; this barrier is the block's own).
    __syncthreads();
}
