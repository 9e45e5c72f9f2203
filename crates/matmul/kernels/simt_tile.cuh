// simt_tile.cuh — what the SIMT ladder shares from rung 3 (vectorized) on, compiled ahead of the
// rung's own file (registry: `simt!`), which is compiled with the tile parameters (BM, BN, BK, TM,
// TN, WM, WN, WNITER, STAGES, PAD, THREADS, MIN_BLOCKS, MAXNREG): the register bound of an entry,
// the global → shared tile copies, the warp tile (fragments, FMAs, C stores) and the C-store rule.
// Both operands are kept k-major in shared memory, As[BK][BM + PAD] and Bs[BK][BN + PAD], so the
// inner-product loop reads TM consecutive values of A and TN of B as 128-bit words.
// A global element at (outer o = k, inner i = m for A, n for B) is g[o * outer_stride + i *
// inner_stride]: for A outer_stride = a_cs, inner_stride = a_rs; for B b_rs and b_cs.
// Three copy paths, chosen per launch (a uniform branch) or fixed at compile time (PATH):
//   inner-contiguous (inner_stride == 1, outer_stride % 4 == 0): 16-byte loads along i, stored as
//     16-byte words — B as usual, and A when op(A) = T (A stored K×M);
//   outer-contiguous (outer_stride == 1, inner_stride % 4 == 0): 16-byte loads along k, stored as
//     4 scalars (the transpose) — A as usual, and B when op(B) = T;
//   anything else (a dimension not a multiple of 4): one element at a time.
// The "% 4" conditions put every aligned 4-element group wholly inside or wholly outside the
// matrix, so one bounds check covers a group. cudaMalloc'd bases are 256-byte aligned.
// With ASYNC the copies are cp.async (sm_80+): 16-byte ones where the group is stored whole,
// 4-byte ones for the transposing and scalar paths; out-of-range sources are zero-filled by the
// copy itself (src-size 0) and never read, but must still be valid addresses (the base is used).
// SIMT_SM90: 1 when compiling for sm_90 or newer, where multistage's unrolled N·N loop
// (13_multistage.cu) and the transposing copy's shared source select below apply; below sm_90
// several of them spill at the 128×256 tiling, so those builds keep the plain forms.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define SIMT_SM90 0
#else
#define SIMT_SM90 1
#endif

// REGISTER_BOUNDS, every SIMT entry's register bound: __launch_bounds__(THREADS, MIN_BLOCKS), or
// with MAXNREG = n (a tiling's /rN, registry/tiling.rs, Tiling::max_registers) __maxnreg__(n) in its place
// (CUDA allows one or the other; the registry keeps n within the cap MIN_BLOCKS implies). ptxas
// allocates and schedules the same loop differently under each cap, which `matmul tune` searches.
#ifdef MAXNREG
#define REGISTER_BOUNDS __maxnreg__(MAXNREG)
#else
#define REGISTER_BOUNDS __launch_bounds__(THREADS, MIN_BLOCKS)
#endif

struct __align__(16) Vec4 {
    ELEM x, y, z, w;
};

// Reads 4 adjacent shared-memory elements (16-byte aligned) into registers with one LDS.128.
__device__ __forceinline__ void load4(ELEM* dst, const ELEM* smem_src)
{
    Vec4 v = *reinterpret_cast<const Vec4*>(smem_src);
    dst[0] = v.x;
    dst[1] = v.y;
    dst[2] = v.z;
    dst[3] = v.w;
}

// A shared-memory pointer's 32-bit address in the shared window (what cp.async and ld.shared
// with a 32-bit operand take). hopper.cuh's smem_u32 is the same for the kernels without this file.
__device__ __forceinline__ unsigned shared_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// load4 from a 32-bit shared-window address (shared_addr): ld.shared with a 32-bit register
// operand. NVRTC derives shared addresses from 64-bit generic pointers (ld.shared [%rd]) where nvcc
// uses 32-bit ones (ld.shared [%r]); 32-bit fragment addresses save multistage's loop registers and
// instructions (WarpTile::load_frag, ADDR32). Volatile, like the cp.async and barrier asm around
// it, so the compiler keeps its order to them.
__device__ __forceinline__ void load4_at(ELEM* dst, unsigned smem_addr)
{
    unsigned v[4];
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "r"(smem_addr));
#pragma unroll
    for (int e = 0; e < 4; e++) dst[e] = *reinterpret_cast<const ELEM*>(&v[e]);
}

