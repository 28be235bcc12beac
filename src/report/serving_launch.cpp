// Launch commands that realise a serving plan (include/kvfit/serving_report.h: serving_launch_command), and the
// small serving_report queries. Every flag the plan depends on is pinned, so a newer default cannot change it.
#include "kvfit/serving_report.h"

#include <fmt/format.h>

namespace kvfit {

std::string serving_report::runtime() const { return vllm ? "vllm" : sglang ? "sglang" : "ollama"; }

bool serving_report::fits() const {
    if (vllm) {
        if (!placements.empty()) {
            for (const auto & p : placements) {
                if (p.fits) return true;
            }
            return false;
        }
        return vllm->fits() && vllm->max_concurrency * vllm->settings.dp >= vllm->settings.concurrency;
    }
    if (sglang) return sglang->fits();
    return ollama && ollama->fits();
}

namespace {

std::string vllm_command(const serving_report & r, const vllm_plan & p, uint64_t len, uint32_t seqs) {
    const vllm_settings & s = p.settings;
    std::string c = fmt::format("vllm serve {} --max-model-len {}", r.model_ref, len);
    if (s.kv_cache_memory_bytes) c += fmt::format(" --kv-cache-memory-bytes {}", s.kv_cache_memory_bytes);
    else c += fmt::format(" --gpu-memory-utilization {}", s.gpu_memory_utilization);
    c += fmt::format(" --max-num-seqs {} --max-num-batched-tokens {} --block-size {}", seqs,
                     s.max_num_batched_tokens, p.block_size);
    if (s.kv_cache_dtype != "auto") c += " --kv-cache-dtype " + s.kv_cache_dtype;
    c += s.enable_prefix_caching ? " --enable-prefix-caching" : " --no-enable-prefix-caching";
    if (p.hybrid && s.rules == vllm_rules::v2026) {
        c += fmt::format(" --mamba-cache-mode {}", mamba_cache_mode_name(s.mamba_mode));
        if (s.mamba_ssm_cache_dtype != "auto") c += " --mamba-ssm-cache-dtype " + s.mamba_ssm_cache_dtype;
        if (s.mamba_cache_dtype != "auto") c += " --mamba-cache-dtype " + s.mamba_cache_dtype;
    }
    if (s.enforce_eager) c += " --enforce-eager";
    if (s.tp > 1) c += fmt::format(" -tp {}", s.tp);
    if (s.pp > 1) c += fmt::format(" -pp {}", s.pp);
    if (s.dcp > 1) c += fmt::format(" -dcp {}", s.dcp);
    const uint32_t gpn = uint32_t(r.gpus.size());
    if (s.dp > 1 && r.nodes > 1) { // one DP rank per node: head, then the others headless
        std::string out = fmt::format("# node 0 (head)\n{} -dp {} --data-parallel-size-local {} --data-parallel-address "
                                      "HEAD_IP --data-parallel-rpc-port 13345\n", c, s.dp, s.dp / r.nodes);
        for (uint32_t n = 1; n < r.nodes; ++n) {
            out += fmt::format("# node {}\n{} -dp {} --data-parallel-size-local {} --data-parallel-start-rank {} "
                               "--data-parallel-address HEAD_IP --data-parallel-rpc-port 13345 --headless\n",
                               n, c, s.dp, s.dp / r.nodes, n * (s.dp / r.nodes));
        }
        return out;
    }
    if (s.dp > 1) c += fmt::format(" -dp {}", s.dp);
    if (s.tp * s.pp > gpn) {
        return fmt::format("# start a Ray cluster over the {} nodes, then on the head node:\n{} "
                           "--distributed-executor-backend ray\n", r.nodes, c);
    }
    return c + "\n";
}

// The planned command; when it does not start and the plan names a remedy (a shorter max_model_len, fewer
// sequences for the mamba blocks), that variant follows.
std::string vllm_commands(const serving_report & r, const vllm_plan & p) {
    const std::string planned = vllm_command(r, p, p.max_model_len, p.settings.max_num_seqs);
    if (p.fits() || p.available_kv_bytes <= 0) return planned;
    uint64_t len = p.max_model_len;
    uint32_t seqs = p.settings.max_num_seqs;
    if (p.need_bytes > uint64_t(p.available_kv_bytes)) len = p.max_model_len_fit;
    else if (p.mamba_blocks_per_request) seqs = uint32_t(p.num_gpu_blocks / p.mamba_blocks_per_request);
    if (len == 0 || seqs == 0) return planned;
    return "# as planned (does not start):\n" + planned + "# a variant that starts:\n" + vllm_command(r, p, len, seqs);
}

std::string sglang_command(const serving_report & r, const sglang_plan & p) {
    const sglang_settings & s = p.settings;
    std::string c = fmt::format("python -m sglang.launch_server --model-path {} --tp {} --mem-fraction-static {} "
                                "--context-length {} --max-running-requests {}", r.model_ref, s.tp,
                                s.mem_fraction_static, p.context_length, p.max_running_requests);
    if (s.kv_cache_dtype != "auto") c += " --kv-cache-dtype " + s.kv_cache_dtype;
    if (s.page_size != 1) c += fmt::format(" --page-size {}", s.page_size);
    if (p.mamba_slots) c += fmt::format(" --max-mamba-cache-size {}", p.mamba_slots);
    if (s.disable_radix_cache) c += " --disable-radix-cache";
    return c + "\n";
}

std::string ollama_command(const serving_report & r, const ollama_plan & p) {
    std::string env = fmt::format("OLLAMA_NUM_PARALLEL={} OLLAMA_KV_CACHE_TYPE={}", p.num_parallel,
                                  ggml_traits(p.cache_type).name);
    if (p.flash_attn != flash_attn_mode::automatic) {
        env += fmt::format(" OLLAMA_FLASH_ATTENTION={}", p.flash_attn == flash_attn_mode::on ? 1 : 0);
    }
    if (p.settings.gpu_overhead_bytes) env += fmt::format(" OLLAMA_GPU_OVERHEAD={}", p.settings.gpu_overhead_bytes);
    std::string out = fmt::format("# server environment\n{} ollama serve\n", env);
    out += fmt::format("# Modelfile\nFROM {}\nPARAMETER num_ctx {}\n", r.model_ref, p.num_ctx);
    const char * fa = p.flash_attn == flash_attn_mode::on ? "on" : p.flash_attn == flash_attn_mode::off ? "off" : "auto";
    out += fmt::format("# what Ollama starts underneath\nllama-server -c {} -np {} --flash-attn {}", p.llama.n_ctx,
                       p.num_parallel, fa);
    if (p.cache_type != ggml_type::f16) {
        out += fmt::format(" --cache-type-k {0} --cache-type-v {0}", ggml_traits(p.cache_type).name);
    }
    if (!p.mmproj_offload && p.settings.mmproj_bytes) out += " --no-mmproj-offload";
    if (p.fit_target_bytes != (1024ull << 20)) out += fmt::format("  # LLAMA_ARG_FIT_TARGET={}", p.fit_target_bytes >> 20);
    return out + "\n";
}

} // namespace

std::string serving_launch_command(const serving_report & r) {
    if (r.vllm) return vllm_commands(r, *r.vllm);
    if (r.sglang) return sglang_command(r, *r.sglang);
    if (r.ollama) return ollama_command(r, *r.ollama);
    return "";
}

} // namespace kvfit
