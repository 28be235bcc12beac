// The model's dimensions and layer signatures as format-2 graph templates name them (graph_replay.h: graph_dims,
// graph_layer_dims, graph_layer_sig). tools/graph_template/graph2.py reads the same names through kvfit-graph-dims
// when it fits a family's graph over several recorded shapes, so the two sides cannot disagree on a name.
#include "runtimes/llamacpp/graph_replay.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace kvfit::detail {

namespace {

/// One letter per cache kind, in caches order: F full, W window, C chunked, M latent, I indexer, Z compressed,
/// c conv state, s ssm state, p per-layer-embedding state.
char cache_letter(cache_kind k) {
    switch (k) {
    case cache_kind::full: return 'F';
    case cache_kind::window: return 'W';
    case cache_kind::chunked: return 'C';
    case cache_kind::latent: return 'M';
    case cache_kind::indexer: return 'I';
    case cache_kind::compressed: return 'Z';
    case cache_kind::conv_state: return 'c';
    case cache_kind::ssm_state: return 's';
    case cache_kind::ple_state: return 'p';
    }
    return '?';
}

/// A recurrent layer: a state cache and no attention cache. Its graph reads no attention head count or width, which
/// the sources spell differently (a GGUF's head_count covers every layer, a config.json gives a recurrent layer 0), so
/// neither its signature nor its dimensions carry them.
bool recurrent_only(const model_desc & m, uint32_t il) {
    bool state = false;
    for (const layer_cache & c : m.caches[il]) {
        if (c.is_attention()) return false;
        state |= c.is_state();
    }
    return state;
}

/// The widest V row of an attention layer, n_head_kv x head_dim_v (llama_hparams::n_embd_v_gqa_max): without flash
/// attention llama.cpp's V cache is transposed and every layer's V cache row is this wide ([TAG_V_CACHE_VARIABLE],
/// llama-kv-cache.cpp:158-160, 210 in both releases).
int64_t widest_v(const model_desc & m) {
    int64_t w = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (!recurrent_only(m, il) && il < m.n_head_kv.size() && il < m.head_dim_v.size()) {
            w = std::max<int64_t>(w, int64_t(m.n_head_kv[il]) * m.head_dim_v[il]);
        }
    }
    return w;
}

/// Layer il's deepstack slice, 1-based (0: none): the first n_deepstack_layers layers of a Qwen3-VL text model each add
/// slice il + 1 of the input embedding, n_embd_inp = n_embd x (1 + n_deepstack_layers) wide (llama_hparams::n_embd_inp,
/// src/llama-hparams.cpp:118-130 v0.5.0), as a view at (il + 1) x n_embd floats into it (src/models/qwen3vl.cpp
/// v0.5.0:153-157: ggml_view_2d(res->t_inp_embd, n_embd, n_tokens, nb[1], (il + 1) * n_embd * sizeof(float))).
int64_t deepstack_slice(const model_desc & m, uint32_t il) {
    if (m.n_embd == 0 || m.n_embd_inp <= m.n_embd) return 0;
    return il < m.n_embd_inp / m.n_embd - 1 ? int64_t(il) + 1 : 0;
}

std::string top_k_sharing(const model_desc & m, uint32_t il);

