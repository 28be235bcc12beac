// Flags (or a POST /v1/plan body) -> planner inputs -> report (include/kvfit/request.h). The CLI and the
// HTTP server share this file, so they share every check and every error message.
#include "kvfit/request.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp_flags.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

// -c takes one value as in llama.cpp, or several (repeated or comma-separated) for the table.
std::vector<uint64_t> parse_contexts(const std::vector<std::string> & values) {
    std::vector<uint64_t> out;
    for (const auto & v : values) {
        size_t start = 0;
        while (start <= v.size()) {
            const size_t end = std::min(v.find(',', start), v.size());
            out.push_back(parse_flag_count("-c", std::string_view(v).substr(start, end - start), 1, 1ull << 32));
            start = end + 1;
        }
    }
    return out;
}

} // namespace

plan_inputs parse_plan_request(const plan_request & q, const gpu_parser & parse_gpus) {
    plan_inputs in;
    llamacpp_settings & s = in.settings;
    s.type_k = parse_cache_type_flag("-ctk", q.cache_type_k);
    s.type_v = parse_cache_type_flag("-ctv", q.cache_type_v);
    s.flash_attn = parse_flash_attn_flag("-fa", q.flash_attn);
    if (!q.ubatch_size.empty()) s.n_ubatch = uint32_t(parse_flag_count("-ub", q.ubatch_size, 1, 1u << 20));
    if (!q.batch_size.empty()) s.n_batch = uint32_t(parse_flag_count("-b", q.batch_size, 1, 1u << 20));
    if (!q.parallel.empty()) s.n_seq = uint32_t(parse_flag_count("-np", q.parallel, 1, 256));
    s.kv_unified = q.kv_unified;
    s.swa_full = q.swa_full;
    s.mla = q.mla_kv ? mla_layout::k_and_v : mla_layout::k_only;
    if (!q.llamacpp_version.empty()) s.release = parse_llamacpp_release(q.llamacpp_version);
    in.contexts = parse_contexts(q.ctx_size);

    placement_settings & p = in.placement;
    if (!q.n_gpu_layers.empty() && q.n_gpu_layers != "all" && q.n_gpu_layers != "auto") {
        p.n_gpu_layers = int32_t(parse_flag_count("-ngl", q.n_gpu_layers, 0, 100000));
    }
    p.no_kv_offload = q.no_kv_offload;
    p.cpu_moe = q.cpu_moe;
    if (!q.n_cpu_moe.empty()) p.n_cpu_moe = uint32_t(parse_flag_count("--n-cpu-moe", q.n_cpu_moe, 0, 100000));
    if (!q.tensor_split.empty()) p.tensor_split = parse_tensor_split(q.tensor_split);
    for (const auto & rule : q.override_tensor) {
        const auto pattern = parse_override_rule(rule);
        if (!pattern) throw error(fmt::format("-ot '{}': only the CPU target is modelled", rule));
        p.override_tensor_cpu.push_back(*pattern);
    }

    if (!q.gpu.empty()) in.gpus = parse_gpus ? parse_gpus(q.gpu) : parse_gpu_list(q.gpu);
    if (!q.margin.empty()) in.margin_bytes = parse_size(q.margin);
    return in;
}

void apply_request_weights(model_desc & m, const plan_request & q, warnings & warn) {
    if (!q.weights_size.empty()) {
        apply_weight_size(m, parse_size(q.weights_size));
    } else if (!q.weights.empty()) {
        apply_weight_format(m, q.weights, true);
    } else if (!m.weights.exact) {
        // A config.json gives no bytes: plan with the format most people run in llama.cpp, and say so.
        apply_weight_format(m, default_weight_format);
        warn.push_back(fmt::format("weights assumed {} (no --weights or --weights-size given; the file holds no "
                                   "weight bytes)", default_weight_format));
    }
}

report make_report_from_request(const plan_request & q, const model_loader & load, const gpu_parser & parse_gpus) {
    const plan_inputs in = parse_plan_request(q, parse_gpus);
    warnings warn;
    model_desc m = load(warn);
    apply_request_weights(m, q, warn);
    return make_report(m, warn, in.settings, in.placement, in.contexts, in.gpus, in.margin_bytes);
}

