// wgmma-3xtf32 — FP32 emulated on Hopper's tf32 tensor cores
// (sm_90a, f32 inputs and C): 16_wgmma_tf32.cu's pipeline (TMA → mbarrier ring → wgmma, two
// consumer warpgroups, persistent grid, R from registers, S by descriptor, K-major) with 3xTF32.
// Changes from wgmma-tf32: every input x is split into big = tf32(x) (to nearest) and small =
// tf32(x − big) (split_tf32), and D = big·big + big·small + small·big. The tensor maps are of TMA type FLOAT32 (raw f32, no rounding).
//   R (registers): the consumers load raw f32 fragments and split them in registers.
//   S (descriptor): wgmma reads it from shared memory, so the three idle warps of the producer
//     warpgroup split each stage's raw S tile in place (big over the raw values, small into a
//     second plane of the same swizzled layout), then publish the stage (fence.proxy.async, so
//     that wgmma's async-proxy reads see the generic writes). No pre-pass, no workspace.
// Promotion: the tensor cores' accumulation is not IEEE round-to-nearest (it truncates), which over
// a long K biases the sum; every PROMOTE = 4 k-blocks (128 of K) a partial (restarted with
// scale-d = 0) is added into an FP32 register total by FADD (round to nearest). The 168 registers a
// thread (__launch_bounds__(384, 1)) hold two 64-float accumulators and the fragments, not three,
// so the cross terms go into the partial with the main products. Why 4 (H100, 8192³): 87.0 TFLOP/s
// against 79.6 promoting every k-block, at equal accuracy; never promoting (main and cross terms in
// two accumulators over the whole K) lost accuracy at long K (7,631 u at 64x64x65536).
// Known limits (tests/gpu_fp32.rs measures both): the truncation inside a 4-k-block partial still
// biases all-positive long sums (37.5 u against SGEMM's 10.0 u at 64x64x65536); an ∞ input meets 0
// in a cross term (small(∞) = 0), so C is NaN where SGEMM gives ±∞.
// Why faster than SGEMM: three tf32 products at ~half the 16-bit tensor rate, ~165 TFLOP/s ceiling
// on an H100 against SGEMM's 67 (SIMT FP32 peak).
// Geometry: THREADS = 384 (producer warpgroup: thread 0 issues TMA, warps 1–3 split S; two
// consumer warpgroups of 64×128); a persistent grid of at most one block per SM.
// Shared memory (dynamic): STAGES·(BM + 2·BN)·BK·4 bytes (128×128×32, 4 stages: 192 KB: R, S_big,
// S_small per stage), + 1 KB to align to the swizzle's 1024-byte period, + STORE_BOXES·2·8 KB.
// Registers per consumer thread: two accumulators of 64 + two fragment sets of 8 (big, small).
// Traffic model per output element: K/BN + K/BM loads. Parameters: ELEM = float, IN_F32,
// BM = 128, BN = 128, BK = 32, STAGES, THREADS, CLUSTER = 1, STORE_BOXES. Kernel ABI: the
// usual arguments, then tensor maps of A and B (boxed per role, src/cuda/tma.rs `tf32_maps`, type
// FLOAT32) and of C. No split-K.
// Constraints: sm_90a; op(A) = N or op(B) = T; any M, N, K (rows that are not 16-byte multiples are
// staged by the host: src/cuda/staging.rs).

#if !defined(IN_F32)
#error "wgmma-3xtf32: compile with IN_F32"
#endif
// The k-blocks per partial (see Promotion above).
constexpr int PROMOTE = 4;

static_assert(sizeof(ELEM) == 4, "wgmma-3xtf32: f32 storage");
static_assert(BM == 128 && BN == 128 && BK == 32, "wgmma-3xtf32: the 128x128x32 tile is what the code below spells out");
static_assert(THREADS == 384, "wgmma-3xtf32: one producer and two consumer warpgroups");
static_assert(STAGES >= 2, "wgmma-3xtf32: at least two buffers");
#ifndef CLUSTER
#define CLUSTER 1
#endif
static_assert(CLUSTER == 1, "wgmma-3xtf32: no clusters");

