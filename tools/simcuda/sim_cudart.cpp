// sim_cudart: the CUDA runtime API that ggml-cuda's host code calls, answered for simulated GPUs.
//
// ggml-cuda (a release's own ggml/src/ggml-cuda/*.cu, compiled by tools/simcuda/build.sh) decides everything that
// sizes llama.cpp's buffers on the host: which ops a device supports (ggml_backend_cuda_device_supports_op), which it
// wants offloaded (offload_op), buffer alignment and get_alloc_size (the flash-attention f16 copies, quantized row
// padding), the fusions that extend tensor lifetimes (graph_optimize), the device memory that -ts splits by. None of
// that needs a GPU: it reads the device properties this file returns. llama.cpp's scheduler then runs unchanged in
// the release's shipped libggml-base (ggml-backend.cpp), in no_alloc mode, so no kernel ever runs and no device
// memory is ever touched. A kernel launch, a cuBLAS call or a copy to the device aborts with a message: the
// simulator is for sizing, and a call that would need the device means the measurement is not a no_alloc one.
//
// The GPUs: SIMCUDA_DEVICES="NAME,CC,TOTAL_MIB[,FREE_MIB[,SMS]];..." e.g. "NVIDIA GeForce RTX 4090,8.9,24080".
// Default: one RTX 4090 (cc 8.9, 24,080 MiB total as the driver reports it, 23,664 MiB free).
// Compute-capability facts (shared memory per block opt-in, SM count defaults) are NVIDIA's published figures
// (CUDA C Programming Guide, "Features and Technical Specifications", table 21).
#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct sim_device {
    std::string name;
    int major = 8, minor = 9;
    size_t total = 0, free = 0;
    int sms = 0;
};

[[noreturn]] void die(const char * what) {
    fprintf(stderr, "sim_cudart: %s needs a real GPU (the simulator only sizes buffers: run llama.cpp with no_alloc)\n", what);
    abort();
}

// shared memory per block with opt-in, by compute capability (CUDA Programming Guide, table 21)
size_t smpbo_of(int major, int minor) {
    const int cc = major * 10 + minor;
    if (cc >= 120) return 101376;
    if (cc == 90) return 232448;
    if (cc == 80 || cc == 87) return 166912;
    if (cc >= 86) return 101376;
    if (cc == 75) return 65536;
    if (cc >= 70) return 98304;
    return 49152;
}

std::vector<sim_device> & devices() {
    static std::vector<sim_device> devs = [] {
        std::vector<sim_device> out;
        const char * env = getenv("SIMCUDA_DEVICES");
        std::string spec = env && *env ? env : "NVIDIA GeForce RTX 4090,8.9,24080,23664,128";
        size_t pos = 0;
        while (pos <= spec.size()) {
            size_t end = spec.find(';', pos);
            if (end == std::string::npos) end = spec.size();
            std::string item = spec.substr(pos, end - pos);
            pos = end + 1;
            if (item.empty()) continue;
            std::vector<std::string> f;
            size_t p = 0;
            while (true) {
                size_t c = item.find(',', p);
                f.push_back(item.substr(p, c == std::string::npos ? std::string::npos : c - p));
                if (c == std::string::npos) break;
                p = c + 1;
            }
            if (f.size() < 3) {
                fprintf(stderr, "sim_cudart: SIMCUDA_DEVICES item '%s': expected NAME,CC,TOTAL_MIB[,FREE_MIB[,SMS]]\n", item.c_str());
                exit(2);
            }
            sim_device d;
            d.name = f[0];
            if (sscanf(f[1].c_str(), "%d.%d", &d.major, &d.minor) != 2) {
                fprintf(stderr, "sim_cudart: compute capability '%s': expected MAJOR.MINOR\n", f[1].c_str());
                exit(2);
            }
            d.total = size_t(strtoull(f[2].c_str(), nullptr, 10)) << 20;
            d.free = f.size() > 3 && !f[3].empty() ? size_t(strtoull(f[3].c_str(), nullptr, 10)) << 20 : d.total - (size_t(416) << 20);
            d.sms = f.size() > 4 ? atoi(f[4].c_str()) : 128;
            out.push_back(d);
        }
        return out;
    }();
    return devs;
}