__device__ __forceinline__ void cp_async16(ELEM* smem_dst, const ELEM* src, bool in_range)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_addr(smem_dst)), "l"(src),
                 "r"(in_range ? 16 : 0));
}

// A 4-byte copy to a 32-bit shared-window address (shared_addr), zero-filled when !in_range.
__device__ __forceinline__ void cp_async4_at(unsigned smem_dst, const ELEM* src, bool in_range)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_dst), "l"(src), "r"(in_range ? 4 : 0));
}

__device__ __forceinline__ void cp_async4(ELEM* smem_dst, const ELEM* src, bool in_range)
{
    cp_async4_at(shared_addr(smem_dst), src, in_range);
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The layout of one operand for the whole launch.
enum TilePath { INNER_CONTIGUOUS, OUTER_CONTIGUOUS, SCALAR };

__device__ __forceinline__ TilePath tile_path(int outer_stride, int inner_stride)
{
    if (inner_stride == 1 && outer_stride % 4 == 0) return INNER_CONTIGUOUS;
    if (outer_stride == 1 && inner_stride % 4 == 0) return OUTER_CONTIGUOUS;
    return SCALAR;
}

// Calls f(row, col) for this thread's items of a copy over COUNT items in rows of PER_ROW:
// items tid, tid + THREADS, ... With UNROLLED the loop has a compile-time trip count and is fully
// unrolled, and when THREADS is a multiple of PER_ROW each item's (row, col) is (tid / PER_ROW +
// r·THREADS / PER_ROW, tid % PER_ROW): constant offsets, no per-item division (a loop of
// `idx += THREADS` is not unrolled, since ptxas cannot bound tid). Without UNROLLED it is that
// loop, with `#pragma unroll ROLLED_UNROLL` (0: a plain `#pragma unroll`, the compiler's choice):
// a kernel that keeps all three copy layouts in one loop body cannot afford the registers of
// fully unrolled addresses.
// PARTS > 1 (UNROLLED only) splits the thread's items into PARTS runs of consecutive r and takes
// run `part` alone, so a caller can spread one copy over several points of its code; `part` must
// be a constant after unrolling (e.g. derived from an unrolled loop's counter), or the selection
// costs a branch per item.
template <int COUNT, int PER_ROW, bool UNROLLED, int ROLLED_UNROLL, int PARTS = 1, typename F>
__device__ __forceinline__ void for_items(int tid, F f, int part = 0)
{
    static_assert(PARTS == 1 || UNROLLED, "a copy is split into parts only with unrolled loops");
    if constexpr (UNROLLED) {
        constexpr int ITEMS = (COUNT + THREADS - 1) / THREADS;
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) {
            if (PARTS > 1 && (r < part * ITEMS / PARTS || r >= (part + 1) * ITEMS / PARTS)) continue;
            if (COUNT % THREADS != 0 && tid + r * THREADS >= COUNT) break;
            if constexpr (THREADS % PER_ROW == 0) {
                f(tid / PER_ROW + r * (THREADS / PER_ROW), tid % PER_ROW);
            } else {
                f((tid + r * THREADS) / PER_ROW, (tid + r * THREADS) % PER_ROW);
            }
        }
    } else if constexpr (ROLLED_UNROLL == 0) {
#pragma unroll
        for (int idx = tid; idx < COUNT; idx += THREADS) f(idx / PER_ROW, idx % PER_ROW);
    } else {
#pragma unroll ROLLED_UNROLL
        for (int idx = tid; idx < COUNT; idx += THREADS) f(idx / PER_ROW, idx % PER_ROW);
    }
}

