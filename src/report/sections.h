#pragma once
// Private to src/report/: the text sections of each runtime (text.cpp for llama.cpp and the common ones,
// text_serving.cpp for vLLM, SGLang and Ollama) and small readers of a plan's detail (docs/json.md).
#include "kvfit/gpus.h"
#include "kvfit/report.h"

#include <cstdint>
#include <string>

namespace kvfit::detail {

using ojson = nlohmann::ordered_json;

/// detail[key] as a number or text; 0 / "" / false when absent (a runtime without that figure).
inline uint64_t u64(const ojson & j, const char * key) { return j.contains(key) ? j[key].get<uint64_t>() : 0; }
inline int64_t i64(const ojson & j, const char * key) { return j.contains(key) ? j[key].get<int64_t>() : 0; }
inline double dbl(const ojson & j, const char * key) { return j.contains(key) ? j[key].get<double>() : 0.0; }
inline bool flag(const ojson & j, const char * key) { return j.contains(key) && j[key].get<bool>(); }
inline std::string str(const ojson & j, const char * key) { return j.contains(key) ? j[key].get<std::string>() : ""; }

/// The GPUs of a plan (its devices but the host).
/// A llama.cpp plan whose host RAM need passes --ram (detail.host_ram.over, src/runtimes/llamacpp/host_ram.cpp).
inline bool host_over(const runtime_plan & p) { return p.detail.contains("host_ram") && flag(p.detail["host_ram"], "over"); }

inline bool has_gpu(const runtime_plan & p) {
    for (const auto & d : p.devices) {
        if (!d.is_host) return true;
    }
    return false;
}

/// "12 layers: 8 full attention, 24 recurrent (gated_deltanet)".
std::string layer_summary(const model_desc & m);

/// The projector, LoRA adapter and host RAM lines of a llama.cpp plan, from detail.projector, detail.adapters and
/// detail.host_ram (text_extras.cpp); nothing when the plan has none of them.
std::string render_llamacpp_extras(const plan_result & r);

/// The text of a vLLM, SGLang or Ollama plan (text_serving.cpp).
std::string render_serving_text(const plan_result & r);

/// The planner's searches as text, for any runtime: the largest value of the context setting per cache type
/// (plan.max_context) and, when the plan does not fit, each alternative's flags (plan.alternatives). Flag names come
/// from the registry (runtime_info), so no runtime is named here. Nothing when the plan has neither.
void render_search(std::string & out, const plan_result & r);

/// The text of a plan of a runtime without its own section: verdict, devices, caches, refusals, notes, launch.
std::string render_generic_text(const plan_result & r);

} // namespace kvfit::detail
