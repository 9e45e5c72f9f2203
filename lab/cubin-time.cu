// cubin-time.cu — times multistage cubins written by lab/sass-patch.py, beside cuBLAS SGEMM.
//
// A research harness for the GPU host, not part of the library: the patched cubins compute wrong
// sums on purpose (sass-patch.py says why), so neither the tests nor `matmul bench`, which verify
// before they time, can run them. This program loads each DIR/multistage-*.cubin with the driver
// API, launches it the way the CUDA backend launches multistage (grid (ceil(N/BN), ceil(M/BM)),
// THREADS threads, the tiling's dynamic shared memory; A, B, C row-major f32), checks C against
// cuBLAS (so the unpatched "same" cubin proves the launch right: its error must be ~1e-6), and
// times every cubin and cuBLAS in interleaved rounds.
//
// Build and run on the GPU host (CUDA toolkit there; no Rust needed):
//   nvcc -O2 -std=c++17 -o /tmp/cubin-time dist/gpu/cubin-time.cu -lcuda -lcublas
//   /tmp/cubin-time dist/gpu/patched 4096 4096 4096 [ROUNDS=5] [REPS=20]
// Output: one TSV line per (round, variant): variant, round, M, N, K, ms per launch, TFLOP/s,
// the max |C - C_cublas| / max |C_cublas| of the first launch; then the medians over the rounds.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <map>
#include <string>
#include <vector>

// Each CUDA API's status: whether it is a success, and its message. CHECK(call) exits with the
// call, its place and the message on a failure.
static bool ok(CUresult r) { return r == CUDA_SUCCESS; }
static bool ok(cudaError_t r) { return r == cudaSuccess; }
static bool ok(cublasStatus_t r) { return r == CUBLAS_STATUS_SUCCESS; }
static const char* why(CUresult r)
{
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    return s ? s : "unknown CUresult";
}
static const char* why(cudaError_t r) { return cudaGetErrorString(r); }
static const char* why(cublasStatus_t r) { return cublasGetStatusString(r); }
#define CHECK(x)                                                                     \
    do {                                                                             \
        auto r = (x);                                                                \
        if (!ok(r)) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, why(r));      \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

struct Problem {
    int m, n, k;
    float *a, *b, *c, *ref;
};

// One product into p.c: a cubin's kernel (f != nullptr) or cuBLAS (row-major C = A·B is
// column-major C^T = B^T·A^T).
static void launch(const Problem& p, CUfunction f, const std::map<std::string, int>& geo, cublasHandle_t h)
{
    if (!f) {
        const float one = 1, zero = 0;
        CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, p.b, p.n, p.a, p.k, &zero, p.c, p.n));
        return;
    }
    int m = p.m, n = p.n, k = p.k, a_rs = p.k, a_cs = 1, b_rs = p.n, b_cs = 1;
    void* args[] = {(void*)&p.a, (void*)&p.b, (void*)&p.c, &m, &n, &k, &a_rs, &a_cs, &b_rs, &b_cs};
    unsigned gx = (p.n + geo.at("bn") - 1) / geo.at("bn"), gy = (p.m + geo.at("bm") - 1) / geo.at("bm");
    CHECK(cuLaunchKernel(f, gx, gy, 1, geo.at("threads"), 1, 1, geo.at("shared"), 0, args, nullptr));
}

static double max_rel_error(const Problem& p)
{
    size_t len = (size_t)p.m * p.n;
    std::vector<float> c(len), ref(len);
    CHECK(cudaMemcpy(c.data(), p.c, len * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ref.data(), p.ref, len * 4, cudaMemcpyDeviceToHost));
    double err = 0, scale = 0;
    for (size_t i = 0; i < len; i++) {
        double d = std::fabs((double)c[i] - ref[i]);
        err = std::isnan(d) ? INFINITY : std::max(err, d);
        scale = std::max(scale, std::fabs((double)ref[i]));
    }
    return err / scale;
}