// Copies the OUTER×INNER tile at (o0, i0) of g into smem[OUTER][LD] (rows o, columns i); elements
// past (o_lim, i_lim) become zero. Every thread of the block calls it (THREADS of them). PATH is
// the copy layout when the caller knows it at compile time (its loops are then unrolled, see
// for_items), or -1 to follow `path`. With PARTS > 1 (PATH fixed) it issues only part `part` of
// the thread's copies (for_items), so PARTS calls with part = 0 .. PARTS − 1 make the whole tile.
template <int OUTER, int INNER, int LD, bool ASYNC, int PATH = -1, int PARTS = 1>
__device__ __forceinline__ void load_tile(ELEM* __restrict__ smem, const ELEM* __restrict__ g, TilePath path,
                                          int outer_stride, int inner_stride, int o0, int i0, int o_lim, int i_lim,
                                          int part = 0)
{
    static_assert(OUTER % 4 == 0 && INNER % 4 == 0 && LD % 4 == 0, "tiles are made of 4-element groups");
    constexpr bool FIXED = PATH >= 0;
    if (FIXED) path = static_cast<TilePath>(PATH);
    const int tid = threadIdx.x;
    if (path == INNER_CONTIGUOUS) {
        // Consecutive threads take consecutive groups along i: coalesced 16-byte loads.
        for_items<OUTER * INNER / 4, INNER / 4, FIXED, 0, PARTS>(tid, [&](int o, int i) {
            i *= 4;
            int go = o0 + o, gi = i0 + i;
            bool in = go < o_lim && gi < i_lim;
            const ELEM* src = in ? &g[go * outer_stride + gi] : g;
            ELEM* dst = &smem[o * LD + i];
            if (ASYNC) {
                cp_async16(dst, src, in);
            } else {
                Vec4 v = in ? *reinterpret_cast<const Vec4*>(src) : Vec4{0, 0, 0, 0};
                *reinterpret_cast<Vec4*>(dst) = v;
            }
        }, part);
    } else if (path == OUTER_CONTIGUOUS) {
        // Consecutive threads take consecutive groups along o (k): coalesced along the matrix's
        // contiguous dimension; each group is written transposed, one element per row of smem.
        for_items<OUTER * INNER / 4, OUTER / 4, FIXED, 0, PARTS>(tid, [&](int i, int o) {
            o *= 4;
            int go = o0 + o, gi = i0 + i;
            bool in = go < o_lim && gi < i_lim;
            const ELEM* src = in ? &g[gi * inner_stride + go] : g;
            if (ASYNC) {
#if SIMT_SM90
                // One select for the group's 4 sources (which then differ by immediate offsets),
                // not one per copy: fewer SELs and 64-bit adds in multistage's loop. Out of range
                // they are g .. g + 3: read by no copy (src-size 0), inside the allocation all
                // the same (cudaMalloc rounds to 256 bytes).
                const ELEM* s = in ? src : g;
#pragma unroll
                for (int j = 0; j < 4; j++) cp_async4(&smem[(o + j) * LD + i], s + j, in);
#else
#pragma unroll
                for (int j = 0; j < 4; j++) cp_async4(&smem[(o + j) * LD + i], in ? src + j : g, in);
#endif
            } else {
                Vec4 v = in ? *reinterpret_cast<const Vec4*>(src) : Vec4{0, 0, 0, 0};
                smem[(o + 0) * LD + i] = v.x;
                smem[(o + 1) * LD + i] = v.y;
                smem[(o + 2) * LD + i] = v.z;
                smem[(o + 3) * LD + i] = v.w;
            }
        }, part);
    } else {
        for_items<OUTER * INNER, INNER, FIXED, 4, PARTS>(tid, [&](int o, int i) {
            int go = o0 + o, gi = i0 + i;
            bool in = go < o_lim && gi < i_lim;
            const ELEM* src = in ? &g[go * outer_stride + gi * inner_stride] : g;
            if (ASYNC) {
                cp_async4(&smem[o * LD + i], src, in);
            } else {
                smem[o * LD + i] = in ? *src : (ELEM)0;
            }
        }, part);
    }
}

// Calls BODY<A_PATH, B_PATH>(...) once: with the plain row-major product's copy layouts fixed
// (op(A) = op(B) = N with 16-byte-aligned rows: A's groups run along k, B's along n), so that its
// copy loops unroll into straight-line code, or with both left to run time (-1) for every other
// layout. A kernel gets two copies of its main loop this way; one loop body holding all three
// layouts fully unrolled spills at 255 registers (multistage's tuned tiling).
#define WITH_TILE_PATHS(a_path, b_path, BODY, ...)                                        \
    do {                                                                                  \
        if ((a_path) == OUTER_CONTIGUOUS && (b_path) == INNER_CONTIGUOUS)                 \
            BODY<OUTER_CONTIGUOUS, INNER_CONTIGUOUS>(__VA_ARGS__);                        \
        else                                                                              \
            BODY<-1, -1>(__VA_ARGS__);                                                    \
    } while (0)

