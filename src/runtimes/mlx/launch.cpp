// The mlx_lm command line a user pastes (include/kvfit/mlx.h mlx_launch_line): flags as mlx_lm/generate.py,
// server.py and convert.py spell them, only those that differ from their defaults.
#include "runtimes/common/launch.h"
#include "detail.h"
#include "kvfit/metal.h"
#include "kvfit/printable.h"

#include <fmt/format.h>

namespace kvfit {

namespace {

// The last path or Hub-id component: "Qwen/Qwen3-8B" -> "Qwen3-8B".
std::string base_name(const std::string & id) {
    const size_t slash = id.find_last_of('/');
    return slash == std::string::npos ? id : id.substr(slash + 1);
}

} // namespace

std::string detail::mlx_model_id(const model_desc & m, const mlx_settings & s) {
    // mlx_lm loads a Hub id or a local folder, as vLLM and SGLang do: one rule for every serving launch line
    return s.model.empty() ? launch_model_ref(m) : s.model;
}

std::string mlx_launch_line(const mlx_settings & s, const std::string & model_id, bool convert) {
    std::string line;
    line += iogpu_sysctl_prefix(s.iogpu_wired_limit_mb);
    std::string model = model_id;
    if (convert) {
        const mlx_quantization & q = s.weights;
        model = fmt::format("{}-{}bit", base_name(model_id), q.bits);
        line += fmt::format("mlx_lm.convert --hf-path {} -q --q-bits {} --q-group-size {}", shell_word(model_id), q.bits,
                            q.group_size);
        if (q.mode != "affine") line += " --q-mode " + q.mode;
        line += fmt::format(" --mlx-path {} && ", shell_word(model));
    }
    line += fmt::format("{} --model {}", mlx_command_name(s.command), shell_word(model));
    if (s.max_tokens) line += fmt::format(" --max-tokens {}", *s.max_tokens);
    if (s.command == mlx_command::generate) {
        if (s.max_kv_size) line += fmt::format(" --max-kv-size {}", *s.max_kv_size);
        if (s.kv_bits) {
            line += fmt::format(" --kv-bits {}", *s.kv_bits);
            if (s.kv_group_size != 64) line += fmt::format(" --kv-group-size {}", s.kv_group_size);
            if (s.quantized_kv_start != 5000) line += fmt::format(" --quantized-kv-start {}", s.quantized_kv_start);
        }
        if (!s.prompt_cache_file.empty()) line += " --prompt-cache-file " + shell_word(s.prompt_cache_file);
    } else {
        if (s.decode_concurrency != 32) line += fmt::format(" --decode-concurrency {}", s.decode_concurrency);
        if (s.prompt_concurrency != 8) line += fmt::format(" --prompt-concurrency {}", s.prompt_concurrency);
        if (s.prefill_step_size != 2048) line += fmt::format(" --prefill-step-size {}", s.prefill_step_size);
        if (s.prompt_cache_size != 10) line += fmt::format(" --prompt-cache-size {}", s.prompt_cache_size);
        if (s.prompt_cache_bytes) line += fmt::format(" --prompt-cache-bytes {}", *s.prompt_cache_bytes);
    }
    return line;
}

} // namespace kvfit
