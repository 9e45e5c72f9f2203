// wgmma-u8x4-tma — exact wrapping u32 GEMM on Hopper's int8 tensor cores (sm_90a) by the byte
// split, in rung 15's pipeline: TMA producer warp → mbarrier full/empty ring → two consumer
// warpgroups running wgmma m64n256k32 s32.u8.u8, persistent grid.
// Changes from wgmma-u8x4 (19_wgmma_u8x4.cu; the pre-pass, planes and arithmetic are mma-u8x4's,
// 18_mma_u8x4.cu): the plane tiles arrive by TMA (one thread of warpgroup 0, setmaxnreg 40) in
// the 128-byte swizzle, counted on a "full" mbarrier per buffer; the consumers (setmaxnreg 232)
// hand each buffer back on an "empty" mbarrier and keep one wgmma group in flight
// (wgmma.wait_group 1); one block per SM walks the 128×256 tiles in tile_order.cuh's grouped
// order, the producer loading the next tile while the consumers store the last.
// One accumulator set (Horner): the shift groups run from the highest down, s = 3, 2, 1, 0, all
// into the same s32 accumulators, shifted left by 8 at the end of groups 3, 2 and 1:
// ((acc₃·2⁸ + acc₂)·2⁸ + acc₁)·2⁸ + acc₀ = Σ acc_s·2^{8s} (mod 2³²). wgmma's integer
// accumulation D = A·B + D wraps, so every step is exact modulo 2³² for any K, as before. The
// first slice's separate u32 result (64 more registers a thread) is gone, and with it the limit
// to 64×128 per warpgroup: 64×256 is 128 registers, as for rung 15's f32 accumulators.
// The planes through two 2-D tensor maps of u8 (host: cuda/tma.rs `plane_maps`): A's 4 planes
// stacked as 4M rows of KP bytes (plane i's row r at row i·M + r), Bᵀ's as 4N rows; boxes of
// 128 bytes of k × BM (A) or BN (B) rows. A box running past plane i's last row reads rows of
// plane i + 1 (or zeros past the last): they meet only rows of C past M (columns past N), which
// are never stored.
// Geometry: THREADS = 384 (producer warpgroup + two consumer warpgroups of 64×BN each); a
// persistent grid of min(tiles, SMs) blocks.
// Shared memory (dynamic): STAGES·(BM + BN)·BK bytes (128×256×128, 4 stages: 192 KB) + 1 KB to
// align the buffers to the swizzle's 1024-byte period.
// Traffic model per output element: 10·KP·(1/BN + 1/BM) plane bytes + the pre-pass
// (4 bytes read and 4·KP/K written per element of A and B).
// Split-K (`splits` > 1; the host plans it for problems with tiles for at most half the SMs): the
// work units are (tile, piece) pairs, u / tiles the piece of `splits` equal pieces of the KP/BK
// k-blocks (the host pads KP to a multiple of BK·splits with zero bytes: every unit then runs
// the same count, which is all the consumers need to keep). The Horner steps are linear modulo
// 2³², so each piece's partial tile is its k range's share of C; it stores it into slab `piece`
// of `partial` (splits × M × N u32), and `u8x4_reduce`, launched behind, adds the slabs
// (wrapping) into C.
// Parameters: BM = 128, BN = 256, BK = 128, STAGES, THREADS = 384.
// Constraints: u32 only; sm_90a.

#ifndef U8X4_KPAD
#error "u8x4_split.cuh first (registry includes)"
#endif

static_assert(BM == 128 && BN == 256 && BK == 128 && THREADS == 384,
              "wgmma-u8x4-tma: a producer and two consumer warpgroups of 64×256, 128 bytes of k per slice");
static_assert(U8X4_KPAD % BK == 0, "BK divides KP's multiple");
static_assert(STAGES >= 2, "wgmma-u8x4-tma: at least two buffers");

