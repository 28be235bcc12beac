// Multimodal projectors (--mmproj, --no-mmproj-offload; include/kvfit/llamacpp_extras.h): the projector's weights
// from its GGUF header and the clip compute buffer of the warmup image, by projector type and flash attention.
// Rules: docs/rules/llamacpp-mmproj.md (llama.cpp v0.5.0 = 5b4ebc5 tools/mtmd/clip.cpp, models/qwen2vl.cpp,
// qwen3vl.cpp, siglip.cpp), measured to the byte on 41 projectors per release (tests/conformance/measured/spec-mmproj.*).
#include "kvfit/llamacpp.h"

#include "kvfit/error.h"
#include "kvfit/gguf.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvfit {
namespace {

uint32_t key_u32(const gguf_file & f, std::string_view key, uint32_t fallback = 0) {
    const gguf_value * v = f.find(key);
    if (!v) return fallback;
    const auto u = v->to_uint();
    return u && *u <= 0xffffffffull ? uint32_t(*u) : fallback;
}

bool key_bool(const gguf_file & f, std::string_view key) {
    const gguf_value * v = f.find(key);
    const auto u = v ? v->to_uint() : std::nullopt;
    return u && *u != 0;
}


constexpr uint64_t sq(uint64_t x) { return x * x; }

} // namespace

mmproj_desc mmproj_from_gguf(const gguf_file & f, const std::string & path) {
    mmproj_desc p;
    p.path = path;
    // clip-impl.h: KEY_HAS_VISION_ENC, KEY_HAS_AUDIO_ENC, KEY_PROJ_TYPE, KEY_VISION_PROJ_TYPE, KEY_AUDIO_PROJ_TYPE
    p.has_vision = key_bool(f, "clip.has_vision_encoder");
    p.has_audio = key_bool(f, "clip.has_audio_encoder");
    if (!p.has_vision && !p.has_audio) {
        throw error(fmt::format("--mmproj {}: not a projector (no clip.has_vision_encoder or clip.has_audio_encoder)", path));
    }
    const std::string common = f.string_of("clip.projector_type");
    if (p.has_vision) {
        p.vision_projector = f.string_of("clip.vision.projector_type");
        if (p.vision_projector.empty()) p.vision_projector = common;
    }
    if (p.has_audio) {
        p.audio_projector = f.string_of("clip.audio.projector_type");
        if (p.audio_projector.empty()) p.audio_projector = common;
    }
    p.n_embd = key_u32(f, "clip.vision.embedding_length");
    p.n_ff = key_u32(f, "clip.vision.feed_forward_length");
    p.n_layer = key_u32(f, "clip.vision.block_count");
    p.n_head = key_u32(f, "clip.vision.attention.head_count");
    p.patch_size = key_u32(f, "clip.vision.patch_size");
    p.image_size = key_u32(f, "clip.vision.image_size");
    p.projection_dim = key_u32(f, "clip.vision.projection_dim");
    p.n_merge = key_u32(f, "clip.vision.spatial_merge_size", 2);
    if (p.n_merge == 0) p.n_merge = 2;
    for (const auto & t : f.tensors()) {
        // clip.cpp load_tensors: get_tensor adds ggml_nbytes(cur) of every tensor it loads to mem_usage (:2138-2163)
        p.weights_bytes += t.bytes;
        ++p.n_tensors;
        // clip.cpp:2301-2310: a layer with deepstack_fc1_w counts as a deepstack layer (TN_DEEPSTACK_FC1)
        if (t.name.starts_with("v.deepstack.") && t.name.ends_with(".fc1.weight")) ++p.n_deepstack;
    }
    return p;
}

