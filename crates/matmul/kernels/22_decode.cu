// decode — a small-M product (M ≤ 64: LLM decode, a few tokens against a large weight matrix B),
// every dtype (f32, u32 wrapping, tf32 computed as full f32 FMA, bf16/f16 with f32 sums).
// Changes from the tile kernels (warptile, multistage, wgmma): those give a block a 128-row tile of C,
// so at M = 1..64 most of each tile is rows that do not exist, and their grids are a few dozen
// blocks. Here a block holds at most 8 rows of C in registers, streams its share of B exactly once
// from global memory straight into registers as 16-byte vectors, and multiplies every B element by
// all its rows of A, which are staged k-chunk by k-chunk in shared memory (converted to the
// accumulator type). K is split into pieces across
// gridDim.y so that the grid fills every SM several blocks deep even when N is small; each piece
// writes its own M×N slab of f32/u32 partial sums and decode_reduce adds the slabs in piece order
// (deterministic; u32 wraps), as multistage's split-K does. With one piece the kernel writes C.
// Why faster: at small M the product is bound by memory bandwidth; the floor is reading B once,
// K·N·elem bytes (16×14336×4096 bf16: 117 MB, 24 µs at 4.8 TB/s). A adds M·K·elem per column
// block (served by L2), the slabs 2·P·M·N·4 (the host keeps them under 1/8 of B: family/decode.rs),
// C M·N·out. Compute is M FMAs per B element: f32 SIMT FMA keeps up with the bandwidth to
// M ≈ 40 (f32) or M ≈ 20 (16-bit: twice the elements per byte); beyond that this kernel is bound
// by the FMA rate (a tensor-core decode kernel is the next rung there).
// Two paths, picked from B's strides (the host picks the grid by the same rule, b_cs == 1):
//  * op(B) = N (B stored K×N, rows of B contiguous along j): a block is LC column lanes × 256/LC k
//    lanes (LC = 8, 16 or 32, the fewest 16-byte vectors that cover N); each thread owns V adjacent
//    columns (one 16-byte vector: V = 4 four-byte or 8 two-byte elements), walks every (256/LC)-th
//    k row of each chunk U rows at a time (U loads in flight, then their FMAs), and keeps
//    acc[MT][V]; the k lanes are summed through shared memory at the end, in k-lane order.
//  * op(B) = T (B stored N×K, each column of op(B) contiguous along k): each warp owns CPT = 4
//    columns; its lanes read 16-byte vectors along k (a warp reads 512 contiguous bytes of each
//    column per step), keep acc[MT][CPT], and a warp-shuffle reduce-scatter sums the 32 lanes.
// Rows: MT ∈ {1, 2, 4, 8} is the smallest register tile that holds the block's rows (M = 1 runs one
// row of FMAs, not 8); M above MT_MAX = 8 takes several row groups of blocks, adjacent
// in blockIdx.x so that they read the same B at about the same time (L2 serves the repeats).
// Tails and strides: any M ≤ 64, N, K and row strides. A 16-byte load is used only where B's base is
// 16-byte aligned and its row pitch and its extent along the vectors (N, or K for op(B) = T) are
// multiples of V, so a vector that starts inside B ends inside it; else every element is a
// bounds-checked scalar load. Rows past M and k past K are staged as zeros in shared
// memory, and B is never read past its edges.
// Geometry: THREADS = 256; grid = (column blocks · row groups, P pieces of K); column blocks =
// ceil(N / (LC·V)) (op(B) = N) or ceil(N / 32) (op(B) = T); row groups = ceil(M / 8): a thread keeps
// 8·V (op(B) = N) or 8·CPT (op(B) = T) sums, within 128 registers (2 blocks an SM) without spills on
// sm_80 and sm_90a (16 rows of 4-byte sums with 8 loads in flight spilled on sm_80).
// Shared memory (static, 8 KB): A's chunk as ACC, (KC, MT) for op(B) = N, (MT, KC) for op(B) = T,
// KC = 256; reused for op(B) = N's reduction (8 values × 256 threads per round).
// Registers: each path's body is a __noinline__ function per (MT, 16-byte or scalar loads), so that
// ptxas allocates each alone (inlined together they spilled at the 128-register cap of 2 blocks/SM).
// Traffic model: B once, A once per column block, P slabs of M×N written and read, C once.
// Parameters: ELEM, IN_<DTYPE>, C_NARROW (C in ELEM, rounded to nearest even).
// Constraints: M ≤ 64 (Constraint::SmallM). Extra arguments: the number of pieces P (= gridDim.y)
// and the partial slabs' workspace (P·M·N ACC; unused when P = 1).

