// wgmma-tf32, wgmma-tf32-cluster — tensor-core rung 4 (Hopper, sm_90a, tf32): 15_wgmma.cu's
// pipeline (TMA → mbarrier ring → wgmma, one producer thread and two consumer warpgroups, a
// persistent grid, clusters of two sharing an operand by multicast, epilogue.cuh's C) for tf32.
// Changes from wgmma: tf32 wgmma has no transpose bits, so an operand it reads from shared memory
// must be K-major; its first operand may come from registers instead. One operand (S) is read by
// descriptor, K-major; the consumers load the other (R) into wgmma's register fragment themselves
// (ldmatrix where R is K-major, conflict-free ld.shared.b32 where it is P-major). Two orientations,
// chosen per launch from the strides (D[p][q]: p along R's rows, q along S's):
//   direct  (op(B) = T, B stored N×K): D = C,   R = op(A), S = B;
//   swapped (op(A) = N, op(B) = N):    D = C^T, R = op(B)^T (B stored K×N), S = op(A)^T (A M×K).
// op(A) = T with op(B) = N has no K-major operand: can_run refuses it (Constraint::TcTf32Layout).
// Rounding: the tensor maps are of TMA type TFLOAT32, so TMA rounds every f32 to tf32 (to nearest
// even) as it copies; no cvt in the consumers (tests/gpu.rs `wgmma_tf32_rounding`).
// The A registers of an in-flight wgmma must not be rewritten (PTX), so k-blocks alternate between
// two fragment sets and one k-block's group stays in flight (wait_group 1). A buffer's "empty"
// barrier counts one arrival per consumer warp, after a __syncwarp: R's ordinary loads must come
// before the producer's next TMA write into the buffer.
// Geometry: THREADS = 384 (three warpgroups); a persistent grid of at most one block per SM.
// Shared memory (dynamic): STAGES·(BM + BN)·BK·4 bytes (128×256×32, 4 stages: 192 KB), + 1 KB to
// align to the swizzle's 1024-byte period, + STORE_BOXES·2·8 KB of C boxes.
// Traffic model per output element: K/BN + K/BM loads. Parameters: ELEM = float, IN_TF32,
// BM = 128, BN = 256, BK = 32, STAGES, THREADS, CLUSTER, STORE_BOXES. Kernel ABI: the usual
// arguments, then tensor maps of A and B (boxed per role, src/cuda/tma.rs `tf32_maps`) and of C,
// then split-K's pieces and slabs (15_wgmma.cu's scheme: piece_range, store_partial, wgmma_reduce).
// Constraints: sm_90a; op(A) = N or op(B) = T; any M, N, K (rows that are not 16-byte multiples are
// staged by the host: src/cuda/staging.rs).

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

// One stage: [R: 16 KB][S: 32 KB], each in TMA's 128-byte swizzle (logical 16-byte chunk c of a
// 128-byte row r stored at chunk c ^ (r % 8); the ring is 1024-byte aligned).
//   S: BN rows (q) × 32 K-elements, 15_wgmma.cu's K-major layout (8-row groups 1024 bytes apart,
//      the k8 step j at +32·j bytes).
//   R, K-major (direct, op(A) = N): BM rows (p) × 32 K-elements, one box; fragments by ldmatrix.
//   R, P-major (swapped, or direct with op(A) = T): BM/32 boxes of 32 K-rows × 32 P-elements;
//      fragments by ld.shared.b32 (ldmatrix cannot transpose 32-bit elements): frag_offsets_pmajor.
constexpr int R_STAGE_BYTES = BM * BK * 4;               // (BM, BK) or BM/32 × (BK, 32)
constexpr int S_STAGE_BYTES = BN * BK * 4;               // (BN, BK)
constexpr int STAGE_BYTES = R_STAGE_BYTES + S_STAGE_BYTES;
constexpr int P_BOX_ELEMS = 32;                          // P-elements per 128-byte row
constexpr int P_BOX_BYTES = BK * 128;                    // one P-major box: (BK, 32)
// Tile-rows per raster group: 16, the least distinct A and B per k-block for a 132-block wave of
// 128×256 tiles (15_wgmma.cu's rule); a cluster's unit is two tile-rows.
constexpr int GROUP_M = 16 / CLUSTER;
constexpr int CONSUMER_WARPS = 8;                        // two warpgroups
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;   // 128·40 + 256·232 ≤ 65536

