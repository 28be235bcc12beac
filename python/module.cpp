// kvfit._kvfit: the library behind the Python package kvfit (python/kvfit/__init__.py). Plans go through the same
// make_plan and render_json as the CLI's --json, so kvfit.plan(model, **settings) is that document; settings are
// read by plan_request_from_json (the POST /v1/plan reader: the long flags' JSON names), and every kvfit::error
// becomes kvfit.Error carrying the CLI's one-line message.
#include "kvfit/kvfit.h"

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <string>

namespace py = pybind11;

namespace {

// plan_request_from_json speaks of a request body; here the fields are keyword arguments.
std::string as_setting_message(std::string m) {
    for (const auto & [from, to] : {std::pair<std::string, std::string>{"request: unknown field ", "unknown setting "},
                                    {"request: field ", "setting "}}) {
        if (m.starts_with(from)) return to + m.substr(from.size());
    }
    return m;
}

std::vector<kvfit::device_spec> parse_gpus(const std::string & gpu) {
    if (gpu != "auto") return kvfit::parse_gpu_list(gpu);
    return kvfit::devices_from_detection(kvfit::detect_gpus());
}

// model: as the CLI's MODEL (catalog name, path, hf:org/name); settings_json: the keyword arguments as a JSON object.
std::string plan_json(const std::string & model, const std::string & settings_json) {
    nlohmann::json body = nlohmann::json::parse(settings_json);
    if (body.contains("model")) throw kvfit::error("setting 'model': give the model as plan()'s first argument");
    kvfit::plan_request q;
    try {
        q = kvfit::plan_request_from_json(body);
    } catch (const kvfit::error & e) {
        throw kvfit::error(as_setting_message(e.what()));
    }
    q.model = model.empty() ? std::string(kvfit::default_model_name()) : model;
    const kvfit::plan_result r =
        kvfit::make_plan(q, [&](kvfit::warnings & warn) { return kvfit::load_model(q.model, warn); }, parse_gpus);
    return kvfit::render_json(r);
}

// models_json: plan_set()'s list (names, or dicts of one model's own settings); settings_json: every model's settings.
std::string plan_set_json(const std::string & models_json, const std::string & settings_json) {
    nlohmann::json body = nlohmann::json::parse(settings_json);
    if (body.contains("models")) throw kvfit::error("setting 'models': give the models as plan_set()'s first argument");
    body["models"] = nlohmann::json::parse(models_json);
    kvfit::set_request q;
    try {
        q = kvfit::set_request_from_json(std::move(body));
    } catch (const kvfit::error & e) {
        throw kvfit::error(as_setting_message(e.what()));
    }
    const kvfit::set_result s = kvfit::plan_set(
        q, [&](size_t i, kvfit::warnings & warn) { return kvfit::load_model(q.members[i].model, warn); }, parse_gpus);
    return kvfit::render_set_json(s);
}

std::string models_json() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto & e : kvfit::catalog()) out.push_back({{"name", e.name}, {"hf_id", e.hf_id}});
    return out.dump();
}

std::string gpus_json() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto & g : kvfit::gpu_table()) {
        out.push_back({{"name", g.name}, {"vendor", g.vendor}, {"arch", g.arch}, {"memory_bytes", g.memory_bytes},
                       {"marketed_gb", g.marketed_gb}, {"reported_bytes", g.reported_bytes},
                       {"reported_source", g.reported_source}, {"runtime_bytes", g.runtime_bytes},
                       {"runtime_source", g.runtime_source},
                       {"compute_capability", g.compute_capability}, {"bandwidth_bytes_per_s", g.bandwidth_bytes_per_s},
                       {"fp16_flops_per_s", g.fp16_flops_per_s}, {"aliases", g.aliases}, {"source", g.source}});
    }
    return out.dump();
}

} // namespace

PYBIND11_MODULE(_kvfit, m) {
    m.doc() = "kvfit: does this LLM, at this context length, fit my GPUs (the C++ library; use the kvfit package)";
    static py::exception<kvfit::error> error_type(m, "Error", PyExc_ValueError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const kvfit::error & e) {
            error_type(e.what());
        } catch (const nlohmann::json::exception & e) {
            error_type(e.what());
        }
    });
    m.attr("__version__") = kvfit::version;
    m.def("plan_json", &plan_json, py::arg("model"), py::arg("settings_json"), py::call_guard<py::gil_scoped_release>());
    m.def("plan_set_json", &plan_set_json, py::arg("models_json"), py::arg("settings_json"),
          py::call_guard<py::gil_scoped_release>());
    m.def("models_json", &models_json);
    m.def("gpus_json", &gpus_json);
}