/// A routed layer's router where the model states it (model_desc::graph_dims, deepseek2: gguf_model.cpp
/// graph_dim_keys): "f<gating>" (1 softmax, 2 sigmoid: ggml_soft_max or ggml_sigmoid, llm_graph_context::build_moe_ffn,
/// src/llama-graph.cpp v0.5.0:2040-2058) and "g" when the experts are chosen from the top groups (n_expert_groups > 1, v0.5.0:2081-2105:
/// fourteen more tensors in the recorded graph), then "n0" / "s0" where the chosen experts' weights are not normalised
/// / not scaled (v0.5.0:2134-2151). All change the layer's topology, not its sizes: DeepSeek-V3
/// ("m8gf2") and Kimi-K2.5 ("m8f2") are two layer kinds, DeepSeek-V2 ("m6f1") a third. Empty for the other
/// architectures.
std::string router_features(const model_desc & m) {
    const auto gating = m.graph_dims.find("expert_gating_func");
    if (gating == m.graph_dims.end()) return {};
    const auto groups = m.graph_dims.find("expert_group_count");
    const bool grouped = groups != m.graph_dims.end() && groups->second > 1;
    std::string f = (grouped ? "g" : "") + std::string("f") + std::to_string(gating->second);
    // the routing weights normalised and scaled on every recorded shape (DeepSeek-V3, Kimi-K2.5); a model whose are
    // not (DeepSeek-V2-Lite: norm_topk_prob false, routed_scaling_factor 1) has fewer tensors: "n0", "s0"
    const auto norm = m.graph_dims.find("expert_weights_norm");
    const auto scaled = m.graph_dims.find("expert_weights_scaled");
    if (norm != m.graph_dims.end() && norm->second == 0) f += "n0";
    if (scaled != m.graph_dims.end() && scaled->second == 0) f += "s0";
    return f;
}

/// What layer il is, without its sizes: its caches (an indexer cache with its head width, "I128", a latent cache without
/// a query LoRA "Mq", a compressed cache with its ratio, "Z4"), its FFN (d dense, m<k> routed experts of which k are
/// used, - none; H hash-routed), the hyper-connection count (hc<n>), whether it is a NextN block (x), a deepstack slice (e), then a DSA
/// layer's top-k
/// sharing (top_k_sharing: t<d>, k<n>). A layer with a full, window or chunked cache whose V row is narrower than the
/// widest (widest_v) carries "v": without flash attention llama.cpp pads its V to the transposed cache's width, one
/// ggml_pad more in its graph (llama_kv_cache::cpy_v, llama-kv-cache.cpp:1395-1398 v0.5.0; gemma4: the full layers of
/// gemma-4-26B-A4B, 2 x 512 under 8 x 256; a model whose layers' V rows are alike has none). The used-expert count is
/// part of the layer's topology, not a size: llama.cpp sums the routed experts' outputs as n_expert_used views, each
/// expanded into the graph, and n_expert_used - 1 adds (llm_graph_context::build_moe_ffn, src/llama-graph.cpp
/// v0.5.0:2337-2346, 5b4ebc5:2278-2287), so a template recorded at one top-k does not replay another: that layer kind
/// is not recorded, and kvfit says so.
std::string layer_features(const model_desc & m, uint32_t il) {
    if (il >= m.n_layer) return "x";
    std::string f;
    for (const layer_cache & c : m.caches[il]) {
        f += cache_letter(c.kind);
        // an indexer's head width: ggml-cuda's fused lightning indexer takes 128-wide heads only
        // (ggml_cuda_lightning_indexer_supported, lightning-indexer.cu; backend_cuda.cpp lightning_indexer_supported),
        // and llama.cpp builds another graph where the device lacks it (fused_lid off: llama-context.cpp, the
        // llm_fused_op_lid_probe resolve), so a template holds the width it was recorded at (graph2.py SIG_DIMS)
        if (c.kind == cache_kind::indexer) f += std::to_string(c.head_dim_k);
        // an MLA layer without a query LoRA projects its queries in one matrix (attn_q: DeepSeek-V2-Lite, Kimi-Linear;
        // deepseek2.cpp's is_lite branch) where the others go through attn_q_a, its norm and attn_q_b: "q"
        if (c.kind == cache_kind::latent && m.q_lora_rank == 0) f += 'q';
        // a compressed cache's ratio (DeepSeek-V4 compress_ratios[il]): ratio 4 compresses overlapping windows of two
        // rows (coff 2) and builds the indexer, 128 neither (models/deepseek4.cpp, load_arch_tensors coff and
        // build_csa_lid_attention / build_hca_attention), so each ratio is its own layer graph: "Z4", "Z128"
        if (c.kind == cache_kind::compressed) f += std::to_string(c.ratio);
    }
    if (f.empty()) f = "0";
    const bool moe = il < m.is_moe.size() && m.is_moe[il] != 0;
    const bool dense = il < m.n_ff.size() && m.n_ff[il] > 0;
    f += moe ? "m" + std::to_string(m.n_expert_used) + (dense ? "d" : "") : (dense ? "d" : "-");
    if (moe) f += router_features(m);
    // a hash-routed MoE layer (DeepSeek-V4's first hash_layer_count layers): its experts are rows of a token-id table
    // (ggml_get_rows of ffn_gate_tid2eid by the input tokens), not the gate's top-k (models/deepseek4.cpp build_ffn,
    // v0.5.0:1290-1291): "H"
    if (const auto h = m.graph_dims.find("hash_layer_count"); moe && h != m.graph_dims.end() && il < h->second) f += "H";
    // hyper-connections (n_hc copies of the residual stream): the graph's mixes and its head loop over the copies
    // (models/deepseek4.cpp dsv4_hc_mean, build_hc_head; ggml-cuda's dsv4-hc.cu kernels take DSV4_HC = 4 only), so a
    // template holds the count it was recorded at (graph2.py SIG_DIMS): "hc4"
    if (m.n_hc > 0) f += "hc" + std::to_string(m.n_hc);
    if (il < m.n_head.size() && m.n_head[il] == 0 && !recurrent_only(m, il)) f += "n"; // no attention heads
    // a deepstack layer (Qwen3-VL: il < n_deepstack_layers) adds its slice of the widened input embedding to l_out
    // ("deepstack_out": src/models/qwen3vl.cpp v0.5.0:153-157, qwen3vlmoe.cpp:101-105, the same in 5b4ebc5), one view
    // and one add more than a layer without: "e" (the slice's offset is graph_layer_dims' l_deepstack)
    if (deepstack_slice(m, il) > 0) f += "e";
    for (const layer_cache & c : m.caches[il]) {
        const bool attn = c.kind == cache_kind::full || c.kind == cache_kind::window || c.kind == cache_kind::chunked;
        if (attn && int64_t(c.width_v()) < widest_v(m)) {
            f += "v";
            break;
        }
    }
    return f + top_k_sharing(m, il);
}

