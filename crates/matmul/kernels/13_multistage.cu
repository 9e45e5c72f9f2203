// multistage, multistage-raster — SIMT ladder rungs 5 and 6: a STAGES-deep cp.async pipeline.
// Changes from warptile: shared memory holds STAGES slices of A and B; the copies of slice t +
// STAGES − 1 are issued with cp.async (global → shared without registers; simt_tile.cuh) before
// the FMAs of slice t, so a slice's memory latency hides behind the math of the slices before it.
// One barrier per slice instead of two: the barrier that makes slice t visible also proves every
// warp has finished slice t − 1, whose buffer the next copy reuses.
// Two main loops: the plain row-major product (op(A) = op(B) = N, 16-byte rows) on sm_90 runs
// multistage_spread_loop, with its copy layouts fixed and unrolled, the next slice's copies spread
// over the slice's k-steps, fragments loaded a k-step ahead across the barrier, A's transposing copy
// by row chunks (RowChunkCopy) and 32-bit shared addresses; every other layout, and sm_80, runs
// multistage_plain_loop.
// multistage-raster: the tuned H100 tiling (128x256x16/8x4/w64x64n2/s3/p4) and RASTER_GROUP = 8:
// consecutive blocks walk down a group of 8 block-rows before moving right (tile_order.cuh), so a
// wave of blocks touches fewer tiles of A and B (L2 reuse).
// The split tail (multistage_tail, the same file compiled with SPLIT_TAIL_PIECES = 1): the host
// may have `multistage` compute the first tiles whole and multistage_tail the rest in pieces of
// their k range (below). Split-K, for a problem of few tiles: the host launches `multistage` with
// gridDim.z = P pieces of every tile's k range, each writing its own M×N slab of a workspace, and
// multistage_reduce behind it, which sums the slabs into C. A strided batch (BATCHED = 1 builds): the
// entry takes the batch's count and strides after `tiles`, block z of the grid's z computes product
// z (no split tail or split-K then).
// Geometry: THREADS = (BM/WM)·(BN/WN)·32; grid = (ceil(N/BN), ceil(M/BM), P).
// Shared memory (dynamic): STAGES·BK·(BM + BN + 2·PAD) elements.
// Traffic model per output element: K/BN + K/BM loads.
// Parameters: ELEM, BM, BN, BK, TM, TN, WM, WN, WNITER, STAGES (≥ 2), PAD, THREADS, MIN_BLOCKS,
// MAXNREG, RASTER_GROUP (0 = row-major block order), SPLIT_TAIL_PIECES.
// Constraints: sm_80 or newer (cp.async); any M, N, K, either op.

#ifndef RASTER_GROUP
#define RASTER_GROUP 0
#endif
#ifndef BATCHED
#define BATCHED 0
#endif

// RowChunkCopy: the transposing copy of a row-major operand's OUTER×INNER tile (outer = k, inner =
// the operand's rows) into smem[OUTER][LD], by chunks of CHUNK consecutive k of one row. CHUNK = 8:
// eight consecutive lanes copy one chunk (32 bytes, one sector), so a warp's copy instruction reads
// 4 rows × 32 bytes and writes 8 k-rows × 4 columns of smem, 32 distinct banks when LD % 8 == 4.
// CHUNK = 4 (for a BK that is not a multiple of 8): a warp reads 8 rows × 16 bytes and writes 4
// k-rows × 8 columns, 32 distinct banks when LD % 16 == 8 (PAD 8 at BM 128). load_tile's
// transposing path reads one element of each 16-byte group of 8 rows per instruction instead (8
// lines, about twice the L1 wavefronts). A thread copies the same R rows in every slice, so their
// pointers are built once, before the main loop, and a slice adds only its k offset, clamped to
// the row (a chunk past K copies nothing, src-size 0, from an address inside the row; K ≥ 1, which
// the registry checks). FITS: whole chunks and rows, the conflict-free stride, and at most 4 rows
// a thread (8 rows cost too many registers).
template <int OUTER, int INNER, int LD, int CHUNK = 8>
struct RowChunkCopy {
    static constexpr int ROWS_PER_PASS = THREADS / CHUNK, R = INNER / ROWS_PER_PASS, H = OUTER / CHUNK;
    static constexpr int WARP_ROWS = 32 / CHUNK;  // rows of one warp instruction
    static constexpr bool FITS = OUTER % CHUNK == 0 && INNER % ROWS_PER_PASS == 0 && R >= 1 && R <= 4 &&
                                 LD % (2 * WARP_ROWS) == WARP_ROWS;
    const ELEM* row[R > 0 ? R : 1];  // the thread's rows (the operand's base where a row lies past i_lim)
    int k_lim[R > 0 ? R : 1];        // K for a row inside the matrix, 0 for one past it (nothing copied)
    int kl;                          // the lane's k within a chunk
    unsigned dst;                    // the lane's byte offset in the tile: k = kl, row tid / CHUNK

