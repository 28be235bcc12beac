// Private to the llama.cpp runtime: a Vulkan device as llama.cpp's scheduler sees it (sched.h), for the release
// v0.5.0. Sources (ggml/src/ggml-vulkan/ggml-vulkan.cpp of the release) and what is assumed: backend_vulkan.cpp.
#pragma once

#include "runtimes/llamacpp/sched.h"

#include <string>

namespace kvfit::detail {

/// The limits of a Vulkan device that size or split a compute buffer. ggml-vulkan reads them from the driver
/// (VkPhysicalDeviceLimits); kvfit cannot, so they are assumed per vendor (vulkan_limits_of) and said so.
struct vulkan_limits {
    /// minStorageBufferOffsetAlignment: the device buffer type's alignment
    /// (ggml_backend_vk_buffer_type_get_alignment, ggml-vulkan.cpp:12786-12789 v0.5.0), bytes
    uint64_t storage_alignment = 16;
    /// minMemoryMapAlignment of the first Vulkan device: the Vulkan_Host buffer type's alignment
    /// (ggml_backend_vk_host_buffer_type_get_alignment, :12845-12849), bytes
    uint64_t host_alignment = 64;
    /// maxStorageBufferRange: a tensor above it (or a source of the op) is refused by supports_op unless the device
    /// has 64-bit shader indexing, assumed absent (ggml_backend_vk_device_supports_op, :15030-15049), bytes
    uint64_t max_storage_range = 4294967295u;
    /// suballocation_block_size (1 GiB unless GGML_VK_SUBALLOCATION_BLOCK_SIZE, at most maxMemoryAllocationSize,
    /// :4006-4015): the buffer type's get_max_size (:12791-12794); ggml-alloc splits a larger buffer into chunks
    uint64_t max_buffer_chunk = uint64_t(1) << 30;
    /// what was assumed, in words ("NVIDIA: minStorageBufferOffsetAlignment 16, ...")
    std::string assumed;
};

/// The limits assumed for a GPU of `vendor` ("NVIDIA", "AMD", "Intel"; "" unknown): the values the vendors'
/// current drivers report (vulkan.gpuinfo.org), or, for an unknown vendor, the largest the Vulkan spec allows for
/// the alignments (256 and 4096 B), which can only overstate the buffers.
vulkan_limits vulkan_limits_of(const std::string & vendor);

/// One Vulkan device: its index (Vulkan<index>) and limits.
struct vulkan_device {
    int index = 0;
    vulkan_limits limits;
    int64_t op_offload_min_batch = 32; ///< GGML_OP_OFFLOAD_MIN_BATCH (ggml-vulkan.cpp:15831 v0.5.0)

    /// ggml_backend_vk_device_supports_op (:15024-15682 v0.5.0) for tensor `op` of `g`, with the device features it
    /// reads assumed present (subgroup shuffle/vote/arithmetic, the Vulkan memory model, fp16, the mul_mat_id and
    /// top-k pipelines of every listed type) and the limits above.
    bool supports_op(const ggraph & g, const gtensor & op) const;
    /// ggml_backend_vk_device_offload_op (:15693-15697): ggml_vk_get_op_batch_size (ggml-vulkan-debug.cpp:766-779)
    /// of any op at or above op_offload_min_batch.
    bool offload_op(const gtensor & op) const;
    /// ggml_vk_graph_optimize (:14393-14762 v0.5.0) over one split's nodes: the reorder that groups independent
    /// nodes (20 ahead at most) and keeps fusion patterns adjacent, and the allocation dependencies of the top-k MoE
    /// patterns. Reorders `nodes` in place; needs g.use_count.
    void graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                        const std::function<void(int32_t, int32_t)> & add) const;
};

/// A Vulkan device as a scheduler backend: its device buffer type (alignment minStorageBufferOffsetAlignment,
/// get_alloc_size ggml_nbytes, :12796-12800), its own buffers only (supports_buft, :15684-15691).
class vulkan_backend : public sched_backend {
public:
    explicit vulkan_backend(vulkan_device d) : dev_(std::move(d)) {}
    std::string name() const override;
    gbuft compute_buft() const override;
    uint64_t alignment() const override { return dev_.limits.storage_alignment; }
    bool supports_op(const ggraph & g, int32_t t) const override;
    bool offload_op(const ggraph & g, int32_t t) const override;
    bool supports_buft(const gbuft & b) const override;
    void graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                        const std::function<void(int32_t, int32_t)> & add) const override;

private:
    vulkan_device dev_;
};

} // namespace kvfit::detail