// One stage: [R: 16 KB][S_big: 16 KB][S_small: 16 KB], each in TMA's 128-byte swizzle, R as in
// 16_wgmma_tf32.cu (K-major: one (BM, BK) box; P-major: BM/32 boxes of (BK, 32)), S (BN, BK)
// K-major. The TMA writes raw f32 into R and S_big; the splitters turn S_big's raw values into
// big in place and write small at the same offset of S_small.
constexpr int R_STAGE_BYTES = BM * BK * 4;
constexpr int S_STAGE_BYTES = BN * BK * 4;
constexpr int STAGE_BYTES = R_STAGE_BYTES + 2 * S_STAGE_BYTES;
constexpr int TMA_BYTES = R_STAGE_BYTES + S_STAGE_BYTES;  // the raw bytes the TMA brings per stage
constexpr int P_BOX_ELEMS = 32;
constexpr int P_BOX_BYTES = BK * 128;
constexpr int GROUP_M = 16;
constexpr int CONSUMER_WARPS = 8;
constexpr int SPLIT_WARPS = 3;                           // producer warps 1..3
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;   // 128·40 + 256·232 ≤ 65536
constexpr int ACC_N = BN / 2;                            // f32 accumulators per thread (64×128 per warpgroup)

// x = big + small: big = tf32(x) to nearest, small = tf32(x − big) (x − big is exact in f32), so
// |x − big − small| ≤ 2⁻¹¹·|x − big| ≤ 2⁻²²·|x|. An infinite x keeps small = 0 (∞ − ∞ is NaN); a
// finite x whose rounding overflows to ∞ takes big = x truncated to tf32, so both stay finite.
// NaN stays NaN in both.
__device__ __forceinline__ unsigned split_tf32(float x, unsigned& small)
{
    unsigned big = to_tf32(x);
    if (isinf(__uint_as_float(big)) && !isinf(x)) big = __float_as_uint(x) & 0xffffe000u;
    const float rest = x - __uint_as_float(big);
    small = to_tf32(isinf(x) ? 0.0f : rest);
    return big;
}

// d (64×128 f32, 64 per thread) = a·S (+ d when accumulate): a 64×8 tf32 from registers, S 8×128
// tf32 from shared memory, K-major.
__device__ __forceinline__ void wgmma_m64n128k8_tf32(float (&d)[ACC_N], const unsigned (&a)[4], u64 desc_s,
                                                     int accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32\n"
        WGMMA_ACC_64 ",\n"
        "{%64, %65, %66, %67}, %68, p, 1, 1;\n"
        "}\n"
        : ACC32(0), ACC32(32)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_s), "r"(accumulate));
}

// ---- register fragments (16_wgmma_tf32.cu's, on raw f32) ---------------------------------------
__device__ __forceinline__ void frag_offsets_kmajor(unsigned (&off)[4], int p0, int lane)
{
    const int row = p0 + lane % 8 + 8 * ((lane / 8) & 1);
    const int chunk = (lane / 16) ^ (lane % 8);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) off[kk] = row * 128 + ((chunk ^ (2 * kk)) << 4);
}

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

// The raw fragment (a0..a3, f32 bits) of k-step kk from the R tile at shared address `r`.
template <int R_PMAJOR>
__device__ __forceinline__ void load_fragment(unsigned (&a)[4], unsigned r, const unsigned (&off)[4], int kk,
                                              bool odd_t)
{
    if (R_PMAJOR) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned x0 = lds32(r + off[2 * h] + kk * 1024);
            const unsigned x1 = lds32(r + off[2 * h + 1] + kk * 1024);
            a[h] = odd_t ? x1 : x0;
            a[h + 2] = odd_t ? x0 : x1;
        }
    } else {
        ldsm_x4<false>(a, r + off[kk]);
    }
}

using Units = ClusterUnits<1, GROUP_M>;

// ---- producer thread 0: every TMA copy, raw f32 ---------------------------------------------------
template <int R_PMAJOR>
__device__ __forceinline__ void produce(unsigned char* smem, u64* loaded, u64* empty, const TmaMap* map_r,
                                        const TmaMap* map_s, Units units, int kblocks)
{
    int it = 0;
    for (int u = units.first; u < units.count; u += units.step) {
        int tp, tq;
        units.tile(u, 0, tp, tq);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            const int s = it % STAGES;
            mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
            mbar_arrive_expect_tx(&loaded[s], TMA_BYTES);  // zero-filled bytes count too
            unsigned char* r = smem + s * STAGE_BYTES;
            unsigned char* sd = r + R_STAGE_BYTES;
            if (R_PMAJOR) {
#pragma unroll
                for (int j = 0; j < BM / P_BOX_ELEMS; ++j)
                    tma_load(r + j * P_BOX_BYTES, map_r, &loaded[s], tp * BM + j * P_BOX_ELEMS, kb * BK);
            } else {
                tma_load(r, map_r, &loaded[s], kb * BK, tp * BM);
            }
            tma_load(sd, map_s, &loaded[s], kb * BK, tq * BN);
        }
    }
}

