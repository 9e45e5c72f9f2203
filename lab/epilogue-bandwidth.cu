// epilogue-bandwidth.cu — how fast can one SM move a 128×256 f32 tile of C (128 KB) out of its
// registers? A research harness for the GPU host (docs/kernels.md 15x), not part of the library.
//
// The wgmma kernels' timeline probe (15l, 15u) puts ~3,900-4,400 SM cycles between a tile's last
// wgmma and its last C store issued, whichever path C takes (staged in shared memory or stored
// from the registers), ~30 bytes per cycle. This times the pieces alone, in a block shaped like
// the kernel's (384 threads; warpgroups 1 and 2 hold the "accumulators", 128 floats per thread;
// 225 KB of dynamic shared memory, so one block per SM), each phase REPS times:
//   sts32     128 4-byte shared stores per thread, in store_staged_t's swizzled pattern (epilogue.cuh)
//   sts64     64 8-byte shared stores per thread, in store_staged's pattern
//   sts128    32 16-byte shared stores per thread, linear (the shared memory's peak)
//   bulk      one thread per warpgroup copies its 64 KB from shared to global memory with 8
//             cp.async.bulk of 8 KB and waits for completion (the TMA's store path without a tensor map)
//   bulk-read the same, waiting only until the copies have read shared memory
//   bulk-1k   bulk with copies of 1 KB (64 per warpgroup)
//   stg64     64 8-byte global stores per thread from registers (store_direct's pattern, C 4096 wide)
//   stg128    32 16-byte global stores per thread, 512 contiguous bytes per warp store (the best case)
//   stg128+bulk  warpgroup 1's half by stg128 while warpgroup 2's goes by bulk: do they share a path?
//   sts+bulk  sts32, then bulk: the whole staged epilogue
// with 1 block or one per SM at once. Prints the median over the blocks of the cycles per phase
// and the bytes per cycle.
//
// Build and run on the GPU host:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o /tmp/epilogue-bandwidth dist/gpu/epilogue-bandwidth.cu
//   /tmp/epilogue-bandwidth [REPS=20]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                               \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

constexpr int THREADS = 384, TILE_BYTES = 128 * 256 * 4, SMEM = 225 * 1024, C_WIDTH = 4096;
enum Mode { STS32, STS64, STS128, BULK, BULK_READ, BULK_1K, STG64, STG128, STG128_BULK, STS_BULK, MODES };
const char* NAMES[MODES] = {"sts32", "sts64", "sts128", "bulk", "bulk-read", "bulk-1k", "stg64", "stg128", "stg128+bulk", "sts+bulk"};

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ int box_offset(int row, int col)  // epilogue.cuh's, f32
{
    const int byte = col * 4;
    return row * 128 + (((byte / 16) ^ (row % 8)) * 16) + byte % 16;
}
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

template <int BYTES>
__device__ __forceinline__ void bulk_store(float* dst, unsigned char* src, bool read_only)
{
    for (int i = 0; i < 65536 / BYTES; ++i)  // a warpgroup's 64 KB in copies of BYTES
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst + i * (BYTES / 4)),
                     "r"(smem_u32(src + i * BYTES)), "n"(BYTES)
                     : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    if (read_only) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    else asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
