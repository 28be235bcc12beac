// vLLM's memory besides the weights and the KV pool (docs/rules/vllm-overhead.md): what determine_available_memory
// (vllm/v1/worker/gpu_worker.py) subtracts from the requested memory. The profile run's torch peak
// (gpu_model_runner.py profile_run: the multimodal encoder's dummy batch, _dummy_run of max_num_batched_tokens,
// _dummy_sampler_run of one row per request), the non-torch growth (NCCL, cuBLAS), and since v0.21 the CUDA-graph
// estimate (profile_cudagraph_memory over the capture sizes of vllm/config/vllm.py _set_cudagraph_sizes). vLLM
// measures these on the GPU; kvfit predicts them from vLLM's shapes times constants named here, and says so per term.
#include "kvfit/vllm.h"

#include "kvfit/error.h"
#include "runtimes/common/numbers.h"
#include "runtimes/common/torch.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <fmt/format.h>

namespace kvfit {

namespace {

/// Bytes the sampler's dummy run holds per logit (one request's row of the vocabulary): the bf16 logits, their fp32
/// copy, the softmax probabilities and the exponential noise of random sampling (v1/sample/sampler.py, 2 + 4 + 4 + 4)
/// and ~1 B of top-k/top-p work. Calibrated on vLLM's Qwen3.8-27B recipe (RTX 5090, 0.26.1): --max-num-seqs 256 -> 8
/// freed 14 blocks of 51,380,224 B, 0.67 GiB for 248 x 248,320 logits = 11.7 B, plus the forward it no longer hides.
constexpr uint64_t k_sampler_bytes_per_logit = 15;
/// CUDA-graph memory per captured graph, per decoder layer of the stage, per element of the hidden width:
/// profile_cudagraph_memory's estimate / (graphs x layers x n_embd). Calibrated on logs: attention-only models, Qwen3-0.6B
/// (v0.19.1: PIECEWISE=51, FULL=35, 28 layers of 1024, "Estimated CUDA graph memory: 0.27 GiB" and "took 0.27 GiB"):
/// 115 B; hybrid recurrent models keep their state-update buffers in the FULL graphs: Qwen3.8-27B on an RTX PRO 6000
/// (102 graphs, 64 layers of 5120, what the FP8 and NVFP4 runs of recipes PR #831 left after the other terms) 270-350 B,
/// Qwen3.6-35B-A3B (14 graphs, 40 layers of 2048, 0.61 GiB) 570 B. Estimates vary by backend (a log shows 33 GiB for
/// 30 graphs of a large MoE): the term is named in every plan, and --cudagraph-memory replaces it.
constexpr uint64_t k_graph_bytes_dense = 120, k_graph_bytes_hybrid = 320;
/// The largest image a Qwen2-VL / Qwen3-VL image processor makes when the checkpoint's preprocessor is not read:
/// longest_edge / max_pixels 16,777,216 pixels (4096 x 4096), i.e. 16,384 tokens at patch 16 and merge 2 ("Encoder
/// cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items", vllm #38459).
constexpr uint64_t k_default_max_pixels = 16777216;

std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", double(b) / double(1ull << 30)); }

// The forward of max_num_batched_tokens dummy tokens (gpu_model_runner.py profile_run -> _dummy_run(max_num_tokens)).
vllm_term forward_term(const model_desc & m, const vllm_settings & s, uint32_t first, uint32_t n) {
    const uint64_t b = vllm_default_activation_bytes(m, s.max_num_batched_tokens, s.tp, first, n);
    return {"activation: forward", b, "estimate", "gpu_model_runner.py profile_run -> _dummy_run(max_num_batched_tokens)",
            fmt::format("{} tokens x {} B x max(4 x n_embd, widest FFN) / tp {} (kvfit: four {} FFN activations per token)",
                        s.max_num_batched_tokens, 4 * detail::torch_dtype_bytes(m.dtype, 2, "dtype"), s.tp,
                        m.dtype.empty() || m.dtype == "bfloat16" ? std::string("bf16") : m.dtype)};
}

// The sampler's dummy run: one row of logits per request (min(max_num_seqs, MNBT) requests), the full vocabulary on
// every TP rank (compute_logits gathers it), and with speculative decoding a second row each for the rejection
// sampler's dummy target logits (gpu_model_runner.py _dummy_sampler_run).
vllm_term sampler_term(const model_desc & m, const vllm_settings & s) {
    uint64_t rows = std::min(s.max_num_seqs, s.max_num_batched_tokens);
    const bool spec = !s.speculative.method.empty();
    if (spec) rows *= 2;
    const uint64_t b = rows * m.n_vocab * k_sampler_bytes_per_logit;
    return {"activation: sampler", b, "estimate", "gpu_model_runner.py _dummy_sampler_run; v1/sample/sampler.py",
            fmt::format("{} request rows{} x {} logits x {} B", rows, spec ? " (x 2: the rejection sampler's target logits)" : "",
                        m.n_vocab, k_sampler_bytes_per_logit)};
}

// Language-model tokens of the largest image, and whether that figure is the config's own.
uint64_t tokens_per_image(const model_desc & m, const vllm_settings & s, std::string & how) {
    const vision_tower & v = m.vision;
    const uint64_t side = uint64_t(std::max<uint32_t>(1, v.patch)) * v.merge;
    if (s.mm_max_pixels) {
        how = fmt::format("--mm-processor-kwargs max_pixels {} / ({} px x {})^2", s.mm_max_pixels, v.patch, v.merge);
        return std::max<uint64_t>(1, s.mm_max_pixels / (side * side));
    }
    if (v.max_tokens_per_image) {
        how = "the config's tokens per image";
        return v.max_tokens_per_image;
    }
    how = fmt::format("the image processor's default {} pixels (kvfit assumption: the preprocessor config is not read) / "
                      "({} px x {})^2", k_default_max_pixels, v.patch, v.merge);
    return std::max<uint64_t>(1, k_default_max_pixels / (side * side));
}

// The multimodal encoder's profiling (gpu_model_runner.py profile_run, "Encoder cache will be initialized with a budget
// of %s tokens, and profiled with %s %s items of the maximum feature size."): MultiModalBudget's encoder budget is
// max(max_num_batched_tokens, tokens of the largest item) (vllm/multimodal/encoder_budget.py); the dummy batch holds
// budget // item items (at most --limit-mm-per-prompt), run through the tower at once; its outputs stay cached in
// encoder_cache while the text forward runs. Peak: one block's input, residual and MLP hidden per patch in bf16, plus
// the cached outputs.
std::optional<vllm_term> encoder_term(const model_desc & m, const vllm_settings & s) {
    const vision_tower & v = m.vision;
    if (!v.present() || s.language_model_only || s.skip_mm_profiling || s.limit_mm_images == 0) return std::nullopt;
    std::string how;
    const uint64_t per_item = tokens_per_image(m, s, how);
    const uint64_t budget = std::max<uint64_t>(s.max_num_batched_tokens, per_item);
    uint64_t items = std::max<uint64_t>(1, budget / per_item);
    if (s.limit_mm_images > 0) items = std::min<uint64_t>(items, uint64_t(s.limit_mm_images));
    const uint64_t patches = items * per_item * v.merge * v.merge;
    const uint64_t out = v.out_hidden ? v.out_hidden : m.n_embd;
    const uint64_t b = patches * (2ull * v.hidden + v.intermediate / s.tp) * 2 + items * per_item * out * 2;
    return vllm_term{"activation: encoder profiling", b, "estimate",
                     "gpu_model_runner.py profile_run (encoder budget: vllm/multimodal/encoder_budget.py)",
                     fmt::format("\"a budget of {} tokens, and profiled with {} image items\": {} tokens each ({}) = {} "
                                 "patches x (2 x {} + {} / tp) x 2 B, + their {} outputs x {} x 2 B", budget, items,
                                 per_item, how, patches, v.hidden, v.intermediate, items * per_item, out)};
}

} // namespace

bool vllm_graph_estimate(vllm_rules r) { return r != vllm_rules::v2025; }

std::vector<uint32_t> vllm_cudagraph_sizes(const vllm_settings & s) {
    const uint32_t q = 1 + s.speculative.num_speculative_tokens; // tokens one decode step of a request verifies
    uint32_t max_size = s.max_cudagraph_capture_size;
    if (max_size == 0) {
        max_size = uint32_t(std::min<uint64_t>({uint64_t(s.max_num_seqs) * q * 2, 512, s.max_num_batched_tokens}));
    }
    std::vector<uint32_t> base = s.cudagraph_sizes;
    if (base.empty()) {
        base = {1, 2, 4};
        for (uint32_t x = 8; x < 256; x += 8) base.push_back(x);
        for (uint32_t x = 256; x <= max_size; x += 16) base.push_back(x);
    }
    std::vector<uint32_t> out;
    for (uint32_t x : base) {
        const uint32_t r = (x + q - 1) / q * q; // rounded up to whole decode steps (spec decoding)
        if (r <= max_size && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<vllm_term> vllm_overhead_terms(const model_desc & m, const vllm_settings & s, uint32_t first, uint32_t n,
                                           bool first_stage, bool last_stage) {
    std::vector<vllm_term> t;
    // activation: the profile run's torch peak increase
    if (s.activation_bytes) {
        t.push_back({"activation", *s.activation_bytes, "given", "--activation-memory", "torch peak of the profile run"});
    } else {
        const vllm_term fwd = forward_term(m, s, first, n);
        std::optional<vllm_term> smp;
        if (last_stage) smp = sampler_term(m, s);
        std::optional<vllm_term> enc;
        if (first_stage) enc = encoder_term(m, s);
        // the forward and the sampler run one after the other (the forward's activations are freed before the logits
        // are made): the larger counts; the encoder's cached outputs and its own peak come on top
        const uint64_t text = std::max(fwd.bytes, smp ? smp->bytes : 0);
        vllm_term sum{"activation", text + (enc ? enc->bytes : 0), "estimate", "gpu_model_runner.py profile_run",
                      fmt::format("max(forward {}, sampler {}){}", gib(fwd.bytes), gib(smp ? smp->bytes : 0),
                                  enc ? " + encoder profiling " + gib(enc->bytes) : "")};
        t.push_back(sum);
        t.push_back(fwd);
        if (smp) t.push_back(*smp);
        if (enc) t.push_back(*enc);
    }
    // non-torch: NCCL buffers, cuBLAS workspaces, the growth of cuda memory beyond torch's reserved pool
    const uint32_t world = s.tp * s.pp;
    if (s.non_torch_bytes) {
        t.push_back({"non-torch", *s.non_torch_bytes, "given", "--non-torch-memory", ""});
    } else {
        t.push_back({"non-torch", vllm_default_non_torch_bytes(world), "estimate",
                     "gpu_worker.py determine_available_memory (non_torch_increase)",
                     world > 1 ? fmt::format("0.50 GiB with {} ranks (NCCL buffers; kvfit constant)", world)
                               : "0.35 GiB on one GPU (vllm #10517 logs non_torch_memory=0.35GiB)"});
    }
    // CUDA graphs: only v0.21+ subtracts the estimate, only with graphs captured
    const bool eager = s.enforce_eager || s.cudagraph_mode == "NONE";
    if (!vllm_graph_estimate(s.rules) || eager) {
        t.push_back({"CUDA graphs", 0, "rule", eager ? "--enforce-eager / cudagraph_mode NONE: no graphs"
                                                     : "gpu_worker.py (<= v0.20): graphs are not in the budget", ""});
    } else if (s.cudagraph_bytes) {
        t.push_back({"CUDA graphs", *s.cudagraph_bytes, "given", "--cudagraph-memory", ""});
    } else {
        const std::vector<uint32_t> sizes = vllm_cudagraph_sizes(s);
        const uint32_t q = 1 + s.speculative.num_speculative_tokens;
        const uint64_t decode_max = uint64_t(s.max_num_seqs) * q;
        uint64_t piecewise = 0, full = 0;
        for (uint32_t x : sizes) piecewise += 1, full += x <= decode_max;
        const std::string mode = s.cudagraph_mode.empty() ? "FULL_AND_PIECEWISE" : s.cudagraph_mode;
        if (mode == "PIECEWISE") full = 0;
        if (mode == "FULL") full = piecewise, piecewise = 0;
        if (mode == "FULL_DECODE_ONLY") piecewise = 0;
        const uint64_t graphs = piecewise + full;
        const bool hybrid = m.count(layer_kind::recurrent) > 0;
        const uint64_t per = uint64_t(m.n_embd) * (hybrid ? k_graph_bytes_hybrid : k_graph_bytes_dense);
        t.push_back({"CUDA graphs", graphs * n * per, "estimate",
                     "gpu_model_runner.py profile_cudagraph_memory; sizes: vllm/config/vllm.py _set_cudagraph_sizes",
                     fmt::format("{}: PIECEWISE={} (largest={}), FULL={} (largest={}); {} graphs x {} layers x {} x {} B "
                                 "({})", mode, piecewise, sizes.empty() ? 0 : sizes.back(), full,
                                 full ? std::min<uint64_t>(decode_max, sizes.empty() ? 0 : sizes.back()) : 0, graphs, n,
                                 m.n_embd, hybrid ? k_graph_bytes_hybrid : k_graph_bytes_dense,
                                 hybrid ? "hybrid: recurrent state buffers in the FULL graphs" : "attention-only")});
    }
    return t;
}

} // namespace kvfit