// --- POST /v1/plan bodies ------------------------------------------------------------------------------

namespace {

using json = nlohmann::json;

// A flag value from JSON: strings as given, integers as their decimal text (so -c 0 and "ctx_size": 0 meet
// the same check), anything else refused with the field's name.
std::string text_field(const std::string & key, const json & v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    if (v.is_number_float()) return v.dump(); // "1.5" then fails the flag's own integer check
    throw error(fmt::format("request: field '{}': expected a string or a number, got {}", key, v.type_name()));
}

bool bool_field(const std::string & key, const json & v) {
    if (!v.is_boolean()) throw error(fmt::format("request: field '{}': expected true or false, got {}", key, v.type_name()));
    return v.get<bool>();
}

std::vector<std::string> list_field(const std::string & key, const json & v) {
    std::vector<std::string> out;
    if (!v.is_array()) {
        out.push_back(text_field(key, v));
        return out;
    }
    if (v.size() > 64) throw error(fmt::format("request: field '{}': {} values exceed the limit 64", key, v.size()));
    for (const auto & e : v) out.push_back(text_field(key, e));
    return out;
}

} // namespace

plan_request plan_request_from_json(const json & body, const std::vector<std::string> & extra_fields) {
    if (!body.is_object()) throw error(fmt::format("request: expected a JSON object, got {}", body.type_name()));
    plan_request q;
    const std::pair<const char *, std::string plan_request::*> texts[] = {
        {"model", &plan_request::model},           {"cache_type_k", &plan_request::cache_type_k},
        {"cache_type_v", &plan_request::cache_type_v}, {"flash_attn", &plan_request::flash_attn},
        {"ubatch_size", &plan_request::ubatch_size}, {"batch_size", &plan_request::batch_size},
        {"parallel", &plan_request::parallel},     {"gpu", &plan_request::gpu},
        {"margin", &plan_request::margin},         {"weights", &plan_request::weights},
        {"weights_size", &plan_request::weights_size}, {"n_gpu_layers", &plan_request::n_gpu_layers},
        {"tensor_split", &plan_request::tensor_split}, {"n_cpu_moe", &plan_request::n_cpu_moe},
        {"llamacpp_version", &plan_request::llamacpp_version},
    };
    const std::pair<const char *, bool plan_request::*> flags[] = {
        {"kv_unified", &plan_request::kv_unified}, {"swa_full", &plan_request::swa_full},
        {"mla_kv", &plan_request::mla_kv},         {"no_kv_offload", &plan_request::no_kv_offload},
        {"cpu_moe", &plan_request::cpu_moe},
    };
    const std::pair<const char *, std::vector<std::string> plan_request::*> lists[] = {
        {"ctx_size", &plan_request::ctx_size}, {"override_tensor", &plan_request::override_tensor},
    };
    for (const auto & [key, value] : body.items()) {
        bool known = std::find(extra_fields.begin(), extra_fields.end(), key) != extra_fields.end();
        for (const auto & [name, member] : texts) {
            if (key != name) continue;
            q.*member = text_field(key, value);
            known = true;
        }
        for (const auto & [name, member] : flags) {
            if (key != name) continue;
            q.*member = bool_field(key, value);
            known = true;
        }
        for (const auto & [name, member] : lists) {
            if (key != name) continue;
            q.*member = list_field(key, value);
            known = true;
        }
        if (known) continue;
        std::string names;
        for (const auto & [name, member] : texts) names += fmt::format("{}{}", names.empty() ? "" : ", ", name);
        for (const auto & [name, member] : flags) names += fmt::format(", {}", name);
        for (const auto & [name, member] : lists) names += fmt::format(", {}", name);
        for (const auto & name : extra_fields) names += fmt::format(", {}", name);
        const std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
        throw error(fmt::format("request: unknown field '{}' (known: {})", shown, names));
    }
    return q;
}

} // namespace kvfit
