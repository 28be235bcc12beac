// POST /v1/plan bodies -> plan_request (include/kvfit/plan.h). The fields are the CLI's flags by their JSON names,
// read from the registry, so the HTTP API accepts every runtime's flags without knowing any of them.
#include "kvfit/plan.h"

#include "kvfit/error.h"
#include "kvfit/vllm.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {
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

const std::pair<const char *, std::string plan_request::*> k_common[] = {
    {"model", &plan_request::model},     {"runtime", &plan_request::runtime},
    {"gpu", &plan_request::gpu},         {"weights", &plan_request::weights},
    {"weights_size", &plan_request::weights_size},
};

const flag_spec * find_flag(const runtime_info & rt, const std::string & key) {
    for (const auto & f : rt.flags()) {
        if (f.json_name() == key) return &f;
    }
    return nullptr;
}

} // namespace

plan_request plan_request_from_json(const json & body, const std::vector<std::string> & extra_fields) {
    if (!body.is_object()) throw error(fmt::format("request: expected a JSON object, got {}", body.type_name()));
    plan_request q;
    for (const auto & [name, member] : k_common) {
        if (body.contains(name)) q.*member = text_field(name, body[name]);
    }
    // An empty "model" is a mistake (a form field left blank), not a request for the default model: omitting the
    // field plans the default, as `kvfit` with no MODEL does.
    if (body.contains("model") && q.model.empty()) {
        throw error("request: field 'model' is empty: name a catalog model (GET /v1/models) or omit the field for the default");
    }
    if (body.contains("strict")) q.strict = bool_field("strict", body["strict"]);
    const runtime_info & rt = find_runtime(q.runtime);
    for (const auto & item : body.items()) {
        const std::string & key = item.key();  // not a structured binding: clang 14 cannot capture one in a lambda
        const json & value = item.value();
        const bool common = key == "strict" ||
                            std::any_of(std::begin(k_common), std::end(k_common), [&](const auto & c) { return key == c.first; });
        if (common || std::find(extra_fields.begin(), extra_fields.end(), key) != extra_fields.end()) continue;
        if (const flag_spec * f = find_flag(rt, key)) {
            // llama.cpp's --mmproj / --lora name files: the server reads no paths (issue 14, llamacpp_extras.h)
            if (rt.name == "llama.cpp" && (key == "mmproj" || key == "lora" || key == "lora_scaled")) {
                throw error(fmt::format("request: field '{}' names a file and the server reads no paths (use the CLI)", key));
            }
            if (rt.name == "llama.cpp" && key == "ram" && value.is_string() && value.get<std::string>() == "auto") {
                throw error("request: field 'ram' auto would read the server's own RAM: give a size");
            }
            // -md names a file on the machine that plans: a request (the HTTP API) must not make the server read one
            if (key == "spec_draft_model") {
                throw error("request: spec_draft_model (-md) reads a local file: only the command line takes it");
            }
            // vLLM's --speculative-config: a JSON object or its text; a draft "model" is a file or a download, which a
            // request must not make the server read (as spec_draft_model above)
            if (rt.name == "vllm" && key == "speculative_config") {
                const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
                if (!parse_speculative_config(text).model.empty()) {
                    throw error("request: speculative_config \"model\" names a draft checkpoint to read (a file or a "
                                "download): only the command line takes it");
                }
                q.flags.set(key, text);
                continue;
            }
            if (f->type == flag_type::boolean) {
                if (bool_field(key, value)) q.flags.set(key, "true");
            } else if (f->type == flag_type::list) {
                for (auto & v : list_field(key, value)) q.flags.add(key, std::move(v));
            } else {
                q.flags.set(key, text_field(key, value));
            }
            continue;
        }
        for (const auto & other : runtimes()) {
            if (&other != &rt && find_flag(other, key)) {
                throw error(fmt::format("request: field '{}' is a {} flag, not one of {}'s (set \"runtime\": \"{}\")",
                                        key, other.display, rt.display, other.name));
            }
        }
        std::string names;
        for (const auto & [name, member] : k_common) names += fmt::format("{}{}", names.empty() ? "" : ", ", name);
        names += ", strict";
        for (const auto & f : rt.flags()) names += fmt::format(", {}", f.json_name());
        for (const auto & name : extra_fields) names += fmt::format(", {}", name);
        const std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
        throw error(fmt::format("request: unknown field '{}' (known: {})", shown, names));
    }
    return q;
}

} // namespace kvfit