    __device__ __forceinline__ RowChunkCopy(const ELEM* g, int row_stride, int i0, int i_lim, int K)
    {
        const int tid = threadIdx.x;
        kl = tid % CHUNK;
        dst = 4u * (kl * LD + tid / CHUNK);
#pragma unroll
        for (int q = 0; q < R; q++) {
            const int i = i0 + tid / CHUNK + q * ROWS_PER_PASS;
            const bool in = i < i_lim;
            row[q] = in ? g + static_cast<long long>(i) * row_stride : g;
            k_lim[q] = in ? K : 0;
        }
    }

    // The copies of the tile at k = o0 into the tile at shared address `tile`; with PARTS > 1 only
    // part `part` of the thread's R·H copies (a constant after unrolling, as for load_tile).
    template <int PARTS = 1>
    __device__ __forceinline__ void issue(unsigned tile, int o0, int K, int part = 0) const
    {
#pragma unroll
        for (int h = 0; h < H; h++) {
            const int k = o0 + CHUNK * h + kl;
            const int kc = k < K ? k : K - 1;  // inside the row; copied only where k < k_lim
#pragma unroll
            for (int q = 0; q < R; q++) {
                const int c = h * R + q;
                if (PARTS > 1 && (c < part * R * H / PARTS || c >= (part + 1) * R * H / PARTS)) continue;
                cp_async4_at(tile + dst + 4u * (CHUNK * h * LD + q * ROWS_PER_PASS), row[q] + kc, k < k_lim[q]);
            }
        }
    }
};

// The (row, column) of C's block tiles this block computes: blockIdx itself, or with RASTER_GROUP
// the grouped order (consecutive blocks go down RASTER_GROUP block-rows, then right;
// tile_order.cuh). OWN_READ reads blockIdx with volatile asm, so the values are the caller's own,
// not merged with another path's reading (see multistage_body).
template <bool OWN_READ = false>
__device__ __forceinline__ void block_tile(int& by, int& bx)
{
    by = blockIdx.y, bx = blockIdx.x;
    if (OWN_READ) {
        asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(by));
        asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(bx));
    }
    if (RASTER_GROUP > 0) tile_coords(by * gridDim.x + bx, gridDim.y, gridDim.x, RASTER_GROUP, by, bx);
}

static_assert(WM > 0 && STAGES >= 2, "multistage: warp tiling and at least two stages");
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as 4-element words");
static_assert(THREADS == (BM / WM) * (BN / WN) * 32, "one warp per WM×WN tile");

// The stage ring: STAGES buffers of STAGE_ELEMS elements, As (BK, A_LD) then Bs (BK, B_LD).
constexpr int A_LD = BM + PAD, B_LD = BN + PAD;
constexpr int STAGE_ELEMS = BK * (A_LD + B_LD);
__device__ __forceinline__ int next_stage(int buf) { return buf + 1 == STAGES ? 0 : buf + 1; }

// What the main loops copy from: A and B with their strides and copy layouts (tile_path), and the
// product's bounds.
struct LoopOperands {
    const ELEM* __restrict__ A;
    const ELEM* __restrict__ B;
    int M, N, K, a_rs, a_cs, b_rs, b_cs;
    TilePath a_path, b_path;
};

