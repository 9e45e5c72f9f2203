// cluster-placement.cu — where the blocks of a one-block-per-SM launch land, and how many clusters of
// each size fit at once. A research harness for the GPU host (docs/kernels.md 15z, 15za), not part of the
// library.
//
// The L2 counts of 15z turn on which blocks share a TPC (the SM pair 2t, 2t + 1), since requests of
// the two SMs of a TPC for the same lines are merged before the L2. The wgmma kernels run 384
// threads with 230,400 bytes of dynamic shared memory, one block per SM; this launches a kernel of
// that shape that records %smid and %cluster_ctarank per block, for clusters of 2 in four grid
// shapes (cuBLAS's 2x66 of 2x1 among them) and for no cluster, and asks
// cudaOccupancyMaxActiveClusters how many clusters of 1, 2, 4 and 8 fit. Each clustered shape runs
// under the three cluster scheduling policies (the launch attribute
// cudaLaunchAttributeClusterSchedulingPolicyPreference: default, spread, load balancing), and for
// each launch the TPCs whose two SMs hold blocks of different clusters are counted by how far apart
// the clusters are and whether the two blocks have the same rank (the pairs a tile order could make
// share the operand the cluster does not multicast).
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
    unsigned smid, rank, cx, cy, ncx;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cx));
    asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(cy));
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(ncx));
    const int b = blockIdx.x + blockIdx.y * gridDim.x;
    if (threadIdx.x == 0) {
        out[3 * b] = smid;
        out[3 * b + 1] = rank;
        out[3 * b + 2] = cx + cy * ncx;  // the cluster's linear index
    }
    __nanosleep(100000);
}

static cudaLaunchConfig_t config(dim3 grid, dim3 cluster, cudaLaunchAttribute* attr,
                                 cudaClusterSchedulingPolicy policy = cudaClusterSchedulingPolicyDefault)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster.x;
    attr->val.clusterDim.y = cluster.y;
    attr->val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    attr[1].val.clusterSchedulingPolicyPreference = policy;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    return cfg;
}

int main()
{
    int* d;
    cudaMalloc(&d, 3 * BLOCKS * sizeof(int));
    cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int size : {1, 2, 4, 8}) {
        for (auto policy : {cudaClusterSchedulingPolicyDefault, cudaClusterSchedulingPolicySpread}) {
            cudaLaunchAttribute attr[2];
            cudaLaunchConfig_t cfg = config(dim3(BLOCKS / size * size), dim3(size, 1), attr, policy);
            int n = -1;
            cudaError_t e = cudaOccupancyMaxActiveClusters(&n, where, &cfg);
            printf("clusters of %d, policy %d: at most %d active (%d blocks): %s\n", size, int(policy), n, n * size,
                   cudaGetErrorString(e));
        }
    }
    struct Shape {
        dim3 grid, cluster;
        const char* name;
    } shapes[] = {{dim3(132, 1), dim3(2, 1), "grid 132x1, cluster 2x1"},
                  {dim3(66, 2), dim3(1, 2), "grid 66x2, cluster 1x2"},
                  {dim3(2, 66), dim3(2, 1), "grid 2x66, cluster 2x1 (cuBLAS's launch)"},
                  {dim3(2, 66), dim3(1, 2), "grid 2x66, cluster 1x2"},
                  {dim3(132, 1), dim3(1, 1), "grid 132, no cluster"}};
    const char* policies[] = {"default", "spread", "load-balancing"};
    for (const Shape& s : shapes)
        for (int p = 0; p < 3; ++p) {
            if (s.cluster.x * s.cluster.y == 1 && p > 0) continue;
            cudaLaunchAttribute attr[2];
            cudaLaunchConfig_t cfg = config(s.grid, s.cluster, attr, cudaClusterSchedulingPolicy(p));
            cudaMemset(d, 0xff, 3 * BLOCKS * sizeof(int));
            cudaError_t e = cudaLaunchKernelEx(&cfg, where, d);
            if (e == cudaSuccess) e = cudaDeviceSynchronize();
            std::vector<int> h(3 * BLOCKS);
            cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
            const bool clustered = s.cluster.x * s.cluster.y > 1;
            // Partners: the blocks of one cluster.
            int pairs = 0, one_tpc = 0;
            for (int b = 0; b < BLOCKS; ++b)
                for (int o = b + 1; o < BLOCKS; ++o)
                    if (clustered && h[3 * b + 2] == h[3 * o + 2]) {
                        ++pairs;
                        one_tpc += h[3 * b] / 2 == h[3 * o] / 2;
                    }
            printf("%s, policy %s: %s; partner pairs %d, on one TPC %d\n", s.name, policies[p], cudaGetErrorString(e),
                   pairs, one_tpc);
            // TPC mates from different clusters: how far apart their clusters are, and their ranks.
            std::vector<int> at(256, -1);  // SM -> block
            for (int b = 0; b < BLOCKS; ++b)
                if (h[3 * b] >= 0 && h[3 * b] < 256) at[h[3 * b]] = b;
            int hist[8][2] = {}, far = 0;
            for (int t = 0; t < 128; ++t) {
                const int b = at[2 * t], o = at[2 * t + 1];
                if (b < 0 || o < 0 || h[3 * b + 2] == h[3 * o + 2]) continue;
                const int dist = abs(h[3 * b + 2] - h[3 * o + 2]);
                const int same_rank = h[3 * b + 1] == h[3 * o + 1];
                if (dist < 8) ++hist[dist][same_rank];
                else ++far;
            }
            printf("  TPC mates from different clusters, by cluster distance (different rank / same rank):");
            for (int dist = 1; dist < 8; ++dist)
                if (hist[dist][0] + hist[dist][1]) printf(" %d:%d/%d", dist, hist[dist][0], hist[dist][1]);
            printf(" farther:%d\n  SM: block(cluster.rank) for SMs 0-31:", far);
            for (int sm = 0; sm < 32; ++sm)
                if (at[sm] >= 0) printf(" %d:%d(%d.%d)", sm, at[sm], h[3 * at[sm] + 2], h[3 * at[sm] + 1]);
            printf("\n");
        }
    return 0;
}
