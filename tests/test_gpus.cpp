// The GPU table (data/gpus.csv), name lookups and the `--gpu` list parser (src/planner/gpus.cpp).
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "planner/gpu_table.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

constexpr uint64_t GiB = 1ull << 30;
constexpr uint64_t MiB = 1ull << 20;

// Expect kvfit::error whose message equals `msg` exactly.
template <class F> void expect_error(F && f, const std::string & msg) {
    try {
        f();
        ADD_FAILURE() << "no kvfit::error, expected: " << msg;
    } catch (const kvfit::error & e) {
        EXPECT_EQ(std::string(e.what()), msg);
    }
}

// --- table integrity ----------------------------------------------------------------------------------------

TEST(gpus, table_parses_and_every_row_is_complete) {
    const auto & table = kvfit::gpu_table(); // throws on a malformed row
    ASSERT_GE(table.size(), 100u);
    for (const auto & g : table) {
        SCOPED_TRACE(g.name);
        EXPECT_FALSE(g.source.empty());
        EXPECT_FALSE(g.vendor.empty());
        EXPECT_FALSE(g.arch.empty());
        EXPECT_GT(g.memory_bytes, 0u);
        EXPECT_EQ(g.memory_bytes % MiB, 0u);
        EXPECT_GT(g.bandwidth_bytes_per_s, 0u);
        EXPECT_GT(g.fp16_flops_per_s, 0.0);
        if (g.vendor == "NVIDIA") {
            EXPECT_GT(g.compute_capability, 0.0);
        } else {
            EXPECT_EQ(g.compute_capability, 0.0);
        }
        // The driver reports a little less than the marketed size, never more than as many GiB, never below 90% of
        // as many GB (the B300 sold as 288 GB reports 275,040 MiB); CUDA sees at most the driver's total.
        const double marketed = double(g.marketed_gb);
        EXPECT_LE(g.reported_bytes, uint64_t(g.marketed_gb) << 30);
        EXPECT_GE(double(g.reported_bytes), 0.9 * marketed * 1e9);
        if (g.vendor == "Apple") {
            // unified memory: hw.memsize is the marketed GB read as GiB; Metal's budget is the working set (metal.h)
            EXPECT_EQ(g.reported_bytes, uint64_t(g.marketed_gb) << 30);
            EXPECT_EQ(g.runtime_bytes, 0u);
            EXPECT_EQ(g.memory_bytes, g.reported_bytes);
        } else {
            EXPECT_EQ(g.memory_bytes, g.runtime_bytes);
            EXPECT_LE(g.runtime_bytes, g.reported_bytes);
            EXPECT_GE(double(g.runtime_bytes), 0.93 * double(g.reported_bytes));
        }
        // Sanity bounds that catch a unit slip (GiB vs MiB, GB/s vs TB/s, TFLOPS vs GFLOPS).
        EXPECT_LE(g.memory_bytes, 512 * GiB);
        EXPECT_GE(g.bandwidth_bytes_per_s, 60e9);
        EXPECT_LE(g.bandwidth_bytes_per_s, 10e12);
        EXPECT_GE(g.fp16_flops_per_s, 2e12);
        EXPECT_LE(g.fp16_flops_per_s, 5e15);
    }
}

// Issue 25 item 1: every figure of memory the planner uses names where it comes from. A published figure cites the log
// it was read from (an issue, a code index file, or hw.memsize on a Mac); a figure without one says "estimate:" and
// gives the sibling figure it was derived from (a number in MiB or GiB). Read from the table as parsed, row by row.
TEST(gpus, every_row_sources_its_reported_and_runtime_memory) {
    auto cites = [](const std::string & s) {
        const bool issue = std::regex_search(s, std::regex("#[0-9]+"));
        return issue || s.find("code index file") != std::string::npos || s.find("hw.memsize") != std::string::npos;
    };
    auto derives = [](const std::string & s) { return std::regex_search(s, std::regex("[0-9.]+ (MiB|GiB)")); };
    size_t published = 0, estimated = 0;
    for (const auto & g : kvfit::gpu_table()) {
        SCOPED_TRACE(g.name);
        ASSERT_FALSE(g.reported_source.empty());
        EXPECT_EQ(g.reported_estimate, g.reported_source.starts_with("estimate:"));
        EXPECT_TRUE(g.reported_estimate ? derives(g.reported_source) || cites(g.reported_source) : cites(g.reported_source))
            << g.reported_source;
        if (g.vendor == "Apple") {
            EXPECT_TRUE(g.runtime_source.empty());
            continue;
        }
        ASSERT_FALSE(g.runtime_source.empty());
        EXPECT_EQ(g.runtime_estimate, g.runtime_source.starts_with("estimate:"));
        EXPECT_TRUE(g.runtime_estimate ? derives(g.runtime_source) || cites(g.runtime_source) : cites(g.runtime_source))
            << g.runtime_source;
        (g.runtime_estimate ? estimated : published) += 1;
    }
    EXPECT_GE(published, 12u); // the CUDA totals read from logs (the rest are estimates, labelled)
    EXPECT_GT(estimated, 0u);
}