// The main loop of the plain row-major product on sm_90 (copy layouts A_PATH and B_PATH fixed):
// slices [t0, t1) of the tile at (row0, col0) added into acc.
// - The next stage's copies go out in PARTS parts spread over the slice's k-steps (part p before
//   k-step p·BK/PARTS), not as one burst after the barrier that the slice's first FFMAs would wait
//   behind; each part's copies and address arithmetic fill issue slots between FFMAs. They are
//   issued unconditionally (a uniform branch around them would cut the FFMA stream into separately
//   scheduled blocks): past the last slice their k lies beyond K, so they zero-fill a buffer that
//   no FMA reads.
// - Fragments are double-buffered across slices, as in CUTLASS's multistage mainloop: the wait and
//   barrier for slice t + 1 come before the last k-step of slice t, right after them the lane loads
//   slice t + 1's k = 0 fragments, and that last k-step's FFMAs cover the load's latency. Safe for
//   any STAGES ≥ 2: every read of slice t's buffer is issued before that barrier, and the copies
//   that overwrite it after it.
template <int A_PATH, int B_PATH>
__device__ __forceinline__ void multistage_spread_loop(ELEM (&acc)[WarpTile::RM][WarpTile::RN], const WarpTile& wt,
                                                       ELEM* stages, const LoopOperands& op, int row0, int col0,
                                                       int t0, int t1)
{
    // Parts of a slice's copy, each at its own k-step, all of them before the last k-step (whose
    // barrier ends the slice's use of the buffer they write).
    constexpr int PARTS = 4 > BK / 2 ? BK / 2 : 4;
    // A's copy by row chunks, its row pointers built here, once.
    using ARows = RowChunkCopy<BK, BM, A_LD, BK % 8 == 0 ? 8 : 4>;
    constexpr bool A_ROWS = A_PATH == OUTER_CONTIGUOUS && ARows::FITS;
    const ARows a_rows(op.A, op.a_rs, row0, op.M, op.K);  // unused (and so not computed) without A_ROWS
    // Part `part` of slice t's copies into stage buffer `buf`. Past t1 they fill buffers that no FMA
    // reads (zeros past K).
    auto issue_part = [&](int t, int buf, int part) {
        ELEM* As = stages + buf * STAGE_ELEMS;
        if constexpr (A_ROWS) a_rows.template issue<PARTS>(shared_addr(As), t * BK, op.K, part);
        else load_tile<BK, BM, A_LD, true, A_PATH, PARTS>(As, op.A, op.a_path, op.a_cs, op.a_rs, t * BK, row0, op.K,
                                                          op.M, part);
        load_tile<BK, BN, B_LD, true, B_PATH, PARTS>(As + BK * A_LD, op.B, op.b_path, op.b_rs, op.b_cs, t * BK, col0,
                                                     op.K, op.N, part);
    };
    static_assert(BK % 2 == 0, "k = 0 is loaded into a[0] while k-step BK − 1 still reads a[1]");

#pragma unroll
    for (int t = 0; t < STAGES - 1; t++) {
#pragma unroll
        for (int p = 0; p < PARTS; p++) issue_part(t0 + t, t, p);
        cp_async_commit();
    }
    int read = 0, write = STAGES - 1;  // stage buffers of slice t and of slice t + STAGES - 1
    ELEM a[2][WarpTile::RM], b[2][WarpTile::RN];  // fragments: k-step kk in a[kk % 2], b[kk % 2]
    cp_async_wait<STAGES - 2>();  // slice 0 has landed
    __syncthreads();
    wt.load_frag<A_LD, B_LD, true>(a[0], b[0], stages, stages + BK * A_LD, 0);
    for (int t = t0; t < t1; t++) {
        const ELEM* As = stages + read * STAGE_ELEMS;
        // Part p of the copies, then k-steps p·BK/PARTS .. (p + 1)·BK/PARTS − 1. (Two nested
        // loops rather than one k loop that tests for its parts: NVVM sizes a loop before folding
        // such tests, and a k loop holding PARTS copies of the copy code is not unrolled.)
#pragma unroll
        for (int p = 0; p < PARTS; p++) {
            const int k0 = p * BK / PARTS;
            issue_part(t + STAGES - 1, write, p);  // into slice t - 1's buffer
            if (p == PARTS - 1) cp_async_commit();
#pragma unroll
            for (int kk = k0; kk < (p + 1) * BK / PARTS; kk++) {
                if (kk + 1 < BK) {
                    wt.load_frag<A_LD, B_LD, true>(a[(kk + 1) % 2], b[(kk + 1) % 2], As, As + BK * A_LD, kk + 1);
                } else {
                    cp_async_wait<STAGES - 2>();  // this thread's copies of slice t + 1 have landed
                    __syncthreads();  // everyone's have; everyone has issued its last read of slice t
                    const ELEM* An = stages + next_stage(read) * STAGE_ELEMS;
                    wt.load_frag<A_LD, B_LD, true>(a[0], b[0], An, An + BK * A_LD, 0);  // slice t + 1, k = 0
                }
                wt.ffma(acc, a[kk % 2], b[kk % 2]);
            }
        }
        read = next_stage(read);
        write = next_stage(write);
    }
}

