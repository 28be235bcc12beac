// What mlx-lm refuses, in its own words where it has them: argparse's unknown flags, mx.quantize's checks,
// RotatingKVCache's NotImplementedError, and the cache kinds kvfit has no mlx-lm rule for.
#include "detail.h"

#include <fmt/format.h>

namespace kvfit::detail {

std::string mlx_unrecognized_flags(const mlx_settings & s) {
    std::vector<std::string> bad;
    if (s.command == mlx_command::server) { // server.py l.1722-1855 has none of the KV flags
        if (s.max_kv_size) bad.push_back(fmt::format("--max-kv-size {}", *s.max_kv_size));
        if (s.kv_bits) bad.push_back(fmt::format("--kv-bits {}", *s.kv_bits));
        if (s.kv_group_size != 64) bad.push_back(fmt::format("--kv-group-size {}", s.kv_group_size));
        if (s.quantized_kv_start != 5000) bad.push_back(fmt::format("--quantized-kv-start {}", s.quantized_kv_start));
        if (!s.prompt_cache_file.empty()) bad.push_back("--prompt-cache-file " + s.prompt_cache_file);
    } else { // generate.py setup_arg_parser has none of the server's but --prefill-step-size (mlx-lm PR #1781, merged
             // 2026-08-24: "add --prefill-step-size also to mlx_lm.generate and mlx_lm.chat")
        if (s.decode_concurrency != 32) bad.push_back(fmt::format("--decode-concurrency {}", s.decode_concurrency));
        if (s.prompt_concurrency != 8) bad.push_back(fmt::format("--prompt-concurrency {}", s.prompt_concurrency));
        if (s.prompt_cache_size != 10) bad.push_back(fmt::format("--prompt-cache-size {}", s.prompt_cache_size));
        if (s.prompt_cache_bytes) bad.push_back(fmt::format("--prompt-cache-bytes {}", *s.prompt_cache_bytes));
    }
    if (bad.empty()) return "";
    std::string line = fmt::format("{}: error: unrecognized arguments:", mlx_command_name(s.command));
    for (const auto & b : bad) line += " " + b;
    return line;
}

std::vector<std::string> mlx_fixed_refusals(const model_desc & m, const mlx_settings & s,
                                            const std::string & unknown_flags) {
    std::vector<std::string> out;
    if (m.weights.format == "gguf") out.push_back("FileNotFoundError: No safetensors found in " + m.source);
    if (!unknown_flags.empty()) out.push_back(unknown_flags);
    if (s.command == mlx_command::generate && s.n_seq > 1) {
        out.push_back(fmt::format("mlx_lm.generate decodes one sequence, not {}: mlx_lm.server batches them "
                                  "(--decode-concurrency)", s.n_seq));
    }
    if (m.rec_kind == recurrent_kind::lightning && m.count(layer_kind::recurrent) > 0) {
        // mlx_lm/models/minimax.py is MiniMax-M2's (every layer softmax attention, a KVCache each)
        out.push_back("mlx: mlx-lm has no lightning-attention (MiniMax-Text-01, MiniMax-M1) layer: its minimax model "
                      "is MiniMax-M2's, full attention on every layer");
        return out;
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.kind == cache_kind::ple_state) {
                out.push_back(fmt::format("mlx: no mlx-lm rule for the per-layer-embedding state (ple_state, layer {})", il));
                return out;
            }
            if (c.kind == cache_kind::compressed || (c.kind == cache_kind::indexer && c.ratio != 1)) {
                out.push_back(fmt::format("mlx: no mlx-lm rule for {} caches of ratio {} (layer {})",
                                          cache_kind_name(c.kind), c.ratio, il));
                return out;
            }
        }
    }
    return out;
}

// maybe_quantize_kv_cache (generate.py l.290-295) walks the layers in order and calls to_quantized on every cache
// that has it: KVCache quantizes with mx.quantize (each head dim must divide by the group size), RotatingKVCache
// raises. A layer with several caches is a CacheList (no to_quantized); ArraysCache and ChunkedKVCache have none.
std::vector<std::string> mlx_quantization_refusals(const mlx_run & r, uint64_t at) {
    const model_desc & m = *r.m;
    const uint32_t gs = r.s->kv_group_size;
    const uint64_t cells = mlx_kvcache_cells(at);
    bool latent = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.caches[il].size() != 1) continue;
        const layer_cache & c = m.caches[il][0];
        if (c.kind == cache_kind::window || (r.default_caches && r.s->max_kv_size)) {
            return {"NotImplementedError: RotatingKVCache Quantization NYI"}; // cache.py l.551-552
        }
        if (c.kind != cache_kind::full && c.kind != cache_kind::latent) continue;
        std::vector<std::pair<uint64_t, uint64_t>> rows; // (heads, dim) of the keys, then the values
        if (c.kind == cache_kind::latent && m.kv_lora_rank + m.n_rot_mla == c.width_k()) {
            rows = {{1, m.kv_lora_rank}, {1, m.n_rot_mla}}; // deepseek_v3.py: latent as keys, rope part as values
        } else {
            rows = {{c.n_head, c.head_dim_k}};
            if (c.head_dim_v) rows.push_back({c.n_head, c.head_dim_v});
        }
        latent = latent || c.kind == cache_kind::latent;
        for (const auto & [heads, dim] : rows) {
            if (dim % gs != 0) { // mlx/ops.cpp quantize; the double space is MLX's
                return {fmt::format("ValueError: [quantize] The last dimension of the matrix needs to be divisible "
                                    "by the quantization group size {}. However the provided  matrix has shape "
                                    "(1,{},{},{})", gs, heads, cells, dim)};
            }
        }
    }
    if (latent) {
        return {"AttributeError: 'tuple' object has no attribute 'swapaxes' (mlx_lm/models/deepseek_v3.py reads the "
                "cached latent as an array; a QuantizedKVCache returns (packed, scales, biases); read from source, "
                "not run)"};
    }
    return {};
}

} // namespace kvfit::detail