// ---- producer warps 1..3: S's split, in place ----------------------------------------------------
// Element-wise, so the swizzle does not matter: 16-byte chunk c of S_big (raw) becomes big, and
// chunk c of S_small small. Then each thread's generic writes are made visible to the async proxy
// (wgmma reads S through it), and one arrival per warp publishes the stage.
__device__ __forceinline__ void split_s(unsigned char* smem, u64* loaded, u64* full, Units units, int kblocks)
{
    const int t = threadIdx.x - 32;  // 0 .. 95
    const int lane = threadIdx.x % 32;
    int it = 0;
    for (int u = units.first; u < units.count; u += units.step) {
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
            const int s = it % STAGES;
            mbar_wait(&loaded[s], (it / STAGES) & 1);
            const unsigned big_at = smem_u32(smem + s * STAGE_BYTES + R_STAGE_BYTES);
            const unsigned small_at = big_at + S_STAGE_BYTES;
            for (int c = t; c < S_STAGE_BYTES / 16; c += SPLIT_WARPS * 32) {
                unsigned x[4], b[4], sm[4];
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                             : "r"(big_at + 16 * c));
#pragma unroll
                for (int i = 0; i < 4; ++i) b[i] = split_tf32(__uint_as_float(x[i]), sm[i]);
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(big_at + 16 * c), "r"(b[0]),
                             "r"(b[1]), "r"(b[2]), "r"(b[3])
                             : "memory");
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(small_at + 16 * c), "r"(sm[0]),
                             "r"(sm[1]), "r"(sm[2]), "r"(sm[3])
                             : "memory");
            }
            fence_async_shared();
            __syncwarp();
            if (lane == 0) mbar_arrive(&full[s]);
        }
    }
}

