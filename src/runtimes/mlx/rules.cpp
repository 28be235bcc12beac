// MLX memory rules: cache cells, quantized rows, weight bytes (include/kvfit/mlx.h); the Metal working set is
// metal.h's, shared with llama.cpp and Ollama.
// Each rule cites the file of mlx-lm d78bf58 / mlx 846d176 it mirrors; docs/rules/mlx.md works the examples.
#include "kvfit/error.h"
#include "kvfit/mlx.h"

#include <algorithm>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {

namespace {

using detail::MiB;
using detail::GiB;
using detail::round_up;
constexpr uint64_t kv_step = 256; // KVCache.step, RotatingKVCache.step, ChunkedKVCache.step, QuantizedKVCache.step


} // namespace

const char * mlx_command_name(mlx_command c) {
    return c == mlx_command::server ? "mlx_lm.server" : "mlx_lm.generate";
}

uint64_t mlx_kvcache_cells(uint64_t tokens) { return round_up(tokens, kv_step); }

uint64_t mlx_rotating_cells(uint64_t tokens, uint64_t max_size, uint32_t prefill_step) {
    if (tokens <= max_size) return std::min(max_size, tokens + kv_step - 1);
    return std::max(max_size, std::min(tokens, max_size - 1 + prefill_step));
}

uint64_t mlx_chunked_cells(uint64_t tokens, uint64_t chunk, uint32_t prefill_step) {
    const uint64_t chunk_tokens = std::min<uint64_t>(prefill_step, tokens);
    return std::min(mlx_kvcache_cells(tokens), chunk + round_up(chunk_tokens, kv_step));
}

uint64_t mlx_quantized_row_bytes(uint64_t dim, uint32_t bits, uint32_t group_size, uint32_t scale_bytes) {
    return dim * bits / 8 + 2 * (dim / group_size) * scale_bytes;
}

uint64_t mlx_weight_bytes(uint64_t n_elements, const mlx_quantization & q, uint32_t dtype_bytes) {
    if (q.bits == 0) return n_elements * dtype_bytes;
    const uint64_t groups = n_elements / q.group_size;
    const uint64_t per_group = q.mode == "affine" ? 2ull * dtype_bytes : 1ull; // scale + bias, or one uint8 scale
    return n_elements * q.bits / 8 + groups * per_group;
}

mlx_quantization mlx_resolve_quantization(const mlx_quantization & q) {
    mlx_quantization r = q;
    if (q.bits == 0 && q.group_size == 0 && q.mode == "affine") return r; // not quantized
    struct mode_default { const char * mode; uint32_t group_size, bits; };
    static constexpr mode_default defaults[] = {{"affine", 64, 4}, {"mxfp4", 32, 4}, {"nvfp4", 16, 4}, {"mxfp8", 32, 8}};
    const auto * d = std::find_if(std::begin(defaults), std::end(defaults),
                                  [&](const mode_default & x) { return q.mode == x.mode; });
    if (d == std::end(defaults)) throw error(fmt::format("mlx: unknown --q-mode '{}' (affine, mxfp4, nvfp4, mxfp8)", q.mode));
    if (r.group_size == 0) r.group_size = d->group_size;
    if (r.bits == 0) r.bits = d->bits;
    if (r.mode == "affine") {
        if (r.group_size != 32 && r.group_size != 64 && r.group_size != 128) {
            throw error(fmt::format("mlx: [quantize] The requested group size {} is not supported. The supported "
                                    "group sizes are 32, 64, and 128.", r.group_size));
        }
        if (r.bits < 2 || r.bits > 8 || r.bits == 7) {
            throw error(fmt::format("mlx: [quantize] The requested number of bits {} is not supported. The "
                                    "supported bits are 2, 3, 4, 5, 6 and 8.", r.bits));
        }
    } else {
        if (r.group_size != d->group_size) {
            throw error(fmt::format("mlx: [quantize] {} quantization requires group size {} but got {}.", r.mode,
                                    d->group_size, r.group_size));
        }
        if (r.bits != d->bits) {
            throw error(fmt::format("mlx: [quantize] {} quantization requires bits to be {} but got {}.", r.mode,
                                    d->bits, r.bits));
        }
    }
    return r;
}

uint32_t mlx_activation_bytes_per_element(const model_desc & m) {
    if (m.dtype == "float32") return 4;
    return 2; // bfloat16, float16, or unknown (bf16 assumed, noted by plan_mlx)
}

uint64_t mlx_device_plan::used_bytes() const {
    uint64_t total = 0;
    for (const auto & b : buffers) total += b.bytes;
    return total;
}

} // namespace kvfit
