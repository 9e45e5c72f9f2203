// sm80.cuh — the inline-PTX wrappers of the tensor-core kernels that came with sm_80 (registry:
// `includes`): cp.async, ldmatrix, ld.shared and mma.sync, for 14_mma_sync.cu, and ldmatrix and
// ld.shared for 16_wgmma_tf32.cu's register operand. Shared addresses are 32-bit shared-window
// addresses (smem_u32). Every wrapper is volatile with a memory clobber, so the compiler keeps
// their order to each other and to barriers. (The SIMT ladder's own cp.async wrappers, in
// simt_tile.cuh, have none; the two sets stay apart so that neither ladder's code changes.)

// ---- global → shared (cp.async) ----------------------------------------------------------------
// 16 bytes global → shared; src-size 0 (out of range) writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool in_range)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(in_range ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void cp_async4(unsigned dst, const void* src, bool in_range)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(in_range ? 4 : 0)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- shared → registers -------------------------------------------------------------------
// Four 8×8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j, which lands in r[j]:
// lane l holds row l/4, columns 2(l%4), 2(l%4)+1 (TRANS: of the transposed matrix).
template <bool TRANS>
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr)
{
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr)
                     : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr)
                     : "memory");
}

// One 32-bit word from a shared-window address.
__device__ __forceinline__ unsigned lds32(unsigned addr)
{
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

// ---- mma.sync: d (16×8, f32) += a · b, for the input type of IN_TF32, IN_BF16 or IN_F16 ------
#if defined(IN_TF32)
// a (16×8, tf32, row) · b (8×8, tf32, col); operands rounded to tf32 by the caller (tf32.cuh).
__device__ __forceinline__ void mma_m16n8(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#elif defined(IN_BF16) || defined(IN_F16)
#if defined(IN_BF16)
#define MMA_16 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define MMA_16 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#endif
// a (16×16, row) · b (16×8, col); two 16-bit values per register, lower k low.
__device__ __forceinline__ void mma_m16n8(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile(MMA_16 " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
