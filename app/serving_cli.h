#pragma once
// The serving runtimes on the command line: --runtime vllm|sglang|ollama and their flags, spelled as each
// runtime spells them. main.cpp registers them (add_serving_flags) and hands over when one is selected
// (run_serving_if_selected). No memory rule lives here.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace kvfit::cli {

/// Raw values of the serving flags (validated in run_serving_if_selected). Empty = not given.
struct serving_options {
    std::string runtime = "llama.cpp";
    std::string nodes;
    // vLLM
    std::string vllm_rules, max_model_len, gpu_memory_utilization, kv_cache_memory_bytes, kv_cache_dtype, block_size;
    std::string max_num_seqs, max_num_batched_tokens, mamba_cache_mode, mamba_ssm_cache_dtype, mamba_cache_dtype;
    std::string mamba_block_size, tp, pp, dp, dcp, activation, non_torch, cudagraph, concurrency;
    bool prefix_caching = false, no_prefix_caching = false, enforce_eager = false;
    // SGLang
    std::string mem_fraction_static, sglang_tp, context_length, max_running_requests, page_size;
    std::string max_mamba_cache_size, mamba_full_memory_ratio;
    bool disable_radix_cache = false;
    // Ollama
    std::string num_ctx, num_parallel, ollama_kv_cache_type, ollama_flash_attention, ollama_context_length;
    std::string ollama_gpu_overhead, mmproj_size, fit_target;
    bool embedding = false;
    /// Every registered option with the runtimes that accept it ("vllm", "sglang", "ollama").
    std::vector<std::pair<CLI::Option *, std::string>> owned;
};

/// Flags main.cpp shares with the serving runtimes.
struct common_inputs {
    std::string model;        ///< MODEL positional ("" = the default model)
    std::string gpu;          ///< --gpu
    std::string weights;      ///< --weights
    std::string weights_size; ///< --weights-size
    bool json = false;        ///< --json
    bool list_or_inspect = false; ///< --list or --inspect: main handles them
    bool strict = false;      ///< --strict: the model's warnings (assumptions) are refused
};

/// Register --runtime and every vLLM, SGLang and Ollama flag on `app`. main.cpp's normalise_args maps
/// -tp/-pp/-dp/-dcp to their long names (CLI11 takes one letter after a single dash).
void add_serving_flags(CLI::App & app, serving_options & o);

/// After parsing: with --runtime llama.cpp (the default) rejects any serving flag and returns -1 so main goes
/// on; otherwise rejects flags of other runtimes (a llama.cpp -ctk under vllm, a --max-model-len under ollama),
/// plans, prints and returns the exit status (0 fits, 3 does not). Throws kvfit::error on bad input.
int run_serving_if_selected(const CLI::App & app, const serving_options & o, const common_inputs & in);

} // namespace kvfit::cli