// C[r][c .. c+3] = v[0 .. 3] one element at a time, skipping what lies past (M, N). (store4's
// fallback below is the same check written out: calling this there moves warptile's and
// vectorized's register allocation.)
__device__ __forceinline__ void store_each(ELEM* __restrict__ C, int r, int c, int M, int N, const ELEM* v)
{
    if (r >= M) return;
#pragma unroll
    for (int e = 0; e < 4; e++)
        if (c + e < N) C[r * N + c + e] = v[e];
}

// Stores v = C[r][c .. c+3] (row-major, N columns), skipping what lies past (M, N); one 16-byte
// store when the group is whole and N % 4 == 0 keeps rows 16-byte aligned.
__device__ __forceinline__ void store4(ELEM* __restrict__ C, int r, int c, int M, int N, Vec4 v)
{
    if (r >= M) return;
    ELEM* p = &C[r * N + c];
    if (N % 4 == 0 && c + 3 < N) {
        *reinterpret_cast<Vec4*>(p) = v;
    } else {
        if (c < N) p[0] = v.x;
        if (c + 1 < N) p[1] = v.y;
        if (c + 2 < N) p[2] = v.z;
        if (c + 3 < N) p[3] = v.w;
    }
}

// C[r][c .. c+3] = v[0 .. 3], what lies past (M, N) skipped: store4, or with SCALAR store_each
// (no 16-byte store, so no register quad for v: see WarpTile::store and SCALAR_C).
template <bool SCALAR>
__device__ __forceinline__ void store_row4(ELEM* __restrict__ C, int r, int c, int M, int N, const ELEM* v)
{
    if constexpr (SCALAR) store_each(C, r, c, M, N, v);
    else store4(C, r, c, M, N, Vec4{v[0], v[1], v[2], v[3]});
}

// Warp tiling (rungs 12 and up). A warp owns a WM×WN tile of the block's C, split into
// WMITER×WNITER sub-tiles of (WM/WMITER)×(WN/WNITER); in each sub-tile its 32 lanes own one TM×TN
// register tile apiece, lanes adjacent along N. So a lane's values of B in one sub-tile sit next
// to its neighbours' (conflict-free 16-byte reads), and the warp's A values are few and broadcast.
struct WarpTile {
    static constexpr int WMITER = WM > 0 ? (WM * WN) / (32 * TM * TN * WNITER) : 1;
    static constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    static constexpr int LANES_N = WSUBN / TN;
    static constexpr int RM = WMITER * TM, RN = WNITER * TN;  // a lane's register tile
    int m0, n0;  // the lane's first row and column within the block's tile

    __device__ __forceinline__ WarpTile(int tid)
    {
        int warp = tid / 32, lane = tid % 32;
        m0 = (warp / (BN / WN)) * WM + (lane / LANES_N) * TM;
        n0 = (warp % (BN / WN)) * WN + (lane % LANES_N) * TN;
    }

    // The lane's fragments of k-step kk: a (RM) from As (BK, LDA), b (RN) from Bs (BK, LDB).
    // ADDR32: the loads from one 32-bit shared address per operand plus immediates (load4_at);
    // multistage uses them, warptile (whose single-stage loop they slow) does not.
    template <int LDA, int LDB, bool ADDR32 = false>
    __device__ __forceinline__ void load_frag(ELEM (&a)[RM], ELEM (&b)[RN], const ELEM* As, const ELEM* Bs,
                                              int kk) const
    {
        // 4 elements at As[m0 + off] (Bs[n0 + off]): from a 32-bit address with ADDR32.
        const unsigned pa = shared_addr(As) + 4 * m0, pb = shared_addr(Bs) + 4 * n0;
        auto ld_a = [&](ELEM* dst, int off) {
            if constexpr (ADDR32) load4_at(dst, pa + 4 * off);
            else load4(dst, &As[m0 + off]);
        };
        auto ld_b = [&](ELEM* dst, int off) {
            if constexpr (ADDR32) load4_at(dst, pb + 4 * off);
            else load4(dst, &Bs[n0 + off]);
        };
#pragma unroll
        for (int wi = 0; wi < WMITER; wi++)
#pragma unroll
            for (int i = 0; i < TM; i += 4) ld_a(a + wi * TM + i, kk * LDA + wi * WSUBM + i);
#pragma unroll
        for (int wj = 0; wj < WNITER; wj++)
#pragma unroll
            for (int j = 0; j < TN; j += 4) ld_b(b + wj * TN + j, kk * LDB + wj * WSUBN + j);
    }

