// The JSON API's handlers (include/kvfit/server.h), free of any socket: body in, status and document out.
// Plans go through make_plan, the CLI's own path, so a 200 is the CLI's --json byte for byte.
#include "sources/hf_detail.h"
#include "sources/json_bounded.h"
#include "kvfit/chart.h"
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/gpus.h"
#include "kvfit/metal.h"
#include "kvfit/plan.h"
#include "kvfit/report.h"
#include "kvfit/server.h"
#include "kvfit/sources.h"

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

using json = nlohmann::json;

// Body fields that name the model's bytes instead of a catalog entry (read here, not by plan_request_from_json).
const std::vector<std::string> k_upload_fields = {"config", "gguf_base64", "upload_name"};

/// An error the client caused, with its HTTP status (400 bad input, 413 too large).
struct http_error : error {
    int status;
    http_error(int s, const std::string & msg) : error(msg), status(s) {}
};

// RFC 4648 base64 (padding optional, no whitespace); refuses anything else.
std::string base64_decode(std::string_view in, std::string_view where) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    while (!in.empty() && in.back() == '=') in.remove_suffix(1);
    std::string out;
    out.reserve(in.size() * 3 / 4);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const int v = value(in[i]);
        if (v < 0) throw http_error(400, fmt::format("{}: byte {}: not base64", where, i));
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(char((acc >> bits) & 0xff));
        }
    }
    return out;
}

void check_upload_size(std::string_view where, size_t bytes, const server_options & o) {
    if (bytes > o.max_upload_bytes) {
        throw http_error(413, fmt::format("{}: {} bytes exceeds the upload limit of {} bytes (GGUF: send the header "
                                          "only, the first {} MiB)", where, bytes, o.max_upload_bytes, o.max_upload_bytes >> 20));
    }
}

// The model a body names: "config", "gguf_base64", or "model" (catalog names only: the server reads no paths).
model_loader body_loader(json & body, const plan_request & q, const server_options & o) {
    const bool has_config = body.contains("config"), has_gguf = body.contains("gguf_base64");
    if (int(has_config) + int(has_gguf) + int(!q.model.empty()) > 1) {
        throw http_error(400, "request: give one of 'model', 'config' or 'gguf_base64'");
    }
    if (body.contains("upload_name") && !has_config && !has_gguf) { // it names an upload, not a model to plan
        throw http_error(400, "request: field 'upload_name' names an upload: give 'config' or 'gguf_base64' with it");
    }
    const std::string name = body.contains("upload_name") && body["upload_name"].is_string()
                                 ? body["upload_name"].get<std::string>().substr(0, 200)
                                 : has_gguf ? "upload.gguf" : "config.json";
    if (has_config) {
        json & c = body["config"];
        if (!c.is_string() && !c.is_object()) throw http_error(400, "request: field 'config': expected the config.json text or object");
        // moved out of the body's document, not copied: an upload is held once
        std::string text = c.is_string() ? std::move(c.get_ref<std::string &>()) : c.dump();
        check_upload_size(name, text.size(), o);
        return [text = std::move(text), name](warnings & warn) { // moved: an upload is held once here
            // As load_model names a config.json file, so that an upload named like the CLI's path gives its JSON.
            model_desc m = model_from_hf_config(text, name, warn);
            m.source = name;
            m.name = model_name_from_path(name);
            return m;
        };
    }
    if (has_gguf) {
        const json & g = body["gguf_base64"];
        if (!g.is_string()) throw http_error(400, "request: field 'gguf_base64': expected a base64 string");
        check_upload_size(name, g.get_ref<const std::string &>().size() / 4 * 3, o);
        auto bytes = std::make_shared<std::string>(base64_decode(g.get_ref<const std::string &>(), name));
        return [bytes, name](warnings & warn) {
            return model_from_gguf(std::vector<gguf_file>{gguf_file::parse(*bytes, name)}, warn);
        };
    }
    const std::string spec = q.model.empty() ? std::string(default_model_name()) : q.model;
    if (!find_catalog(spec)) {
        throw http_error(400, error::at(spec.substr(0, 200), "no such catalog model (GET /v1/models lists them; "
                                                              "upload a config.json or GGUF header instead)").what());
    }
    return [spec](warnings & warn) { return load_model(spec, warn); };
}

// The body as JSON, within detail::request_json_limits (nesting, value count: a body of a million numbers is refused
// as it is read, not stored); bad JSON, a number like 1e400 and a field given twice are the client's mistake: 400.
// A "config" object keeps only the members the CLI keeps of a config.json (detail::config_member_kept), so what the
// limits count is what kvfit reads, as on the command line: an unused 300,000-element array is read past.
json parse_body(std::string_view body) {
    const detail::json_key_filter keep = [](const std::vector<std::string> & path, std::string_view key) {
        if (path.empty() || path.front() != "config") return true;
        return detail::config_member_kept(std::vector<std::string>(path.begin() + 1, path.end()), key);
    };
    try {
        return detail::parse_json_bounded(body, "request", detail::request_json_limits, keep);
    } catch (const error & e) {
        throw http_error(400, e.what());
    }
}

