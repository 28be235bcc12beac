// `kvfit --list --gpu ...` (include/kvfit/ranking.h): the catalog ranked for an 8 GiB and an 80 GiB GPU against
// golden rows (tests/data/list/), every row equal to the planner's own plan of that model, the filters, and the
// catalog's lookups (every ../shared config present, typos, hf: suggestions).
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/plan.h"
#include "kvfit/ranking.h"
#include "kvfit/sources.h"

#include "support/files.h"
#include "support/run_cli.h"

#include <cctype>
#include <cstdlib>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using kvfit::test::run_kvfit;

const std::string k_golden = std::string(KVFIT_TEST_DATA) + "/list/";

// KVFIT_UPDATE_GOLDEN=1 rewrites the golden files (review the diff before committing).
void expect_golden(const std::string & file, const std::string & got) {
    if (std::getenv("KVFIT_UPDATE_GOLDEN")) std::ofstream(k_golden + file, std::ios::binary) << got;
    EXPECT_EQ(got, kvfit::test::read_text(k_golden + file)) << "golden " << file;
}

kvfit::machine gpu(const std::string & spec) { return kvfit::machine{kvfit::parse_gpu_list(spec)}; }

// Done-when: the ranking for an 8 GiB and an 80 GiB GPU, golden rows.
TEST(ranking, catalog_on_8_and_80_gib_golden) {
    for (const std::string size : {"8GiB", "80GiB"}) {
        const auto r = run_kvfit("--list --gpu " + size);
        ASSERT_EQ(r.status, 0) << r.err;
        expect_golden("catalog-" + size + ".txt", r.out);
    }
}

// Every row is the planner's figure: the largest context of plan_model's max_context at the row's weights and cache
// type, the training context when capped, and for a model that does not fit the deficit of its smallest plan.
TEST(ranking, rows_are_the_planners_own_figures) {
    const kvfit::runtime_info & rt = kvfit::find_runtime("llama.cpp");
    for (const std::string size : {"8GiB", "80GiB"}) {
        const kvfit::machine mc = gpu(size);
        kvfit::rank_settings s;
        const auto rows = kvfit::rank_models(kvfit::catalog_candidates(), mc, s);
        ASSERT_EQ(rows.size(), kvfit::catalog().size());
        size_t fitting = 0;
        for (const auto & row : rows) {
            if (!row.error.empty()) continue;
            kvfit::warnings warn;
            kvfit::model_desc m = kvfit::model_from_catalog(*kvfit::find_catalog(row.name), warn);
            kvfit::apply_weight_format(m, row.weights, true);
            kvfit::flag_values f;
            f.set("cache_type_k", row.cache_type);
            f.set("cache_type_v", row.cache_type);
            if (row.fits) {
                ++fitting;
                const auto r = kvfit::plan_model(rt, m, {}, f, mc);
                uint64_t ctx = 0;
                for (const auto & l : r.plan.max_context) {
                    if (!l.all_full_attention && l.cache_type == row.cache_type) ctx = l.context_tokens;
                }
                EXPECT_EQ(row.context_tokens, ctx) << size << " " << row.name;
                EXPECT_EQ(row.context_capped, ctx == m.n_ctx_train) << size << " " << row.name;
                EXPECT_GE(row.context_tokens, row.target_context) << row.name;
                EXPECT_TRUE(row.decode_tokens_per_s.has_value()) << row.name;
            } else {
                f.set("ctx_size", std::to_string(row.target_context));
                const auto p = rt.plan(m, f, mc);
                EXPECT_FALSE(p.fits) << row.name;
                EXPECT_EQ(int64_t(row.short_bytes), -p.devices[0].free_bytes()) << size << " " << row.name;
                EXPECT_EQ(row.weights, "q2_k") << row.name; // the smallest of the ladder
                EXPECT_EQ(row.cache_type, "q4_0") << row.name;
            }
        }
        EXPECT_GT(fitting, 0u) << size;
    }
}

// runtime_info::fits (the verdict the searches call) is plan(...).fits, for every catalog shape.
TEST(ranking, the_verdict_alone_equals_the_plans) {
    const kvfit::runtime_info & rt = kvfit::find_runtime("llama.cpp");
    ASSERT_NE(rt.fits, nullptr);
    size_t n = 0, fitting = 0;
    for (const auto & e : kvfit::catalog()) {
        kvfit::warnings warn;
        kvfit::model_desc m = kvfit::model_from_catalog(e, warn);
        if (m.n_params() == 0) continue;
        kvfit::apply_weight_format(m, "q4_k_m", true);
        for (const std::string gpus : {"8GiB", "24GiB", "80GiB", "2x24GiB"}) {
            for (const uint64_t ctx : {uint64_t(4096), uint64_t(32768), m.n_ctx_train}) {
                for (const std::string type : {"f16", "q8_0"}) {
                    kvfit::flag_values f;
                    f.set("ctx_size", std::to_string(ctx));
                    f.set("cache_type_k", type);
                    f.set("cache_type_v", type);
                    const kvfit::machine mc = gpu(gpus);
                    const bool want = rt.plan(m, f, mc).fits;
                    EXPECT_EQ(rt.fits(m, f, mc), want) << e.name << " " << gpus << " " << ctx << " " << type;
                    ++n;
                    fitting += want;
                }
            }
        }
    }
    EXPECT_GT(n, 500u);
    EXPECT_GT(fitting, 100u);
}