// ---- register fragments ----------------------------------------------------------------------
// wgmma .m64nNk8 .tf32's A fragment (PTX ISA, "Register fragments"; mma.m16n8k8's per warp): warp
// w of the warpgroup owns rows 16w .. 16w + 15; lane (g, t) = (lane / 4, lane % 4) holds
// a0 = (16w + g, t), a1 = (16w + g + 8, t), a2 = (16w + g, t + 4), a3 = (16w + g + 8, t + 4) of the
// 64×8 k-step. ldmatrix (non-transposing) on 32-bit data hands lane (g, t) word t of row g of each
// 8×4-word matrix: that fragment. (ldsm_x4 and lds32 are sm80.cuh's.)

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
// shared address `r`. P-major: lanes with odd t load a2 (k + 4) first and a0 second, which makes
// each load conflict-free (frag_offsets_pmajor), and a select puts the values back in order.
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
        ldsm_x4<false>(a, r + off[kk]);
    }
}

// The mbarrier, TMA, cluster and wgmma wrappers (wgmma_m64n256k8_tf32) are hopper.cuh's, C's
// epilogue is epilogue.cuh's.

// The work units of this block (a cluster takes CLUSTER vertically adjacent tiles of D, the same S
// rows): tile_order.cuh. Here the tile-rows are D's (p) and the tile-columns its q.
using Units = ClusterUnits<CLUSTER, GROUP_M>;

