// probe.cuh — the timeline probe of the wgmma kernel (15_wgmma.cu; registry: `includes`), compiled
// in with PROBE=1 (MATMUL_KERNEL_DEFINES=PROBE=1); with PROBE=0, the default, everything below
// compiles to nothing. Never a build whose rate is quoted: it costs 1–3 %.
// Thread 0 of each block keeps its SM clock at the ProbePoints in shared memory and, at the exit,
// writes them (as cycles since its entry) with %globaltimer at the entry and its SM's id to row
// blockIdx.x of the module-scope array wgmma_probe, which the host prints after the last timed
// launch with MATMUL_PROBE=wgmma_probe (lab/probe-summary.py reads it). No printf: its stack
// frame in local memory delayed the very start it was timing (tests/compile.rs checks that the
// probe build has no stack frame).

#ifndef PROBE
#define PROBE 0
#endif

enum ProbePoint {
    P_ENTRY_NS,       // %globaltimer at the entry, ns
    P_FIRST_COPY,     // the producer issues the first TMA copy
    P_FIRST_STAGE,    // consumer warpgroup 0 sees the first stage land
    P_MAINLOOP_END,   // ... its last tile's last wgmma retired
    P_STORES_ISSUED,  // ... its last C stores issued
    P_STORES_DONE,    // ... and completed
    P_EXIT,           // thread 0 past the final barrier
    P_SM,             // %smid
    P_BARRIERS,       // the mbarriers initialized
    P_SYNCED,         // past the start's barrier (clusters: the producer warp's wait)
    P_PRODUCER_REGS,  // the producer past setmaxnreg.dec
    P_CONSUMER_REGS,  // consumer warpgroup 0 past setmaxnreg.inc
    P_PREFETCHED,     // the tensor-map prefetches issued
    P_FIRST_TILE,     // the producer enters its first tile (ptxas reads this clock before the
                      // tile's coordinate divisions, not after)
    PROBE_POINTS
};
constexpr int PROBE_BLOCKS = 132;  // rows of wgmma_probe: the persistent grid has at most one block per SM

#if PROBE
__device__ unsigned long long wgmma_probe[PROBE_BLOCKS * PROBE_POINTS];
__shared__ unsigned long long probe_t[PROBE_POINTS];
__shared__ unsigned long long probe_ns;  // %globaltimer at the entry (in shared memory, not in a
                                         // register the 40-register producer thread would carry)
#define PROBE_AT(p) (probe_t[p] = clock64())
#else
#define PROBE_AT(p) ((void)0)
#endif
// Records point p where `cond` holds (`cond` is not evaluated without PROBE).
#define PROBE_IF(cond, p)                 \
    do {                                  \
        if (PROBE && (cond)) PROBE_AT(p); \
    } while (0)

// At the kernel's entry: thread 0's %globaltimer and first clock.
__device__ __forceinline__ void probe_entry()
{
#if PROBE
    if (threadIdx.x == 0) {
        unsigned long long ns;
        asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
        probe_ns = ns;
        PROBE_AT(P_ENTRY_NS);  // the entry clock (the exit writes the ns there)
    }
#endif
}

// At the kernel's exit, after its last barrier: thread 0 writes its block's row.
__device__ __forceinline__ void probe_exit()
{
#if PROBE
    if (threadIdx.x == 0 && blockIdx.x < PROBE_BLOCKS) {
        PROBE_AT(P_EXIT);
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
        unsigned long long* row = wgmma_probe + PROBE_POINTS * blockIdx.x;
        for (int p = 0; p < PROBE_POINTS; ++p)  // (probe_t[P_SM] is never written: %smid goes there)
            row[p] = p == P_ENTRY_NS ? probe_ns : p == P_SM ? smid : probe_t[p] - probe_t[P_ENTRY_NS];
    }
#endif
}