// The plain main loop (every layout; sm_80's N·N one too): slices [t0, t1) of the tile at (row0,
// col0) added into acc.
template <int A_PATH, int B_PATH>
__device__ __forceinline__ void multistage_plain_loop(ELEM (&acc)[WarpTile::RM][WarpTile::RN], const WarpTile& wt,
                                                      ELEM* stages, const LoopOperands& op, int row0, int col0, int t0,
                                                      int t1)
{
    // The copies of slice t into stage buffer `buf`, as one cp.async group (an empty group past
    // the last slice keeps the wait counts uniform).
    auto issue = [&](int t, int buf) {
        if (t < t1) {
            ELEM* As = stages + buf * STAGE_ELEMS;
            load_tile<BK, BM, A_LD, true, A_PATH>(As, op.A, op.a_path, op.a_cs, op.a_rs, t * BK, row0, op.K, op.M);
            load_tile<BK, BN, B_LD, true, B_PATH>(As + BK * A_LD, op.B, op.b_path, op.b_rs, op.b_cs, t * BK, col0, op.K,
                                                  op.N);
        }
        cp_async_commit();
    };
#pragma unroll
    for (int t = 0; t < STAGES - 1; t++) issue(t0 + t, t);
    int read = 0, write = STAGES - 1;  // stage buffers of slice t and of slice t + STAGES - 1
    for (int t = t0; t < t1; t++) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of slice t have landed
        __syncthreads();              // everyone's have; everyone is done with slice t - 1
        issue(t + STAGES - 1, write);  // into slice t - 1's buffer
        const ELEM* As = stages + read * STAGE_ELEMS;
        wt.mma<A_LD, B_LD, true>(acc, As, As + BK * A_LD);
        read = next_stage(read);
        write = next_stage(write);
    }
}

// Whether copy layouts A_PATH and B_PATH (known at compile time: their copy loops unrolled into
// straight-line code, simt_tile.cuh) run multistage_spread_loop, or else the plain one.
template <int A_PATH, int B_PATH>
constexpr bool SPREAD_LOOP = A_PATH >= 0 && B_PATH >= 0 && SIMT_SM90;

