// One row per llama.cpp architecture: layer layout, pattern parameters and the source of the rule.
// Citations point at llama.cpp src/llama-model.cpp, llama_model::load_hparams, "case LLM_ARCH_<X>", at the release
// kvfit mirrors (5b4ebc5, see runtime.h); names are LLM_ARCH_NAMES in src/llama-arch.cpp.
// Adding an architecture is adding a row; a layout the rows cannot express is a new gguf_layout value.
#include "sources/gguf_arch.h"

#include <array>

namespace kvfit::detail {
namespace {

using L = gguf_layout;
using R = recurrent_kind;

constexpr std::array k_rows = {
    //           arch             layout              period window  recurrent          mla    kv_from  cite (load_hparams)
    gguf_arch_row{"llama",         L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_LLAMA: no window"},
    gguf_arch_row{"mistral3",      L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_MISTRAL3: llama layout"},
    gguf_arch_row{"qwen2",         L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_QWEN2: sliding_window not read"},
    gguf_arch_row{"qwen2moe",      L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_QWEN2MOE"},
    gguf_arch_row{"qwen3",         L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_QWEN3"},
    gguf_arch_row{"qwen3moe",      L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_QWEN3MOE"},
    gguf_arch_row{"glm4moe",       L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_GLM4_MOE: nextn layers not cached"},
    gguf_arch_row{"phi3",          L::attention,       0,     0,      R::none,           false, 0,  "LLM_ARCH_PHI3: \"Phi SWA is currently disabled\", set_swa_pattern(1)"},
    gguf_arch_row{"deepseek2",     L::attention,       0,     0,      R::none,           true,  0,  "LLM_ARCH_DEEPSEEK2: MLA when key_length_mla is set"},
    gguf_arch_row{"qwen35",        L::interval,        4,     0,      R::gated_deltanet, false, 0,  "LLM_ARCH_QWEN35: recurrent_layer_arr[i] = (i + 1) % full_attention_interval != 0"},
    gguf_arch_row{"qwen35moe",     L::interval,        4,     0,      R::gated_deltanet, false, 0,  "LLM_ARCH_QWEN35MOE: as qwen35"},
    gguf_arch_row{"qwen3next",     L::interval,        4,     0,      R::gated_deltanet, false, 0,  "LLM_ARCH_QWEN3NEXT: as qwen35"},
    gguf_arch_row{"gemma2",        L::swa_period,      2,     4096,   R::none,           false, 0,  "LLM_ARCH_GEMMA2: n_swa = 4096, set_swa_pattern(2)"},
    gguf_arch_row{"gemma3",        L::swa_period,      6,     0,      R::none,           false, 0,  "LLM_ARCH_GEMMA3: set_swa_pattern(6) when sliding_window > 0"},
    gguf_arch_row{"gemma3n",       L::swa_period,      5,     0,      R::none,           false, 20, "LLM_ARCH_GEMMA3N: set_swa_pattern(5), n_layer_kv_from_start = 20"},
    gguf_arch_row{"gpt-oss",       L::swa_period,      2,     0,      R::none,           false, 0,  "LLM_ARCH_OPENAI_MOE: set_swa_pattern(2)"},
    gguf_arch_row{"cohere2",       L::swa_period,      4,     0,      R::none,           false, 0,  "LLM_ARCH_COHERE2: set_swa_pattern(4)"},
    gguf_arch_row{"exaone4",       L::swa_period,      4,     0,      R::none,           false, 0,  "LLM_ARCH_EXAONE4: set_swa_pattern(4) when sliding_window is set"},
    gguf_arch_row{"llama4",        L::chunked_period,  4,     8192,   R::none,           false, 0,  "LLM_ARCH_LLAMA4: chunked, n_swa = 8192, set_swa_pattern(4)"},
    gguf_arch_row{"mamba",         L::all_recurrent,   0,     0,      R::mamba1,         false, 0,  "LLM_ARCH_MAMBA"},
    gguf_arch_row{"mamba2",        L::all_recurrent,   0,     0,      R::mamba2,         false, 0,  "LLM_ARCH_MAMBA2"},
    gguf_arch_row{"nemotron_h",    L::nemotron_h,      0,     0,      R::mamba2,         false, 0,  "LLM_ARCH_NEMOTRON_H: recurrent iff n_head_kv(i) == 0 && n_ff(i) == 0"},
    gguf_arch_row{"granitehybrid", L::kv_or_recurrent, 0,     0,      R::mamba2,         false, 0,  "LLM_ARCH_GRANITE_HYBRID: recurrent iff n_head_kv(i) == 0"},
    gguf_arch_row{"jamba",         L::kv_or_recurrent, 0,     0,      R::mamba1,         false, 0,  "LLM_ARCH_JAMBA: recurrent iff n_head_kv(i) == 0"},
    gguf_arch_row{"falcon-h1",     L::parallel_hybrid, 0,     0,      R::mamba2,         false, 0,  "LLM_ARCH_FALCON_H1: every layer attention and mamba2"},
    gguf_arch_row{"lfm2",          L::kv_or_recurrent, 0,     0,      R::short_conv,     false, 0,  "LLM_ARCH_LFM2: recurrent iff n_head_kv(i) == 0"},
    gguf_arch_row{"lfm2moe",       L::kv_or_recurrent, 0,     0,      R::short_conv,     false, 0,  "LLM_ARCH_LFM2MOE: as lfm2"},
    gguf_arch_row{"rwkv6",         L::all_recurrent,   0,     0,      R::rwkv,           false, 0,  "LLM_ARCH_RWKV6"},
    gguf_arch_row{"rwkv7",         L::all_recurrent,   0,     0,      R::rwkv,           false, 0,  "LLM_ARCH_RWKV7"},
};

constexpr gguf_arch_row k_generic{"", L::attention, 0, 0, R::none, false, 0, "generic keys"};

} // namespace

const gguf_arch_row * find_gguf_arch(std::string_view arch) {
    for (const auto & row : k_rows) {
        if (row.arch == arch) return &row;
    }
    return nullptr;
}

const gguf_arch_row & generic_gguf_arch() { return k_generic; }

} // namespace kvfit::detail