TEST(gpus, names_and_aliases_are_unique_and_find_their_row) {
    std::set<std::string> seen;
    for (const auto & g : kvfit::gpu_table()) {
        std::vector<std::string> keys{g.name};
        keys.insert(keys.end(), g.aliases.begin(), g.aliases.end());
        for (const auto & k : keys) {
            EXPECT_TRUE(seen.insert(kvfit::detail::normalize_gpu_name(k)).second) << "duplicate: " << k;
            const kvfit::gpu_info * found = kvfit::find_gpu(k);
            ASSERT_NE(found, nullptr) << k;
            EXPECT_EQ(found->name, g.name) << k;
        }
    }
}

// A family sold with several memory sizes has no name or alias of its own: find_gpu cannot pick one of its rows for a
// bare family name, and gpu_choices lists them. Checked over every name and alias of the table.
TEST(gpus, no_name_or_alias_picks_a_size_of_a_family) {
    std::map<std::string, std::set<uint32_t>> sizes;
    for (const auto & g : kvfit::gpu_table()) {
        std::vector<std::string> names = g.aliases;
        names.push_back(g.name);
        for (const auto & n : names) {
            for (const auto & k : kvfit::detail::gpu_family_keys(n)) sizes[k].insert(g.marketed_gb);
        }
    }
    size_t families = 0;
    for (const auto & [key, s] : sizes) {
        if (s.size() < 2) continue;
        ++families;
        EXPECT_EQ(kvfit::find_gpu(key), nullptr) << key << " names one size of a family sold in " << s.size();
        EXPECT_GE(kvfit::gpu_choices(key).size(), 2u) << key;
    }
    EXPECT_GE(families, 20u); // A100, V100, GH200, RTX 3050/3060/3080/4060 Ti/5060 Ti, every Apple chip
}

