// The GPU table (data/gpus.csv), name lookups and the `--gpu` list parser (src/planner/gpus.cpp).
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "planner/gpu_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

constexpr uint64_t GiB = 1ull << 30;

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
    ASSERT_GE(table.size(), 50u);
    for (const auto & g : table) {
        SCOPED_TRACE(g.name);
        EXPECT_FALSE(g.source.empty());
        EXPECT_FALSE(g.vendor.empty());
        EXPECT_FALSE(g.arch.empty());
        EXPECT_GT(g.memory_bytes, 0u);
        EXPECT_EQ(g.memory_bytes % GiB, 0u);
        EXPECT_GT(g.bandwidth_bytes_per_s, 0u);
        EXPECT_GT(g.fp16_flops_per_s, 0.0);
        if (g.vendor == "NVIDIA") {
            EXPECT_GT(g.compute_capability, 0.0);
        } else {
            EXPECT_EQ(g.compute_capability, 0.0);
        }
        // Sanity bounds that catch a unit slip (GiB vs MiB, GB/s vs TB/s, TFLOPS vs GFLOPS).
        EXPECT_LE(g.memory_bytes, 512 * GiB);
        EXPECT_GE(g.bandwidth_bytes_per_s, 100e9);
        EXPECT_LE(g.bandwidth_bytes_per_s, 10e12);
        EXPECT_GE(g.fp16_flops_per_s, 5e12);
        EXPECT_LE(g.fp16_flops_per_s, 5e15);
    }
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

// Malformed tables: each row of this table must be rejected with this message.
TEST(gpus, malformed_tables_are_rejected) {
    const std::string header =
        "name,aliases,vendor,arch,compute_capability,memory_gib,memory_bandwidth_gbs,fp16_tflops_dense,source,notes\n";
    struct bad_case { const char * what; std::string csv; const char * msg; };
    const bad_case cases[] = {
        {"no header", "", "t.csv: empty table"},
        {"wrong header", "name,vendor\n", "t.csv: line 1: expected header 'name,aliases,vendor,arch,compute_capability,"
                                          "memory_gib,memory_bandwidth_gbs,fp16_tflops_dense,source,notes'"},
        {"short row", header + "X,,NVIDIA,Ada,8.9,8,272,30\n", "t.csv: line 2: 8 fields, expected 10"},
        {"no source", header + "X,,NVIDIA,Ada,8.9,8,272,30,,\n", "t.csv: line 2: 'X': empty source"},
        {"zero memory", header + "X,,NVIDIA,Ada,8.9,0,272,30,s,\n", "t.csv: line 2: memory_gib '0': must be positive"},
        {"negative bw", header + "X,,NVIDIA,Ada,8.9,8,-1,30,s,\n", "t.csv: line 2: memory_bandwidth_gbs '-1': must be positive"},
        {"text number", header + "X,,NVIDIA,Ada,8.9,8,272,fast,s,\n", "t.csv: line 2: fp16_tflops_dense 'fast': expected a number"},
        {"half GiB", header + "X,,NVIDIA,Ada,8.9,7.5,272,30,s,\n", "t.csv: line 2: memory_gib '7.5': expected a whole number of GiB"},
        {"nvidia no cc", header + "X,,NVIDIA,Ada,,8,272,30,s,\n", "t.csv: line 2: 'X': NVIDIA row needs a compute_capability"},
        {"open quote", header + "X,,NVIDIA,Ada,8.9,8,272,30,\"s,\n", "t.csv: line 2: unterminated quote"},
        {"duplicate alias", header + "X,x1,NVIDIA,Ada,8.9,8,272,30,s,\nY,X-1,NVIDIA,Ada,8.9,8,272,30,s,\n",
         "t.csv: line 3: 'Y': 'X-1' already names 'X'"},
    };
    for (const auto & c : cases) {
        SCOPED_TRACE(c.what);
        expect_error([&] { kvfit::detail::parse_gpu_csv(c.csv, "t.csv"); }, c.msg);
    }
}