int g_device = 0;
cudaError_t g_last = cudaSuccess;

bool valid(int dev) { return dev >= 0 && dev < int(devices().size()); }

// opaque handles for streams, events and graphs: distinct addresses, never dereferenced by ggml
char g_handles[4096];
int g_next_handle = 0;
void * new_handle() { return &g_handles[(g_next_handle++) % sizeof g_handles]; }

} // namespace

extern "C" {

// ---- device management
cudaError_t cudaGetDeviceCount(int * count) { *count = int(devices().size()); return cudaSuccess; }
cudaError_t cudaSetDevice(int device) { if (!valid(device)) return g_last = cudaErrorInvalidDevice; g_device = device; return cudaSuccess; }
cudaError_t cudaGetDevice(int * device) { *device = g_device; return cudaSuccess; }
cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int * v) { *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int * v) { *v = CUDART_VERSION; return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp * prop, int device) {
    if (!valid(device)) return g_last = cudaErrorInvalidDevice;
    const sim_device & d = devices()[size_t(device)];
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "%s", d.name.c_str());
    prop->totalGlobalMem = d.total;
    prop->sharedMemPerBlock = 49152;
    prop->sharedMemPerBlockOptin = smpbo_of(d.major, d.minor);
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024; prop->maxThreadsDim[1] = 1024; prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647; prop->maxGridSize[1] = 65535; prop->maxGridSize[2] = 65535;
    prop->major = d.major;
    prop->minor = d.minor;
    prop->multiProcessorCount = d.sms;
    prop->integrated = 0;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->pciBusID = device + 1;
    prop->unifiedAddressing = 1;
    prop->managedMemory = 1;
    prop->cooperativeLaunch = 1;
    prop->l2CacheSize = 64 << 20;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int * value, enum cudaDeviceAttr attr, int device) {
    if (!valid(device)) return g_last = cudaErrorInvalidDevice;
    const sim_device & d = devices()[size_t(device)];
    switch (attr) {
    case cudaDevAttrCooperativeLaunch: *value = 1; break;
    case cudaDevAttrMultiProcessorCount: *value = d.sms; break;
    case cudaDevAttrComputeCapabilityMajor: *value = d.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = d.minor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(smpbo_of(d.major, d.minor)); break;
    case cudaDevAttrWarpSize: *value = 32; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char * id, int len, int device) {
    snprintf(id, size_t(len), "0000:%02x:00.0", device + 1);
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int * can, int, int) { *can = 1; return cudaSuccess; }
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int) { return cudaSuccess; }

