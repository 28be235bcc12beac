// llama.cpp flag values (include/kvfit/llamacpp_flags.h), shared by the CLI, exec and the HTTP API.
#include "kvfit/llamacpp_flags.h"
#include "kvfit/error.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <regex>

namespace kvfit {

uint64_t parse_flag_count(std::string_view flag, std::string_view text, uint64_t min, uint64_t max) {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
        throw error(fmt::format("{} '{}': expected a {} integer", flag, text, min > 0 ? "positive" : "non-negative"));
    }
    if (v < min) throw error(fmt::format("{} {}: must be at least {}", flag, v, min));
    if (v > max) throw error(fmt::format("{} {}: exceeds the limit {}", flag, v, max));
    return v;
}

flash_attn_mode parse_flash_attn_flag(std::string_view flag, std::string_view v) {
    if (v == "on" || v == "enabled" || v == "true" || v == "1") return flash_attn_mode::on;
    if (v == "off" || v == "disabled" || v == "false" || v == "0") return flash_attn_mode::off;
    if (v == "auto" || v == "-1") return flash_attn_mode::automatic;
    throw error(fmt::format("{} '{}': expected on, off or auto (or 1, 0, true, false, -1)", flag, v));
}

ggml_type parse_cache_type_flag(std::string_view flag, std::string_view name) {
    // common/arg.cpp kv_cache_types: the types a KV cache may take
    static const ggml_type allowed[] = {ggml_type::f32,  ggml_type::f16,    ggml_type::bf16,
                                        ggml_type::q8_0, ggml_type::q4_0,   ggml_type::q4_1,
                                        ggml_type::iq4_nl, ggml_type::q5_0, ggml_type::q5_1};
    std::string names;
    for (auto t : allowed) {
        if (ggml_traits(t).name == name) return t;
        names += fmt::format("{}{}", names.empty() ? "" : ", ", ggml_traits(t).name);
    }
    throw error(fmt::format("{} '{}': unknown cache type (allowed: {})", flag, name, names));
}

std::vector<double> parse_tensor_split(std::string_view text) {
    std::vector<double> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find_first_of(",/", start), text.size());
        const std::string_view item = text.substr(start, end - start);
        double v = -1;
        const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size() || !(v >= 0) || v > 1e9) {
            throw error(fmt::format("-ts '{}': expected non-negative proportions like 3,1", text));
        }
        out.push_back(v);
        start = end + 1;
    }
    // llama.cpp (llama_model::load_tensors): an all-zero split means the default split by free memory
    if (std::all_of(out.begin(), out.end(), [](double x) { return x == 0; })) out.clear();
    return out;
}

std::optional<std::string> parse_override_rule(std::string_view rule) {
    const size_t eq = rule.rfind('=');
    if (eq == std::string_view::npos || eq == 0) throw error(fmt::format("-ot '{}': expected PATTERN=BUFFER", rule));
    if (rule.substr(eq + 1) != "CPU") return std::nullopt;
    const std::string pattern(rule.substr(0, eq));
    try {
        std::regex check(pattern);
    } catch (const std::regex_error & e) {
        throw error(fmt::format("-ot '{}': invalid regular expression: {}", rule, e.what()));
    }
    return pattern;
}

} // namespace kvfit