TEST(gpus, quoted_fields_and_units) {
    const auto rows = kvfit::detail::parse_gpu_csv(
        "name,aliases,vendor,arch,compute_capability,memory_gib,memory_bandwidth_gbs,fp16_tflops_dense,source,notes\n"
        "X,a;b,NVIDIA,Ada,8.9,16,716.8,97.5,\"Whitepaper, p.1 \"\"Table\"\"\",n\n",
        "t.csv");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].source, "Whitepaper, p.1 \"Table\"");
    EXPECT_EQ(rows[0].aliases, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(rows[0].memory_bytes, 16 * GiB);
    EXPECT_EQ(rows[0].bandwidth_bytes_per_s, 716800000000u);
    EXPECT_EQ(rows[0].fp16_flops_per_s, 97.5e12);
}

// --- lookups ------------------------------------------------------------------------------------------------

TEST(gpus, find_by_name_alias_and_nvidia_smi_name) {
    struct row { const char * query; const char * name; uint64_t memory_gib; double bandwidth_gbs; };
    const row rows[] = {
        {"RTX 4060", "RTX 4060", 8, 272},
        {"rtx-4060", "RTX 4060", 8, 272},
        {"NVIDIA GeForce RTX 4060", "RTX 4060", 8, 272},
        {"4090", "RTX 4090", 24, 1008},
        {"RTX 4060 Ti", "RTX 4060 Ti 8GB", 8, 288},
        {"4060 ti 16gb", "RTX 4060 Ti 16GB", 16, 288},
        {"RTX 3080", "RTX 3080 10GB", 10, 760},
        {"H100", "H100 SXM", 80, 3350},
        {"NVIDIA H100 80GB HBM3", "H100 SXM", 80, 3350},
        {"h100 pcie", "H100 PCIe", 80, 2000},
        {"A100", "A100 80GB SXM", 80, 2039},
        {"NVIDIA A100-SXM4-40GB", "A100 40GB SXM", 40, 1555},
        {"Tesla T4", "T4", 16, 320},
        {"H200", "H200", 141, 4800},
        {"AMD Instinct MI300X", "MI300X", 192, 5300},
        {"m3 ultra 512gb", "M3 Ultra 512GB", 512, 819},
    };
    for (const auto & r : rows) {
        const kvfit::gpu_info * g = kvfit::find_gpu(r.query);
        ASSERT_NE(g, nullptr) << r.query;
        EXPECT_EQ(g->name, r.name) << r.query;
        EXPECT_EQ(g->memory_bytes, r.memory_gib * GiB) << r.query;
        EXPECT_EQ(g->bandwidth_bytes_per_s, uint64_t(r.bandwidth_gbs * 1e9)) << r.query;
    }
    EXPECT_EQ(kvfit::find_gpu("RTX 9999"), nullptr);
    EXPECT_EQ(kvfit::find_gpu("M3 Ultra"), nullptr); // Apple chips have no default configuration
    EXPECT_EQ(kvfit::find_gpu(""), nullptr);
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
    EXPECT_TRUE(same(kvfit::parse_gpu_list("2xH100"), devices{{"H100 SXM", 80 * GiB}, {"H100 SXM", 80 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("RTX 4090,24GiB"), devices{{"RTX 4090", 24 * GiB}, {"GPU1", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("4090"), devices{{"RTX 4090", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("24GiB"), devices{{"GPU0", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list("2x24GiB"), devices{{"GPU0", 24 * GiB}, {"GPU1", 24 * GiB}}));
    EXPECT_TRUE(same(kvfit::parse_gpu_list(" RTX 3060 , 1x rtx 4060 "), devices{{"RTX 3060 12GB", 12 * GiB}, {"RTX 4060", 8 * GiB}}));
    const auto eight = kvfit::parse_gpu_list("8x H100 SXM");
    ASSERT_EQ(eight.size(), 8u);
    for (const auto & d : eight) EXPECT_EQ(d.memory_bytes, 80 * GiB);
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
        {"40xH100,30xA100", "gpu '40xH100,30xA100': more than 64 devices"},
        {"2x", "gpu '2x': expected a GPU name or size after the count"},
        {"H100,,H100", "gpu 'H100,,H100': empty entry"},
        {"", "gpu '': empty entry"},
        {"0GiB", "gpu '0GiB': device memory must be positive"},
        {"-8GiB", "gpu '-8GiB': device memory must be positive"},
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
        EXPECT_NE(std::string(e.what()).find("unknown unit 'qb'"), std::string::npos) << e.what();
    }
}

} // namespace