    // acc += a ⊗ b: the RM·RN FMAs of one k-step. At one block per SM in 2×2 blocks, (i, j)
    // (i, j+1) (i+1, j) (i+1, j+1), snaking along the row pairs (cuBLAS's SGEMM order): a[i],
    // a[i+1] and b[j], b[j+1] sit in consecutive registers of the 16-byte loads' quads, one per
    // register bank, so the operand reuse cache serves more of them. Under the 128-register cap of
    // two blocks per SM row by row (the 2×2 order makes warptile's registry default spill).
    __device__ __forceinline__ static void ffma(ELEM (&acc)[RM][RN], const ELEM (&a)[RM], const ELEM (&b)[RN])
    {
        if constexpr (MIN_BLOCKS == 1 && RM % 2 == 0 && RN % 2 == 0) {
#pragma unroll
            for (int i = 0; i < RM; i += 2)
#pragma unroll
                for (int jj = 0; jj < RN; jj += 2) {
                    const int j = (i / 2) % 2 ? RN - 2 - jj : jj;
                    acc[i][j] += a[i] * b[j];
                    acc[i][j + 1] += a[i] * b[j + 1];
                    acc[i + 1][j] += a[i + 1] * b[j];
                    acc[i + 1][j + 1] += a[i + 1] * b[j + 1];
                }
        } else {
#pragma unroll
            for (int i = 0; i < RM; i++)
#pragma unroll
                for (int j = 0; j < RN; j++) acc[i][j] += a[i] * b[j];
        }
    }

    // acc += the products of one BK-slice: As (BK, lda) and Bs (BK, ldb), both k-major, in
    // straight-line code.
    template <int LDA, int LDB, bool ADDR32 = false>
    __device__ __forceinline__ void mma(ELEM (&acc)[RM][RN], const ELEM* As, const ELEM* Bs) const
    {
#pragma unroll BK
        for (int kk = 0; kk < BK; kk++) {
            ELEM a[RM], b[RN];
            load_frag<LDA, LDB, ADDR32>(a, b, As, Bs, kk);
            ffma(acc, a, b);
        }
    }

    // Writes the lane's register tile to C, whose block tile starts at (row0, col0).
    // SCALAR: one element per store instead of 16-byte groups. A 16-byte store needs its 4 values
    // in an aligned quad of registers, and ptxas then keeps acc[i][j .. j+3] in quads through the
    // main loop: acc[i][j] has the register bank (parity) of b[j], and where a[i] shares it the
    // FFMA reads all three registers from one bank (9.9 % of multistage ★'s loop FFMAs, none with
    // scalar stores). SCALAR_C below says where that pays.
    template <bool SCALAR = false>
    __device__ __forceinline__ void store(ELEM* C, const ELEM (&acc)[RM][RN], int row0, int col0, int M, int N) const
    {
#pragma unroll
        for (int wi = 0; wi < WMITER; wi++)
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int wj = 0; wj < WNITER; wj++)
#pragma unroll
                    for (int j = 0; j < TN; j += 4) {
                        const ELEM* v = &acc[wi * TM + i][wj * TN + j];
                        const int r = row0 + m0 + wi * WSUBM + i, c = col0 + n0 + wj * WSUBN + j;
                        store_row4<SCALAR>(C, r, c, M, N, v);
                    }
    }
};

// Whether multistage and simt-tma store C element by element (WarpTile::store<true>,
// store_each): at one block per SM with 128 accumulators per lane, the tilings where the register
// banks bind (on the H100 +1 to +3 % there, and a loss on smaller tiles, at two blocks per SM and
// in warptile's single-stage loop, which keeps its 16-byte stores).
constexpr bool SCALAR_C = MIN_BLOCKS == 1 && WarpTile::RM * WarpTile::RN >= 128;
