// Weight formats for models whose source gives shapes but no bytes (config.json, catalog): average bits per
// weight over a whole model, and the two ways to turn parameters into bytes (a format, or a given total).
#include "kvfit/sources.h"

#include "kvfit/error.h"
#include "sources/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kvfit {
namespace {

// llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS (ggml-org/llama.cpp commit 03161a4e) gives each k-quant
// mix as "<size>G, +<ppl> @ Llama-3-8B"; G is GiB (Q4_K_M of Llama-3-8B is 4.92 GB = 4.58 GiB). Average bits
// per weight = size * 2^30 * 8 / 8,030,261,248 params. Q4_K_M: 4.58 GiB -> 4.90 bpw.
constexpr double llama3_8b_bpw(double gib) { return gib * 1073741824.0 * 8.0 / 8030261248.0; }

constexpr std::string_view k_quant_src = "llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS (Llama-3-8B size)";
constexpr std::string_view k_bpw_src = "llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS (stated bpw)";
constexpr std::string_view k_type_src = "ggml type size (ggml/src/ggml-common.h): every tensor in this type";

const std::vector<weight_format> k_formats = {
    // name       bits per weight          source
    {"f32",       32.0,                    k_type_src},
    {"f16",       16.0,                    k_type_src},
    {"bf16",      16.0,                    k_type_src},
    {"q8_0",      llama3_8b_bpw(7.96),     k_quant_src},  // 8.51
    {"q6_k",      llama3_8b_bpw(6.14),     k_quant_src},  // 6.57
    {"q5_k_m",    llama3_8b_bpw(5.33),     k_quant_src},  // 5.70
    {"q5_k_s",    llama3_8b_bpw(5.21),     k_quant_src},  // 5.57
    {"q5_0",      llama3_8b_bpw(5.21),     k_quant_src},  // 5.57
    {"q4_k_m",    llama3_8b_bpw(4.58),     k_quant_src},  // 4.90
    {"q4_k_s",    llama3_8b_bpw(4.37),     k_quant_src},  // 4.67
    {"q4_0",      llama3_8b_bpw(4.34),     k_quant_src},  // 4.64
    {"q3_k_m",    llama3_8b_bpw(3.74),     k_quant_src},  // 4.00
    {"q3_k_s",    llama3_8b_bpw(3.41),     k_quant_src},  // 3.65
    {"q2_k",      llama3_8b_bpw(2.96),     k_quant_src},  // 3.17
    {"iq4_xs",    4.25,                    k_bpw_src},
    {"iq4_nl",    4.50,                    k_bpw_src},
    {"iq3_xxs",   3.06,                    k_bpw_src},
    {"iq2_xxs",   2.06,                    k_bpw_src},
    {"mxfp4",     4.25,                    "ggml block_mxfp4: 17 bytes per 32 values (ggml/src/ggml-common.h)"},
};

uint64_t bytes_of(uint64_t n_params, double bpw) {
    return static_cast<uint64_t>(std::ceil(static_cast<long double>(n_params) * bpw / 8.0L));
}

void set_bytes(weight_group & g, double bpw) {
    g.bytes = bytes_of(g.n_params, bpw);
    g.expert_bytes = bytes_of(g.expert_params, bpw);
}

// total * part / whole without overflow (a trillion bytes times a trillion parameters exceeds 64 bits).
uint64_t share(uint64_t total, uint64_t part, uint64_t whole) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(total) * part / whole);
}

template <class F> void for_each_group(model_weights & w, F f) {
    f(w.token_embd);
    f(w.output);
    for (auto & l : w.layers) f(l);
    f(w.other);
}

} // namespace

const std::vector<weight_format> & weight_formats() { return k_formats; }

void apply_weight_format(model_desc & m, std::string_view format, bool force) {
    const auto it = std::find_if(k_formats.begin(), k_formats.end(),
                                 [&](const weight_format & f) { return detail::iequals(f.name, format); });
    // vLLM's --quantization names (fp8, nvfp4, mxfp4, awq, gptq, int4): the serving runtimes size them linear by
    // linear from m.quant (src/runtimes/common/quant.cpp); here every group gets the format's average size.
    if (const weight_quant q = weight_quant_from_name(format); !q.method.empty()) {
        if (m.weights.exact && !force) return;
        if (m.quant.method != q.method) {
            m.quant = q;
            m.quant.requested = true; // not the checkpoint's own quantization_config (weight_quant::requested)
        }
        const double bpw = it != k_formats.end() ? it->bits_per_weight
                         : q.method == "fp8" ? 8.0 : q.method == "nvfp4" ? 4.5 : q.bits + 16.0 / 128 + q.bits / 128.0;
        for_each_group(m.weights, [&](weight_group & g) { set_bytes(g, bpw); });
        m.weights.exact = false;
        m.weights.format = std::string(format);
        return;
    }
    if (it == k_formats.end()) {
        std::string names;
        for (const auto & f : k_formats) names += (names.empty() ? "" : ", ") + std::string(f.name);
        throw error(fmt::format("unknown weight format '{}' (known: {}; and vLLM's fp8, fp8-block, nvfp4, awq, gptq, int4, int8)",
                                format, names));
    }
    if (m.weights.exact && !force) return;
    for_each_group(m.weights, [&](weight_group & g) { set_bytes(g, it->bits_per_weight); });
    m.weights.exact = false;
    m.weights.format = std::string(it->name);
}

void apply_weight_size(model_desc & m, uint64_t total_bytes) {
    const uint64_t whole = m.weights.total_params();
    if (whole == 0 && !m.weights.layers.empty()) {
        // GGUF metadata without tensors (the catalog's Qwen3.8-Flash-Next): no shapes to weigh the blocks by, so the
        // size is spread evenly over the blocks, and the format label says so (every output shows it)
        const uint64_t n = m.weights.layers.size();
        for (auto & l : m.weights.layers) l = weight_group{.n_params = 0, .bytes = total_bytes / n};
        m.weights.token_embd.bytes = total_bytes - total_bytes / n * n;
        m.weights.output.bytes = m.weights.other.bytes = 0;
        m.weights.exact = false;
        m.weights.format = fmt::format("given, spread evenly over the {} blocks (no tensor list)", n);
        return;
    }
    if (whole == 0) {
        throw error::at(m.source.empty() ? m.name : m.source, "no parameter count to spread a weight size over");
    }
    uint64_t given = 0;
    for_each_group(m.weights, [&](weight_group & g) {
        g.bytes = share(total_bytes, g.n_params, whole);
        g.expert_bytes = share(total_bytes, g.expert_params, whole);
        given += g.bytes;
    });
    // Rounding down leaves a few bytes; give them to the embedding so the groups add up to the total.
    m.weights.token_embd.bytes += total_bytes - given;
    m.weights.exact = false;
    m.weights.format = "given";
}

} // namespace kvfit