namespace {

// bytes of one f16 matrix / f32 vector as the F16 mmproj stores them
uint64_t f16(uint64_t n) { return 2 * n; }
uint64_t f32(uint64_t n) { return 4 * n; }

// The tensors of the F16 mmproj a Qwen-VL vision_config converts to (conversion/qwenvl.py, qwen3vl.py): the Conv3d patch
// embedding split in two 2-D kernels, per block attention (q/k/v or fused qkv) + out + two norms + FFN (gated for
// Qwen2.5-VL), deepstack mergers (Qwen3-VL), the post norm and the 2-layer merger mm.0 [4E, 4E], mm.2 [4E, proj].
uint64_t qwenvl_weights(const mmproj_desc & p, uint64_t n_pos, bool gated_rms, bool qwen3) {
    const uint64_t E = p.n_embd, F = p.n_ff, pz = p.patch_size, proj = p.projection_dim, M = 4 * E;
    uint64_t b = 2 * f16(pz * pz * 3 * E);
    if (qwen3) b += f32(E) + f32(E * n_pos);
    const uint64_t block = f16(3 * E * E) + f32(3 * E) + f16(E * E) + f32(E) + f32(2 * E) + (gated_rms ? 0 : f32(2 * E)) +
                           (gated_rms ? f16(E * F) + f32(F) : 0) + f16(E * F) + f32(F) + f16(F * E) + f32(E);
    b += p.n_layer * block;
    b += p.n_deepstack * (f32(2 * M) + f16(M * M) + f32(M) + f16(M * proj) + f32(proj));
    b += f32(E) + (gated_rms ? 0 : f32(E));
    b += f16(M * M) + f32(M) + f16(M * proj) + f32(proj);
    return b;
}

// Gemma 3 (conversion/gemma.py Gemma3VisionModel): SigLIP blocks with biases, learned positions (f32), the
// soft-embedding norm and the input projection [n_text, E].
uint64_t gemma3_weights(const mmproj_desc & p) {
    const uint64_t E = p.n_embd, F = p.n_ff, pz = p.patch_size, side = pz ? p.image_size / pz : 0;
    uint64_t b = f16(pz * pz * 3 * E) + f32(E) + f32(E * side * side);
    b += p.n_layer * (4 * (f16(E * E) + f32(E)) + f32(4 * E) + f16(E * F) + f32(F) + f16(F * E) + f32(E));
    return b + f32(2 * E) + f32(E) + f16(uint64_t(p.projection_dim) * E);
}

} // namespace

mmproj_desc mmproj_from_hf_config(std::string_view json_text, const std::string & path) {
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(json_text);
    } catch (const std::exception &) {
        throw error(fmt::format("--mmproj {}: not JSON", path));
    }
    if (!root.is_object() || !root.contains("vision_config") || !root["vision_config"].is_object()) {
        throw error(fmt::format("--mmproj {}: no vision_config (pass the projector GGUF)", path));
    }
    const nlohmann::json & v = root["vision_config"];
    auto u = [&](const nlohmann::json & o, const char * key, uint64_t fallback = 0) -> uint32_t {
        if (!o.contains(key) || !o[key].is_number_unsigned()) return uint32_t(fallback);
        const uint64_t x = o[key].get<uint64_t>();
        return x < (1u << 24) ? uint32_t(x) : uint32_t(fallback);
    };
    mmproj_desc p;
    p.path = path;
    p.has_vision = true;
    p.from_config = true;
    p.n_merge = u(v, "spatial_merge_size", 2);
    if (p.n_merge == 0) p.n_merge = 2;
    if (v.contains("num_position_embeddings") || v.contains("deepstack_visual_indexes")) {
        p.vision_projector = "qwen3vl_merger"; // conversion/qwen3vl.py (Qwen3-VL, Qwen3.5)
        p.n_embd = u(v, "hidden_size"), p.n_ff = u(v, "intermediate_size"), p.n_layer = u(v, "depth");
        p.n_head = u(v, "num_heads"), p.patch_size = u(v, "patch_size", 16), p.projection_dim = u(v, "out_hidden_size");
        const uint64_t n_pos = u(v, "num_position_embeddings", 2304);
        if (v.contains("deepstack_visual_indexes") && v["deepstack_visual_indexes"].is_array()) {
            p.n_deepstack = uint32_t(v["deepstack_visual_indexes"].size());
        }
        p.weights_bytes = qwenvl_weights(p, n_pos, false, true);
    } else if (v.contains("fullatt_block_indexes")) {
        p.vision_projector = "qwen2.5vl_merger"; // conversion/qwenvl.py: RMS norms, gated SiLU FFN, window attention
        p.n_embd = u(v, "hidden_size"), p.n_ff = u(v, "intermediate_size"), p.n_layer = u(v, "depth");
        p.n_head = u(v, "num_heads"), p.patch_size = u(v, "patch_size", 14), p.projection_dim = u(v, "out_hidden_size");
        p.weights_bytes = qwenvl_weights(p, 0, true, false);
    } else if (v.contains("embed_dim") && v.contains("mlp_ratio")) {
        p.vision_projector = "qwen2vl_merger";
        p.n_embd = u(v, "embed_dim"), p.n_layer = u(v, "depth"), p.n_head = u(v, "num_heads");
        p.n_ff = uint32_t(double(p.n_embd) * (v["mlp_ratio"].is_number() ? v["mlp_ratio"].get<double>() : 4.0));
        p.patch_size = u(v, "patch_size", 14), p.projection_dim = u(v, "hidden_size");
        p.weights_bytes = qwenvl_weights(p, 0, false, false);
    } else if (root.contains("mm_tokens_per_image")) {
        p.vision_projector = "gemma3"; // conversion/gemma.py Gemma3VisionModel (SigLIP)
        p.n_embd = u(v, "hidden_size"), p.n_ff = u(v, "intermediate_size"), p.n_layer = u(v, "num_hidden_layers");
        p.n_head = u(v, "num_attention_heads"), p.patch_size = u(v, "patch_size", 14), p.image_size = u(v, "image_size", 896);
        p.projection_dim = root.contains("text_config") ? u(root["text_config"], "hidden_size") : 0;
        p.weights_bytes = gemma3_weights(p);
    } else {
        throw error(fmt::format("--mmproj {}: this vision_config's tower is not modelled (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, "
                                "Qwen3.5, Gemma 3 are); pass the projector GGUF", path));
    }
    if (p.n_embd == 0 || p.n_layer == 0 || p.n_head == 0 || p.patch_size == 0 || p.projection_dim == 0) {
        throw error(fmt::format("--mmproj {}: vision_config lacks a size (hidden size, depth, heads, patch, output)", path));
    }
    return p;
}

