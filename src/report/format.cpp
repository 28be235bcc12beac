// Number formatting for people and the llama-server command line (include/kvfit/report.h).
#include "kvfit/report.h"

#include <fmt/format.h>

namespace kvfit {

std::string with_commas(uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string human_bytes(uint64_t bytes) {
    const double b = double(bytes);
    if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
    if (bytes >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / double(1ull << 20));
    if (bytes >= (1ull << 10)) return fmt::format("{:.2f} KiB", b / 1024.0);
    return fmt::format("{} B", bytes);
}

std::string llama_server_command(const report & r, uint64_t n_ctx) {
    const llamacpp_settings & s = r.settings;
    std::string cmd = fmt::format("llama-server -m {}", r.model.source.empty() ? r.model.name : r.model.source);
    if (r.model.source == "catalog") cmd = fmt::format("llama-server -m {}.gguf", r.model.name);
    cmd += fmt::format(" -c {}", n_ctx);
    if (s.n_seq != 1) cmd += fmt::format(" -np {}", s.n_seq);
    if (s.kv_unified) cmd += " --kv-unified";
    const int32_t ngl = r.placement.n_gpu_layers;
    cmd += ngl < 0 ? fmt::format(" -ngl {}", r.model.n_layer + r.model.n_layer_mtp + 1) : fmt::format(" -ngl {}", ngl);
    cmd += s.flash_attn == flash_attn_mode::off ? " -fa off" : " -fa on";
    if (s.type_k != ggml_type::f16) cmd += fmt::format(" -ctk {}", ggml_traits(s.type_k).name);
    if (s.type_v != ggml_type::f16) cmd += fmt::format(" -ctv {}", ggml_traits(s.type_v).name);
    if (s.n_ubatch != 512) cmd += fmt::format(" -ub {}", s.n_ubatch);
    if (s.n_batch != 2048) cmd += fmt::format(" -b {}", s.n_batch);
    if (s.swa_full) cmd += " --swa-full";
    if (!r.placement.tensor_split.empty()) {
        cmd += " -ts ";
        for (size_t i = 0; i < r.placement.tensor_split.size(); ++i) {
            cmd += fmt::format("{}{}", i ? "," : "", r.placement.tensor_split[i]);
        }
    }
    if (r.placement.cpu_moe) cmd += " --cpu-moe";
    if (r.placement.n_cpu_moe) cmd += fmt::format(" --n-cpu-moe {}", r.placement.n_cpu_moe);
    if (r.placement.no_kv_offload) cmd += " --no-kv-offload";
    cmd += " --fit off"; // the plan fixes every setting; llama.cpp's own --fit would otherwise change them
    return cmd;
}

} // namespace kvfit
