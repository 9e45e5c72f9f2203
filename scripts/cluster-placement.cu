// cluster-placement.cu — where the blocks of a one-block-per-SM launch land, and how many clusters of
// each size fit at once. A research harness for the GPU host (docs/kernels.md 15z), not part of the
// library.
//
// The L2 counts of 15z turn on which blocks share a TPC (the SM pair 2t, 2t + 1), since requests of
// the two SMs of a TPC for the same lines are merged before the L2. The wgmma kernels run 384 threads
// with 230,400 bytes of dynamic shared memory, one block per SM; this launches a kernel of that shape
// that records %smid and %cluster_ctarank per block, for clusters of 2 in three grid shapes and for
// no cluster, and asks cudaOccupancyMaxActiveClusters how many clusters of 1, 2, 4 and 8 fit.
//
// Build and run on the GPU host:
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o /tmp/cluster-placement dist/gpu/cluster-placement.cu
//   /tmp/cluster-placement
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

constexpr int THREADS = 384, SMEM = 230400, BLOCKS = 132;

// Block b (linear) writes its SM and its rank in the cluster, then holds its SM a while, so that
// every block of the grid is resident at once.
__global__ void where(int* out)
{
    unsigned smid, rank;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int b = blockIdx.x + blockIdx.y * gridDim.x;
    if (threadIdx.x == 0) {
        out[2 * b] = smid;
        out[2 * b + 1] = rank;
    }
    __nanosleep(100000);
}

static cudaLaunchConfig_t config(dim3 grid, dim3 cluster, cudaLaunchAttribute* attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster.x;
    attr->val.clusterDim.y = cluster.y;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

int main()
{
    int* d;
    cudaMalloc(&d, 2 * BLOCKS * sizeof(int));
    cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int size : {1, 2, 4, 8}) {
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = config(dim3(BLOCKS / size * size), dim3(size, 1), &attr);
        int n = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&n, where, &cfg);
        printf("clusters of %d: at most %d active (%d blocks): %s\n", size, n, n * size, cudaGetErrorString(e));
    }
    struct Shape {
        dim3 grid, cluster;
        const char* name;
    } shapes[] = {{dim3(132, 1), dim3(2, 1), "grid 132x1, cluster 2x1"},
                  {dim3(66, 2), dim3(1, 2), "grid 66x2, cluster 1x2"},
                  {dim3(2, 66), dim3(1, 2), "grid 2x66, cluster 1x2"},
                  {dim3(132, 1), dim3(1, 1), "grid 132, no cluster"}};
    for (const Shape& s : shapes) {
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = config(s.grid, s.cluster, &attr);
        cudaMemset(d, 0xff, 2 * BLOCKS * sizeof(int));
        cudaError_t e = cudaLaunchKernelEx(&cfg, where, d);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        std::vector<int> h(2 * BLOCKS);
        cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
        // Partners: the blocks of one cluster (the same cluster coordinates in x and y).
        int pairs = 0, one_tpc = 0;
        for (int b = 0; b < BLOCKS; ++b)
            for (int o = b + 1; o < BLOCKS; ++o) {
                const int bx = b % s.grid.x, by = b / s.grid.x, ox = o % s.grid.x, oy = o / s.grid.x;
                if (s.cluster.x * s.cluster.y > 1 && bx / s.cluster.x == ox / s.cluster.x &&
                    by / s.cluster.y == oy / s.cluster.y) {
                    ++pairs;
                    one_tpc += h[2 * b] / 2 == h[2 * o] / 2;
                }
            }
        printf("%s: %s; partner pairs %d, on one TPC %d; the first 16 blocks' SMs:", s.name, cudaGetErrorString(e),
               pairs, one_tpc);
        for (int b = 0; b < 16; ++b) printf(" %d", h[2 * b]);
        printf("\n");
    }
    return 0;
}