#ifndef C_NARROW
#define C_NARROW 0
#endif

#if defined(IN_U32)
typedef unsigned ACC;  // exact wrapping sums
#else
typedef float ACC;  // f32, tf32 (full f32 FMA), and bf16/f16 accumulated in f32
#endif
#if C_NARROW
typedef ELEM OUT;  // C as bf16/f16 bits
#else
typedef ACC OUT;
#endif

constexpr int THREADS = 256;
constexpr int KC = 256;                             // k per staged chunk of A
constexpr int V = 16 / sizeof(ELEM);                // elements of one 16-byte vector: 4 or 8
constexpr int MT_MAX = 8;                           // most rows per block (V·8 or CPT·8 sums a thread)
constexpr int CPT = 4;                              // op(B) = T: columns per warp
constexpr int U = 32 / V;                           // op(B) = N: k rows of B loaded before their FMAs (8, or 4
                                                    // for 16-bit: 8·8 sums leave room for 4 vectors)
constexpr int S = KC / (32 * V);                    // op(B) = T: vectors per lane per column per chunk
constexpr int RED = 8;                              // op(B) = N: sums per thread per reduction round
constexpr int SMEM_WORDS = KC * MT_MAX;             // (KC, 8) = (8, KC) = (RED, THREADS) ACC words
static_assert(RED * THREADS <= SMEM_WORDS, "decode: shared memory");
static_assert(S >= 1 && KC % (32 * V) == 0, "decode: a warp's vectors tile the chunk");

// A's chunk, and op(B) = N's reduction (module scope: the noinline block functions address it as
// shared memory).
__shared__ __align__(16) ACC As[SMEM_WORDS];

// ---- element conversions -------------------------------------------------------------------------

// One element of A or B as the accumulator type.
__device__ __forceinline__ ACC to_acc(ELEM x)
{
#if defined(IN_BF16)
    return __uint_as_float(static_cast<unsigned>(x) << 16);
#elif defined(IN_F16)
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(x));
    return f;
#else
    return x;
#endif
}

// The V elements of a 16-byte vector (element 0 at the lowest address) as the accumulator type.
__device__ __forceinline__ void unpack(const uint4& w, ACC (&out)[V])
{
    const unsigned word[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if defined(IN_BF16)
        out[2 * i] = __uint_as_float(word[i] << 16);
        out[2 * i + 1] = __uint_as_float(word[i] & 0xffff0000u);
#elif defined(IN_F16)
        out[2 * i] = to_acc(static_cast<ELEM>(word[i] & 0xffffu));
        out[2 * i + 1] = to_acc(static_cast<ELEM>(word[i] >> 16));
#elif defined(IN_U32)
        out[i] = word[i];
#else
        out[i] = __uint_as_float(word[i]);
#endif
    }
}

// Elements 4h .. 4h + 4 of a 16-byte vector as the accumulator type (h = 0 for 4-byte elements).
__device__ __forceinline__ void unpack4(const uint4& w, int h, ACC (&out)[4])
{
    ACC all[V];
    unpack(w, all);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = all[4 * h + i];
}

// The bits of one element, for packing scalar loads into a vector's layout.
__device__ __forceinline__ unsigned bits(ELEM x)
{
#if defined(IN_BF16) || defined(IN_F16) || defined(IN_U32)
    return static_cast<unsigned>(x);
#else
    return __float_as_uint(x);
#endif
}

// V elements e[0..V) (bits) packed as one 16-byte vector's words.
__device__ __forceinline__ uint4 pack(const unsigned (&e)[V])
{
#if defined(IN_BF16) || defined(IN_F16)
    return make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
#else
    return make_uint4(e[0], e[1], e[2], e[3]);
#endif
}

