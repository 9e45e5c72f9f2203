// hopper.cuh — the inline-PTX wrappers of the Hopper kernels (15_wgmma.cu, 16_wgmma_tf32.cu,
// 17_simt_tma.cu), compiled ahead of each (registry: `includes`): the tensor-map parameter type,
// mbarriers, TMA loads and stores, clusters (barriers, remote arrivals, multicast), setmaxnreg,
// and wgmma (descriptors, fences, waits, the instructions and their accumulator operand lists).
// The grouped tile order is tile_order.cuh's; how the wgmma consumers write C is epilogue.cuh's.

typedef unsigned long long u64;

// A TMA tensor map (CUtensorMap: 128 opaque bytes), passed by value as a __grid_constant__.
struct __align__(64) TmaMap {
    u64 words[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u64* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

// One arrival that also announces `bytes` of TMA traffic the phase must wait for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// Spins until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as
// completed, so the first wait of a producer on an "empty" buffer falls through).
__device__ __forceinline__ void mbar_wait(u64* bar, unsigned parity)
{
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" ::"r"(smem_u32(bar)),
        "r"(parity)
        : "memory");
}

// Orders this thread's mbarrier inits before the cluster's (and TMA's) first use of them.
__device__ __forceinline__ void fence_mbarrier_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// ---- TMA -----------------------------------------------------------------------------------
// Copies the box at (inner c0, outer c1) of `map` to `dst`, completing `bytes` on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const TmaMap* map, u64* bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            smem_u32(dst)),
        "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
        : "memory");
}

// A strided batch (BATCHED = 1 builds of 15_wgmma.cu): the maps have a third dimension, the
// product, and every copy names its product too.
#ifndef BATCHED
#define BATCHED 0
#endif

// tma_load's copy from product c2 of a map with a third dimension (BATCHED builds).
__device__ __forceinline__ void tma_load_3d(void* dst, const TmaMap* map, u64* bar, int c0, int c1, int c2)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
            smem_u32(dst)),
        "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}

// Fetches a tensor map into the TMA unit's cache ahead of its first copy.
__device__ __forceinline__ void prefetch_tensormap(const TmaMap* map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// Copies the swizzled box at `src` to C at (column c0, row c1); TMA clips what lies past M or N.
__device__ __forceinline__ void tma_store(const TmaMap* map, const void* src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     reinterpret_cast<u64>(map)),
                 "r"(smem_u32(src)), "r"(c0), "r"(c1)
                 : "memory");
}

// tma_store into product c2 of a map with a third dimension (BATCHED builds).
__device__ __forceinline__ void tma_store_3d(const TmaMap* map, const void* src, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                     reinterpret_cast<u64>(map)),
                 "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