// Malformed tables: each row of this table must be rejected with this message.
TEST(gpus, malformed_tables_are_rejected) {
    const std::string header = "name,aliases,vendor,arch,compute_capability,marketed_gb,reported_mib,reported_source,"
                               "runtime_mib,runtime_source,memory_bandwidth_gbs,fp16_tflops_dense,source,notes\n";
    struct bad_case { const char * what; std::string csv; const char * msg; };
    const bad_case cases[] = {
        {"no header", "", "t.csv: empty table"},
        {"wrong header", "name,vendor\n", "t.csv: line 1: expected header 'name,aliases,vendor,arch,compute_capability,"
                                          "marketed_gb,reported_mib,reported_source,runtime_mib,runtime_source,"
                                          "memory_bandwidth_gbs,fp16_tflops_dense,source,notes'"},
        {"short row", header + "X,,NVIDIA,Ada,8.9,8,8188,r,7782,c,272,30\n", "t.csv: line 2: 12 fields, expected 14"},
        {"no source", header + "X,,NVIDIA,Ada,8.9,8,8188,r,7782,c,272,30,,\n", "t.csv: line 2: 'X': empty source"},
        {"zero memory", header + "X,,NVIDIA,Ada,8.9,0,8188,r,7782,c,272,30,s,\n", "t.csv: line 2: marketed_gb '0': must be positive"},
        {"negative bw", header + "X,,NVIDIA,Ada,8.9,8,8188,r,7782,c,-1,30,s,\n", "t.csv: line 2: memory_bandwidth_gbs '-1': must be positive"},
        {"text number", header + "X,,NVIDIA,Ada,8.9,8,8188,r,7782,c,272,fast,s,\n", "t.csv: line 2: fp16_tflops_dense 'fast': expected a number"},
        {"half MiB", header + "X,,NVIDIA,Ada,8.9,8,8188.5,r,7782,c,272,30,s,\n",
         "t.csv: line 2: reported_mib '8188.5': expected a whole number up to 8388608"},
        {"nvidia no cc", header + "X,,NVIDIA,Ada,,8,8188,r,7782,c,272,30,s,\n", "t.csv: line 2: 'X': NVIDIA row needs a compute_capability"},
        {"open quote", header + "X,,NVIDIA,Ada,8.9,8,8188,r,7782,c,272,30,\"s,\n", "t.csv: line 2: unterminated quote"},
        {"no reported source", header + "X,,NVIDIA,Ada,8.9,8,8188,,7782,c,272,30,s,\n", "t.csv: line 2: 'X': empty reported_source"},
        {"no runtime", header + "X,,NVIDIA,Ada,8.9,8,8188,r,,,272,30,s,\n",
         "t.csv: line 2: 'X': runtime_mib is missing (Metal budgets the working set from the unified memory; CUDA and HIP "
         "report a total)"},
        {"apple runtime", header + "M,,Apple,Apple M4,,16,16384,r,12000,c,120,4.6,s,\n",
         "t.csv: line 2: 'M': runtime_mib must be empty on an Apple row (Metal budgets the working set from the unified "
         "memory; CUDA and HIP report a total)"},
        {"runtime above driver", header + "X,,NVIDIA,Ada,8.9,8,8188,r,8190,c,272,30,s,\n",
         "t.csv: line 2: 'X': runtime_mib 8190 exceeds reported_mib 8188 (the driver's total includes what CUDA sees)"},
        {"duplicate alias", header + "X,x1,NVIDIA,Ada,8.9,8,8188,r,7782,c,272,30,s,\nY,X-1,NVIDIA,Ada,8.9,8,8188,r,7782,c,272,30,s,\n",
         "t.csv: line 3: 'Y': 'X-1' already names 'X'"},
    };
    for (const auto & c : cases) {
        SCOPED_TRACE(c.what);
        expect_error([&] { kvfit::detail::parse_gpu_csv(c.csv, "t.csv"); }, c.msg);
    }
}

TEST(gpus, quoted_fields_and_units) {
    const auto rows = kvfit::detail::parse_gpu_csv(
        "name,aliases,vendor,arch,compute_capability,marketed_gb,reported_mib,reported_source,runtime_mib,runtime_source,"
        "memory_bandwidth_gbs,fp16_tflops_dense,source,notes\n"
        "X,a;b,NVIDIA,Ada,8.9,16,16376,\"nvidia-smi, \"\"16376MiB\"\"\",15906,estimate: 470 MiB less,716.8,97.5,"
        "\"Whitepaper, p.1 \"\"Table\"\"\",n\n"
        "M,,Apple,Apple M4,,24,24576,hw.memsize,,,273,9.2,s,\n",
        "t.csv");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].source, "Whitepaper, p.1 \"Table\"");
    EXPECT_EQ(rows[0].reported_source, "nvidia-smi, \"16376MiB\"");
    EXPECT_EQ(rows[0].aliases, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(rows[0].marketed_gb, 16u);
    EXPECT_EQ(rows[0].reported_bytes, 16376 * MiB);
    EXPECT_FALSE(rows[0].reported_estimate);
    EXPECT_EQ(rows[0].runtime_bytes, 15906 * MiB);
    EXPECT_TRUE(rows[0].runtime_estimate);
    EXPECT_EQ(rows[0].memory_bytes, 15906 * MiB); // plans start from what CUDA reports
    EXPECT_EQ(rows[0].bandwidth_bytes_per_s, 716800000000u);
    EXPECT_EQ(rows[0].fp16_flops_per_s, 97.5e12);
    EXPECT_EQ(rows[1].memory_bytes, 24 * GiB); // a Mac: the unified memory (the working set is metal.h's)
    EXPECT_EQ(rows[1].runtime_bytes, 0u);
}

