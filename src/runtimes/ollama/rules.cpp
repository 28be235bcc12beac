// Ollama (RULES §6; snapshot fb30760, 2026-08-21, llama-server only since PR #16031): the llama-server launch
// Ollama makes (llm/llama_server.go), its context and slot choices (server/sched.go, llm/server.go,
// server/routes.go), and kvfit's llama.cpp plan of that launch (llamacpp.h).
#include "kvfit/ollama.h"

#include "kvfit/error.h"
#include "kvfit/metal.h"
#include "kvfit/search.h"

#include <algorithm>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {

const std::vector<std::string> & ollama_single_slot_architectures() {
    // Ollama's own list (server/sched.go): numParallel is forced to 1 for these GGUF architectures. This is
    // Ollama's behaviour, carried as its data; kvfit's policies do not branch on architecture names.
    static const std::vector<std::string> v = {"mllama", "qwen3vl",  "qwen3vlmoe", "qwen35",     "qwen35moe",
                                               "qwen3next", "lfm2", "lfm2moe",    "nemotron_h", "nemotron_h_moe",
                                               "nemotron_h_omni"};
    return v;
}

namespace {

using detail::MiB;
using detail::GiB;

// Default num_ctx by the VRAM tier of sum(gpu.total - OLLAMA_GPU_OVERHEAD) (server/routes.go).
uint64_t tier_num_ctx(uint64_t vram, std::string & from) {
    if (vram >= 47 * GiB) return from = "VRAM tier >= 47 GiB", 262144;
    if (vram >= 23 * GiB) return from = "VRAM tier >= 23 GiB", 32768;
    return from = "VRAM tier < 23 GiB", 4096;
}

ggml_type kv_type(const std::string & name) {
    if (name.empty() || name == "f16") return ggml_type::f16;
    if (name == "q8_0") return ggml_type::q8_0;
    if (name == "q4_0") return ggml_type::q4_0;
    throw error(fmt::format("OLLAMA_KV_CACHE_TYPE '{}': Ollama accepts f16, q8_0 or q4_0 (SupportsKVCacheType)", name));
}

// llama-server --fit lowers -ngl until every GPU keeps the fit target free; Ollama then runs partly on the CPU.
// The largest -ngl below "all" that fits (search.h); when none does, -ngl 0, the last --fit tries.
llamacpp_plan fit_layers(const model_desc & m, const llamacpp_settings & ls, const std::vector<device_spec> & gpus,
                         uint64_t target) {
    placement_settings pl;
    llamacpp_plan plan = plan_llamacpp(m, ls, pl, gpus, target);
    if (plan.fits()) return plan;
    const auto ngl = largest_fitting(0, m.n_layer + m.n_layer_mtp, 1, [&](uint64_t n) {
        pl.n_gpu_layers = int32_t(n);
        return llamacpp_fits(m, ls, pl, gpus, target); // the verdict alone
    });
    pl.n_gpu_layers = int32_t(ngl.value_or(0));
    return plan_llamacpp(m, ls, pl, gpus, target);
}

} // namespace