// ---- producer: one thread issues every TMA copy ----------------------------------------------
template <int R_PMAJOR>
__device__ __forceinline__ void produce(unsigned char* smem, u64* full, u64* empty, const TmaMap* map_r,
                                        const TmaMap* map_s, Units units, unsigned rank, int kblocks, int splits)
{
    constexpr int S_ROWS = BN / CLUSTER;  // S rows this block loads (and multicasts to the cluster)
    int it = 0;  // k-blocks loaded so far: buffer it % STAGES, its use number it / STAGES
    const int pieces = CLUSTER > 1 ? 1 : splits;  // the host never splits a cluster build
    for (int u = units.first; u < units.count * pieces; u += units.step) {
        int tp, tq, kb0, kb1;
        units.tile(CLUSTER > 1 ? u : u % units.count, rank, tp, tq);
        piece_range(CLUSTER > 1 ? 0 : u / units.count, pieces, kblocks, kb0, kb1);
        for (int kb = kb0; kb < kb1; ++kb, ++it) {
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
    // With a cluster, instead of a cluster barrier at the exit (as in 15_wgmma.cu): once
    // every block's consumers have released this block's last STAGES buffers (fresh ones pass at
    // once), no remote arrival or multicast can reach it any more.
    if (CLUSTER > 1) {
        for (int i = 0; i < STAGES; ++i, ++it) mbar_wait(&empty[it % STAGES], ((it / STAGES) & 1) ^ 1);
    }
}

// ---- consumers: each warpgroup owns 64 rows (p) × 256 columns (q) of the D tile --------------
template <int SWAPPED, int R_PMAJOR>
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, float* __restrict__ C, int M,
                                        int N, const TmaMap* map_c, Units units, unsigned rank, int kblocks,
                                        int splits, float* __restrict__ partial)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the D tile
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const bool staged = STORE_BOXES > 0 && (N * C_BYTES) % 16 == 0;
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
    // `kb` counts from the unit's first k-block (its piece's, with split-K).
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
        for (int kk = 0; kk < BK / 8; ++kk)
            wgmma_m64n256k8_tf32(d, a[kk], s_desc + 2 * kk, (kb > 0 || kk > 0) ? 1 : 0);
        wgmma_commit();
        // Keep this k-block's products in flight while waiting for the previous one's, then hand
        // that one's buffer back to the producer.
        wgmma_wait<1>();
        if (kb > 0) release((it - 1) % STAGES);
        ++it;
    };
    unsigned a_even[BK / 8][4], a_odd[BK / 8][4];
    const int P = SWAPPED ? N : M;  // D's rows
    const int pieces = CLUSTER > 1 ? 1 : splits;  // the host never splits a cluster build
    for (int u = units.first; u < units.count * pieces; u += units.step) {
        int tp, tq, kb0, kb1;
        units.tile(CLUSTER > 1 ? u : u % units.count, rank, tp, tq);
        piece_range(CLUSTER > 1 ? 0 : u / units.count, pieces, kblocks, kb0, kb1);
        const int n = kb1 - kb0;  // the consumers need only the count (the producer loads them)
        int kb = 0;
        for (; kb + 1 < n; kb += 2) {
            k_block(a_even, kb);
            k_block(a_odd, kb + 1);
        }
        if (kb < n) k_block(a_even, kb);
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC; ++i) fence_operand(d[i]);
        release((it - 1) % STAGES);
        if (tp * BM >= P) continue;  // a cluster's spare tile past the last row
        // Epilogue (epilogue.cuh): d[4j + 2h + c] is D(p, q) with p = p0 + lane/4 + 8h and
        // q = 8j + 2(lane%4) + c, the layout of 15_wgmma.cu's accumulators; swapped, D = C^T.
        // Split-K: the piece's f32 partial goes to its slab by the direct stores (C is f32 here).
        unsigned char* boxes = smem + STAGES * STAGE_BYTES + wg * STORE_BOXES * C_BOX_BYTES;
        float* out = pieces > 1 ? partial + (size_t)(u / units.count) * M * N : C;
        const bool to_boxes = staged && pieces == 1;
        if (SWAPPED) store_c<true>(d, to_boxes, boxes, map_c, out, M, N, wg, warp, lane, tq * BN, tp * BM + wg * 64);
        else store_c<false>(d, to_boxes, boxes, map_c, out, M, N, wg, warp, lane, tp * BM + wg * 64, tq * BN);
    }
    if (staged && threadIdx.x % 128 == 0) bulk_wait_all();  // the boxes must outlive TMA's reads of them
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
wgmma_tf32(const float* A, const float* B, float* C, int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs,
           const __grid_constant__ TmaMap map_a, const __grid_constant__ TmaMap map_b,
           const __grid_constant__ TmaMap map_c, int splits, float* __restrict__ partial)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    // The swizzle pattern repeats every 1024 bytes and the descriptors assume it starts there.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

    // Stored layouts (unambiguous: a stored row is at least 16 bytes, 4 elements, or the host stages
    // it into 128-byte rows and passes their pitch).
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
        fence_mbarrier_init();
    }
    // No copy or remote arrival may reach a barrier before it is initialized. With a cluster the
    // barrier is split: every thread arrives now and waits below, before its first multicast or
    // remote arrival (as in 15_wgmma.cu).
    if (CLUSTER > 1) cluster_arrive();
    else __syncthreads();

    if (threadIdx.x < 128) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (CLUSTER > 1) {
            // Before the first multicast: the other block's barriers are initialized. By whole
            // warps (a wait in thread 0 alone is compiled as a warp-collective: 15_wgmma.cu).
            __syncwarp();
            cluster_wait();
        }
        if (threadIdx.x == 0) {
            if (swapped) produce<1>(smem, full, empty, &map_b, &map_a, units, rank, kblocks, splits);
            else if (a_kmajor) produce<0>(smem, full, empty, &map_a, &map_b, units, rank, kblocks, splits);
            else produce<1>(smem, full, empty, &map_a, &map_b, units, rank, kblocks, splits);
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        if (CLUSTER > 1) cluster_wait();  // before the first remote release
        if (swapped) consume<1, 1>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial);
        else if (a_kmajor) consume<0, 0>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial);
        else consume<0, 1>(smem, full, empty, C, M, N, &map_c, units, rank, kblocks, splits, partial);
    }
    // A block must outlive the copies into it and the arrivals on its barriers (with a cluster
    // the producer's last waits see to the other block's; this barrier is the block's own).
    __syncthreads();
}
