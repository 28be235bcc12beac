// Every row of the architecture table (src/sources/arch_table.cpp), as llama.cpp's tests/test-llama-archs.cpp
// iterates every architecture: each row builds a model_desc from a minimal config.json (its first `architectures`
// class and model_type, the keys its layout needs) and from a minimal GGUF header of its general.architecture
// (tests/support/gguf_fixture.h), and the two agree on every layer's kind and caches and carry the row's arch_facts.
// The config and the header are generated from the row's typed columns (layout, period, recurrent family, MLA,
// kv_from_start, flags), never from its name, so a new row is covered the day it is added. Plus: no runtime looks an
// architecture up by name (a grep of src/runtimes).
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/sources.h"
#include "sources/arch.h"
#include "support/gguf_fixture.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

using kvfit::gguf_wvalue;
using kvfit::detail::arch_row;
using kvfit::detail::gguf_layout;
using kvfit::recurrent_kind;

// The minimal model: 4 query heads, 2 KV heads of 64, n_embd 256; recurrent mixers of 4 heads x 32.
constexpr uint32_t k_heads = 4, k_kv = 2, k_dim = 64, k_window = 1024;

// Layer kinds, one letter each (F full, S swa, C chunked, M mla, R recurrent, N none), as test_gguf_model.cpp.
std::string kinds(const kvfit::model_desc & m) {
    std::string s;
    for (uint32_t il = 0; il < m.n_layer; ++il) s += "FSCMRN"[int(m.kind_of(il))];
    return s;
}