bool has_cache(const model_desc & m, uint32_t il, cache_kind k) {
    if (il >= m.n_layer) return false;
    for (const layer_cache & c : m.caches[il]) {
        if (c.kind == k) return true;
    }
    return false;
}

/// A DSA latent layer that scores no top-k of its own reads the one of the last indexer layer before it (glm-dsa with
/// GLM-5.2's indexer types: src/models/glm-dsa.cpp, is_indexer_full(il) false -> top_k = prev_top_k, v0.5.0:341-345
/// and 5b4ebc5), and llama.cpp's cb(top_k, "top_k", il) names that tensor again for every such layer, so it carries
/// the last sharing layer's number. Both change the graph's topology, not its sizes: a sharing layer gets "t<d>" (it
/// reads the top-k of the layer d back), the indexer layer "k<n>" (its top-k is read by the n layers after it, and
/// named for the last), "(...)" naming the indexer layer's own features. Nothing for a model whose latent layers all
/// have an indexer cache (GLM-5, DeepSeek-V3.2).
std::string top_k_sharing(const model_desc & m, uint32_t il) {
    if (il >= m.n_layer || !has_cache(m, il, cache_kind::latent)) return {};
    if (has_cache(m, il, cache_kind::indexer)) {
        uint32_t n = 0;
        while (il + 1 + n < m.n_layer && has_cache(m, il + 1 + n, cache_kind::latent) &&
               !has_cache(m, il + 1 + n, cache_kind::indexer)) {
            ++n;
        }
        return n > 0 ? "k" + std::to_string(n) : std::string();
    }
    // the layer read from named too: graph2.py's reference into it counts that layer's tensors, whose weights (listed
    // first) its FFN changes (a dense indexer layer's top_k at another index than a routed one's)
    for (uint32_t d = 1; d <= il; ++d) {
        if (has_cache(m, il - d, cache_kind::indexer)) {
            return "t" + std::to_string(d) + "(" + layer_features(m, il - d) + ")";
        }
        if (!has_cache(m, il - d, cache_kind::latent)) break;
    }
    return {};
}

} // namespace

