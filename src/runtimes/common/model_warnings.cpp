// Warnings about a model under vLLM's or SGLang's rules where a cache or a weight layout has no source that was read
// or no public log that checks it (issue 13; docs/rules/vllm-frontier.md §6 and §8.1, sglang-frontier.md §6).
#include "runtimes/common/model_warnings.h"

#include "kvfit/error.h"
#include "kvfit/printable.h"
#include "kvfit/sources.h"
#include "runtimes/common/launch.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kvfit::detail {
namespace {

// A llama.cpp weight format of the table (sources/weights.cpp: q4_k_m, q8_0, iq4_xs ...), not a float dtype.
bool is_gguf_format(const std::string & format) {
    if (format == "f32" || format == "f16" || format == "bf16") return false;
    const auto & all = weight_formats();
    return std::any_of(all.begin(), all.end(), [&](const weight_format & f) { return f.name == format; });
}

} // namespace

void serving_model_warnings(std::string_view runtime, const model_desc & m, std::vector<std::string> & warn) {
    const char * name = runtime == "vllm" ? "vLLM" : runtime == "sglang" ? "SGLang" : nullptr;
    if (name == nullptr) return;
    bool indexer_beside_full = false, recurrent = false;
    for (uint32_t il = 0; il < m.n_layer && il < m.caches.size(); ++il) {
        const layer_cache * a = m.attention_cache(il);
        for (const layer_cache & c : m.caches[il]) {
            indexer_beside_full |= c.kind == cache_kind::indexer && a != nullptr && a->kind != cache_kind::latent;
        }
        recurrent |= m.is_recurrent(il);
    }
    if (indexer_beside_full && recurrent) {
        const char * rule = runtime == "vllm"
            ? "vllm/models/minimax_m3/common/indexer.py: one bf16 head of the index width per token per layer, "
              "vllm-frontier.md §6"
            : "pool_configurator.py is_minimax_sparse: one head of the index width per token per layer in the model "
              "dtype, sglang-frontier.md §6";
        warn.push_back(fmt::format("{}: no {} source was found for the index keys of a hybrid recurrent model (llama.cpp's "
                                   "hybrid-idx memory); they are sized as MiniMax-M3's MSA ({})", runtime, name, rule));
    }
    // a rope_scaling type no rule here names: the derived length still takes its factor (vLLM's _get_and_verify_max_len
    // and SGLang's get_context_length multiply by any type's factor but llama3/longrope's), the warning says so
    static constexpr std::string_view known_rope[] = {"", "default", "linear", "dynamic", "ntk", "yarn", "deepseek_yarn",
                                                      "longrope", "su", "llama3", "mrope", "proportional"};
    for (const auto & e : m.rope_scaling) {
        if (std::find(std::begin(known_rope), std::end(known_rope), e.type) != std::end(known_rope)) continue;
        warn.push_back(fmt::format("rope_scaling type '{}' is not one kvfit knows (linear, dynamic, yarn, longrope, llama3, "
                                   "...): the default length takes its factor as {} derives it, and whether {} loads the "
                                   "model with it is not checked", printable(e.type, false), name, name));
        break;
    }
    // weights planned in a format the checkpoint does not state (--weights): the launch line loads the checkpoint
    if (m.quant.requested && launch_quantization(m).empty()) {
        warn.push_back(fmt::format("--weights {}: {} reads these weights ({}) from a quantized checkpoint (it quantizes "
                                   "only to per-tensor fp8 when it loads): the launch line must name such a checkpoint "
                                   "(a repository whose config.json has quantization_config quant_method {}), not {}'s "
                                   "own weights", m.weights.format, name, m.quant.label, m.quant.method, m.name));
    } else if (m.quant.method.empty() && !m.weights.exact && is_gguf_format(m.weights.format)) {
        warn.push_back(fmt::format("--weights {}: a GGUF (llama.cpp) format, which {} does not load from a checkpoint "
                                   "repository: the weights are sized as {}, but the launch line loads {}'s own weights "
                                   "(a .gguf file is an experimental path of {}; --runtime llama.cpp or ollama serves "
                                   "it)", m.weights.format, name, m.weights.format, m.name, name));
    }
    const bool nvfp4 = m.quant.method == "nvfp4" || m.quant.expert_method == "nvfp4" ||
                       m.quant.label.find("nvfp4") != std::string::npos;
    if (nvfp4) {
        warn.push_back(fmt::format("weights: the NVFP4 layout (4.5 bits per weight plus fp32 globals per shard) is an "
                                   "estimate: no public {} log of an NVFP4 checkpoint's loaded size was found to check it",
                                   name));
    }
}

void refuse_apple_gpus(std::string_view runtime, std::string_view display, const std::vector<device_spec> & gpus) {
    for (const auto & g : gpus) {
        if (g.vendor != "Apple") continue;
        throw error(fmt::format("{}: {} is an Apple GPU; {}'s plan is for CUDA and ROCm GPUs (on a Mac: --runtime "
                                "llama.cpp, ollama or mlx)", runtime, g.name, display));
    }
}

device_spec serving_rank_gpu(std::string_view runtime, std::string_view display, const std::vector<device_spec> & gpus,
                             std::vector<std::string> & warnings) {
    refuse_apple_gpus(runtime, display, gpus);
    for (const auto & g : gpus) {
        if (!g.vendor.empty() && !gpus[0].vendor.empty() && g.vendor != gpus[0].vendor) {
            throw error(fmt::format("{}: {} ({}) and {} ({}): one {} process runs on one platform (CUDA or ROCm); plan each "
                                    "vendor's GPUs as their own instance (--gpu with one vendor's GPUs)", runtime, gpus[0].name,
                                    gpus[0].vendor, g.name, g.vendor, display));
        }
    }
    device_spec gpu = gpus[0];
    bool unlike = false;
    for (const auto & g : gpus) {
        unlike |= g.memory_bytes != gpus[0].memory_bytes;
        if (g.memory_bytes < gpu.memory_bytes) gpu = g;
    }
    if (unlike) {
        std::vector<std::string> each;
        for (const auto & g : gpus) each.push_back(fmt::format("{} {:.2f} GiB", g.name, double(g.memory_bytes) / double(1ull << 30)));
        warnings.push_back(fmt::format("GPUs of unlike memory ({}): every rank is planned on the smallest, {}, as {} sizes "
                                       "every worker's cache by the minimum over workers; the larger cards' extra memory "
                                       "is unused", fmt::join(each, ", "), gpu.name, display));
    }
    return gpu;
}

} // namespace kvfit::detail
