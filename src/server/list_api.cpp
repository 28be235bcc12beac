// POST /v1/list (include/kvfit/server.h): the catalog ranked for the body's GPUs, the CLI's `--list --gpu ... --json`
// document byte for byte (include/kvfit/ranking.h). The server lists the catalog only (it reads no local store).
#include "sources/json_bounded.h"
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/plan.h"
#include "kvfit/ranking.h"
#include "kvfit/server.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {

api_response handle_list(std::string_view body) {
    try {
        const nlohmann::json j = detail::parse_json_bounded(body, "request", detail::request_json_limits);
        const std::vector<std::string> extra = {"name", "family", "min_params", "max_params", "min_context"};
        const plan_request q = plan_request_from_json(j, extra);
        if (!q.model.empty()) throw error("request: field 'model': /v1/list ranks the catalog; filter it with 'name'");
        if (q.gpu.empty()) throw error("request: field 'gpu' is required (the GPUs to rank the catalog for)");
        auto text = [&](const char * key) -> std::string {
            if (!j.contains(key)) return "";
            const auto & v = j[key];
            if (v.is_string()) return v.get<std::string>();
            if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
            throw error(fmt::format("request: field '{}': expected a string or a number", key));
        };
        rank_filter f;
        f.name = text("name");
        f.family = text("family");
        if (const std::string v = text("min_params"); !v.empty()) f.min_params = parse_param_count("min_params", v);
        if (const std::string v = text("max_params"); !v.empty()) f.max_params = parse_param_count("max_params", v);
        if (const std::string v = text("min_context"); !v.empty()) f.min_context = parse_flag_count("min_context", v, 1, 1ull << 40);
        rank_settings s;
        s.runtime = q.runtime;
        s.flags = q.flags;
        s.weights = q.weights;
        const machine mc{parse_gpu_list(q.gpu)};
        const auto rows = rank_models(catalog_candidates(), mc, s, f);
        return {200, "application/json", ranking_json(rows, mc, s).dump(2) + "\n"};
    } catch (const error & e) {
        return api_error(400, e.what());
    } catch (const std::exception & e) {
        return api_error(500, fmt::format("internal error: {}", e.what()));
    }
}

} // namespace kvfit