#ifndef SPLIT_TAIL_PIECES
#define SPLIT_TAIL_PIECES 0
#endif
#if !SPLIT_TAIL_PIECES
// The whole product for copy layouts A_PATH and B_PATH known at compile time, or -1 to follow the
// strides at run time.
template <int A_PATH, int B_PATH>
__device__ __forceinline__ void multistage_body(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                                ELEM* __restrict__ C, int M, int N, int K, int a_rs, int a_cs,
                                                int b_rs, int b_cs, TilePath a_path, TilePath b_path)
{
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* stages = reinterpret_cast<ELEM*>(smem);  // (STAGES, [As (BK, A_LD), Bs (BK, B_LD)])
    int by, bx;
    block_tile(by, bx);
    const int row0 = by * BM, col0 = bx * BN;
    const WarpTile wt(threadIdx.x);
    const int slices = (K + BK - 1) / BK;
    const LoopOperands op{A, B, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path};
    // Split-K (gridDim.z = P > 1 pieces): block z computes slices [z·S/P, (z + 1)·S/P) of its
    // tile into slab z of the M×N slabs C then points at; multistage_reduce sums them.
#if BATCHED
    const int P = 1, z = 0;  // gridDim.z is the batch: the entry has moved A, B and C to block z's product
#else
    const int P = gridDim.z, z = blockIdx.z;
#endif
    const int t0 = static_cast<int>(static_cast<long long>(z) * slices / P);
    const int t1 = static_cast<int>(static_cast<long long>(z + 1) * slices / P);
    C += static_cast<size_t>(z) * M * N;

    ELEM acc[WarpTile::RM][WarpTile::RN];
#pragma unroll
    for (int i = 0; i < WarpTile::RM; i++)
#pragma unroll
        for (int j = 0; j < WarpTile::RN; j++) acc[i][j] = 0;

    if constexpr (SPREAD_LOOP<A_PATH, B_PATH>) {
        // The block's tile read again, for this path alone: sharing row0 and col0 with the
        // general path makes ptxas spill in the general loop of multistage-raster (whose grouped
        // order it cannot recompute cheaply).
        int vby, vbx;
        block_tile<true>(vby, vbx);
        const int vrow0 = vby * BM, vcol0 = vbx * BN;
        multistage_spread_loop<A_PATH, B_PATH>(acc, wt, stages, op, vrow0, vcol0, t0, t1);
        cp_async_wait<0>();
        wt.store<SCALAR_C>(C, acc, vrow0, vcol0, M, N);
        return;
    }
    multistage_plain_loop<A_PATH, B_PATH>(acc, wt, stages, op, row0, col0, t0, t1);
    cp_async_wait<0>();
    wt.store<SCALAR_C>(C, acc, row0, col0, M, N);
}

// Two copies of the main loop: the N·N layouts fixed at compile time, and any (simt_tile.cuh).
// Blocks at or past `tiles` in the block order exit at once: with a split tail, multistage_tail
// (below, launched right after this one as its programmatic dependent) computes those tiles.
extern "C" __global__ void REGISTER_BOUNDS
multistage(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C,
           int M, int N, int K, int a_rs, int a_cs, int b_rs, int b_cs, int tiles
#if BATCHED
           ,
           int batch_count, long long stride_a, long long stride_b, long long stride_c
#endif
)
{
#if __CUDA_ARCH__ >= 900
    // A programmatic dependent (multistage_tail) may start once every block has passed here.
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    if (static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x) >= tiles) return;
#if BATCHED
    if (static_cast<int>(blockIdx.z) >= batch_count) return;
    A += blockIdx.z * stride_a;
    B += blockIdx.z * stride_b;
    C += blockIdx.z * stride_c;
#endif
    const TilePath a_path = tile_path(a_cs, a_rs), b_path = tile_path(b_rs, b_cs);
    WITH_TILE_PATHS(a_path, b_path, multistage_body, A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path);
}
#else
// The split tail (SPLIT_TAIL_PIECES = 1 compiles this entry instead of `multistage`): the last
// tiles in pieces, taken from a queue by whichever SM is free, so that a launch does not wait for
// its slowest SM's last whole tile. The host (cuda::split_tail_plan, split_launch) has `multistage`
// compute the first T − R tiles whole and launches this kernel right behind it as a programmatic
// dependent (sm_90: `multistage` lets it start once its last block has started, so its blocks take
// the SMs `multistage` frees) with one block per resident slot. Its blocks draw pieces from a
// queue until none is left: piece i is piece j = i / R of tail tile u = i mod R, slices
// [j·S/P, (j + 1)·S/P) of its S, so the pieces running at once are at the same k of neighbouring
// tiles (the L2 serves them as it serves whole tiles). A tile's pieces add up in order through one
// workspace slot: piece j waits until the tile's count says j pieces are in, adds the slot's sums
// to its own (piece 0 has none), and writes the slot back, or, if it is the last, stores C and
// resets the count for the next launch. A piece only waits for pieces drawn before it, whose
// blocks are running, so every wait ends. The last block to leave resets the queue. The sum of a
// tile is the same whichever block computes which piece. A separate kernel, not blocks of
// `multistage`: with both kinds of block in one kernel, ptxas allocates the whole-tile loop's
// registers worse.
struct SplitTail {
    int first_tile;   // T − R: the first tile of the tail, in the block order
    int pieces;       // P: pieces per tail tile
    ELEM* partials;   // one slot of BM·BN sums per tail tile (in the lane's own order: coalesced)
    unsigned* sync;   // [0] the next piece to draw, [1] the blocks that have left, [2 + u] tile u's pieces in
};