ollama_plan plan_ollama(const model_desc & m, const ollama_settings & s, const std::vector<device_spec> & gpus_given) {
    ollama_plan p;
    p.settings = s;
    // a Mac: the GPU's memory is Metal's recommendedMaxWorkingSetSize (metal.h): Ollama's discovery read it
    // (discover/gpu_darwin.go: TotalMemory = getRecommendedMaxVRAM(), gpu_info_darwin.m returns
    // device.recommendedMaxWorkingSetSize), and since the llama-server runner ggml-metal reports the same figure
    const std::vector<device_spec> gpus = metal_budget(gpus_given, s.iogpu_wired_limit_mb, p.notes);
    p.cache_type = kv_type(s.kv_cache_type);

    uint64_t vram = 0;
    for (const auto & g : gpus) vram += g.memory_bytes > s.gpu_overhead_bytes ? g.memory_bytes - s.gpu_overhead_bytes : 0;
    if (s.num_ctx) p.num_ctx = s.num_ctx, p.num_ctx_from = "num_ctx";
    else if (s.context_length_env) p.num_ctx = s.context_length_env, p.num_ctx_from = "OLLAMA_CONTEXT_LENGTH";
    else p.num_ctx = tier_num_ctx(vram, p.num_ctx_from);
    if (m.n_ctx_train && p.num_ctx > m.n_ctx_train) {
        p.notes.push_back(fmt::format("num_ctx {} clamped to the training context {}", p.num_ctx, m.n_ctx_train));
        p.num_ctx = m.n_ctx_train;
    }

    const std::string & arch = m.gguf_architecture.empty() ? m.architecture : m.gguf_architecture;
    const auto & single = ollama_single_slot_architectures();
    p.num_parallel = std::max<uint32_t>(s.num_parallel, 1);
    if (s.embedding || std::find(single.begin(), single.end(), arch) != single.end()) {
        p.parallel_forced = p.num_parallel > 1;
        if (p.parallel_forced) {
            p.notes.push_back(fmt::format("OLLAMA_NUM_PARALLEL {} forced to 1: Ollama runs one slot for '{}' "
                                          "(server/sched.go; Ollama's rule, not kvfit's)", p.num_parallel,
                                          s.embedding ? "embedding models" : arch));
        }
        p.num_parallel = 1;
    }

    if (s.flash_attention.empty()) p.flash_attn = flash_attn_mode::automatic;
    else if (s.flash_attention == "1" || s.flash_attention == "true") p.flash_attn = flash_attn_mode::on;
    else if (s.flash_attention == "0" || s.flash_attention == "false") p.flash_attn = flash_attn_mode::off;
    else throw error(fmt::format("OLLAMA_FLASH_ATTENTION '{}': expected 1/true or 0/false", s.flash_attention));
    if (p.flash_attn == flash_attn_mode::off && p.cache_type != ggml_type::f16) {
        p.warnings.push_back(fmt::format("OLLAMA_KV_CACHE_TYPE {} needs flash attention, which is off: the cache "
                                         "stays f16", ggml_traits(p.cache_type).name));
        p.cache_type = ggml_type::f16;
    }

    p.llama.n_ctx = p.num_ctx * p.num_parallel; // -c NumCtx x numParallel -np numParallel
    p.llama.n_seq = p.num_parallel;
    p.llama.type_k = p.llama.type_v = p.cache_type;
    p.llama.flash_attn = p.flash_attn;
    // Ollama launches llama-server (RULES §6: llm/llama_server.go since PR #16031), whose load_model reserves
    // n_parallel outputs (server_output_limits, server-context.cpp:41-53, 1014-1016). An embedding model needs
    // llama-server's --embeddings (its /embedding handler refuses otherwise, server-context.cpp:5393), and with it
    // llama-server reserves n_batch outputs (server-context.cpp:42-45).
    p.llama.server_outputs = !s.embedding;

    // --fit target: llama-server's 1024 MiB; with an offloaded projector ceil((mmproj + 1 GiB) / MiB) MiB,
    // added to an LLAMA_ARG_FIT_TARGET Ollama was given in extraEnvs (mmprojOffloadHeadroom = 1 << 30).
    const uint64_t base = s.fit_target_bytes ? s.fit_target_bytes : 1024 * MiB;
    bool small_gpu = false;
    for (const auto & g : gpus) small_gpu |= g.memory_bytes < s.mmproj_bytes + GiB;
    p.mmproj_offload = s.mmproj_bytes > 0 && !gpus.empty() && !small_gpu;
    auto target_for = [&](bool offload) {
        if (!offload) return base;
        const uint64_t pad = (s.mmproj_bytes + GiB + MiB - 1) / MiB * MiB;
        return s.fit_target_bytes ? s.fit_target_bytes + pad : pad;
    };
    p.fit_target_bytes = target_for(p.mmproj_offload);
    p.plan = fit_layers(m, p.llama, gpus, p.fit_target_bytes);
    const uint32_t all = m.n_layer + m.n_layer_mtp + 1; // blocks and the output layer, as -ngl counts them
    if (p.mmproj_offload && p.plan.n_gpu_layers < all) { // partial text offload: projector stays on CPU
        p.mmproj_offload = false;
        p.fit_target_bytes = target_for(false);
        p.plan = fit_layers(m, p.llama, gpus, p.fit_target_bytes);
    }
    if (s.mmproj_bytes > 0 && !p.mmproj_offload) p.notes.push_back("projector kept on the CPU (--no-mmproj-offload)");
    p.all_on_gpu = !gpus.empty() && p.plan.n_gpu_layers >= all;
    p.cpu_only = gpus.empty();
    if (!gpus.empty() && p.plan.n_gpu_layers < all) {
        p.warnings.push_back(fmt::format("does not meet the request: only {}/{} layers fit on the GPU at num_ctx {}; Ollama "
                                         "spills the rest to the CPU (a smaller num_ctx, a smaller quantization or more "
                                         "GPU memory keeps them all on the GPU)", p.plan.n_gpu_layers, all, p.num_ctx));
    }
    if (p.cpu_only) {
        p.notes.push_back("no GPUs given: Ollama runs every layer on the CPU (weights, KV cache and compute in host RAM); "
                          "with GPUs given kvfit plans an offload");
    }
    return p;
}

} // namespace kvfit