constexpr int A_STAGE_BYTES = BM * BK;  // (BM, BK) u8, 128-byte swizzle
constexpr int B_STAGE_BYTES = BN * BK;  // (BN, BK) u8
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int ACC = BN / 2;  // s32 accumulators per consumer thread (64×BN per warpgroup)
constexpr int GROUP_M = 16;  // tile-rows per raster group (15_wgmma.cu's choice for 128×256)
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // 128·40 + 256·232 ≤ 65536

// The 10 byte pairs (i, j), i + j ≤ 3, in slice order: shift group 3 first, then 2, 1, 0; the
// pairs after which the accumulators are shifted (the last of groups 3, 2 and 1).
constexpr unsigned HPAIR_I = 0u | 1u << 2 | 2u << 4 | 3u << 6 | 0u << 8 | 1u << 10 | 2u << 12 | 0u << 14 | 1u << 16 | 0u << 18;
constexpr unsigned HPAIR_J = 3u | 2u << 2 | 1u << 4 | 0u << 6 | 2u << 8 | 1u << 10 | 0u << 12 | 1u << 14 | 0u << 16 | 0u << 18;
constexpr unsigned SHIFT_AFTER = 1u << 3 | 1u << 6 | 1u << 8;

using Units = ClusterUnits<1, GROUP_M>;

// d (64×256 s32, 128 per thread) += A·B: A 64×32 u8 and B 32×256 u8 from shared memory, both
// K-major (descriptors). Integer wgmma has no scale or transpose operands; it wraps.
__device__ __forceinline__ void wgmma_m64n256k32_u8(unsigned (&d)[128], u64 desc_a, u64 desc_b)
{
#define R8(i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), \
              "+r"(d[i + 6]), "+r"(d[i + 7])
#define R32(i) R8(i), R8(i + 8), R8(i + 16), R8(i + 24)
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.u8.u8\n" WGMMA_ACC_128 ",\n"
        "%128, %129, 1;\n"
        "}\n"
        : R32(0), R32(32), R32(64), R32(96)
        : "l"(desc_a), "l"(desc_b));
#undef R32
#undef R8
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
        for (int p = 0; p < 10; ++p) {
            const int a_row = ((HPAIR_I >> (2 * p)) & 3) * M + tm * BM;
            const int b_row = ((HPAIR_J >> (2 * p)) & 3) * N + tn * BN;
            for (int kb = kb0; kb < kb0 + per; ++kb, ++it) {
                const int s = it % STAGES;
                mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // zero-filled bytes count too
                unsigned char* a = smem + s * STAGE_BYTES;
                tma_load(a, map_a, &full[s], kb * BK, a_row);
                tma_load(a + A_STAGE_BYTES, map_b, &full[s], kb * BK, b_row);
            }
        }
    }
}

