// wgmma-3xtf32 — FP32 emulated on Hopper's tf32 tensor cores (sm_90a, f32 inputs and C) by
// 3xTF32: every input x is split into big = tf32(x) (to nearest) and small = tf32(x − big), and
// C = big·big + big·small + small·big, the three products on tf32 wgmma with f32 accumulation.
// Three steps per product, all on the stream:
//   1. the pre-pass `tf32x3_split` (tf32x3_split.cuh) writes A and Bᵀ as two K-major planes each,
//      big and small, K padded with zeros to KP, and flags every row of A and column of B that
//      holds ±∞ (small(∞) = 0 would meet ∞ in a cross term: ∞·0 = NaN where SGEMM gives ±∞) or a
//      nonzero value below 2⁻¹⁰⁴ (its small part would be a subnormal that tf32 cuts short);
//   2. this kernel: 20_wgmma_u8x4_tma.cu's pipeline (one TMA producer thread → mbarrier ring →
//      two consumer warpgroups, persistent grid, tile_order.cuh's grouped raster, split-K
//      units) on the planes: per stage the four 128×32 f32 boxes A_big, A_small, B_big, B_small
//      in the 128-byte swizzle, both wgmma operands read by descriptor (K-major), no conversion
//      in the loop;
//   3. `tf32x3_fixup` recomputes, by an FMA loop in k order, the elements of C whose row of A or
//      column of B is flagged (nothing to do, one flag read, in the common case), so C has
//      SGEMM's ∞, NaN and subnormal products.
// Promotion: the tensor cores' f32 accumulation is not IEEE round-to-nearest (the aligned sum is
// truncated), which over a long all-positive K biases the sum by every addition the same way. So
// each k-block's 12 wgmmas (its 8 cross terms while the partial is small, then its 4 main
// products) go into a fresh partial (scale-d = 0 on the first), and the partial is added into an
// FP32 total by FADD (to nearest) every PROMOTE k-blocks. The truncation's bias per partial grows with the square of its
// length, so the total's bias grows with K·PROMOTE. The other warpgroup's wgmmas keep the tensor
// cores busy while one drains for its FADDs.
// Geometry: THREADS = 384 (warpgroup 0: thread 0 issues the TMA; two consumer warpgroups of
// 64×128 each, 64 accumulators and 64 totals a thread: 168 registers, __launch_bounds__(384, 1),
// hold no third set).
// Shared memory (dynamic): STAGES·2·(BM + BN)·BK·4 bytes (128×128×32, 3 stages: 192 KB) + 1 KB to
// align to the swizzle's 1024-byte period. Traffic model per output element: 2·KP·(1/BN + 1/BM)
// plane loads (8 bytes each) + the pre-pass (4 bytes read and 8·KP/K written per input element).
// The planes through two 2-D tensor maps of FLOAT32 (host: cuda/tma.rs `plane_maps`): A's big and
// small stacked as 2M rows of KP floats, Bᵀ's as 2N rows. A box running past the big plane's last
// row reads rows of the small one: they meet only rows of C past M (columns past N), never stored.
// Split-K (`splits` > 1, for problems with tiles for at most half the SMs): units are (tile,
// piece) pairs, each piece `per` k-blocks (the host pads KP to a multiple of BK·splits with
// zeros); a piece's total goes to slab `piece` of `partial`, and `wgmma_reduce` (epilogue.cuh)
// adds the slabs into C, behind which the fixup runs.
// Parameters: ELEM = float, IN_F32, BM = BN = 128, BK = 32, STAGES, THREADS = 384.
// Constraints: sm_90a; any layout and shape (the pre-pass reads A and B through their strides).

#if !defined(IN_F32)
#error "wgmma-3xtf32: compile with IN_F32"
#endif
#ifndef TF32X3_KPAD
#error "tf32x3_split.cuh first (registry includes)"
#endif

// The k-blocks per partial (see Promotion above).
#ifndef PROMOTE
#define PROMOTE 1
#endif

static_assert(sizeof(ELEM) == 4, "wgmma-3xtf32: f32 storage");
static_assert(BM == 128 && BN == 128 && BK == 32, "wgmma-3xtf32: the 128x128x32 tile is what the code below spells out");
static_assert(THREADS == 384, "wgmma-3xtf32: one producer and two consumer warpgroups");
static_assert(STAGES >= 2, "wgmma-3xtf32: at least two buffers");
static_assert(TF32X3_KPAD % BK == 0, "BK divides KP's multiple");
static_assert(PROMOTE >= 1, "wgmma-3xtf32: a partial is at least one k-block");

// One stage: [A_big][A_small][B_big][B_small], each (128 rows, 32 k) f32 in TMA's 128-byte
// swizzle (logical 16-byte chunk c of a 128-byte row r stored at chunk c ^ (r % 8)).
constexpr int BOX_BYTES = 128 * BK * 4;  // 16 KB
constexpr int STAGE_BYTES = 4 * BOX_BYTES;
constexpr int GROUP_M = 16;              // tile-rows per raster group
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // 128·40 + 256·232 ≤ 65536

using Units = ClusterUnits<1, GROUP_M>;