// A set (include/kvfit/model_set.h, docs/sets.md): set_request_from_json reads "models" and "max_loaded"; each
// model's own body names its bytes (catalog name, config or gguf_base64) as a single plan's body does.
set_result plan_body_set(json & body, const server_options & o) {
    std::vector<json> bodies;
    set_request q;
    try {
        q = set_request_from_json(std::move(body), k_upload_fields, &bodies);
    } catch (const error & e) {
        throw http_error(400, e.what());
    }
    std::vector<model_loader> loaders;
    for (size_t i = 0; i < bodies.size(); ++i) loaders.push_back(body_loader(bodies[i], q.members[i], o));
    return plan_set(q, [&](size_t i, warnings & warn) { return loaders[i](warn); });
}

template <typename F>
api_response with_plan(std::string_view body, const server_options & o, F && render, bool sets = false) {
    try {
        json j = parse_body(body);
        if (sets && j.is_object() && j.contains("models")) return {200, "application/json", render_set_json(plan_body_set(j, o))};
        const plan_request q = plan_request_from_json(j, k_upload_fields);
        const model_loader load = body_loader(j, q, o);
        return {200, "application/json", render(make_plan(q, load))};
    } catch (const http_error & e) {
        return api_error(e.status, e.what());
    } catch (const error & e) {
        return api_error(400, e.what());
    } catch (const std::exception & e) {
        return api_error(500, fmt::format("internal error: {}", e.what())); // the CLI says the same
    }
}

} // namespace

api_response api_error(int status, std::string message) {
    // Messages quote the offending value; a megabyte of it helps nobody.
    if (message.size() > 2000) message = message.substr(0, 2000) + "...";
    return {status, "application/json", json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
}

std::optional<api_response> check_content_type(std::string_view content_type, std::string_view body) {
    std::string type(content_type.substr(0, content_type.find(';')));
    for (char & c : type) c = char(std::tolower(static_cast<unsigned char>(c)));
    while (!type.empty() && type.back() == ' ') type.pop_back();
    const size_t first = body.find_first_not_of(" \t\r\n");
    const bool looks_json = first != std::string_view::npos && (body[first] == '{' || body[first] == '[');
    static const std::string how = "send the JSON document itself as the body, e.g. curl -d '{\"model\": \"Qwen3.5-9B\"}' "
                                   "or curl -H 'Content-Type: application/json' --data-binary @body.json";
    if (type == "multipart/form-data") {
        return api_error(415, "request: multipart/form-data (curl -F) is not read; " + how);
    }
    if (type == "application/x-www-form-urlencoded" && !looks_json && body.find('=') != std::string_view::npos) {
        return api_error(415, "request: the body holds form fields, not JSON; " + how);
    }
    return std::nullopt; // JSON whatever the label: curl -d says x-www-form-urlencoded, fetch() may say text/plain
}

api_response handle_plan(std::string_view body, const server_options & o) {
    return with_plan(body, o, [](const plan_result & r) { return render_json(r); }, true);
}

api_response handle_chart(std::string_view body, const server_options & o) {
    return with_plan(body, o, [](const plan_result & r) {
        return fmt::format("{{\"chart\":{},\"compare\":{}}}\n", render_chart_json(make_chart_series(r)),
                           render_chart_json(make_compare_series(r)));
    });
}

std::string models_json() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto & e : catalog()) out.push_back({{"name", e.name}, {"hf_id", e.hf_id}});
    return out.dump() + "\n";
}

std::string runtimes_json() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto & rt : runtimes()) {
        nlohmann::ordered_json flags = nlohmann::ordered_json::array();
        for (const auto & f : rt.flags()) {
            static const char * types[] = {"text", "count", "size", "fraction", "boolean", "list"};
            // the same table the CLI, exec and the hints read (runtime.h flag_spec): every spelling, the value's
            // name in --help, the shared setting it sets, and the engine's own name where kvfit's flag is not it
            nlohmann::ordered_json alternates = nlohmann::ordered_json::array();
            for (const auto a : f.alternates) alternates.push_back(a);
            flags.push_back({{"name", f.json_name()}, {"flag", f.name}, {"alias", f.alias}, {"help", f.help},
                             {"type", types[size_t(f.type)]}, {"metavar", f.value_name()}, {"alternates", alternates},
                             {"setting", flag_setting_name(f.setting)}, {"engine_name", f.engine_name}});
        }
        out.push_back({{"name", rt.name}, {"display", rt.display}, {"summary", rt.summary},
                       {"context_flag", rt.context.flag}, {"flags", flags}});
    }
    return out.dump() + "\n";
}

std::string gpus_json() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto & g : gpu_table()) {
        out.push_back({{"name", g.name}, {"vendor", g.vendor}, {"arch", g.arch}, {"memory_bytes", g.memory_bytes},
                       {"marketed_gb", g.marketed_gb}, {"reported_bytes", g.reported_bytes},
                       {"reported_source", g.reported_source}, {"runtime_bytes", g.runtime_bytes},
                       {"runtime_source", g.runtime_source}, {"bandwidth_bytes_per_s", g.bandwidth_bytes_per_s},
                       {"source", g.source}});
        // a Mac's memory_bytes is its unified RAM; what llama.cpp, Ollama and MLX budget is the working set (metal.h)
        if (g.vendor == "Apple") out.back()["working_set_bytes"] = metal_working_set_bytes(g.memory_bytes);
    }
    return out.dump() + "\n";
}

} // namespace kvfit
