// Private to the llama.cpp runtime: the CUDA device and the CPU backend as llama.cpp's scheduler sees them
// (sched.h), per release. Sources and the check against the real ggml-cuda: backend_cuda.cpp.
#pragma once

#include "runtimes/llamacpp/sched.h"

#include <string>

namespace kvfit::detail {

/// ggml_is_contiguous_m_n (ggml.c:1474-1492): dimensions m+1..n-1 packed after the rows, 0..m each a whole block of
/// rows. ggml_is_contiguous is (0, 4), ggml_is_contiguous_1 (1, 4).
bool ggml_contiguous_m_n(const gtensor & t, int m, int n);
/// ggml_is_contiguous_rows: a row's elements adjacent (nb[0] the type size, or one block per row).
bool ggml_contiguous_rows(const gtensor & t);
/// ggml_can_fuse_subgraph_ext (ggml.c:7760-7820, both releases) over the split's nodes at `idxs` (positions in
/// `nodes`, not necessarily adjacent), expected to have the ops `ops`: each a computed node, none but the `outputs`
/// (positions too) flagged output or read outside the subgraph (g.use_count), every view of one inside it or of a
/// constant weight. False when a position is past the split.
bool ggml_can_fuse_subgraph_ext(const ggraph & g, const std::vector<int32_t> & nodes, const std::vector<size_t> & idxs,
                                const std::vector<gop> & ops, const std::vector<size_t> & outputs);

/// The ggml-cuda release whose answers are modelled.
enum class cuda_release : uint8_t { r5b4ebc5, v0_5_0 };

/// The highest architecture of a default CMake build's list (__CUDA_ARCH_LIST__ 500 .. 1210) not above `cc`
/// (ggml_cuda_highest_compiled_arch, common.cuh:159-182); -1 when none.
int cuda_highest_compiled_arch(int cc);

/// One CUDA device: its index (CUDA<index>), compute capability (100 x major + 10 x minor) and release.
struct cuda_device {
    int index = 0;
    int cc = 890;
    cuda_release release = cuda_release::v0_5_0;
    int64_t op_offload_min_batch = 32; ///< GGML_OP_OFFLOAD_MIN_BATCH (ggml-cuda.cu:5788)

    /// ggml_backend_cuda_device_supports_op for tensor `op` of `g`; `buffers` gives its sources' buffer types.
    bool supports_op(const ggraph & g, const gtensor & op, const std::vector<gbuffer> & buffers) const;
    /// ggml_backend_cuda_device_offload_op.
    bool offload_op(const gtensor & op) const;
    /// ggml_backend_cuda_buffer_type_get_alloc_size: bytes of `t` in this device's buffer.
    uint64_t alloc_size(const ggraph & g, const gtensor & t) const;
    /// ggml_backend_cuda_graph_optimize's allocation dependencies over one split's nodes (needs g.use_count).
    void graph_optimize(const ggraph & g, const std::vector<int32_t> & nodes,
                        const std::function<void(int32_t, int32_t)> & add) const;
};

/// A CUDA device as a scheduler backend (its device buffer type, alignment 128).
class cuda_backend : public sched_backend {
public:
    explicit cuda_backend(cuda_device d) : dev_(d) {}
    std::string name() const override;
    gbuft compute_buft() const override;
    uint64_t alignment() const override { return 128; }
    bool supports_op(const ggraph & g, int32_t t) const override;
    bool offload_op(const ggraph & g, int32_t t) const override;
    bool supports_buft(const gbuft & b) const override;
    uint64_t alloc_size(const ggraph & g, int32_t t) const override;
    void graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                        const std::function<void(int32_t, int32_t)> & add) const override;

private:
    cuda_device dev_;
};

/// The CPU backend: its compute buffer is the first GPU's pinned host type when there is a GPU
/// (llama-context.cpp:407-418), else the CPU's; every host buffer type. The alignment is that buffer type's:
/// 32 (TENSOR_ALIGNMENT) for the CPU's and CUDA_Host; Vulkan_Host's is the first Vulkan device's
/// minMemoryMapAlignment (backend_vulkan.h), passed as `host_alignment`.
class cpu_backend : public sched_backend {
public:
    explicit cpu_backend(bool with_gpu, uint64_t host_alignment = 32) : with_gpu_(with_gpu), host_alignment_(host_alignment) {}
    std::string name() const override { return "CPU"; }
    gbuft compute_buft() const override;
    uint64_t alignment() const override { return with_gpu_ ? host_alignment_ : 32; }
    bool supports_op(const ggraph & g, int32_t t) const override;
    bool offload_op(const ggraph &, int32_t) const override { return false; }
    bool supports_buft(const gbuft & b) const override;

private:
    bool with_gpu_;
    uint64_t host_alignment_;
};

} // namespace kvfit::detail
