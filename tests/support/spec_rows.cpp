#include "support/spec_rows.h"

#include <fstream>

namespace kvfit::test {

std::vector<nlohmann::json> spec_contexts(const std::string & file) {
    std::ifstream in(std::string(KVFIT_SOURCE_DIR) + "/tests/conformance/measured/" + file);
    std::vector<nlohmann::json> out;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(line);
        if (j.value("kind", "") == "context" && j.value("ok", false)) out.push_back(std::move(j));
    }
    return out;
}

uint64_t breakdown_bytes(const nlohmann::json & row, const char * column) {
    uint64_t n = 0;
    for (const auto & b : row["breakdown"]) n += b[column].get<uint64_t>();
    return n;
}

kvfit::llamacpp_settings spec_settings(const nlohmann::json & req, kvfit::llamacpp_release release) {
    kvfit::llamacpp_settings s;
    s.n_ctx = req["n_ctx"];
    s.n_seq = req.value("n_seq", 1);
    s.n_batch = req.value("n_batch", 2048);
    s.n_ubatch = req.value("n_ubatch", 512);
    s.flash_attn = req.value("fa", "on") == "off" ? kvfit::flash_attn_mode::off : kvfit::flash_attn_mode::on;
    s.type_k = s.type_v = kvfit::parse_cache_type_flag("-ctk", req.value("type_k", "f16"));
    s.release = release;
    return s;
}

} // namespace kvfit::test