std::vector<std::pair<std::string, int64_t>> graph_dims(const model_desc & m) {
    std::vector<std::pair<std::string, int64_t>> d{
        {"n_embd", m.n_embd}, {"n_layer", m.n_layer}, {"n_layer_mtp", m.n_layer_mtp}, {"n_embd_inp", m.n_embd_inp},
        {"n_swa", m.n_swa}, {"n_chunk", m.n_chunk}, {"n_pos_per_embd", m.n_pos_per_embd},
        {"n_expert", m.n_expert}, {"n_expert_used", m.n_expert_used}, {"n_expert_shared", m.n_expert_shared},
        {"n_ff_exp", m.n_ff_exp}, {"n_ff_shexp", m.n_ff_shexp}, {"n_expert_latent", m.n_expert_latent},
        {"moe_latent", m.moe_latent}, {"kv_lora_rank", m.kv_lora_rank}, {"n_rot_mla", m.n_rot_mla},
        {"q_lora_rank", m.q_lora_rank}, {"head_dim_qk_nope", m.head_dim_qk_nope}, {"head_dim_v_mla", m.head_dim_v_mla},
        // an MLA query head, nope + rope (llama_hparams::n_embd_head_k_mla(): glm-dsa.cpp's q views step by it): one
        // dimension, so a stride n_head x (nope + rope) is one product to the fit, not a sum two coincidences can match
        {"head_dim_qk_mla", int64_t(m.head_dim_qk_nope) + m.n_rot_mla},
        {"indexer_n_head", m.indexer_n_head}, {"indexer_top_k", m.indexer_top_k}, {"ssm_d_conv", m.ssm_d_conv},
        {"ssm_d_inner", m.ssm_d_inner}, {"ssm_d_state", m.ssm_d_state}, {"ssm_n_group", m.ssm_n_group},
        {"ssm_n_head", m.ssm_n_head}, {"ssm_head_dim", m.ssm_head_dim}, {"rwkv_head_size", m.rwkv_head_size},
        {"n_hc", m.n_hc}, {"n_embd_ple", m.n_embd_ple}, {"attn_res_block", m.attn_res_block},
        {"n_embd_v_gqa_max", widest_v(m)}};
    // the convolution's channels (the conv state's width over its d_conv - 1 columns: Mamba-2's and Gated DeltaNet's
    // d_inner + 2 n_group d_state, as llama.cpp's graph reshapes the state), which no single dimension above states:
    // without it a fit found n_embd x d_state / 64, equal on every recorded shape and wrong on Qwen3.5-0.8B
    int64_t conv_channels = 0;
    for (uint32_t il = 0; il < m.n_layer && conv_channels == 0; ++il) {
        for (const layer_cache & c : m.caches[il]) {
            if (c.kind == cache_kind::conv_state && m.ssm_d_conv > 1) conv_channels = int64_t(c.width_k()) / (m.ssm_d_conv - 1);
        }
    }
    d.emplace_back("ssm_conv_channels", conv_channels);
    // the first layer holding a cache of each kind, by that kind's letter: what the graph's global inputs of that
    // cache (its KV indices, masks) are sized by, as F_c_k, F_c_v, F_n_head_kv, W_c_k ...
    std::string seen;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const layer_cache & c : m.caches[il]) {
            const char L = cache_letter(c.kind);
            if (seen.find(L) != std::string::npos) continue;
            seen += L;
            const std::string p = std::string(1, L) + "_";
            d.emplace_back(p + "c_k", int64_t(c.width_k()));
            d.emplace_back(p + "c_v", int64_t(c.width_v()));
            // a state cache's first layer is recurrent: no attention head count (recurrent_only)
            d.emplace_back(p + "n_head", !c.is_state() && il < m.n_head.size() ? int64_t(m.n_head[il]) : 0);
            d.emplace_back(p + "n_head_kv", int64_t(c.n_head));
            d.emplace_back(p + "head_dim_k", int64_t(c.head_dim_k));
            d.emplace_back(p + "head_dim_v", int64_t(c.head_dim_v));
            // the K rotation of a quantized cache (llama_kv_cache::build_input_k_rot, llama-kv-cache.cpp:1437-1456 in
            // both releases): a Hadamard matrix of the largest power of two dividing the cache's head width, from 64 (a
            // 192-wide head: 64), each head rotated as head_dim_k / rot_k blocks (llama_mul_mat_hadamard); 0 when the
            // head width is not a multiple of 64
            int64_t rot = 0;
            if (c.is_attention() && c.head_dim_k > 0 && c.head_dim_k % 64 == 0) {
                for (rot = 64; c.head_dim_k % (2 * rot) == 0;) rot *= 2;
            }
            d.emplace_back(p + "rot_k", rot);
            d.emplace_back(p + "rot_k_blocks", rot > 0 ? int64_t(c.head_dim_k) / rot : 0);
            if (c.window > 0) d.emplace_back(p + "window", int64_t(c.window));
            if (c.ratio > 1) d.emplace_back(p + "ratio", int64_t(c.ratio));
        }
    }
    // group-limited routing views the router's scores as [n_expert / n_expert_groups, n_expert_groups, T]
    // (build_moe_ffn, src/llama-graph.cpp v0.5.0:2084-2087): the experts per group, one dimension (the fit multiplies
    // dimensions, it does not divide them); 0 without groups
    if (const auto g = m.graph_dims.find("expert_group_count"); g != m.graph_dims.end()) {
        d.emplace_back("n_expert_per_group", g->second > 1 ? int64_t(m.n_expert / g->second) : 0);
    }
    for (const auto & [k, v] : m.graph_dims) {
        std::string name = "g_" + k;
        for (char & c : name) {
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
        }
        d.emplace_back(std::move(name), v);
    }
    return d;
}