// One sum into C (rounded to C's type) or into a slab of partial sums.
__device__ __forceinline__ void put(OUT* __restrict__ C, ACC* __restrict__ slab, size_t i, ACC v)
{
    if (slab) {
        slab[i] = v;
        return;
    }
#if C_NARROW
    unsigned short r;
#if defined(IN_BF16)
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
#else
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
#endif
    C[i] = r;
#else
    C[i] = v;
#endif
}

// ---- A's chunk in shared memory ------------------------------------------------------------------

// Rows m0 + [0, MT) × k0 + [0, KC) of op(A) into As as ACC, zeros past M and K: As[k·MT + m]
// (KMAJOR false, op(B) = N: a k row's MT values are adjacent) or As[m·KC + k] (KMAJOR true, op(B) =
// T: a row's k values are adjacent). Consecutive threads take consecutive k where A's k is its
// contiguous axis (a_cs == 1), else consecutive m.
template <int MT, bool KMAJOR>
__device__ __forceinline__ void stage_a(const ELEM* __restrict__ A, ACC* As, int M, int K, int a_rs, int a_cs, int m0,
                                        int k0)
{
    const bool k_fast = a_cs == 1;
#pragma unroll 4
    for (int e = threadIdx.x; e < MT * KC; e += THREADS) {
        const int m = k_fast ? e / KC : e % MT;  // (MT)
        const int k = k_fast ? e % KC : e / MT;  // (KC)
        const int row = m0 + m, col = k0 + k;
        ACC v = 0;
        if (row < M && col < K) v = to_acc(A[static_cast<size_t>(row) * a_rs + static_cast<size_t>(col) * a_cs]);
        As[KMAJOR ? m * KC + k : k * MT + m] = v;
    }
}

// Four ACC words of shared memory (16-byte aligned) into a[0..4).
__device__ __forceinline__ void load4(const ACC* p, ACC* a)
{
    const uint4 w = *reinterpret_cast<const uint4*>(p);
#if defined(IN_U32)
    a[0] = w.x, a[1] = w.y, a[2] = w.z, a[3] = w.w;
#else
    a[0] = __uint_as_float(w.x), a[1] = __uint_as_float(w.y), a[2] = __uint_as_float(w.z), a[3] = __uint_as_float(w.w);
#endif
}

// MT values As[0 .. MT) (16-byte aligned for MT ≥ 4) into a[0..MT): LDS.128 where MT ≥ 4.
template <int MT>
__device__ __forceinline__ void load_rows(const ACC* As, ACC (&a)[MT])
{
    if constexpr (MT >= 4) {
#pragma unroll
        for (int m = 0; m < MT; m += 4) load4(As + m, a + m);
    } else {
#pragma unroll
        for (int m = 0; m < MT; ++m) a[m] = As[m];
    }
}

// ---- op(B) = N: rows of B along j ----------------------------------------------------------------

// The V elements op(B)(k, j0 .. j0 + V) (zeros past N and K) as one vector's words: one 16-byte
// load where VEC (B 16-byte aligned, b_cs == 1, b_rs and N multiples of V), else V scalar loads.
template <bool VEC>
__device__ __forceinline__ uint4 load_b_row(const ELEM* __restrict__ B, int k, int j0, int N, int K, int b_rs, int b_cs)
{
    if (k >= K || j0 >= N) return make_uint4(0, 0, 0, 0);
    const ELEM* p = B + static_cast<size_t>(k) * b_rs;
    if constexpr (VEC) {
        return __ldg(reinterpret_cast<const uint4*>(p + j0));  // j0 < N, N % V == 0: inside the row
    } else {
        unsigned e[V];
#pragma unroll
        for (int v = 0; v < V; ++v) e[v] = j0 + v < N ? bits(__ldg(p + static_cast<size_t>(j0 + v) * b_cs)) : 0u;
        return pack(e);
    }
}