int main(int argc, char** argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s DIR M N K [ROUNDS] [REPS]\n", argv[0]);
        return 2;
    }
    std::string dir = argv[1];
    Problem p{atoi(argv[2]), atoi(argv[3]), atoi(argv[4])};
    int rounds = argc > 5 ? atoi(argv[5]) : 5, reps = argc > 6 ? atoi(argv[6]) : 20;
    if (p.m <= 0 || p.n <= 0 || p.k <= 0 || rounds <= 0 || reps <= 0) {
        fprintf(stderr, "M, N, K, ROUNDS and REPS must be positive\n");
        return 2;
    }

    std::map<std::string, int> geo;  // launch.txt: bm, bn, threads, shared
    std::ifstream lf(dir + "/launch.txt");
    if (!lf) {
        fprintf(stderr, "cannot read %s/launch.txt (lab/sass-patch.py writes it beside the cubins)\n", dir.c_str());
        return 2;
    }
    for (std::string key, value; lf >> key >> value;)
        if (key != "tiling") geo[key] = atoi(value.c_str());
    for (const char* key : {"bm", "bn", "threads", "shared"})
        if (!geo.count(key)) {
            fprintf(stderr, "%s/launch.txt: no %s\n", dir.c_str(), key);
            return 2;
        }

    std::vector<std::string> names;  // "same" first, then the rest in name order
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            std::string f = e->d_name;
            if (f.rfind("multistage-", 0) == 0 && f.size() > 6 && f.substr(f.size() - 6) == ".cubin")
                names.push_back(f.substr(11, f.size() - 17));
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end(), [](auto& x, auto& y) { return (x != "same") < (y != "same") || ((x != "same") == (y != "same") && x < y); });
    if (names.empty() || names[0] != "same") {
        fprintf(stderr, "%s: no multistage-same.cubin\n", dir.c_str());
        return 2;
    }

    CHECK(cudaFree(0));  // the runtime's primary context, current for the driver calls too
    std::vector<CUfunction> funcs;
    for (auto& name : names) {
        CUmodule mod;
        CHECK(cuModuleLoad(&mod, (dir + "/multistage-" + name + ".cubin").c_str()));
        CUfunction f;
        CHECK(cuModuleGetFunction(&f, mod, "multistage"));
        CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, geo["shared"]));
        funcs.push_back(f);
    }
    names.push_back("cublas");
    funcs.push_back(nullptr);

    size_t la = (size_t)p.m * p.k, lb = (size_t)p.k * p.n, lc = (size_t)p.m * p.n;
    std::vector<float> host(std::max(la, lb));
    unsigned state = 12345;
    auto fill = [&](float* dst, size_t len) {
        for (size_t i = 0; i < len; i++) {
            state = state * 1664525u + 1013904223u;
            host[i] = (float)((state >> 8) & 0xFFFF) / 32768.0f - 1.0f;
        }
        CHECK(cudaMemcpy(dst, host.data(), len * 4, cudaMemcpyHostToDevice));
    };
    CHECK(cudaMalloc(&p.a, la * 4));
    CHECK(cudaMalloc(&p.b, lb * 4));
    CHECK(cudaMalloc(&p.c, lc * 4));
    CHECK(cudaMalloc(&p.ref, lc * 4));
    fill(p.a, la);
    fill(p.b, lb);
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    {
        Problem r = p;
        r.c = p.ref;
        launch(r, nullptr, geo, h);
        CHECK(cudaDeviceSynchronize());
    }

    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    const double flop = 2.0 * p.m * p.n * p.k;
    std::map<std::string, std::vector<double>> rates;
    printf("variant\tround\tM\tN\tK\tms\tTFLOP/s\tmax_rel_err\n");
    for (int round = 0; round < rounds; round++)
        for (size_t v = 0; v < names.size(); v++) {
            CHECK(cudaMemset(p.c, 0xFF, lc * 4));  // poisoned: NaN where nothing is written
            launch(p, funcs[v], geo, h);
            CHECK(cudaDeviceSynchronize());
            double err = max_rel_error(p);
            CHECK(cudaEventRecord(t0));
            for (int i = 0; i < reps; i++) launch(p, funcs[v], geo, h);
            CHECK(cudaEventRecord(t1));
            CHECK(cudaEventSynchronize(t1));
            float ms;
            CHECK(cudaEventElapsedTime(&ms, t0, t1));
            ms /= reps;
            rates[names[v]].push_back(flop / (ms * 1e-3) / 1e12);
            printf("%s\t%d\t%d\t%d\t%d\t%.4f\t%.2f\t%.2e\n", names[v].c_str(), round, p.m, p.n, p.k, ms,
                   rates[names[v]].back(), err);
        }
    printf("# medians over %d rounds of %d launches, %dx%dx%d, TFLOP/s:\n", rounds, reps, p.m, p.n, p.k);
    for (auto& name : names) {
        auto r = rates[name];
        std::sort(r.begin(), r.end());
        printf("# %-8s %.2f (min %.2f, max %.2f)\n", name.c_str(), r[r.size() / 2], r.front(), r.back());
    }
    return 0;
}