std::vector<std::pair<std::string, int64_t>> graph_layer_dims(const model_desc & m, uint32_t il) {
    std::vector<std::pair<std::string, int64_t>> d;
    if (il >= m.n_layer) return d;
    const bool attn = !recurrent_only(m, il); // a recurrent layer's attention dimensions: 0 from either source
    auto at = [&](const std::vector<uint32_t> & v) { return il < v.size() ? int64_t(v[il]) : 0; };
    auto attn_at = [&](const std::vector<uint32_t> & v) { return attn ? at(v) : 0; };
    d = {{"l_n_head", attn_at(m.n_head)}, {"l_n_head_kv", attn_at(m.n_head_kv)}, {"l_head_dim_k", attn_at(m.head_dim_k)},
         {"l_head_dim_v", attn_at(m.head_dim_v)}, {"l_n_ff", at(m.n_ff)}};
    // a deepstack model's layers (every one, 0 where it adds no slice): the view offset of the slice it adds, in units
    // of n_embd floats (deepstack_slice); not named for other models
    if (m.n_embd > 0 && m.n_embd_inp > m.n_embd) d.emplace_back("l_deepstack", deepstack_slice(m, il));
    for (size_t i = 0; i < m.caches[il].size(); ++i) {
        const layer_cache & c = m.caches[il][i];
        d.emplace_back("l_c" + std::to_string(i) + "_k", int64_t(c.width_k()));
        d.emplace_back("l_c" + std::to_string(i) + "_v", int64_t(c.width_v()));
        if (c.window > 0) d.emplace_back("l_c" + std::to_string(i) + "_window", int64_t(c.window));
        if (c.ratio > 1) d.emplace_back("l_c" + std::to_string(i) + "_ratio", int64_t(c.ratio));
    }
    return d;
}