// Piece j of tail tile u, computed in acc, added to the pieces before it through u's slot. Returns
// whether acc now holds the tile's C (j is its last piece).
__device__ __forceinline__ bool chain_piece(ELEM (&acc)[WarpTile::RM][WarpTile::RN], const SplitTail& split, int u,
                                            int j)
{
    unsigned* count = split.sync + 2 + u;
    ELEM* slot = split.partials + static_cast<size_t>(u) * (BM * BN) + threadIdx.x;
    if (j > 0) {
        if (threadIdx.x == 0) {
            for (;;) {  // until pieces 0 .. j − 1 are in the slot
                unsigned in;
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(in) : "l"(count) : "memory");
                if (in == static_cast<unsigned>(j)) break;
                __nanosleep(256);
            }
        }
        __syncthreads();  // thread 0's acquire, and the block's reads of the slot after it
#pragma unroll
        for (int i = 0; i < WarpTile::RM; i++)
#pragma unroll
            for (int jj = 0; jj < WarpTile::RN; jj++) acc[i][jj] += __ldcg(slot + (i * WarpTile::RN + jj) * THREADS);
    }
    const bool last = j == split.pieces - 1;
    if (!last) {
#pragma unroll
        for (int i = 0; i < WarpTile::RM; i++)
#pragma unroll
            for (int jj = 0; jj < WarpTile::RN; jj++) __stcg(slot + (i * WarpTile::RN + jj) * THREADS, acc[i][jj]);
        __threadfence();
    }
    __syncthreads();  // every thread's slot writes (and fence) before the count that announces them
    if (threadIdx.x == 0) {
        const unsigned next = last ? 0u : static_cast<unsigned>(j + 1);  // 0: ready for the next launch
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(count), "r"(next) : "memory");
    }
    return last;
}