// ---- consumers: each warpgroup owns 64 rows × BN columns of the tile --------------------------
__device__ __forceinline__ void consume(unsigned char* smem, u64* full, u64* empty, matmul_u32* __restrict__ C,
                                       int M, int N, Units units, int per, int splits)
{
    const int wg = threadIdx.x / 128 - 1;  // 0 or 1: rows [64·wg, 64·wg + 64) of the tile
    const int tid = threadIdx.x % 128, lane = threadIdx.x % 32, warp = tid / 32;
    const bool pairs = N % 2 == 0 && reinterpret_cast<unsigned long long>(C) % 8 == 0;
    auto release = [&](int s) {
        if (tid == 0) mbar_arrive(&empty[s]);
    };
    unsigned d[ACC];
    unsigned it = 0;  // k-blocks consumed so far: buffer it % STAGES, its use number it / STAGES
    for (int u = units.first; u < units.count * splits; u += units.step) {
        // Every unit has `per` k-blocks (the producer addresses them); its tile and slab are
        // found after the loop: the accumulators leave no register to spare.
#pragma unroll
        for (int e = 0; e < ACC; ++e) d[e] = 0u;
        int pending = -1;  // the buffer of the k-block whose wgmma group may still be in flight
        for (int p = 0; p < 10; ++p) {
            for (int kb = 0; kb < per; ++kb, ++it) {
                const int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) & 1);
                const unsigned a = smem_u32(smem + s * STAGE_BYTES), b = a + A_STAGE_BYTES;
#pragma unroll
                for (int e = 0; e < ACC; ++e) fence_operand(d[e]);
                wgmma_fence();
                // K-major, 128-byte swizzle: 8-row groups 1024 bytes apart (SBO); the next 32
                // bytes of k 32 bytes further in the row (2 in the descriptor's address field).
                const u64 da = smem_desc(a + wg * 64 * 128, 16, 1024), db = smem_desc(b, 16, 1024);
#pragma unroll
                for (int kk = 0; kk < BK / 32; ++kk) wgmma_m64n256k32_u8(d, da + kk * 2, db + kk * 2);
                wgmma_commit();
                // Keep this k-block's products in flight while waiting for the previous one's,
                // then hand that one's buffer back to the producer.
                wgmma_wait<1>();
                if (pending >= 0) release(pending);
                pending = s;
            }
            if ((SHIFT_AFTER >> p) & 1) {
                // The end of shift group 3, 2 or 1: every product of it in, then · 2⁸.
                wgmma_wait<0>();
#pragma unroll
                for (int e = 0; e < ACC; ++e) fence_operand(d[e]);
                if (pending >= 0) release(pending);
                pending = -1;
#pragma unroll
                for (int e = 0; e < ACC; ++e) d[e] <<= 8;
            }
        }
        wgmma_wait<0>();
#pragma unroll
        for (int e = 0; e < ACC; ++e) fence_operand(d[e]);
        if (pending >= 0) release(pending);

        // Piece p's tile goes to slab p of C (the partial slabs when split; piece 0, C itself,
        // when not).
        int tm, tn;
        units.tile(u % units.count, 0, tm, tn);
        matmul_u32* __restrict__ out = C + (size_t)(u / units.count) * M * N;
        // The accumulator layout of m64nN: d[4j + 2h + {0, 1}] at row 16·warp + lane/4 + 8h,
        // columns 8j + 2·(lane % 4) + {0, 1} of the warpgroup's 64×BN.
        const int r_base = tm * BM + wg * 64 + warp * 16 + lane / 4, c_base = tn * BN + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int c = c_base + 8 * j;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = r_base + 8 * h;
                if (r >= M) continue;
                matmul_u32* Cr = out + (long long)r * N;
                const matmul_u32 v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
                if (pairs && c + 1 < N) {
                    *reinterpret_cast<uint2*>(Cr + c) = make_uint2(v0, v1);
                } else {
                    if (c < N) Cr[c] = v0;
                    if (c + 1 < N) Cr[c + 1] = v1;
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
wgmma_u8x4_tma(const matmul_u32* __restrict__ A, const matmul_u32* __restrict__ B, matmul_u32* __restrict__ C,
               int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs, int splits,
               matmul_u32* __restrict__ partial, const unsigned char* __restrict__ planes, int KP,
               const __grid_constant__ TmaMap map_a, const __grid_constant__ TmaMap map_b)
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
        // Split: the pieces store into the slabs, which u8x4_reduce adds into C.
        consume(smem, full, empty, splits > 1 ? partial : C, M, N, units, per, splits);
    }
    // A block must outlive the copies into it and the arrivals on its barriers.
    __syncthreads();
}

// Split-K's second step: C[i] = the wrapping sum over the `splits` slabs of `partial`, in piece
// order; one thread an element, a grid-stride loop.
extern "C" __global__ void __launch_bounds__(256)
u8x4_reduce(const matmul_u32* __restrict__ partial, matmul_u32* __restrict__ C, int count, int splits)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        matmul_u32 sum = 0u;
        for (int p = 0; p < splits; ++p) sum += __ldcs(partial + (size_t)p * count + i);
        C[i] = sum;
    }
}