mmproj_desc read_mmproj(const std::string & path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string json_path = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
    if (json_path.ends_with(".json")) {
        std::ifstream in(json_path, std::ios::binary);
        if (!in) throw error(fmt::format("--mmproj {}: cannot open", json_path));
        std::ostringstream ss;
        ss << in.rdbuf();
        if (ss.str().size() > (64u << 20)) throw error(fmt::format("--mmproj {}: a config over 64 MiB is not read", json_path));
        return mmproj_from_hf_config(ss.str(), json_path);
    }
    try {
        return mmproj_from_gguf(gguf_file::open(path), path);
    } catch (const error & e) {
        const std::string what = e.what();
        if (what.starts_with("--mmproj")) throw;
        throw error(fmt::format("--mmproj {}", what));
    }
}

namespace {

// The vision tower's compute buffer (an audio encoder is handled by the caller).
mmproj_compute vision_compute(const mmproj_desc & p, bool fa) {
    mmproj_compute c;
    const uint64_t E = p.n_embd, F = p.n_ff, H = p.n_head, pz = p.patch_size, nds = p.n_deepstack;
    auto unmodelled = [&](std::string why) {
        c.modelled = false;
        c.why = std::move(why);
    };
    const std::string & t = p.vision_projector;
    // 3 x p x p floats of raw image per patch (inp_raw) and 4 M-RoPE positions (i32) per patch
    const uint64_t raw_pos = 3 * pz * pz + 4;
    if (t == "qwen2vl_merger" || t == "qwen2.5vl_merger" || t == "qwen3vl_merger") {
        // set_warmup_n_tokens(46 * 46) merged tokens (clip.cpp:1661-1670): 46 x n_merge patches a side
        const uint64_t P = sq(46ull * p.n_merge);
        c.n_patches = P;
        const uint64_t scores = H * sq(P) * 4; // kq [P, P, H] f32 of one layer (clip.cpp:789-793)
        const uint64_t fp = 4 * P;             // one f32 per patch
        if (t == "qwen2vl_merger") {
            if (!fa) {
                // the largest stage besides the scores: 5E floats per patch at p = 14, 4E at p = 16 (measured)
                const uint64_t k = pz == 16 ? 4 : 5;
                c.bytes = scores + fp * (k * E + raw_pos);
                if (pz != 14 && pz != 16) unmodelled(fmt::format("qwen2vl_merger with patch size {} (rules measured at 14 and 16)", pz));
            } else if (pz == 14 && E >= 1280) {
                c.bytes = fp * (std::max(5 * E, F + 2 * E) + raw_pos);
            } else {
                // measured, not derived: F + E/2 + 1920 at p = 14, E 640; F + E at p = 16, E 640
                c.bytes = fp * ((pz == 16 ? F + E : F + E / 2 + 1920) + raw_pos);
                unmodelled(fmt::format("qwen2vl_merger with flash attention, E {} / patch {}: the rule holds for E >= 1280 "
                                       "at patch 14 (measured at E 640 only below it)", E, pz));
            }
        } else if (t == "qwen2.5vl_merger") {
            // + the f32 window_mask [P, P] (qwen2vl.cpp:85-95) and inv_window_idx / window_idx (P/4 i32 each, aligned)
            const uint64_t window = sq(P) * 4 + 16960;
            if (!fa) {
                c.bytes = scores + window + fp * (5 * E + raw_pos);
            } else {
                // measured (spec-mmproj, E 640-1280, F 1710-6840, p 14): 4E + 2F + 1404 floats per patch; for F above
                // about 2.67 E the 3F stage of the SiLU-gated FFN (3F + 3104 at E 1280, its E term not measured)
                const uint64_t b1 = 4 * E + 2 * F + 1404;
                const uint64_t b2 = 3 * F + 4 * E > 2016 ? 3 * F + 4 * E - 2016 : 0;
                c.bytes = window + fp * std::max(b1, b2);
                if (b2 > b1) unmodelled(fmt::format("qwen2.5vl_merger with flash attention and F {} > 2.67 x E {}: the 3F "
                                                    "stage is measured at E 1280 only", F, E));
                if (pz != 14) unmodelled(fmt::format("qwen2.5vl_merger with flash attention at patch size {} (measured at 14)", pz));
            }
        } else { // qwen3vl_merger: deepstack mergers add one E-wide stage each
            if (!fa) {
                c.bytes = scores + fp * ((7 + nds) * E + raw_pos);
            } else {
                c.bytes = fp * (std::max((6 + nds) * E, F + (2 + nds) * E) + raw_pos);
                // byte-exact on the measured shapes with projection_dim <= 2.5 E (the 2B/4B towers, 30B-A3B's) or at
                // most one deepstack layer, E <= 1152; beyond, the deepstack concatenation of projection_dim-wide
                // outputs adds a stage not derived (Qwen3-VL-8B tower: +3.4 %, measured 390,156,544 B)
                const bool exact = E <= 1152 && (2 * uint64_t(p.projection_dim) <= 5 * E || nds <= 1);
                if (!exact) {
                    unmodelled(fmt::format("qwen3vl_merger with flash attention, projection {} for E {} with {} deepstack "
                                           "layers: measured up to 3.4 % more than the rule (Qwen3-VL-8B tower)",
                                           p.projection_dim, E, nds));
                }
            }
        }
        return c;
    }
    if (t == "gemma3") {
        // the model's own image size (clip.cpp:1365, 1627-1635): Gemma 3 always encodes 896 px
        const uint64_t side = pz ? p.image_size / pz : 0;
        const uint64_t P = sq(side);
        c.n_patches = P;
        c.bytes = fa ? 4 * P * std::max(5 * E, F + 3 * E) : H * sq(P) * 4 + 4 * P * 6 * E;
        if (P != 4096) unmodelled(fmt::format("gemma3 at {} px (the rule is measured at 896 px, 4096 patches)", p.image_size));
        return c;
    }
    unmodelled(fmt::format("the clip compute buffer of projector type '{}' is not modelled (rules for qwen2vl_merger, "
                           "qwen2.5vl_merger, qwen3vl_merger, gemma3); only its weights are counted", t));
    return c;
}

} // namespace

mmproj_compute llamacpp_mmproj_compute(const mmproj_desc & p, bool fa) {
    mmproj_compute c = p.has_vision ? vision_compute(p, fa) : mmproj_compute{};
    if (p.has_audio) {
        // mtmd_get_memory_usage reserves a second clip context for the audio encoder (mtmd.cpp:2703-2733)
        const std::string why = fmt::format("the audio encoder's compute buffer ({}) is not modelled (warmup_audio_size, "
                                            "clip.cpp); only its weights are counted", p.audio_projector);
        c.why = c.why.empty() ? why : c.why + "; " + why;
        c.modelled = false;
    }
    return c;
}

} // namespace kvfit
