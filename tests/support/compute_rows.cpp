#include "support/compute_rows.h"

#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/sources.h"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

namespace kvfit::test {

std::vector<compute_row> read_compute_rows(const std::string & csv) {
    std::ifstream in(csv);
    EXPECT_TRUE(in.good()) << csv;
    std::vector<compute_row> rows;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#' || line.rfind("set,", 0) == 0 || line.rfind("release,", 0) == 0) continue;
        std::vector<std::string> c;
        std::stringstream ss(line);
        for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
        if (c.size() != 10 && c.size() != 11) {
            ADD_FAILURE() << csv << ": " << c.size() << " cells: " << line;
            continue;
        }
        compute_row r;
        r.set = c[0];
        r.tag = c[1];
        if (r.set == "5b4ebc5" || r.set == "v0.5.0") r.s.release = parse_llamacpp_release(r.set);
        r.s.n_ctx = std::stoull(c[2]);
        r.s.n_seq = uint32_t(std::stoul(c[3]));
        r.s.flash_attn = c[4] == "1" ? flash_attn_mode::on : flash_attn_mode::off;
        r.s.type_k = ggml_type_from_name(c[5]);
        r.s.type_v = ggml_type_from_name(c[6]);
        r.s.n_batch = r.s.n_ubatch = uint32_t(std::stoul(c[7]));
        r.s.swa_full = c[8] == "1";
        if (c.size() == 11) {
            r.s.kv_unified = c[9] == "1";
            r.bytes = std::stoull(c[10]);
        } else {
            r.mib = std::stod(c[9]);
        }
        rows.push_back(std::move(r));
    }
    return rows;
}

vocab_tag split_vocab_tag(const std::string & tag) {
    const auto v = tag.rfind("_v");
    if (v == std::string::npos || v + 2 >= tag.size() ||
        tag.find_first_not_of("0123456789", v + 2) != std::string::npos) {
        return {tag, 0};
    }
    return {tag.substr(0, v), uint32_t(std::stoul(tag.substr(v + 2)))};
}

const model_desc & vocab_model(const std::string & dir, const std::string & tag) {
    static std::map<std::string, model_desc> cache;
    const std::string key = dir + "\n" + tag;
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    const vocab_tag t = split_vocab_tag(tag);
    warnings warn;
    model_desc m = model_from_gguf(dir + "/" + t.id + "_v512.gguf", warn);
    if (t.n_vocab != 0) m.n_vocab = t.n_vocab;
    return cache.emplace(key, std::move(m)).first->second;
}

size_t replay_compute_rows(const std::vector<compute_row> & rows, const replay_rules & rules) {
    struct stat { size_t n = 0, exact = 0; double worst = 0; std::string where; };
    std::map<std::string, stat> per;
    for (const auto & r : rows) {
        const model_desc & m = rules.model(r);
        const uint64_t got = llamacpp_compute_bytes(m, r.s, llamacpp_context_size(m, r.s));
        const double measured = r.bytes != 0 ? double(r.bytes) : r.mib * 1048576.0;
        const double pct = 100.0 * (double(got) - measured) / measured;
        const std::string where =
            fmt::format("{} {} ctx {} seq {} fa {} {}/{} ub {} swa_full {} unified {}", r.set, r.tag, r.s.n_ctx, r.s.n_seq,
                        r.s.flash_attn == flash_attn_mode::on, ggml_traits(r.s.type_k).name,
                        ggml_traits(r.s.type_v).name, r.s.n_ubatch, r.s.swa_full, r.s.kv_unified);
        const double tol = rules.tolerance_pct(r);
        const bool exact = r.bytes != 0 ? got == r.bytes : std::abs(double(got) / 1048576.0 - r.mib) <= 0.005;
        if (tol != 0) {
            EXPECT_LE(std::abs(pct), tol) << where << ": measured " << measured << " got " << got;
        } else if (r.bytes != 0) {
            EXPECT_EQ(got, r.bytes) << where << ": difference " << int64_t(got - r.bytes);
        } else {
            EXPECT_NEAR(double(got) / 1048576.0, r.mib, rules.mib_slack(r)) << where;
        }
        auto & st = per[rules.group(r)];
        ++st.n;
        st.exact += exact;
        if (std::abs(pct) >= std::abs(st.worst)) st.worst = pct, st.where = where;
    }
    for (const auto & [key, st] : per) {
        fmt::print("compute {:<40} rows {:4} exact {:4} worst {:+.4f} %{}\n", key, st.n, st.exact, st.worst,
                   st.exact == st.n ? "" : " (" + st.where + ")");
    }
    return rows.size();
}

} // namespace kvfit::test