time_phase(int mode, int reps, float* out, unsigned long long* cycles, float seed)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x < 128) {  // the producer warpgroup idles, as in the kernel's last tile
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int t = threadIdx.x - 128, wg = t / 128, tid = t % 128, warp = tid / 32, lane = tid % 32;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = seed * (i + t);
    float* tile = out + (size_t)blockIdx.x * (TILE_BYTES / 4);
    unsigned char* boxes = smem + wg * (TILE_BYTES / 2);
    consumers_sync();
    long long start = clock64();
    for (int r = 0; r < reps; ++r) {
        if (mode == STS32 || mode == STS_BULK) {  // store_staged_t: 8 boxes, 4 per warp
            const int q = lane % 4;
#pragma unroll
            for (int b = 0; b < 8; ++b) {
                const int nb = b % 2, mb = b / 2;
                if (warp / 2 != nb) continue;
                unsigned char* box = boxes + b * 8192;
#pragma unroll
                for (int jj = 0; jj < 8; ++jj)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
#pragma unroll
                        for (int c = 0; c < 2; ++c) {
                            int row = 8 * jj + 2 * q + c, col = (warp % 2) * 16 + lane / 4 + 8 * h;
                            *reinterpret_cast<float*>(box + box_offset(row, col)) = d[4 * (8 * mb + jj) + 2 * h + c];
                        }
            }
        } else if (mode == STS64) {  // store_staged: box b holds columns 32b..32b+31
            const int r0 = warp * 16 + lane / 4, q = lane % 4;
#pragma unroll
            for (int b = 0; b < 8; ++b)
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        int i = 4 * (4 * b + jj) + 2 * h;
                        *reinterpret_cast<float2*>(boxes + b * 8192 + box_offset(r0 + 8 * h, 8 * jj + 2 * q)) =
                            make_float2(d[i], d[i + 1]);
                    }
        } else if (mode == STS128) {
#pragma unroll
            for (int i = 0; i < 32; ++i)
                reinterpret_cast<float4*>(boxes)[i * 128 + tid] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
        } else if (mode == STG128 || (mode == STG128_BULK && wg == 0)) {  // contiguous 512 B per warp store
            float4* c = reinterpret_cast<float4*>(tile + wg * (TILE_BYTES / 8));
#pragma unroll
            for (int i = 0; i < 32; ++i)
                c[i * 128 + tid] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
        } else if (mode == STG64) {  // store_direct: rows 16·warp + lane/4 (+8), columns 8j + 2q
            // Block b's tile: rows 128·(b / 16), columns 256·(b % 16) of a 4096-wide C.
            float* c = out + (size_t)(blockIdx.x / 16 * 128 + wg * 64 + warp * 16 + lane / 4) * C_WIDTH +
                       blockIdx.x % 16 * 256 + 2 * (lane % 4);
#pragma unroll
            for (int j = 0; j < 32; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    *reinterpret_cast<float2*>(c + 8 * h * C_WIDTH + 8 * j) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
        if (mode == STS32 || mode == STS_BULK || mode == STS64 || mode == STS128)
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        consumers_sync();
        if ((mode == BULK || mode == BULK_READ || mode == STS_BULK || (mode == STG128_BULK && wg == 1)) && tid == 0)
            bulk_store<8192>(tile + wg * (TILE_BYTES / 8), boxes, mode == BULK_READ);
        if (mode == BULK_1K && tid == 0) bulk_store<1024>(tile + wg * (TILE_BYTES / 8), boxes, false);
        consumers_sync();
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] += 1.0f;  // a new tile each time
    }
    long long end = clock64();
    if (t == 0) cycles[blockIdx.x] = (end - start) / reps;
}

int main(int argc, char** argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 20;
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaFuncSetAttribute(time_phase, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    float* out;
    unsigned long long* cycles;
    CHECK(cudaMalloc(&out, (size_t)(sms / 16 + 1) * 16 * TILE_BYTES));  // covers both layouts
    CHECK(cudaMalloc(&cycles, sms * sizeof(unsigned long long)));
    printf("phase\tblocks\tcycles (median)\tmin\tmax\tbytes/cycle\n");
    for (int blocks : {1, sms}) {
        for (int mode = 0; mode < MODES; ++mode) {
            time_phase<<<blocks, THREADS, SMEM>>>(mode, 2, out, cycles, 1.0f);  // warm-up
            time_phase<<<blocks, THREADS, SMEM>>>(mode, reps, out, cycles, 1.0f);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            std::vector<unsigned long long> c(blocks);
            CHECK(cudaMemcpy(c.data(), cycles, blocks * sizeof(c[0]), cudaMemcpyDeviceToHost));
            std::sort(c.begin(), c.end());
            const double med = c[blocks / 2];
            printf("%s\t%d\t%.0f\t%llu\t%llu\t%.1f\n", NAMES[mode], blocks, med, c.front(), c.back(),
                   TILE_BYTES / med);
        }
    }
    return 0;
}