// One block of op(B) = N: rows m0 + [0, MT) (rows past M computed as zeros and not written),
// columns col0 + [0, LC·V), chunks [c_lo, c_hi) of K. Thread t = (q, c): column lane c = t % LC
// owns columns j0 = col0 + c·V + [0, V); k lane q = t / LC takes k rows q, q + 256/LC, ... of each
// chunk (LC of them). Then the 256/LC k lanes of each column are summed through shared memory.
template <int MT, bool VEC>
__device__ __noinline__ void rows_block(const ELEM* __restrict__ A, const ELEM* __restrict__ B, OUT* __restrict__ C,
                                           ACC* __restrict__ slab, int M, int N, int K, int a_rs, int a_cs, int b_rs,
                                           int b_cs, int m0, int col0, int lc, int c_lo, int c_hi)
{
    const int t = threadIdx.x;
    const int c = t & (lc - 1), q = t / lc;  // column lane (LC), k lane (256/LC)
    const int kq = THREADS / lc;            // k lanes; each takes LC rows of a chunk
    const int j0 = col0 + c * V;            // the thread's first column
    ACC acc[MT][V];                         // (MT, V)
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int v = 0; v < V; ++v) acc[m][v] = 0;

    for (int ch = c_lo; ch < c_hi; ++ch) {
        const int k0 = ch * KC;
        __syncthreads();  // the previous chunk's A is no longer read
        stage_a<MT, false>(A, As, M, K, a_rs, a_cs, m0, k0);
        __syncthreads();
        for (int i0 = 0; i0 < lc; i0 += U) {  // LC is a multiple of U
            uint4 b[U];                       // (U) vectors of V elements
#pragma unroll
            for (int u = 0; u < U; ++u) b[u] = load_b_row<VEC>(B, k0 + q + (i0 + u) * kq, j0, N, K, b_rs, b_cs);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                ACC bv[V], a[MT];  // (V), (MT)
                unpack(b[u], bv);
                load_rows<MT>(As + (q + (i0 + u) * kq) * MT, a);
#pragma unroll
                for (int m = 0; m < MT; ++m)
#pragma unroll
                    for (int v = 0; v < V; ++v) acc[m][v] += a[m] * bv[v];
            }
        }
    }

    // Sum the k lanes: RED sums a thread per round into As[r·256 + t], then output (r, c) of the
    // round is the sum over q of As[r·256 + q·LC + c], in q order (deterministic).
    constexpr int R = MT * V < RED ? MT * V : RED;
#pragma unroll
    for (int r0 = 0; r0 < MT * V; r0 += R) {
        __syncthreads();  // As is free (the last chunk's FMAs, or the previous round's sums)
#pragma unroll
        for (int r = 0; r < R; ++r) As[r * THREADS + t] = acc[(r0 + r) / V][(r0 + r) % V];
        __syncthreads();
        for (int o = t; o < R * lc; o += THREADS) {
            const int r = o / lc, cc = o % lc;
            const int m = (r0 + r) / V, j = col0 + cc * V + (r0 + r) % V;  // row in the group, column
            if (m0 + m >= M || j >= N) continue;
            ACC sum = 0;
            for (int qq = 0; qq < kq; ++qq) sum += As[r * THREADS + qq * lc + cc];
            put(C, slab, static_cast<size_t>(m0 + m) * N + j, sum);
        }
    }
}

// ---- op(B) = T: columns of op(B) along k ---------------------------------------------------------

// The V elements op(B)(k .. k + V, j) (zeros past K and N) as one vector's words: one 16-byte load
// where VEC (B 16-byte aligned, b_rs == 1, b_cs and K multiples of V), else V scalar loads.
template <bool VEC>
__device__ __forceinline__ uint4 load_b_col(const ELEM* __restrict__ B, int k, int j, int N, int K, int b_rs, int b_cs)
{
    if (j >= N || k >= K) return make_uint4(0, 0, 0, 0);
    const ELEM* p = B + static_cast<size_t>(j) * b_cs;
    if constexpr (VEC) {
        return __ldg(reinterpret_cast<const uint4*>(p + k));  // k < K, K % V == 0: inside the column
    } else {
        unsigned e[V];
#pragma unroll
        for (int v = 0; v < V; ++v) e[v] = k + v < K ? bits(__ldg(p + static_cast<size_t>(k + v) * b_rs)) : 0u;
        return pack(e);
    }
}

