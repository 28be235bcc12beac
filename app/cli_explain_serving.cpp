// `kvfit explain LOG` for a vLLM, SGLang, Ollama or mlx-lm log (include/kvfit/serving_log.h): the engine is told by the log's
// own lines; the model is -m MODEL or the one the log names; --gpu and --assume KEY=VALUE give what the log does not
// print. The llama.cpp path (cli_exec.cpp run_explain) is taken for every other log.
#include "cli_exec.h"

#include "kvfit/error.h"
#include "kvfit/plan.h"
#include "kvfit/printable.h"
#include "kvfit/serving_log.h"
#include "kvfit/sources.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace kvfit::cli {

std::ifstream open_log_file(const std::string & path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw error(fmt::format("{}: no such file", path));
    if (!std::filesystem::is_regular_file(path, ec)) throw error(fmt::format("{}: not a regular file", path));
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size > (256ull << 20)) throw error(fmt::format("{}: a log over 256 MiB is not read", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error(fmt::format("{}: cannot open", path));
    return in;
}

bool is_serving_log_file(const std::string & path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return false;
    std::ifstream in(path, std::ios::binary);
    std::string head(4u << 20, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
    serving_engine e{};
    return detect_serving_engine(head, e);
}

int run_explain_serving(const std::string & path, const std::string & model_spec, const serving_inputs & inputs) {
    std::ifstream in = open_log_file(path);
    const serving_log log = parse_serving_log(in);
    const std::string spec = model_spec.empty() ? log.model : model_spec;
    if (spec.empty()) throw error(fmt::format("{}: the {} log names no model; pass -m MODEL", path, serving_engine_name(log.engine)));
    warnings warn;
    model_desc m;
    try {
        m = load_model(spec, warn);
    } catch (const error & x) {
        if (!model_spec.empty()) throw;
        throw error(fmt::format("{}: the log's model '{}' cannot be read here ({}); pass -m MODEL", path, spec, x.what()));
    }
    const runtime_info & rt = find_runtime(serving_engine_runtime(log.engine));
    apply_request_weights(m, plan_request{}, rt, warn);
    for (const auto & w : warn) fmt::print(stderr, "kvfit: warning: {}\n", kvfit::printable(w, false));
    const explanation e = explain_serving_log(log, m, inputs);
    fmt::print("{}", render_serving_explanation(log, m, e));
    return e.differences == 0 ? 0 : 1;
}

} // namespace kvfit::cli