cudaError_t cudaMemGetInfo(size_t * free, size_t * total) {
    const sim_device & d = devices()[size_t(g_device)];
    *free = d.free;
    *total = d.total;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { cudaError_t e = g_last; g_last = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError(void) { return g_last; }
const char * cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "simulated CUDA error"; }
const char * cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorSimulated"; }

// ---- memory. A device allocation gets an address in a range no host pointer uses and is never backed:
// llama.cpp allocates a few buffers even in no_alloc mode (the recurrent state, llama-memory-recurrent.cpp; the
// DeepSeek-V4 compressor state), clears them (cudaMemset) and may upload to them; those calls only need to succeed.
// Reading device memory back (a copy to the host) would need the GPU and is refused.
namespace {
uintptr_t g_next_dev = uintptr_t(0x7c0000000000ULL);   // 128 TiB of simulated device address space
bool is_sim(const void * p) { return uintptr_t(p) >= uintptr_t(0x7c0000000000ULL) && uintptr_t(p) < g_next_dev; }
}
cudaError_t cudaMalloc(void ** p, size_t size) {
    const sim_device & d = devices()[size_t(g_device)];
    if (size > d.total) { *p = nullptr; return g_last = cudaErrorMemoryAllocation; }
    *p = (void *) g_next_dev;
    g_next_dev += (size + 511) / 512 * 512 + 512;
    return cudaSuccess;
}
cudaError_t cudaMallocManaged(void ** p, size_t size, unsigned int) { return cudaMalloc(p, size); }
cudaError_t cudaFree(void *) { return cudaSuccess; }
// pinned host memory is host memory: ggml only needs an address (CUDA_Host buffers are CPU buffers)
cudaError_t cudaMallocHost(void ** p, size_t size) {
    // page-aligned, as cudaMallocHost's memory is (ggml_backend_cpu_buffer_from_ptr asserts TENSOR_ALIGNMENT)
    if (posix_memalign(p, 4096, size ? size : 1) != 0) { *p = nullptr; return g_last = cudaErrorMemoryAllocation; }
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void * p) { free(p); return cudaSuccess; }
cudaError_t cudaHostRegister(void *, size_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void *) { return cudaSuccess; }
cudaError_t cudaMemset(void * p, int, size_t) { if (!is_sim(p)) die("cudaMemset of host memory"); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void * p, int, size_t, cudaStream_t) { if (!is_sim(p)) die("cudaMemsetAsync of host memory"); return cudaSuccess; }
static cudaError_t sim_copy(void * dst, const void * src, size_t n) {
    if (is_sim(dst)) return cudaSuccess;                   // an upload: nothing to keep
    if (!is_sim(src)) { memcpy(dst, src, n); return cudaSuccess; } // host to host
    die("a copy from device memory");
}
cudaError_t cudaMemcpyAsync(void * dst, const void * src, size_t n, enum cudaMemcpyKind, cudaStream_t) { return sim_copy(dst, src, n); }
cudaError_t cudaMemcpy2DAsync(void * dst, size_t dpitch, const void * src, size_t spitch, size_t w, size_t h, enum cudaMemcpyKind, cudaStream_t) {
    if (is_sim(dst)) return cudaSuccess;
    if (is_sim(src)) die("a copy from device memory");
    for (size_t r = 0; r < h; ++r) memcpy((char *) dst + r * dpitch, (const char *) src + r * spitch, w);
    return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void * dst, int, const void * src, int, size_t n, cudaStream_t) { return sim_copy(dst, src, n); }

// ---- streams, events, graphs: handles only
cudaError_t cudaStreamCreateWithFlags(cudaStream_t * s, unsigned int) { *s = (cudaStream_t) new_handle(); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaStreamBeginCapture(cudaStream_t, enum cudaStreamCaptureMode) { die("cudaStreamBeginCapture"); }
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *) { die("cudaStreamEndCapture"); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t * e, unsigned int) { *e = (cudaEvent_t) new_handle(); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) { die("cudaGraphLaunch"); }
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *, cudaGraph_t, unsigned long long) { die("cudaGraphInstantiate"); }
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t, cudaGraph_t, cudaGraphExecUpdateResultInfo *) { die("cudaGraphExecUpdate"); }

// ---- what nvcc's generated host code calls: module registration at load time (answered), launches (refused)
void ** __cudaRegisterFatBinary(void *) { static void * handle = nullptr; return &handle; }
void __cudaRegisterFatBinaryEnd(void **) {}
void __cudaUnregisterFatBinary(void **) {}
void __cudaRegisterFunction(void **, const char *, char *, const char *, int, void *, void *, void *, void *, int *) {}
void __cudaRegisterVar(void **, char *, char *, const char *, int, size_t, int, int) {}
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, void *) { return 0; }
cudaError_t __cudaPopCallConfiguration(dim3 *, dim3 *, size_t *, void *) { return cudaSuccess; }
cudaError_t __cudaGetKernel(void **, const void *) { return cudaSuccess; }
cudaError_t __cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t) { die("a kernel launch"); }
cudaError_t __cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t) { die("a kernel launch"); }
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t) { die("a kernel launch"); }
cudaError_t cudaFuncSetAttribute(const void *, enum cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes * a, const void *) { memset(a, 0, sizeof *a); return cudaSuccess; }
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int * n, const void *, int, size_t) { *n = 1; return cudaSuccess; }

} // extern "C"