// The warp's NV sums v (index i = m·CPT + cc) added over its 32 lanes by halving: at offsets 16,
// 8, ... a lane keeps one half of its values (the upper half where its lane bit is set), sends the
// other to lane ^ offset and adds what it receives, until NV/32 values remain (then plain xor sums
// for the remaining offsets, when NV < 32). Returns the index of v[0]'s sum; v[i] holds that of
// index base + i for i < max(NV/32, 1), the same in every lane that shares lane's upper bits.
template <int NV, int CNT = NV, int OFF = 16>
__device__ __forceinline__ int reduce_scatter(ACC (&v)[NV], int lane, int base = 0)
{
    if constexpr (OFF == 0) {
        return base;
    } else {
        constexpr int KEEP = NV / 32 > 1 ? NV / 32 : 1;
        if constexpr (CNT > KEEP) {
            constexpr int HALF = CNT / 2;
            const bool up = lane & OFF;
#pragma unroll
            for (int i = 0; i < HALF; ++i) {
                const ACC send = up ? v[i] : v[i + HALF];
                const ACC keep = up ? v[i + HALF] : v[i];
                v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
            }
            return reduce_scatter<NV, HALF, OFF / 2>(v, lane, up ? base + HALF : base);
        } else {
#pragma unroll
            for (int i = 0; i < CNT; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], OFF);
            return reduce_scatter<NV, CNT, OFF / 2>(v, lane, base);
        }
    }
}

// One block of op(B) = T: rows m0 + [0, MT), columns col0 + [0, 32) (warp w: col0 + CPT·w +
// [0, CPT)), chunks [c_lo, c_hi) of K. Lane l reads vectors k0 + (32·s + l)·V + [0, V) of each of its
// warp's columns (a warp instruction reads 32·16 contiguous bytes of one column), multiplies them
// by A's rows (LDS.128 along k) into acc[MT][CPT], then the warp's lanes are summed.
template <int MT, bool VEC>
__device__ __noinline__ void cols_block(const ELEM* __restrict__ A, const ELEM* __restrict__ B, OUT* __restrict__ C,
                                           ACC* __restrict__ slab, int M, int N, int K, int a_rs, int a_cs, int b_rs,
                                           int b_cs, int m0, int col0, int c_lo, int c_hi)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int jw = col0 + warp * CPT;  // the warp's first column
    ACC acc[MT * CPT];                 // (MT, CPT): acc[m·CPT + cc]
#pragma unroll
    for (int i = 0; i < MT * CPT; ++i) acc[i] = 0;

    for (int ch = c_lo; ch < c_hi; ++ch) {
        const int k0 = ch * KC;
        __syncthreads();
        stage_a<MT, true>(A, As, M, K, a_rs, a_cs, m0, k0);
        __syncthreads();
#pragma unroll
        for (int s = 0; s < S; ++s) {
            const int kl = (32 * s + lane) * V;  // the lane's k in the chunk
            uint4 b[CPT];                        // (CPT) vectors of V elements along k
#pragma unroll
            for (int cc = 0; cc < CPT; ++cc) b[cc] = load_b_col<VEC>(B, k0 + kl, jw + cc, N, K, b_rs, b_cs);
#pragma unroll
            for (int h = 0; h < V / 4; ++h) {  // four k at a time: A(·, k0 + kl + 4h + [0, 4))
                ACC bv[CPT][4];                // (CPT, 4)
#pragma unroll
                for (int cc = 0; cc < CPT; ++cc) unpack4(b[cc], h, bv[cc]);
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                    ACC a[4];  // (4)
                    load4(As + m * KC + kl + 4 * h, a);
#pragma unroll
                    for (int cc = 0; cc < CPT; ++cc)
#pragma unroll
                        for (int v = 0; v < 4; ++v) acc[m * CPT + cc] += a[v] * bv[cc][v];
                }
            }
        }
    }

    constexpr int NV = MT * CPT, KEEP = NV / 32 > 1 ? NV / 32 : 1;
    const int base = reduce_scatter<NV>(acc, lane);
    // Lanes that share the upper bits hold the same sums when NV < 32: the lowest of them writes.
    constexpr int SHARED = NV < 32 ? 32 / NV : 1;
    if (lane % SHARED != 0) return;