// A store of a box to (c0, c1) of product c2: 2D maps (c2 unused) unless BATCHED.
__device__ __forceinline__ void tma_store_at(const TmaMap* map, const void* src, int c0, int c1, int c2)
{
#if BATCHED
    tma_store_3d(map, src, c0, c1, c2);
#else
    tma_store(map, src, c0, c1);
#endif
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Waits until this thread's committed stores have read their shared memory (it may be refilled).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

// Waits until this thread's committed stores are complete.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Makes this thread's ordinary shared-memory writes visible to TMA (the async proxy).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- warpgroups ----------------------------------------------------------------------------
// A barrier of the 128 threads of consumer warpgroup `wg` (named barriers 1 and 2; 0 is
// __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int wg) { asm volatile("bar.sync %0, 128;\n" ::"r"(wg + 1) : "memory"); }

// The warpgroup's register budget per thread, lowered (a producer) or raised (a consumer).
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---- clusters (wgmma-cluster, wgmma-tf32-cluster) ---------------------------------------------
// Arrives on the barrier at the same offset as `bar` in block `rank` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, unsigned rank)
{
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// A whole-cluster barrier split in two, for a split start: every thread arrives once and waits
// once (idle warps too: racecheck hangs otherwise), each warp where it is about to need the other
// blocks' barriers. The arrive is relaxed: fence_mbarrier_init orders the barriers' init before
// it, and that is all the other block may see first (a release arrive is a MEMBAR.ALL.GPU, about
// 1,400 cycles at the start).
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }

// This block's rank in its cluster (only in a kernel launched with clusters).
__device__ __forceinline__ unsigned cluster_ctarank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// The same copy written to the same offset in every block of `mask` (and completing there).
__device__ __forceinline__ void tma_load_multicast(void* dst, const TmaMap* map, u64* bar, int c0, int c1,
                                                   unsigned short mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(
            smem_u32(dst)),
        "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}

// tma_load_multicast's copy from product c2 of a map with a third dimension (BATCHED builds).
__device__ __forceinline__ void tma_load_multicast_3d(void* dst, const TmaMap* map, u64* bar, int c0, int c1, int c2,
                                                      unsigned short mask)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(
            smem_u32(dst)),
        "l"(reinterpret_cast<u64>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
        : "memory");
}

// A copy of the box at (c0, c1) of product c2: 2D maps (c2 unused) unless BATCHED.
__device__ __forceinline__ void tma_load_at(void* dst, const TmaMap* map, u64* bar, int c0, int c1, int c2)
{
#if BATCHED
    tma_load_3d(dst, map, bar, c0, c1, c2);
#else
    tma_load(dst, map, bar, c0, c1);
#endif
}

// This block's share of an operand that the BLOCKS blocks of its cluster share: multicast to the
// same offset in every block of the cluster, or (BLOCKS = 1) a plain load into this block.
template <int BLOCKS>
__device__ __forceinline__ void tma_load_to_cluster(void* dst, const TmaMap* map, u64* bar, int c0, int c1)
{
    if (BLOCKS > 1) tma_load_multicast(dst, map, bar, c0, c1, (1u << BLOCKS) - 1);
    else tma_load(dst, map, bar, c0, c1);
}

// tma_load_to_cluster of the box at (c0, c1) of product c2 (2D maps, c2 unused, unless BATCHED).
template <int BLOCKS>
__device__ __forceinline__ void tma_load_to_cluster_at(void* dst, const TmaMap* map, u64* bar, int c0, int c1, int c2)
{
#if BATCHED
    if (BLOCKS > 1) tma_load_multicast_3d(dst, map, bar, c0, c1, c2, (1u << BLOCKS) - 1);
    else tma_load_3d(dst, map, bar, c0, c1, c2);
#else
    tma_load_to_cluster<BLOCKS>(dst, map, bar, c0, c1);
#endif
}

// This block's rank in its cluster of BLOCKS blocks (0 without clusters).
template <int BLOCKS>
__device__ __forceinline__ unsigned rank_in_cluster()
{
    return BLOCKS > 1 ? cluster_ctarank() : 0;
}

// ---- wgmma ---------------------------------------------------------------------------------
// A shared-memory matrix descriptor with the 128-byte swizzle: start address, leading- and
// stride-dimension byte offsets (each encoded >> 4), swizzle mode 1 in bits 62–63.
__device__ __forceinline__ u64 smem_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
           ((u64)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of an accumulator across the asynchronous
// wgmma (it cannot see that wgmma writes the registers after the asm statement returns).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// The same for a register operand (wgmma-tf32's A fragments).
__device__ __forceinline__ void fence_operand(unsigned& r) { asm volatile("" : "+r"(r)::"memory"); }

// wgmma's accumulator register lists as PTX text: operands %0 .. %(n - 1), the accumulators that
// ACC32(0), ACC32(32), ... bind, in the braces the instruction expects.
#define WGMMA_REGS_32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
                      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_REGS_64 WGMMA_REGS_32 ","                                                        \
                      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
                      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_REGS_128 WGMMA_REGS_64 ","                                                        \
                       "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
                       "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
                       "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
                       "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_ACC_32 "{" WGMMA_REGS_32 "}"
#define WGMMA_ACC_64 "{" WGMMA_REGS_64 "}"
#define WGMMA_ACC_128 "{" WGMMA_REGS_128 "}"

#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC32(i) ACC8(i), ACC8(i + 8), ACC8(i + 16), ACC8(i + 24)

#if defined(IN_BF16) || defined(IN_F16)
#if defined(IN_BF16)
#define WGMMA_TYPE "bf16"
#else
#define WGMMA_TYPE "f16"
#endif
// d (64×N f32, N/2 per thread) = A·B (+ d when accumulate): A 64×16 and B 16×N of 16-bit elements
// from shared memory (descriptors); TA / TB = 1 where the operand is MN-major.
template <int N, int TA, int TB>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], u64 desc_a, u64 desc_b, int accumulate)
{
    static_assert(N == 64 || N == 128 || N == 256, "wgmma: m64n{64,128,256}k16");
    if constexpr (N == 256) {
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
    } else if constexpr (N == 128) {
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
    } else {
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
    }
}
#endif

// d (64×256 f32, 128 per thread) = a·S (+ d when accumulate): a 64×8 tf32 from registers (the
// wgmma A fragment), S 8×256 tf32 from shared memory, K-major (tf32 has no transpose bits).
__device__ __forceinline__ void wgmma_m64n256k8_tf32(float (&d)[128], const unsigned (&a)[4], u64 desc_s,
                                                     int accumulate)
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