TEST(ranking, filters_and_the_target_context) {
    auto names = [](const std::string & args) {
        const auto r = run_kvfit("--list --gpu 24GiB --json " + args);
        EXPECT_EQ(r.status, 0) << r.err;
        std::vector<nlohmann::json> rows;
        const auto doc = nlohmann::json::parse(r.out);
        for (const auto & row : doc["models"]) rows.push_back(row);
        return rows;
    };
    const auto qwen = names("qwen");
    ASSERT_FALSE(qwen.empty());
    for (const auto & row : qwen) {
        const std::string n = row["name"].get<std::string>() + row["hf_id"].get<std::string>();
        EXPECT_TRUE(n.find("Qwen") != std::string::npos || n.find("qwen") != std::string::npos) << n;
    }
    for (const auto & row : names("--family llama")) EXPECT_EQ(row["family"], "llama") << row["name"];
    const auto mid = names("--min-params 20B --max-params 40B");
    ASSERT_FALSE(mid.empty());
    for (const auto & row : mid) {
        EXPECT_GE(row["parameter_count"].get<uint64_t>(), 20000000000ull) << row["name"];
        EXPECT_LE(row["parameter_count"].get<uint64_t>(), 40000000000ull) << row["name"];
    }
    for (const auto & row : names("--min-context 200000")) EXPECT_GE(row["n_ctx_train"].get<uint64_t>(), 200000u) << row["name"];
    // -c sets the context each choice must reach; --weights fixes the format
    for (const auto & row : names("Llama-3.1 -c 32768 --weights q4_k_m")) {
        EXPECT_EQ(row["target_context"], 32768);
        EXPECT_EQ(row["weights"], "q4_k_m");
        EXPECT_TRUE(row["fits"].get<bool>());
    }
    const auto bad = run_kvfit("--list --gpu 24GiB --min-params 7X");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--min-params '7X': expected a parameter count like 7B, 500M or 8030261248"), std::string::npos) << bad.err;
    EXPECT_EQ(kvfit::parse_param_count("p", "1.5b"), 1500000000u);
    EXPECT_EQ(kvfit::parse_param_count("p", "500M"), 500000000u);
}

TEST(ranking, other_runtimes_through_the_same_interface) {
    const auto r = run_kvfit("--list --gpu 80GiB --runtime vllm --json gpt-oss");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["runtime"], "vllm");
    ASSERT_EQ(j["models"].size(), 2u);
    for (const auto & row : j["models"]) EXPECT_TRUE(row["decode_tokens_per_s"].is_null()) << row.dump(); // speed.h is llama.cpp's
}

// The catalog holds every config of ../shared/configs, found by name or Hugging Face id in any case.
TEST(catalog, every_shared_config_is_in_the_catalog) {
    size_t n = 0;
    for (const auto & f : fs::directory_iterator(std::string(KVFIT_SHARED_DIR) + "/configs")) {
        const std::string file = f.path().filename().string();
        const size_t sep = file.find("__");
        if (sep == std::string::npos || !file.ends_with(".json")) continue;
        ++n;
        const std::string id = file.substr(0, sep) + "/" + file.substr(sep + 2, file.size() - sep - 7);
        const kvfit::catalog_entry * e = kvfit::find_catalog(id);
        ASSERT_NE(e, nullptr) << id;
        EXPECT_EQ(e->config_json, kvfit::test::read_text(f.path().string())) << id;
        std::string upper = id;
        for (char & c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
        EXPECT_EQ(kvfit::find_catalog(upper), e) << upper;
        EXPECT_EQ(kvfit::find_catalog(e->name), e);
    }
    EXPECT_GE(n, 24u);
}

TEST(catalog, typos_get_the_closest_names_and_repositories_the_hf_spelling) {
    EXPECT_EQ(kvfit::closest_catalog_names("qwen3-8", 3), (std::vector<std::string>{"Qwen3-8B"}));
    EXPECT_EQ(kvfit::closest_catalog_names("Mixtral-8x7B", 1), (std::vector<std::string>{"Mixtral-8x7B-v0.1"}));
    EXPECT_EQ(kvfit::closest_catalog_names("lama-2-7b-hf", 1), (std::vector<std::string>{"Llama-2-7b-hf"}));
    EXPECT_EQ(kvfit::closest_catalog_names("Qwen3.5-9", 1), (std::vector<std::string>{"Qwen3.5-9B"}));
    EXPECT_TRUE(kvfit::closest_catalog_names("zzzzzzzzzzzzzz", 3).empty());
    const auto typo = run_kvfit("Qwen3-8C --gpu 8GiB");
    EXPECT_EQ(typo.status, 2);
    EXPECT_EQ(typo.err, "kvfit: Qwen3-8C: no such file or catalog model (closest: Qwen3-8B)\n");
    const auto repo = run_kvfit("someone/Some-Model-7B");
    EXPECT_EQ(repo.status, 2);
    EXPECT_NE(repo.err.find("a Hugging Face repository: hf:someone/Some-Model-7B)"), std::string::npos) << repo.err;
}

} // namespace