#pragma unroll
    for (int i = 0; i < KEEP; ++i) {
        const int idx = base + i, m = idx / CPT, j = jw + idx % CPT;  // row in the group, column
        if (m0 + m < M && j < N) put(C, slab, static_cast<size_t>(m0 + m) * N + j, acc[i]);
    }
}

// ---- the entry points ----------------------------------------------------------------------------

// The column lanes of op(B) = N: the fewest 16-byte vectors that cover N, as a power of two in
// [8, 32] (family/decode.rs, column_lanes, computes the same).
__device__ __forceinline__ int column_lanes(int N)
{
    const int vectors = (N + V - 1) / V;
    int lc = 8;
    while (lc < 32 && lc < vectors) lc *= 2;
    return lc;
}

template <int MT>
__device__ __forceinline__ void block(bool rows_path, bool vec, const ELEM* __restrict__ A,
                                      const ELEM* __restrict__ B, OUT* __restrict__ C, ACC* __restrict__ slab, int M,
                                      int N, int K, int a_rs, int a_cs, int b_rs, int b_cs, int m0, int cb, int c_lo,
                                      int c_hi)
{
    if (rows_path) {
        {
            const int lc = column_lanes(N);
            const int col0 = cb * lc * V;
            if (vec) rows_block<MT, true>(A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, col0, lc, c_lo, c_hi);
            else rows_block<MT, false>(A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, col0, lc, c_lo, c_hi);
        }
    } else {
        const int col0 = cb * (THREADS / 32) * CPT;
        if (vec) cols_block<MT, true>(A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, col0, c_lo, c_hi);
        else cols_block<MT, false>(A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, col0, c_lo, c_hi);
    }
}

// C (M×N) = op(A)·op(B), or with splits > 1 piece blockIdx.y's partial sums into slab blockIdx.y of
// `partial` (splits slabs of M×N ACC) for decode_reduce. blockIdx.x = column block · row groups +
// row group.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
decode(const ELEM* __restrict__ A, const ELEM* __restrict__ B, OUT* __restrict__ C, int M, int N, int K, int a_rs,
       int a_cs, int b_rs, int b_cs, int splits, ACC* __restrict__ partial)
{
    const bool rows_path = b_cs == 1;  // op(B) = N: B's rows along j (the host's rule too)
    const int groups = (M + MT_MAX - 1) / MT_MAX;
    const int rg = blockIdx.x % groups, cb = blockIdx.x / groups;  // row group, column block
    const int m0 = rg * MT_MAX, rows = min(M - m0, MT_MAX);
    const int chunks = (K + KC - 1) / KC;
    const int p = blockIdx.y;  // this block's piece of K: chunks [p·chunks/P, (p + 1)·chunks/P)
    const int c_lo = static_cast<int>(static_cast<long long>(p) * chunks / splits);
    const int c_hi = static_cast<int>(static_cast<long long>(p + 1) * chunks / splits);
    ACC* slab = splits > 1 ? partial + static_cast<size_t>(p) * M * N : nullptr;
    const bool aligned = (reinterpret_cast<size_t>(B) & 15) == 0;
    const bool vec = aligned && (rows_path ? b_rs % V == 0 && N % V == 0 : b_rs == 1 && b_cs % V == 0 && K % V == 0);
    if (rows <= 1) block<1>(rows_path, vec, A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, cb, c_lo, c_hi);
    else if (rows <= 2) block<2>(rows_path, vec, A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, cb, c_lo, c_hi);
    else if (rows <= 4) block<4>(rows_path, vec, A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, cb, c_lo, c_hi);
    else block<8>(rows_path, vec, A, B, C, slab, M, N, K, a_rs, a_cs, b_rs, b_cs, m0, cb, c_lo, c_hi);
}

// Split-K's second step: C[i] = the sum over the `splits` slabs of `partial`, in piece order
// (deterministic; u32 wraps), rounded to C's type; one thread an element, a grid-stride loop.
extern "C" __global__ void __launch_bounds__(256)
decode_reduce(const ACC* __restrict__ partial, OUT* __restrict__ C, int count, int splits)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        ACC sum = 0;
        for (int p = 0; p < splits; ++p) sum += __ldcs(partial + static_cast<size_t>(p) * count + i);
        put(C, nullptr, i, sum);
    }
}
