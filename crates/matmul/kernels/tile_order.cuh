// tile_order.cuh — the grouped raster order of C's tiles, shared by every kernel that walks
// tiles in it (registry: `includes`): multistage-raster and simt-tma number their blocks by it,
// the persistent wgmma kernels their work units (ClusterUnits, below).
// Tile `t` of the grouped raster over tiles_m × tiles_n tiles: `group` tile-rows at a time, down
// each column of the group (so the blocks running at once share panels of A and B in L2).
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group, int& tm, int& tn)
{
    int width = group * tiles_n;  // tiles per group of tile-rows
    int first = (t / width) * group;
    int rows = min(tiles_m - first, group);
    tm = first + (t % width) % rows;
    tn = (t % width) / rows;
}

// The work units of a persistent block whose cluster of CLUSTER_ blocks takes CLUSTER_ vertically
// adjacent tiles (the persistent wgmma kernels): unit u of the grouped raster (GROUP_ unit-rows at
// a time) over ceil(tiles_m / CLUSTER_) × tiles_n units, block `rank` of the cluster its rank-th
// tile. With an odd tiles_m the last unit's second tile lies past the last row: it still loads
// (and multicasts to its partner) and stores nothing.
template <int CLUSTER_, int GROUP_>
struct ClusterUnits {
    int first, step, count, units_m, tiles_n;
    __device__ ClusterUnits(int tiles_m, int tn_count)
    {
        units_m = (tiles_m + CLUSTER_ - 1) / CLUSTER_;
        tiles_n = tn_count;
        first = blockIdx.x / CLUSTER_;
        step = gridDim.x / CLUSTER_;
        count = units_m * tiles_n;
    }
    __device__ void tile(int u, unsigned rank, int& tm, int& tn) const
    {
        int um;
        tile_coords(u, units_m, tiles_n, GROUP_, um, tn);
        tm = um * CLUSTER_ + rank;
    }
};

// Split-K (15_wgmma.cu, 16_wgmma_tf32.cu): the k-blocks [kb0, kb1) of piece `piece` of `splits`
// near-equal pieces of `kblocks` (the host plans `splits` so that no piece is empty).
__device__ __forceinline__ void piece_range(int piece, int splits, int kblocks, int& kb0, int& kb1)
{
    const int per = (kblocks + splits - 1) / splits;
    kb0 = piece * per;
    kb1 = min(kblocks, kb0 + per);
}
