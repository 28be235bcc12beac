// The compute-buffer model against the measured conformance rows of the 2026 window / MoE architectures (gemma4,
// mimo2, step35, minimax-m2, gpt-oss-120b): tests/data/llamacpp_compute_swa.csv, how measured in
// tests/data/llamacpp_compute_swa.md. Each row is checked to the byte unless its tag has a known miss (tolerances
// below, each explained in src/runtimes/llamacpp/compute_swa.cpp / compute_stages.cpp).
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "support/compute_rows.h"

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

TEST(llamacpp_compute_swa, measured_rows) {
    const auto rows = kvfit::test::read_compute_rows(std::string(KVFIT_TEST_DATA) + "/llamacpp_compute_swa.csv");
    ASSERT_GT(rows.size(), 500u);
    kvfit::test::replay_rules rules;
    rules.model = [](const kvfit::test::compute_row & r) -> const kvfit::model_desc & {
        return kvfit::test::vocab_model(k_syn_gguf, r.tag);
    };
    rules.tolerance_pct = [](const kvfit::test::compute_row & r) { return tolerance_pct(r.tag); };
    kvfit::test::replay_compute_rows(rows, rules);
}

} // namespace
