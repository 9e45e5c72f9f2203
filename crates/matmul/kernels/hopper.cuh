// hopper.cuh — what the TMA + wgmma kernels (15_wgmma.cu, 16_wgmma_tf32.cu) share, compiled
// ahead of each (registry: `includes`): the tensor-map parameter type, mbarriers, the TMA tile
// load, wgmma's shared-memory descriptor, fences and waits, the accumulator operand lists of the
// inline-PTX wgmma statements. Each kernel keeps what only it uses (clusters and multicast; register
// fragments for tf32); the grouped tile order is tile_order.cuh's, and how the consumers write C
// (from registers or through TMA stores) is epilogue.cuh's.

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

#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC32(i) ACC8(i), ACC8(i + 8), ACC8(i + 16), ACC8(i + 24)
