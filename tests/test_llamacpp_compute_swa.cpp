// The compute-buffer model against the measured conformance rows of the 2026 window / MoE architectures (gemma4,
// mimo2, step35, minimax-m2, gpt-oss-120b): tests/data/llamacpp_compute_swa.csv, how measured in
// tests/data/llamacpp_compute_swa.md. Each row is checked to the byte unless its tag has a known miss (tolerances
// below, each explained in src/runtimes/llamacpp/compute_swa.cpp / compute_stages.cpp).
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

namespace {

const std::string k_syn_gguf = std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/";

// Known misses, percent of the measured buffer (worst measured + margin); 0 = byte-exact.
double tolerance_pct(const std::string & tag) {
    static const std::map<std::string, double> known = {
        // output stage with h_nextn: with 3 sequences at ub 256 (T 258) h_nextn sits one block higher than the
        // stage puts it (gemma4 -1.7 %, measured); the KV-shared variant's non-FA output with its longer freed
        // input hole (-2.0 %); mimo2 --swa-full without FA: the last layer's kq one E higher (-1.8 %); MiniMax-M2.5
        // (stages_dense, not this file's set) with the real vocabulary, 3 sequences (+1.5 %); step35 q8_0 with 3
        // sequences (the rotation inputs, < 0.01 %); mimo2 real vocabulary, q8_0, 3 sequences (+0.02 %: 32 KiB, the rotation
        // matrices counted under the logits)
        {"gemma4-26b-a4b_v262144", 2.0}, {"gemma4-kvshared12_v262144", 2.5}, {"gemma4-kvshared12_v512", 2.0},
        {"gemma4-26b-a4b_v512", 2.0},    {"mimo2-v2-flash_v512", 2.0},        {"mimo2-v2-flash-trunk_v512", 2.0},
        {"minimax-m2.5_v200064", 2.0},   {"mimo2-v2-flash_v152576", 0.05},    {"mimo2-v2-flash-trunk_v152576", 0.05},   {"step35-3.7-flash_v128896", 0.1},   {"step35-3.7-flash-mtp_v128896", 0.1},
    };
    if (auto it = known.find(tag); it != known.end()) return it->second;
    return 0.0;
}

struct row {
    std::string tag;
    kvfit::llamacpp_settings s;
    uint64_t compute_bytes = 0;
};

std::vector<row> read_rows() {
    std::ifstream in(std::string(KVFIT_TEST_DATA) + "/llamacpp_compute_swa.csv");
    std::string line;
    std::vector<row> rows;
    std::getline(in, line); // set,tag,n_ctx,n_seq,fa,type_k,type_v,ub,swa_full,unified,compute_bytes
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> c;
        std::stringstream ss(line);
        for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
        if (c.size() != 11) continue;
        row r;
        r.tag = c[1];
        r.s.n_ctx = std::stoull(c[2]);
        r.s.n_seq = uint32_t(std::stoul(c[3]));
        r.s.flash_attn = c[4] == "1" ? kvfit::flash_attn_mode::on : kvfit::flash_attn_mode::off;
        r.s.type_k = kvfit::ggml_type_from_name(c[5]);
        r.s.type_v = kvfit::ggml_type_from_name(c[6]);
        r.s.n_batch = r.s.n_ubatch = uint32_t(std::stoul(c[7]));
        r.s.swa_full = c[8] == "1";
        r.s.kv_unified = c[9] == "1";
        r.compute_bytes = std::stoull(c[10]);
        rows.push_back(std::move(r));
    }
    return rows;
}

// tag "<id>_v<n_vocab>": the header-only GGUF <id>_v512.gguf with n_vocab set (the logits width is all the
// vocabulary changes in the graph)
const kvfit::model_desc & model(const std::string & tag) {
    static std::map<std::string, kvfit::model_desc> cache;
    if (auto it = cache.find(tag); it != cache.end()) return it->second;
    const size_t v = tag.rfind("_v");
    const std::string id = tag.substr(0, v);
    const uint32_t n_vocab = uint32_t(std::stoul(tag.substr(v + 2)));
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::model_from_gguf(k_syn_gguf + id + "_v512.gguf", warn);
    m.n_vocab = n_vocab;
    return cache[tag] = m;
}

TEST(llamacpp_compute_swa, measured_rows) {
    const auto rows = read_rows();
    ASSERT_GT(rows.size(), 500u);
    struct stat { size_t n = 0, exact = 0; double worst = 0; std::string where; };
    std::map<std::string, stat> per;
    for (const auto & r : rows) {
        const auto & m = model(r.tag);
        const auto c = kvfit::llamacpp_context_size(m, r.s);
        const uint64_t got = kvfit::llamacpp_compute_bytes(m, r.s, c);
        const double pct = 100.0 * (double(got) - double(r.compute_bytes)) / double(r.compute_bytes);
        const std::string where = fmt::format("{} ctx {} seq {} fa {} {}/{} ub {} swa_full {}", r.tag, r.s.n_ctx, r.s.n_seq,
                                              r.s.flash_attn == kvfit::flash_attn_mode::on, kvfit::ggml_traits(r.s.type_k).name,
                                              kvfit::ggml_traits(r.s.type_v).name, r.s.n_ubatch, r.s.swa_full);
        const double tol = tolerance_pct(r.tag);
        if (tol == 0) {
            EXPECT_EQ(got, r.compute_bytes) << where << ": difference " << int64_t(got - r.compute_bytes);
        } else {
            EXPECT_LE(std::abs(pct), tol) << where << ": expected " << r.compute_bytes << " got " << got;
        }
        auto & st = per[r.tag];
        ++st.n;
        st.exact += got == r.compute_bytes;
        if (std::abs(pct) >= std::abs(st.worst)) st.worst = pct, st.where = where;
    }
    for (const auto & [key, st] : per) {
        fmt::print("compute {:<34} rows {:4} exact {:4} worst {:+.4f} %{}\n", key, st.n, st.exact, st.worst,
                   st.exact == st.n ? "" : " (" + st.where + ")");
    }
}

} // namespace