// ---- consumers: each warpgroup owns 64 rows (p) × 128 columns (q) of the D tile ------------------
// One instantiation per R layout; the orientation (`swapped`) matters only to the epilogue. (Three
// instantiations, as 16_wgmma_tf32.cu has, made ptxas spill here.)
template <int R_PMAJOR>
__device__ __forceinline__ void consume(unsigned char* smem, u64* loaded, u64* full, u64* empty, float* __restrict__ C, int M,
                                        int N, const TmaMap* map_c, Units units, int kblocks, bool swapped)
{
    const int wg = threadIdx.x / 128 - 1;
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const bool staged = STORE_BOXES > 0 && (N * C_BYTES) % 16 == 0;
    const int p0 = wg * 64 + warp * 16;
    const bool odd_t = (lane & 1) != 0;
    unsigned off[4];
    if (R_PMAJOR) frag_offsets_pmajor(off, p0, lane);
    else frag_offsets_kmajor(off, p0, lane);
    // acc = this partial's products, cross terms included (168 registers a thread, the cap of
    // __launch_bounds__(384, 1), leave no room for a third accumulator), restarted every PROMOTE
    // k-blocks; acc2 = the FP32 total of the partials.
    float acc[ACC_N], acc2[ACC_N];
    auto release = [&](int s) {
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
    };
    // One k-step (8 of K) is one wgmma group of three (main, big·S_small, small·S_big) with
    // fragment set `big`/`small` (set kk % 2). Before a set is rewritten, the group that read it
    // (two groups back) must be complete: wait_group 1 after every commit sees to that, and the
    // first k-step of k-block kb + 1 retires the last of kb, whose buffer then goes back.
    unsigned it = 0;  // k-blocks consumed so far
    auto k_step = [&](unsigned (&big)[4], unsigned (&small)[4], int kb, int kk, int n) {
        const int s = it % STAGES;
        if (kk == 0) {
            // The TMA's bytes (R) directly, then the split of S (the splitters waited on the
            // same phase of `loaded`: it cannot have moved on, the buffer is not released).
            mbar_wait(&loaded[s], (it / STAGES) & 1);
            mbar_wait(&full[s], (it / STAGES) & 1);
        }
        const unsigned r = smem_u32(smem + s * STAGE_BYTES), sb = r + R_STAGE_BYTES, ss = sb + S_STAGE_BYTES;
        {
            unsigned raw[4];
            load_fragment<R_PMAJOR>(raw, r, off, kk, odd_t);
#pragma unroll
            for (int i = 0; i < 4; ++i) big[i] = split_tf32(__uint_as_float(raw[i]), small[i]);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            fence_operand(big[i]);
            fence_operand(small[i]);
        }
#pragma unroll
        for (int i = 0; i < ACC_N; ++i) fence_operand(acc[i]);
        wgmma_fence();
        const u64 big_desc = smem_desc(sb, 16, 1024) + 2 * kk, small_desc = smem_desc(ss, 16, 1024) + 2 * kk;
        // The cross terms first, then the main product, into the partial.
        const int fresh = kb % PROMOTE == 0 && kk == 0;
        wgmma_m64n128k8_tf32(acc, big, small_desc, fresh ? 0 : 1);
        wgmma_m64n128k8_tf32(acc, small, big_desc, 1);
        wgmma_m64n128k8_tf32(acc, big, big_desc, 1);
        wgmma_commit();
        wgmma_wait<1>();
        if (kk == 0 && kb > 0) release((it - 1) % STAGES);
        if (kk == BK / 8 - 1) {
            if ((kb + 1) % PROMOTE == 0 || kb + 1 == n) {
                // The partial is complete once no group is in flight; added by FADD (to nearest).
                wgmma_wait<0>();
#pragma unroll
                for (int i = 0; i < ACC_N; ++i) {
                    fence_operand(acc[i]);
                    acc2[i] = kb < PROMOTE ? acc[i] : acc2[i] + acc[i];  // the first partial: the total
                }
            }
            ++it;
        }
    };
    unsigned big0[4], small0[4], big1[4], small1[4];
    const int P = swapped ? N : M;
    for (int u = units.first; u < units.count; u += units.step) {
        int tp, tq;
        units.tile(u, 0, tp, tq);
        const int n = kblocks;
        for (int kb = 0; kb < n; ++kb) {
#pragma unroll
            for (int kk = 0; kk < BK / 8; kk += 2) {
                k_step(big0, small0, kb, kk, n);
                k_step(big1, small1, kb, kk + 1, n);
            }
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC_N; ++i) {
            fence_operand(acc[i]);
            fence_operand(acc2[i]);
        }
        if (n > 0) release((it - 1) % STAGES);
        // C = the FP32 total; K = 0 stores zeros.
#pragma unroll
        for (int i = 0; i < ACC_N; ++i) acc[i] = n > 0 ? acc2[i] : 0.0f;
        if (tp * BM >= P) continue;
        unsigned char* boxes = smem + STAGES * STAGE_BYTES + wg * STORE_BOXES * C_BOX_BYTES;
        if (swapped) store_c<true>(acc, staged, boxes, map_c, C, M, N, wg, warp, lane, tq * BN, tp * BM + wg * 64);
        else store_c<false>(acc, staged, boxes, map_c, C, M, N, wg, warp, lane, tp * BM + wg * 64, tq * BN);
    }
    if (staged && threadIdx.x % 128 == 0) bulk_wait_all();
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
wgmma_3xtf32(const float* A, const float* B, float* C, int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs,
             const __grid_constant__ TmaMap map_a, const __grid_constant__ TmaMap map_b,
             const __grid_constant__ TmaMap map_c)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) u64 loaded[STAGES], full[STAGES], empty[STAGES];
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

    const bool a_kmajor = a_cs == 1;
    const bool b_kmajor = b_rs == 1;
    if (!a_kmajor && !b_kmajor) return;  // refused by the host (can_run)
    const bool swapped = !b_kmajor;
    const int P = swapped ? N : M, Q = swapped ? M : N;
    const Units units((P + BM - 1) / BM, (Q + BN - 1) / BN);
    const int kblocks = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&loaded[s], 1);            // the producer's arrive.expect_tx (+ the TMA bytes)
            mbar_init(&full[s], SPLIT_WARPS);    // each splitter warp, S split
            mbar_init(&empty[s], CONSUMER_WARPS);
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    if (threadIdx.x < 128) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            if (swapped) produce<1>(smem, loaded, empty, &map_b, &map_a, units, kblocks);
            else if (a_kmajor) produce<0>(smem, loaded, empty, &map_a, &map_b, units, kblocks);
            else produce<1>(smem, loaded, empty, &map_a, &map_b, units, kblocks);
        } else if (threadIdx.x >= 32) {
            split_s(smem, loaded, full, units, kblocks);
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        if (swapped || !a_kmajor) consume<1>(smem, loaded, full, empty, C, M, N, &map_c, units, kblocks, swapped);
        else consume<0>(smem, loaded, full, empty, C, M, N, &map_c, units, kblocks, false);
    }
    __syncthreads();
}