// d (64×128 f32, 64 per thread) = A·B (+ d when accumulate): A 64×8 and B 8×128 tf32, both from
// shared memory, K-major (tf32 wgmma has no transpose bits).
__device__ __forceinline__ void wgmma_m64n128k8_tf32_ss(float (&d)[ACC], u64 desc_a, u64 desc_b, int accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32\n"
        WGMMA_ACC_64 ",\n"
        "%64, %65, p, 1, 1;\n"
        "}\n"
        : ACC32(0), ACC32(32)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// ---- producer: one thread issues every TMA copy ----------------------------------------------
__device__ __forceinline__ void produce(unsigned char* smem, u64* full, u64* empty, const TmaMap* map_a,
                                        const TmaMap* map_b, Units units, int M, int N, int per, int splits)
{
    int it = 0;  // k-blocks loaded so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count * splits; u += units.step) {
        int tm, tn;
        units.tile(u % units.count, 0, tm, tn);
        const int kb0 = u / units.count * per;
        for (int kb = kb0; kb < kb0 + per; ++kb, ++it) {
            const int s = it % STAGES;
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // zero-filled bytes count too
            unsigned char* at = smem + s * STAGE_BYTES;
            tma_load(at, map_a, &full[s], kb * BK, tm * BM);                      // A_big
            tma_load(at + BOX_BYTES, map_a, &full[s], kb * BK, M + tm * BM);      // A_small
            tma_load(at + 2 * BOX_BYTES, map_b, &full[s], kb * BK, tn * BN);      // B_big
            tma_load(at + 3 * BOX_BYTES, map_b, &full[s], kb * BK, N + tn * BN);  // B_small
        }
    }
}

// ---- consumers: each warpgroup owns 64 rows × 128 columns of the tile --------------------------
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, float* __restrict__ C, int M,
                                       int N, Units units, int per, int splits)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the tile
    const int tid = threadIdx.x % 128, lane = threadIdx.x % 32, warp = tid / 32;
    auto release = [&](int s) {
        if (tid == 0) mbar_arrive(&empty[s]);
    };
    float acc[ACC], total[ACC];
    unsigned it = 0;  // k-blocks consumed so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count * splits; u += units.step) {
        int pending = -1;  // the buffer of the k-block whose wgmma group may still be in flight
#pragma unroll
        for (int e = 0; e < ACC; ++e) total[e] = 0.0f;
        for (int kb = 0; kb < per; ++kb, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            const unsigned a_big = smem_u32(smem + s * STAGE_BYTES) + wg * 64 * 128;
            const unsigned a_small = a_big + BOX_BYTES;
            const unsigned b_big = smem_u32(smem + s * STAGE_BYTES) + 2 * BOX_BYTES, b_small = b_big + BOX_BYTES;
#pragma unroll
            for (int e = 0; e < ACC; ++e) fence_operand(acc[e]);
            wgmma_fence();
            // K-major, 128-byte swizzle: 8-row groups 1024 bytes apart (SBO); the k8 step kk 32
            // bytes further in the row (2 in the descriptor's address field).
            const u64 dab = smem_desc(a_big, 16, 1024), das = smem_desc(a_small, 16, 1024);
            const u64 dbb = smem_desc(b_big, 16, 1024), dbs = smem_desc(b_small, 16, 1024);
            const int fresh = kb % PROMOTE == 0;
            // The k-block's eight cross terms first, while the partial is small (each addition
            // truncates at the partial's magnitude), then its four main products.
#pragma unroll
            for (int kk = 0; kk < BK / 8; ++kk) {
                wgmma_m64n128k8_tf32_ss(acc, dab + 2 * kk, dbs + 2 * kk, (fresh && kk == 0) ? 0 : 1);
                wgmma_m64n128k8_tf32_ss(acc, das + 2 * kk, dbb + 2 * kk, 1);
            }
#pragma unroll
            for (int kk = 0; kk < BK / 8; ++kk) wgmma_m64n128k8_tf32_ss(acc, dab + 2 * kk, dbb + 2 * kk, 1);
            wgmma_commit();
            if ((kb + 1) % PROMOTE == 0 || kb + 1 == per) {
                // The partial is complete once no group is in flight; added by FADD (to nearest).
                wgmma_wait<0>();
#pragma unroll
                for (int e = 0; e < ACC; ++e) {
                    fence_operand(acc[e]);
                    total[e] += acc[e];
                }
                if (pending >= 0) release(pending);
                release(s);
                pending = -1;
            } else {
                // Keep this k-block's products in flight while waiting for the previous one's,
                // then hand that one's buffer back to the producer.
                wgmma_wait<1>();
                if (pending >= 0) release(pending);
                pending = s;
            }
        }
        // Piece p's tile goes to slab p (the partial slabs when split; C itself when not).
        int tm, tn;
        units.tile(u % units.count, 0, tm, tn);
        float* __restrict__ out = C + (size_t)(u / units.count) * M * N;
        store_direct(total, out, M, N, tm * BM + wg * 64 + warp * 16 + lane / 4, tn * BN + 2 * (lane % 4));
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
wgmma_3xtf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K,
             int a_rs, int a_cs, int b_rs, int b_cs, int splits, float* __restrict__ partial,
             const float* __restrict__ planes, int KP, const __grid_constant__ TmaMap map_a,
             const __grid_constant__ TmaMap map_b)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    // The swizzle pattern repeats every 1024 bytes and the descriptors assume it starts there.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    const Units units((M + BM - 1) / BM, (N + BN - 1) / BN);
    // The host pads KP so that the `splits` pieces have the same `per` k-blocks each.
    const int per = KP / BK / splits;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);   // the producer's arrive.expect_tx (+ the TMA bytes)
            mbar_init(&empty[s], 2);  // each consumer warpgroup
        }
        fence_mbarrier_init();
    }
    __syncthreads();  // no copy may reach a barrier before it is initialized

    if (threadIdx.x < 128) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            prefetch_tensormap(&map_a);
            prefetch_tensormap(&map_b);
            produce(smem, full, empty, &map_a, &map_b, units, M, N, per, splits);
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        // Split: the pieces store into the slabs, which wgmma_reduce adds into C.
        consume(smem, full, empty, splits > 1 ? partial : C, M, N, units, per, splits);
    }
    // A block must outlive the copies into it and the arrivals on its barriers.
    __syncthreads();
}