// The block's pieces, drawn from the queue until it is empty.
template <int A_PATH, int B_PATH>
__device__ __forceinline__ void tail_body(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                          ELEM* __restrict__ C, int M, int N, int K, int a_rs, int a_cs, int b_rs,
                                          int b_cs, TilePath a_path, TilePath b_path, const SplitTail split)
{
    extern __shared__ __align__(16) unsigned char smem[];
    ELEM* stages = reinterpret_cast<ELEM*>(smem);  // (STAGES, [As (BK, A_LD), Bs (BK, B_LD)])
    unsigned* word = reinterpret_cast<unsigned*>(smem);  // the drawn piece, before its copies start
    const WarpTile wt(threadIdx.x);
    const int slices = (K + BK - 1) / BK;
    const LoopOperands op{A, B, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path};
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int R = tiles_m * tiles_n - split.first_tile, P = split.pieces;
    for (;;) {
        __syncthreads();  // every warp is done with the last piece's buffers and words
        if (threadIdx.x == 0) *word = atomicAdd(split.sync, 1u);
        __syncthreads();
        const int i = static_cast<int>(*word);
        __syncthreads();  // everyone has read it before the copies overwrite it
        if (i >= R * P) break;
        const int j = i / R, u = i % R;  // piece j of tail tile u: every tile's piece j before any piece j + 1
        const int t0 = static_cast<int>(static_cast<long long>(j) * slices / P);
        const int t1 = static_cast<int>(static_cast<long long>(j + 1) * slices / P);
        // The tile's (row, column) of tiles, in the block order of `multistage` (block_tile).
        const int tile = split.first_tile + u;
        int by, bx;
        if (RASTER_GROUP > 0) tile_coords(tile, tiles_m, tiles_n, RASTER_GROUP, by, bx);
        else by = tile / tiles_n, bx = tile % tiles_n;
        const int row0 = by * BM, col0 = bx * BN;

        ELEM acc[WarpTile::RM][WarpTile::RN];
#pragma unroll
        for (int r = 0; r < WarpTile::RM; r++)
#pragma unroll
            for (int c = 0; c < WarpTile::RN; c++) acc[r][c] = 0;
        if constexpr (SPREAD_LOOP<A_PATH, B_PATH>)
            multistage_spread_loop<A_PATH, B_PATH>(acc, wt, stages, op, row0, col0, t0, t1);
        else
            multistage_plain_loop<A_PATH, B_PATH>(acc, wt, stages, op, row0, col0, t0, t1);
        cp_async_wait<0>();
        if (P > 1 && !chain_piece(acc, split, u, j)) continue;  // a later piece stores the tile
        wt.store<SCALAR_C>(C, acc, row0, col0, M, N);
    }
    // The last block to leave resets the queue for the next launch (every block has drawn its last).
    if (threadIdx.x == 0 && atomicAdd(split.sync + 1, 1u) == gridDim.x - 1) {
        split.sync[0] = 0;
        split.sync[1] = 0;
    }
#if __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent, this grid ends after `multistage` does, so whatever
    // follows on the stream (the next product, a timing event) follows both.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

extern "C" __global__ void REGISTER_BOUNDS
multistage_tail(const ELEM* __restrict__ A, const ELEM* __restrict__ B, ELEM* __restrict__ C, int M, int N, int K,
                int a_rs, int a_cs, int b_rs, int b_cs, int first_tile, int pieces, ELEM* __restrict__ partials,
                unsigned* __restrict__ sync)
{
    const TilePath a_path = tile_path(a_cs, a_rs), b_path = tile_path(b_rs, b_cs);
    const SplitTail split{first_tile, pieces, partials, sync};
    WITH_TILE_PATHS(a_path, b_path, tail_body, A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs, a_path, b_path, split);
}
#endif

// Split-K's second step (cuda::split_tail, "split-K"): C[i] = the sum of the `splits` slabs of
// `partial`, in piece order (the same sum whichever blocks computed the pieces; u32 wraps); one
// thread an element, a grid-stride loop.
extern "C" __global__ void __launch_bounds__(256)
multistage_reduce(const ELEM* __restrict__ partial, ELEM* __restrict__ C, int count, int splits)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        ELEM sum = 0;
        for (int p = 0; p < splits; ++p) sum += __ldcs(partial + static_cast<size_t>(p) * count + i);
        C[i] = sum;
    }
}

// Staging a transposed operand (cuda::staging): dst (cols × rows, rows padded to `pitch`) =
// srcᵀ, src rows × cols row-major; 32×32 tiles through shared memory (a padded column: no bank
// conflicts), block 32×8, so both the reads and the writes are coalesced.
extern "C" __global__ void __launch_bounds__(256)
multistage_transpose(const ELEM* __restrict__ src, ELEM* __restrict__ dst, int rows, int cols, int pitch)
{
    __shared__ ELEM tile[32][33];
    const int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;
    for (int y = threadIdx.y; y < 32; y += 8) {
        const int r = r0 + y, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[y][threadIdx.x] = src[static_cast<size_t>(r) * cols + c];
    }
    __syncthreads();
    for (int y = threadIdx.y; y < 32; y += 8) {
        const int c = c0 + y, r = r0 + threadIdx.x;
        if (r < rows && c < cols) dst[static_cast<size_t>(c) * pitch + r] = tile[threadIdx.x][y];
    }
}