std::vector<std::string> words(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// The row's config.json names: its first class (a word with an upper-case letter) and first model_type (none).
std::pair<std::string, std::string> hf_names(const arch_row & r) {
    std::string cls, type;
    for (const auto & w : words(r.hf_names)) {
        const bool upper = std::any_of(w.begin(), w.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
        if (upper && cls.empty()) cls = w;
        if (!upper && type.empty()) type = w;
    }
    return {cls, type};
}

// True when the config.json source reads no layer of this family from a config: a recurrent family its layout rules
// have no mixer for (Mamba-1, LFM2 short conv, RWKV), a model of recurrent layers only, or attention and a Mamba mixer
// in one layer (falcon-h1): src/sources/hf_layout.cpp refuses them by name, the GGUF of such a model is planned.
bool config_refused(const arch_row & r) {
    return r.layout == gguf_layout::all_recurrent || r.layout == gguf_layout::parallel_hybrid ||
           r.rec == recurrent_kind::mamba1 || r.rec == recurrent_kind::short_conv || r.rec == recurrent_kind::rwkv;
}

uint32_t layers_of(const arch_row & r) {
    if (r.kv_from_start > 0) return r.kv_from_start + 4; // gemma3n: 4 layers past n_layer_kv_from_start
    return std::max<uint32_t>(8, 2 * r.period);
}

// Which layers are attention in a hybrid: every 4th (il 3, 7, ...), as the interval rows' default.
bool hybrid_attention(uint32_t il, uint32_t period) { return (il + 1) % (period > 0 ? period : 4) == 0; }

struct generated {
    nlohmann::json cfg;
    kvfit::gguf_writer gguf;
};

// The config.json and GGUF header of a minimal model of row `r`, from its typed columns.
generated minimal_model(const arch_row & r) {
    const uint32_t n = layers_of(r);
    const auto [cls, type] = hf_names(r);
    const std::string a(r.gguf_arch);
    nlohmann::json c = {{"num_hidden_layers", n}, {"hidden_size", 256}, {"vocab_size", 512},
                        {"max_position_embeddings", 8192}, {"num_attention_heads", k_heads},
                        {"num_key_value_heads", k_kv}, {"head_dim", k_dim}, {"intermediate_size", 512}};
    if (!cls.empty()) c["architectures"] = {cls};
    if (!type.empty()) c["model_type"] = type;
    kvfit::gguf_writer w = kvfit::test::model_writer(a, n);
    w.add(a + ".attention.head_count", gguf_wvalue::u32(k_heads));
    w.add(a + ".attention.key_length", gguf_wvalue::u32(k_dim));
    w.add(a + ".attention.value_length", gguf_wvalue::u32(k_dim));
    // per-layer KV heads: 0 on the recurrent (or FFN-only) layers of the per-layer-key hybrids
    std::vector<uint32_t> kv(n, k_kv);
    const bool kv_hybrid = r.layout == gguf_layout::kv_or_recurrent || r.layout == gguf_layout::nemotron_h;
    for (uint32_t il = 0; il < n && kv_hybrid; ++il) kv[il] = hybrid_attention(il, r.period) ? k_kv : 0;
    w.add(a + ".attention.head_count_kv", gguf_wvalue::array_u32(kv));
    if (r.layout != gguf_layout::nemotron_h) w.add(a + ".feed_forward_length", gguf_wvalue::u32(512));

    // the recurrent family's keys, both spellings (llama.cpp's GGUF keys, the HF config's)
    auto ssm_gguf = [&](uint32_t inner, uint32_t state, uint32_t groups, uint32_t heads) {
        w.add(a + ".ssm.conv_kernel", gguf_wvalue::u32(4));
        w.add(a + ".ssm.inner_size", gguf_wvalue::u32(inner));
        w.add(a + ".ssm.state_size", gguf_wvalue::u32(state));
        w.add(a + ".ssm.group_count", gguf_wvalue::u32(groups));
        w.add(a + ".ssm.time_step_rank", gguf_wvalue::u32(heads));
    };
    switch (r.rec) {
    case recurrent_kind::gated_deltanet: // conversion/qwen.py Qwen3NextModel: inner H_v * D_v, groups H_k, state D_k
        c.update({{"linear_num_key_heads", 2}, {"linear_key_head_dim", 32}, {"linear_num_value_heads", 4},
                  {"linear_value_head_dim", 32}, {"linear_conv_kernel_dim", 4}});
        ssm_gguf(4 * 32, 32, 2, 4);
        break;
    case recurrent_kind::mamba2: // conversion/nemotron.py, granite: mamba_num_heads x mamba_head_dim
        c.update({{"mamba_num_heads", 4}, {"mamba_head_dim", 32}, {"ssm_state_size", 16}, {"n_groups", 1},
                  {"conv_kernel", 4}});
        ssm_gguf(4 * 32, 16, 1, 4);
        break;
    case recurrent_kind::kda: // conversion/kimi_linear.py: linear_attn_config, kda.head_dim
        c["linear_attn_config"] = {{"num_heads", k_heads}, {"head_dim", 32}, {"short_conv_kernel_size", 4}};
        w.add(a + ".kda.head_dim", gguf_wvalue::u32(32));
        w.add(a + ".ssm.conv_kernel", gguf_wvalue::u32(4));
        break;
    case recurrent_kind::mamba1: // JambaConfig / MambaConfig keys
        c.update({{"mamba_d_state", 16}, {"mamba_d_conv", 4}, {"mamba_expand", 2}, {"state_size", 16}});
        ssm_gguf(512, 16, 0, 16);
        break;
    case recurrent_kind::short_conv: // Lfm2Config: conv_L_cache; GGUF shortconv.l_cache
        c["conv_L_cache"] = 3;
        w.add(a + ".shortconv.l_cache", gguf_wvalue::u32(3));
        break;
    case recurrent_kind::rwkv: // Rwkv7Config head_size
        c["head_size"] = 64;
        w.add(a + ".wkv.head_size", gguf_wvalue::u32(64));
        break;
    case recurrent_kind::lightning: // MiniMax lightning: num_attention_heads x head_dim (models/minimax-01.cpp)
    case recurrent_kind::none: break;
    }

    switch (r.layout) {
    case gguf_layout::attention: break;
    case gguf_layout::swa_period:
    case gguf_layout::swa_dense_first: {
        // transformers' layer_types (Gemma2/3Config, GptOssConfig, Cohere2Config: sliding iff (il + 1) % p != 0;
        // LagunaConfig: the first of each period full)
        nlohmann::json types = nlohmann::json::array();
        for (uint32_t il = 0; il < n; ++il) {
            const bool slide = r.layout == gguf_layout::swa_dense_first ? il % r.period != 0 : (il + 1) % r.period != 0;
            types.push_back(slide ? "sliding_attention" : "full_attention");
        }
        c["layer_types"] = types;
        c["sliding_window"] = k_window;
        w.add(a + ".attention.sliding_window", gguf_wvalue::u32(k_window));
        break;
    }
    case gguf_layout::chunked_period: // Llama4TextConfig: chunked on RoPE layers, NoPE every 4th
        c["attention_chunk_size"] = r.facts.n_chunk_fixed;
        break;
    case gguf_layout::interval:
        c["full_attention_interval"] = r.period;
        w.add(a + ".full_attention_interval", gguf_wvalue::u32(r.period));
        break;
    case gguf_layout::kv_or_recurrent: {
        if (r.rec == recurrent_kind::kda) { // full_attn_layers 1-based (conversion/kimi_k3.py)
            nlohmann::json full = nlohmann::json::array();
            for (uint32_t il = 0; il < n; ++il) {
                if (hybrid_attention(il, r.period)) full.push_back(il + 1);
            }
            c["linear_attn_config"]["full_attn_layers"] = full;
        } else if (r.rec == recurrent_kind::mamba2) { // GraniteMoeHybridConfig layer_types
            nlohmann::json types = nlohmann::json::array();
            for (uint32_t il = 0; il < n; ++il) types.push_back(hybrid_attention(il, r.period) ? "full_attention" : "mamba");
            c["layer_types"] = types;
        } else if (r.rec == recurrent_kind::short_conv) { // Lfm2Config layer_types
            nlohmann::json types = nlohmann::json::array();
            for (uint32_t il = 0; il < n; ++il) types.push_back(hybrid_attention(il, r.period) ? "full_attention" : "conv");
            c["layer_types"] = types;
        } else { // JambaConfig attn_layer_period / offset
            c.update({{"attn_layer_period", 4}, {"attn_layer_offset", 3}});
        }
        break;
    }
    case gguf_layout::nemotron_h: { // hybrid_override_pattern: M Mamba2, * attention, - MLP
        std::string pattern;
        std::vector<uint32_t> ff(n);
        for (uint32_t il = 0; il < n; ++il) {
            pattern += hybrid_attention(il, 0) ? '*' : il % 2 == 0 ? 'M' : '-';
            ff[il] = pattern.back() == '-' ? 512 : 0;
        }
        c["hybrid_override_pattern"] = pattern;
        w.add(a + ".feed_forward_length", gguf_wvalue::array_u32(ff));
        break;
    }
    case gguf_layout::all_recurrent: // MambaConfig, Mamba2Config, Rwkv7Config: no attention heads
        c.erase("num_attention_heads");
        c.erase("num_key_value_heads");
        break;
    case gguf_layout::all_swa: { // DeepSeek-V4: compress_ratios 0 / 4 / 128, one K-only window head per layer
        nlohmann::json ratios = nlohmann::json::array();
        std::vector<uint32_t> rs;
        for (uint32_t il = 0; il < n; ++il) {
            rs.push_back(il < 2 ? 0 : il % 2 == 0 ? 4 : 128);
            ratios.push_back(rs.back());
        }
        c.update({{"compress_ratios", ratios}, {"sliding_window", 128}, {"index_head_dim", 64}, {"index_n_heads", 4},
                  {"q_lora_rank", 96}});
        w.add(a + ".attention.compress_ratios", gguf_wvalue::array_u32(rs));
        w.add(a + ".attention.sliding_window", gguf_wvalue::u32(128));
        w.add(a + ".attention.indexer.key_length", gguf_wvalue::u32(64));
        break;
    }
    case gguf_layout::parallel_hybrid: // FalconH1Config: attention and Mamba2 in every layer
        c.update({{"mamba_d_ssm", 128}, {"mamba_d_state", 16}, {"mamba_n_heads", 4}, {"mamba_d_conv", 4}});
        break;
    }
    if (r.kv_from_start > 0) c["num_kv_shared_layers"] = n - r.kv_from_start;
    if (r.mla) { // DeepseekV3Config: kv_lora_rank + qk_rope_head_dim cached; GGUF key_length_mla = nope + rope
        c.update({{"kv_lora_rank", 64}, {"qk_rope_head_dim", 16}, {"qk_nope_head_dim", 32}, {"v_head_dim", 32},
                  {"q_lora_rank", 96}});
        w.add(a + ".attention.kv_lora_rank", gguf_wvalue::u32(64));
        w.add(a + ".rope.dimension_count", gguf_wvalue::u32(16));
        w.add(a + ".attention.key_length_mla", gguf_wvalue::u32(48));
        w.add(a + ".attention.value_length_mla", gguf_wvalue::u32(32));
        w.add(a + ".attention.q_lora_rank", gguf_wvalue::u32(96));
    }
    if (r.flags.index_sparse) { // MiniMax-M3 MSA: an indexer on the layers after the leading dense blocks
        c["sparse_attention_config"] = {{"sparse_index_dim", 64}, {"sparse_num_index_heads", 2}, {"sparse_topk_blocks", 16}};
        nlohmann::json freq = nlohmann::json::array();
        for (uint32_t il = 0; il < n; ++il) freq.push_back(il < 2 ? 0 : 1);
        c["moe_layer_freq"] = freq;
        w.add(a + ".attention.indexer.key_length", gguf_wvalue::u32(64));
        w.add(a + ".leading_dense_block_count", gguf_wvalue::u32(2));
    }
    return {c, w};
}

std::string row_name(const arch_row & r) { return fmt::format("{} ({})", r.gguf_arch, hf_names(r).first); }

TEST(arch_rows, every_row_reads_alike_from_a_config_and_a_gguf_header) {
    const auto & rows = kvfit::detail::arch_rows();
    ASSERT_GE(rows.size(), 50u);
    size_t compared = 0, refused = 0;
    for (const arch_row & r : rows) {
        SCOPED_TRACE(row_name(r));
        generated g = minimal_model(r);
        kvfit::warnings gw;
        const std::string header = g.gguf.header();
        kvfit::model_desc from_gguf;
        try {
            from_gguf = kvfit::model_from_gguf(std::vector{kvfit::gguf_file::parse(header, std::string(r.gguf_arch) + ".gguf")}, gw);
        } catch (const kvfit::error & e) {
            ADD_FAILURE() << e.what();
            continue;
        }
        // the GGUF side holds the layout the row describes (so two readers that both lost it cannot agree by accident)
        const std::string k = kinds(from_gguf);
        EXPECT_EQ(from_gguf.gguf_architecture, r.gguf_arch);
        EXPECT_EQ(from_gguf.arch, r.facts);
        EXPECT_EQ(k.find_first_not_of("FSCMRN"), std::string::npos) << k;
        if (r.layout == gguf_layout::swa_period || r.layout == gguf_layout::swa_dense_first || r.layout == gguf_layout::all_swa) {
            EXPECT_NE(k.find('S'), std::string::npos) << k;
        }
        if (r.layout == gguf_layout::chunked_period) {
            EXPECT_NE(k.find('C'), std::string::npos) << k;
        }
        if (r.rec != recurrent_kind::none && r.layout != gguf_layout::parallel_hybrid) {
            EXPECT_NE(k.find('R'), std::string::npos) << k;
        }
        if (r.rec != recurrent_kind::none) {
            EXPECT_GT(from_gguf.n_embd_r() + from_gguf.n_embd_s(), 0u);
        }
        if (r.mla) {
            EXPECT_NE(k.find('M'), std::string::npos) << k;
        }
        if (r.kv_from_start > 0) {
            EXPECT_EQ(k.substr(r.kv_from_start), "NNNN");
        }

        kvfit::warnings cw;
        const std::string text = g.cfg.dump();
        if (config_refused(r)) {
            // a clear refusal naming the config, never a plan of the wrong layers
            try {
                (void)kvfit::model_from_hf_config(text, "config.json", cw);
                ADD_FAILURE() << "config.json planned: " << text;
            } catch (const kvfit::error & e) {
                EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
            }
            ++refused;
            continue;
        }
        kvfit::model_desc from_cfg;
        try {
            from_cfg = kvfit::model_from_hf_config(text, "config.json", cw);
        } catch (const kvfit::error & e) {
            ADD_FAILURE() << e.what() << "\n" << text;
            continue;
        }
        EXPECT_EQ(from_cfg.gguf_architecture, r.gguf_arch);
        EXPECT_EQ(from_cfg.arch, r.facts);
        EXPECT_EQ(from_cfg.n_layer, from_gguf.n_layer);
        EXPECT_EQ(kinds(from_cfg), k);
        ASSERT_EQ(from_cfg.caches.size(), from_gguf.caches.size());
        for (uint32_t il = 0; il < from_gguf.n_layer; ++il) {
            EXPECT_EQ(from_cfg.caches[il], from_gguf.caches[il]) << "layer " << il;
        }
        ++compared;
    }
    EXPECT_EQ(compared + refused, rows.size());
    EXPECT_GE(compared, 40u); // the families a config.json plans are compared, not skipped
}

// model_desc::arch is the row of the GGUF architecture: rows that share one (llama: Llama, Mistral, Mixtral;
// deepseek2: DeepSeek-V2/V3, GLM-4.7-Flash) must agree on its facts, or set_arch_facts would depend on row order.
TEST(arch_rows, rows_of_one_gguf_architecture_share_its_facts) {
    const auto & rows = kvfit::detail::arch_rows();
    for (const arch_row & r : rows) {
        const arch_row * first = kvfit::detail::find_arch_gguf(r.gguf_arch);
        ASSERT_NE(first, nullptr) << r.gguf_arch;
        EXPECT_EQ(first->facts, r.facts) << row_name(r);
    }
    // and the facts are those of llama.cpp: e.g. llm_arch_supports_rs_rollback's list (llama-arch.cpp:1112-1127)
    for (const char * a : {"qwen35", "qwen35moe", "qwen4exp", "deepseek4", "nemotron_h", "nemotron_h_moe", "lfm2", "lfm2moe", "kimi-k3"}) {
        EXPECT_TRUE(kvfit::detail::find_arch_gguf(a)->facts.rs_rollback) << a;
    }
    EXPECT_FALSE(kvfit::detail::find_arch_gguf("qwen3next")->facts.rs_rollback);
    EXPECT_EQ(kvfit::detail::find_arch_gguf("llama4")->facts.n_chunk_fixed, 8192u); // models/llama4.cpp n_swa = 8192
}

// An architecture kvfit has no row for carries no facts, whichever source read it.
TEST(arch_rows, an_unknown_architecture_has_no_facts) {
    kvfit::gguf_writer w = kvfit::test::model_writer("zz-unknown", 2);
    w.add("zz-unknown.attention.head_count", gguf_wvalue::u32(4));
    kvfit::warnings warn;
    const std::string header = w.header();
    const auto m = kvfit::model_from_gguf(std::vector{kvfit::gguf_file::parse(header, "zz.gguf")}, warn);
    EXPECT_EQ(m.arch, kvfit::arch_facts{});
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_NE(warn[0].find("unknown architecture 'zz-unknown'"), std::string::npos) << warn[0];
}

// Runtime policies read model_desc only (docs/adding-an-architecture.md): no file under src/runtimes looks an
// architecture up in the table or includes it.
TEST(arch_rows, no_runtime_looks_an_architecture_up_by_name) {
    namespace fs = std::filesystem;
    const fs::path root = fs::path(KVFIT_SOURCE_DIR) / "src" / "runtimes";
    ASSERT_TRUE(fs::is_directory(root)) << root;
    size_t files = 0;
    for (const auto & e : fs::recursive_directory_iterator(root)) {
        if (!e.is_regular_file()) continue;
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string text = ss.str();
        ++files;
        for (const char * banned : {"find_arch_gguf", "find_arch_hf", "arch_rows(", "arch_row", "sources/arch.h"}) {
            EXPECT_EQ(text.find(banned), std::string::npos) << e.path().string() << " uses " << banned;
        }
    }
    EXPECT_GT(files, 20u);
}

} // namespace