namespace {

/// Words for one layer's features as layer_features writes them, from position i of `c` (advanced past them).
std::string describe_features(std::string_view c, size_t & i) {
    std::vector<std::string> w;
    const auto number = [&]() {
        std::string n;
        while (i < c.size() && std::isdigit(static_cast<unsigned char>(c[i]))) n += c[i++];
        return n;
    };
    const auto at = [&](std::string_view t) { return c.substr(i, t.size()) == t; };
    // a letter whose meaning a following suffix changes ("Mq", "s0", "n0"): the suffix is consumed when present
    const auto with_suffix = [&](std::string_view suffix, const char * with, const char * without) {
        const bool has = at(suffix);
        if (has) i += suffix.size();
        w.emplace_back(has ? with : without);
    };
    while (i < c.size() && c[i] != '<' && c[i] != '^' && c[i] != '$' && c[i] != ')') {
        const char ch = c[i++];
        switch (ch) {
        case 'F': w.emplace_back("full-attention cache"); break;
        case 'W': w.emplace_back("sliding-window cache"); break;
        case 'C': w.emplace_back("chunked-attention cache"); break;
        case 'M': with_suffix("q", "MLA latent cache, queries without a LoRA", "MLA latent cache"); break;
        case 'I': w.emplace_back("DSA indexer cache, heads " + number() + " wide"); break;
        case 'Z': w.emplace_back("compressed cache, ratio " + number()); break;
        case 'c': w.emplace_back("convolution state"); break;
        case 's': // "s0" follows a router (router_features): the routing weights not scaled; else an SSM state
            with_suffix("0", "routing weights not scaled", "SSM state");
            break;
        case 'p': w.emplace_back("per-layer-embedding state"); break;
        case '0': w.emplace_back("no cache"); break;
        case 'x': w.emplace_back("NextN/MTP block"); break;
        case 'd': w.emplace_back("dense FFN"); break;
        case '-': w.emplace_back("no FFN"); break;
        case 'm': w.emplace_back("routed experts, " + number() + " used per token"); break;
        case 'g': w.emplace_back("group-limited routing"); break;
        case 'f': {
            const std::string f = number();
            w.emplace_back(f == "1" ? "softmax router" : f == "2" ? "sigmoid router" : "gating function " + f);
            break;
        }
        case 'n': with_suffix("0", "routing weights not normalised", "no attention heads"); break;
        case 'H': w.emplace_back("hash-routed experts"); break;
        case 'h':
            if (at("c")) ++i;
            w.emplace_back(number() + " hyper-connections");
            break;
        case 'v': w.emplace_back("V rows narrower than the widest layer's"); break;
        case 'e': w.emplace_back("a deepstack slice of the input embedding added"); break;
        case 'k': w.emplace_back("its top-k read by the next " + number() + " layers"); break;
        case 't': {
            std::string d = number();
            std::string of;
            if (at("(")) {
                ++i;
                of = describe_features(c, i);
                if (at(")")) ++i;
            }
            w.emplace_back("reads the top-k of the layer " + d + " back" + (of.empty() ? "" : " (" + of + ")"));
            break;
        }
        default: w.emplace_back(std::string("'") + ch + "'"); break;
        }
    }
    std::string out;
    for (const std::string & x : w) out += (out.empty() ? "" : ", ") + x;
    return out;
}

} // namespace

std::string describe_layer_sig(std::string_view sig) {
    size_t i = 0;
    std::string out = describe_features(sig, i);
    if (i < sig.size() && sig[i] == '<') {
        ++i;
        if (i < sig.size() && sig[i] == '^') {
            ++i;
            out += "; the first layer";
        } else {
            out += "; after a layer with " + describe_features(sig, i);
            if (i < sig.size() && sig[i] == '^') ++i;
        }
    }
    if (i < sig.size() && sig[i] == '$') out += "; the last layer";
    return out;
}

std::string graph_layer_sig(const model_desc & m, uint32_t il) {
    // the layer before, and whether it is the first (its segment differs: the references into it do too)
    std::string s = layer_features(m, il) + "<" + (il == 0 ? std::string("^") : layer_features(m, il - 1) + (il == 1 ? "^" : ""));
    if (il + 1 == m.n_layer) s += "$";
    return s;
}

} // namespace kvfit::detail
