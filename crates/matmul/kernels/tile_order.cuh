// tile_order.cuh — the grouped raster order of C's tiles, shared by every kernel that walks
// tiles in it (registry: `includes`): multistage-raster and simt-tma number their blocks by it,
// the persistent wgmma kernels their work units.
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