// --- lookups ------------------------------------------------------------------------------------------------

TEST(gpus, find_by_name_alias_and_nvidia_smi_name) {
    // memory: what CUDA reports (MiB), from data/gpus.csv
    struct row { const char * query; const char * name; uint64_t memory_mib; double bandwidth_gbs; };
    const row rows[] = {
        {"RTX 4060", "RTX 4060", 7782, 272},
        {"rtx-4060", "RTX 4060", 7782, 272},
        {"NVIDIA GeForce RTX 4060", "RTX 4060", 7782, 272},
        {"4090", "RTX 4090", 24077, 1008},
        {"4060 ti 16gb", "RTX 4060 Ti 16GB", 15906, 288},
        {"RTX 3080 10GB", "RTX 3080 10GB", 9830, 760},
        {"H100", "H100 SXM", 81082, 3350},
        {"NVIDIA H100 80GB HBM3", "H100 SXM", 81082, 3350},
        {"h100 pcie", "H100 PCIe", 81082, 2000},
        {"NVIDIA A100-SXM4-40GB", "A100 40GB SXM", 40325, 1555},
        {"NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 81049, 2039},
        {"Tesla T4", "T4", 14909, 320},
        {"L4", "L4", 22579, 300},
        {"H200", "H200", 143073, 4800},
        {"NVIDIA GH200 480GB", "GH200 96GB", 97394, 4000},
        {"AMD Instinct MI300X", "MI300X", 196288, 5300},
        {"m3 ultra 512gb", "M3 Ultra 512GB", 512 * 1024, 819},
        {"M4 Pro 24GB", "M4 Pro 24GB", 24 * 1024, 273},
        {"MacBook Air M2 16GB", "M2 16GB", 16 * 1024, 100},
    };
    for (const auto & r : rows) {
        const kvfit::gpu_info * g = kvfit::find_gpu(r.query);
        ASSERT_NE(g, nullptr) << r.query;
        EXPECT_EQ(g->name, r.name) << r.query;
        EXPECT_EQ(g->memory_bytes, r.memory_mib * MiB) << r.query;
        EXPECT_EQ(g->bandwidth_bytes_per_s, uint64_t(r.bandwidth_gbs * 1e9)) << r.query;
    }
    // Issue 25: the H100 is 81,559 MiB to nvidia-smi (vllm #55169) and 81,082 MiB to CUDA, sold as 80 GB
    const kvfit::gpu_info * h100 = kvfit::find_gpu("H100");
    EXPECT_EQ(h100->reported_bytes, 81559 * MiB);
    EXPECT_EQ(h100->marketed_gb, 80u);
    // the L4: 23,034 MiB in nvidia-smi; 22.05 GiB to CUDA (an estimate: the log does not name its GPU)
    const kvfit::gpu_info * l4 = kvfit::find_gpu("L4");
    EXPECT_EQ(l4->reported_bytes, 23034 * MiB);
    EXPECT_TRUE(l4->runtime_estimate);
    EXPECT_EQ(kvfit::find_gpu("RTX 9999"), nullptr);
    EXPECT_EQ(kvfit::find_gpu("M3 Ultra"), nullptr); // several memory sizes: gpu_choices lists them
    EXPECT_EQ(kvfit::find_gpu("A100"), nullptr);
    EXPECT_EQ(kvfit::find_gpu(""), nullptr);
}

// Issue 25 item 1: a name sold with several memory sizes asks which; one sold in one size is found.
// A trial's names: a size or form factor stated in another order than the row's name picks the row ("RTX 4090 24GB",
// "NVIDIA A100-PCIE-40GB", "H100 PCIe 80GB"); a family with its form but not its size is still "name one", listing
// the sizes; a size the family is not sold in says so with the family's rows ("M5 Max 36GB" was "name one" although a
// size was named; the M5 Max with 36 GB is not in the table).
TEST(gpus, a_stated_size_or_form_picks_the_row) {
    const std::pair<const char *, const char *> picks[] = {
        {"RTX 4090 24GB", "RTX 4090"}, {"A100 40GB PCIe", "A100 40GB PCIe"}, {"NVIDIA A100-PCIE-40GB", "A100 40GB PCIe"},
        {"A100 PCIe 80GB", "A100 80GB PCIe"}, {"H100 PCIe 80GB", "H100 PCIe"}, {"M4 Pro 24 GB", "M4 Pro 24GB"},
        {"RTX 3080 Ti", "RTX 3080 Ti"}, {"L40", "L40"},
    };
    for (const auto & [query, name] : picks) {
        const auto g = kvfit::parse_gpu_list(query);
        ASSERT_EQ(g.size(), 1u) << query;
        EXPECT_EQ(g[0].name, name) << query;
    }
    EXPECT_EQ(kvfit::parse_gpu_list("24 GiB")[0].memory_bytes, 24ull << 30); // a size as kvfit prints one
    const std::pair<const char *, const char *> refusals[] = {
        {"A100 PCIe", "gpu 'A100 PCIe': sold with several memory sizes, name one: A100 40GB PCIe, A100 80GB PCIe"},
        {"M5 Max 36GB", "gpu 'M5 Max 36GB': the GPU table has no M5 Max with 36 GB: it has M5 Max 48GB, M5 Max 64GB, "
                        "M5 Max 128GB"},
        {"RTX 4090 16GB", "gpu 'RTX 4090 16GB': the GPU table has no RTX 4090 with 16 GB: it has RTX 4090"},
    };
    for (const auto & [query, message] : refusals) {
        try {
            (void)kvfit::parse_gpu_list(query);
            ADD_FAILURE() << query << " accepted";
        } catch (const kvfit::error & e) {
            EXPECT_STREQ(e.what(), message);
        }
    }
}

TEST(gpus, ambiguous_names_list_their_choices) {
    auto names = [](std::string_view q) {
        std::vector<std::string> out;
        for (const kvfit::gpu_info * g : kvfit::gpu_choices(q)) out.push_back(g->name);
        return out;
    };
    using v = std::vector<std::string>;
    EXPECT_EQ(names("A100"), (v{"A100 40GB SXM", "A100 80GB SXM", "A100 40GB PCIe", "A100 80GB PCIe"}));
    EXPECT_EQ(names("NVIDIA A100 SXM4"), (v{"A100 40GB SXM", "A100 80GB SXM", "A100 40GB PCIe", "A100 80GB PCIe"}));
    EXPECT_EQ(names("V100"), (v{"V100 SXM2 32GB", "V100 16GB"}));
    EXPECT_EQ(names("Tesla V100-SXM2"), (v{"V100 SXM2 32GB", "V100 16GB"}));
    EXPECT_EQ(names("RTX 4060 Ti"), (v{"RTX 4060 Ti 8GB", "RTX 4060 Ti 16GB"}));
    EXPECT_EQ(names("4060 Ti"), (v{"RTX 4060 Ti 8GB", "RTX 4060 Ti 16GB"}));
    EXPECT_EQ(names("NVIDIA GeForce RTX 3060"), (v{"RTX 3060 12GB", "RTX 3060 8GB"}));
    EXPECT_EQ(names("RTX 3080"), (v{"RTX 3080 10GB", "RTX 3080 12GB"}));
    EXPECT_EQ(names("RTX 5060 Ti"), (v{"RTX 5060 Ti 16GB", "RTX 5060 Ti 8GB"}));
    EXPECT_EQ(names("GH200"), (v{"GH200 96GB", "GH200 144GB"}));
    EXPECT_EQ(names("M4 Pro"), (v{"M4 Pro 24GB", "M4 Pro 48GB", "M4 Pro 64GB"}));
    EXPECT_EQ(names("MacBook Air M2"), (v{"M2 8GB", "M2 16GB", "M2 24GB"}));
    EXPECT_EQ(names("M3 Ultra").size(), 3u);
    EXPECT_TRUE(names("H100").empty());   // a row's alias: the 80 GB SXM (the PCIe card has the same memory)
    EXPECT_TRUE(names("H100 NVL").empty());
    EXPECT_TRUE(names("RTX 9999").empty());
    EXPECT_TRUE(names("").empty());
}

TEST(gpus, family_keys) {
    using v = std::vector<std::string>;
    EXPECT_EQ(kvfit::detail::gpu_family_keys("A100 80GB PCIe"), (v{"a100"}));
    EXPECT_EQ(kvfit::detail::gpu_family_keys("RTX 3060 12GB"), (v{"rtx3060", "3060"}));
    EXPECT_EQ(kvfit::detail::gpu_family_keys("NVIDIA GH200 144G HBM3e"), (v{"gh200"}));
    EXPECT_EQ(kvfit::detail::gpu_family_keys("Tesla V100-SXM2-16GB"), (v{"teslav100"}));
    EXPECT_EQ(kvfit::detail::gpu_family_keys("H100 NVL"), (v{"h100nvl"}));
    EXPECT_EQ(kvfit::detail::gpu_family_keys("80GB"), (v{"80gb"})); // a lone size stays a name
    EXPECT_TRUE(kvfit::detail::gpu_family_keys("").empty());
}

TEST(gpus, memory_text_names_what_reports_it) {
    auto d = kvfit::parse_gpu_list("L4")[0];
    EXPECT_EQ(kvfit::gpu_memory_text(d), "22.05 GiB as CUDA reports it (estimate; nvidia-smi 23,034 MiB; marketed 24 GB)");
    EXPECT_EQ(kvfit::gpu_memory_text(kvfit::parse_gpu_list("H100")[0]),
              "79.18 GiB as CUDA reports it (nvidia-smi 81,559 MiB; marketed 80 GB)");
    EXPECT_EQ(kvfit::gpu_memory_text(kvfit::parse_gpu_list("MI300X")[0]),
              "191.69 GiB as HIP reports it (rocm-smi 196,288 MiB; marketed 192 GB)");
    d = kvfit::parse_gpu_list("M4 Max 64GB")[0];
    EXPECT_EQ(kvfit::gpu_memory_text(d), "64.00 GiB unified memory (marketed 64 GB)");
    d.memory_bytes = 48 * GiB, d.memory_is_working_set = true;
    EXPECT_EQ(kvfit::gpu_memory_text(d), "48.00 GiB Metal working set (64.00 GiB unified memory; marketed 64 GB)");
    EXPECT_EQ(kvfit::gpu_memory_text(kvfit::parse_gpu_list("24GiB")[0]), "24.00 GiB");
}

TEST(gpus, closest_names) {
    EXPECT_EQ(kvfit::closest_gpu_names("RTX 9999", 3), (std::vector<std::string>{"RTX 3090", "RTX 4090", "RTX 5090"}));
    EXPECT_EQ(kvfit::closest_gpu_names("H1OO", 1), (std::vector<std::string>{"H100 SXM"}));
    EXPECT_EQ(kvfit::closest_gpu_names("x", 0).size(), 0u);
}

// --- --gpu --------------------------------------------------------------------------------------------------

TEST(gpus, parse_gpu_list) {
    using devices = std::vector<kvfit::device_spec>;
    auto same = [](const devices & a, const devices & b) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i) {
            if (a[i].name != b[i].name || a[i].memory_bytes != b[i].memory_bytes) return false;
        }
        return true;
    };
    // a table name gives what CUDA reports (81,082 MiB for an H100 sold as 80 GB), with the driver's and the marketed
    // figures beside it; a size is taken as given
    EXPECT_TRUE(same(kvfit::parse_gpu_list("2xH100"), devices{{"H100 SXM", 81082 * MiB}, {"H100 SXM", 81082 * MiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("RTX 4090,24GiB"), devices{{"RTX 4090", 24077 * MiB}, {"GPU1", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("4090"), devices{{"RTX 4090", 24077 * MiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("24GiB"), devices{{"GPU0", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("2x24GiB"), devices{{"GPU0", 24 * GiB}, {"GPU1", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list(" RTX 3060 12GB , 1x rtx 4060 "),
                     devices{{"RTX 3060 12GB", 12042 * MiB}, {"RTX 4060", 7782 * MiB}}));
    const auto eight = kvfit::parse_gpu_list("8x H100 SXM");
    ASSERT_EQ(eight.size(), 8u);
    for (const auto & d : eight) {
        EXPECT_EQ(d.memory_bytes, 81082 * MiB);
        EXPECT_EQ(d.reported_bytes, 81559 * MiB);
        EXPECT_EQ(d.marketed_gb, 80u);
        EXPECT_FALSE(d.memory_estimate);
    }
    EXPECT_TRUE(kvfit::parse_gpu_list("L4")[0].memory_estimate);
    EXPECT_EQ(kvfit::parse_gpu_list("24GiB")[0].marketed_gb, 0u);
    EXPECT_EQ(kvfit::parse_gpu_list("64xL4").size(), 64u);
}

// parse_gpu_list reads a number with a unit ("24GiB") as a size without the table: no row may be spelled so, or --gpu
// would stop finding it. Every name and alias of the table still finds its own row through parse_gpu_list.
TEST(gpus, every_table_name_and_alias_is_found_by_parse_gpu_list) {
    size_t n = 0;
    for (const auto & g : kvfit::gpu_table()) {
        std::vector<std::string> names = g.aliases;
        names.push_back(g.name);
        for (const auto & name : names) {
            if (name.find(',') != std::string::npos) continue; // a comma separates devices in --gpu
            const auto d = kvfit::parse_gpu_list(name);
            ASSERT_EQ(d.size(), 1u) << name;
            EXPECT_EQ(d[0].name, g.name) << name;
            EXPECT_EQ(d[0].memory_bytes, g.memory_bytes) << name;
            ++n;
        }
    }
    EXPECT_GT(n, kvfit::gpu_table().size());
    // sizes with a unit are sizes; a bare number is a name first
    EXPECT_EQ(kvfit::parse_gpu_list("80GB")[0].memory_bytes, 80000000000u);
    EXPECT_EQ(kvfit::parse_gpu_list("4090")[0].name, "RTX 4090");
}

TEST(gpus, parse_gpu_list_errors) {
    struct bad { const char * text; const char * msg; };
    const bad cases[] = {
        {"RTX 9999", "gpu 'RTX 9999': unknown GPU (closest: RTX 3090, RTX 4090, RTX 5090)"},
        {"2xRTX 9999", "gpu '2xRTX 9999': unknown GPU (closest: RTX 3090, RTX 4090, RTX 5090)"},
        {"0xH100", "gpu '0xH100': device count 0 outside 1..64"},
        {"65xH100", "gpu '65xH100': device count 65 outside 1..64"},
        {"99999999999xH100", "gpu '99999999999xH100': device count outside 1..64"},
        {"40xH100,30xA100 80GB SXM", "gpu '40xH100,30xA100 80GB SXM': more than 64 devices"},
        {"2x", "gpu '2x': expected a GPU name or size after the count"},
        {"H100,,H100", "gpu 'H100,,H100': empty entry"},
        {"", "gpu '': empty entry"},
        {"0GiB", "gpu '0GiB': device memory must be positive"},
        {"-8GiB", "gpu '-8GiB': device memory must be positive"},
        // issue 25: a name sold with several memory sizes asks which, naming them
        {"A100", "gpu 'A100': sold with several memory sizes, name one: A100 40GB SXM, A100 80GB SXM, A100 40GB PCIe, A100 80GB PCIe"},
        {"2xV100", "gpu '2xV100': sold with several memory sizes, name one: V100 SXM2 32GB, V100 16GB"},
        {"RTX 4060 Ti", "gpu 'RTX 4060 Ti': sold with several memory sizes, name one: RTX 4060 Ti 8GB, RTX 4060 Ti 16GB"},
        {"M3 Ultra", "gpu 'M3 Ultra': sold with several memory sizes, name one: M3 Ultra 96GB, M3 Ultra 256GB, M3 Ultra 512GB"},
    };
    for (const auto & c : cases) {
        SCOPED_TRACE(c.text);
        expect_error([&] { kvfit::parse_gpu_list(c.text); }, c.msg);
    }
    // A malformed size keeps parse_size's reason and still offers names.
    try {
        kvfit::parse_gpu_list("24QB");
        ADD_FAILURE() << "no error for 24QB";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("gpu '24QB': not a known GPU (closest: "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("unknown unit 'QB'"), std::string::npos) << e.what();
    }
}

} // namespace
