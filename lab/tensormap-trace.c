// tensormap-trace.c — prints every tensor map a process encodes and every kernel it launches, by
// CUPTI callbacks on the driver API. A research harness for the GPU host (docs/kernels.md 15za), not
// part of the library: it reads how cuBLAS's Hopper kernels lay out their TMA boxes (box shape,
// swizzle, L2 promotion, rank), which its SASS and ncu's reports do not show, for comparison with
// the maps src/cuda/tma.rs builds. cuBLAS reaches cuTensorMapEncodeTiled through the driver's entry
// points, so a symbol interposer would miss it; CUPTI sees the driver call itself.
//
// Build and run on the GPU host (loaded by the driver through CUDA_INJECTION64_PATH):
//   gcc -O2 -shared -fPIC -I/usr/local/cuda/include -I/usr/local/cuda/extras/CUPTI/include
//       -o /tmp/tensormap-trace.so dist/gpu/tensormap-trace.c -L/usr/local/cuda/extras/CUPTI/lib64 -lcupti
//   (one command line)
//   CUDA_INJECTION64_PATH=/tmp/tensormap-trace.so dist/gpu/bin/matmul run --kernel cublas ...
// Output: one line per event on stderr, prefixed "tmtrace".
#include <cuda.h>
#include <cupti.h>  // with generated_cuda_meta.h: the driver calls' parameter structs
#include <stdio.h>

static const char* swizzle_name(CUtensorMapSwizzle s)
{
    switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return "none";
    case CU_TENSOR_MAP_SWIZZLE_32B: return "32B";
    case CU_TENSOR_MAP_SWIZZLE_64B: return "64B";
    case CU_TENSOR_MAP_SWIZZLE_128B: return "128B";
    default: return "other";
    }
}

static const char* promotion_name(CUtensorMapL2promotion p)
{
    switch (p) {
    case CU_TENSOR_MAP_L2_PROMOTION_NONE: return "none";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_64B: return "64B";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_128B: return "128B";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_256B: return "256B";
    default: return "other";
    }
}

static void print_encode(const cuTensorMapEncodeTiled_params* p)
{
    fprintf(stderr, "tmtrace encode map=%p dtype=%d rank=%u addr=%p dims=[", (void*)p->tensorMap, (int)p->tensorDataType,
            p->tensorRank, p->globalAddress);
    for (cuuint32_t i = 0; i < p->tensorRank; ++i) fprintf(stderr, "%s%llu", i ? "," : "", (unsigned long long)p->globalDim[i]);
    fprintf(stderr, "] strides_bytes=[");
    for (cuuint32_t i = 0; i + 1 < p->tensorRank; ++i)
        fprintf(stderr, "%s%llu", i ? "," : "", (unsigned long long)p->globalStrides[i]);
    fprintf(stderr, "] box=[");
    for (cuuint32_t i = 0; i < p->tensorRank; ++i) fprintf(stderr, "%s%u", i ? "," : "", p->boxDim[i]);
    fprintf(stderr, "] elem_strides=[");
    for (cuuint32_t i = 0; i < p->tensorRank; ++i) fprintf(stderr, "%s%u", i ? "," : "", p->elementStrides[i]);
    fprintf(stderr, "] interleave=%d swizzle=%s l2_promotion=%s oob_fill=%d\n", (int)p->interleave,
            swizzle_name(p->swizzle), promotion_name(p->l2Promotion), (int)p->oobFill);
}

static void print_launch_ex(const char* name, const cuLaunchKernelEx_params* p)
{
    const CUlaunchConfig* c = p->config;
    fprintf(stderr, "tmtrace launchEx %s grid=(%u,%u,%u) block=(%u,%u,%u) smem=%u", name ? name : "?", c->gridDimX,
            c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes);
    for (unsigned i = 0; i < c->numAttrs; ++i) {
        const CUlaunchAttribute* a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            fprintf(stderr, " cluster=(%u,%u,%u)", a->value.clusterDim.x, a->value.clusterDim.y, a->value.clusterDim.z);
        else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
            fprintf(stderr, " cluster_policy=%d", (int)a->value.clusterSchedulingPolicyPreference);
        else
            fprintf(stderr, " attr%d", (int)a->id);
    }
    fprintf(stderr, "\n");
}

static void CUPTIAPI on_driver_call(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data)
{
    (void)user;
    const CUpti_CallbackData* cb = (const CUpti_CallbackData*)data;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER) return;
    if (id == CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled)
        print_encode((const cuTensorMapEncodeTiled_params*)cb->functionParams);
    else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
        print_launch_ex(cb->symbolName, (const cuLaunchKernelEx_params*)cb->functionParams);
    else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
        const cuLaunchKernel_params* p = (const cuLaunchKernel_params*)cb->functionParams;
        fprintf(stderr, "tmtrace launch %s grid=(%u,%u,%u) block=(%u,%u,%u) smem=%u\n",
                cb->symbolName ? cb->symbolName : "?", p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX,
                p->blockDimY, p->blockDimZ, p->sharedMemBytes);
    }
}

int InitializeInjection(void)
{
    CUpti_SubscriberHandle subscriber;
    if (cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_driver_call, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "tmtrace: cuptiSubscribe failed\n");
        return 0;
    }
    const CUpti_CallbackId ids[] = {CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx};
    for (unsigned i = 0; i < sizeof ids / sizeof ids[0]; ++i)
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
    fprintf(stderr, "tmtrace: subscribed\n");
    return 1;
}
