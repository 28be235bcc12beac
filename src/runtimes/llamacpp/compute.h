// Private to the llama.cpp compute-buffer model (compute.cpp, compute_stages.cpp, compute_recurrent.cpp).
// The sizes of the reserve graph's tensors and the graph inputs, shared by the stage formulas.
#pragma once

#include "kvfit/llamacpp.h"
#include "runtimes/llamacpp/graph_replay.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvfit::detail {

/// ggml's CPU buffer alignment (TENSOR_ALIGNMENT = 32, ggml/src/ggml-impl.h): every tensor is padded to it.
inline uint64_t pad32(uint64_t bytes) { return (bytes + 31) / 32 * 32; }

/// The reserve graph llama_context::sched_reserve builds (src/llama-context.cpp, graph_reserve) and the sizes of
/// its recurring tensors, all f32 activations unless said, bytes padded to 32. Worked example, Llama-3.1-8B at
/// -ub 512 -c 4096, FA: E = 4096 * 512 * 4 = 8388608, F = 14336 * 512 * 4 = 29360128, M = 4096 * 512 * 2.
struct compute_graph {
    // --- shape ------------------------------------------------------------------------------------
    uint64_t n_tokens = 0;  ///< T: n_ubatch rounded up to a multiple of n_seq (512 with 3 sequences -> 513)
    uint64_t n_outputs = 0; ///< min(n_ubatch, n_batch) before that rounding: logits for every ubatch row
    uint64_t n_kv = 0;      ///< cells per stream of the full/MLA cache (n_ctx_seq, n_ctx when unified)
    uint64_t n_kv_swa = 0;  ///< cells per stream of the window cache; 0 without window layers
    uint32_t n_seq = 1;     ///< sequences of the reserve ubatch (n_seq_max)
    uint32_t n_stream = 1;  ///< KV streams
    bool fa = true;         ///< flash attention
    bool rot_k = false;     ///< K cache Hadamard-rotated: quantized type_k and head_dim_k % 64 == 0
    bool rot_v = false;     ///< V cache rotated: quantized type_v and head_dim_v % 64 == 0
    /// The graph as ggml-cuda's scheduler split allocates it on the GPU (compute_cuda.cpp): graph_optimize keeps a
    /// routed-expert block's ffn_moe_down and its router weights alive until the weighted sum
    /// (ggml_backend_cuda_graph_optimize, ggml-cuda.cu:4505-4530 v0.5.0 / :4499-4521 5b4ebc5,
    /// ggml_cuda_match_moe_weighted_reduction), so ffn_moe_weighted is not computed in place (moe_block).
    bool cuda = false;

    // --- recurring activations ----------------------------------------------------------------------
    uint64_t tok = 0;  ///< inp_tokens i32 [T]: 4T; freed after get_rows, a hole at offset 0 that always counts
    uint64_t E = 0;    ///< any [n_embd, T] tensor: inp_embd, attn_norm, l_out, ffn_out
    uint64_t Q = 0;    ///< Qcur [head_dim_k, n_head, T] of the widest attention layer
    uint64_t F = 0;    ///< ffn_gate / ffn_up / ffn_swiglu [n_ff, T] of the widest dense FFN (0 when none)
    uint64_t L = 0;    ///< result_output f32 [n_vocab, n_outputs]: the logits
    uint64_t KQ = 0;   ///< non-FA scores kq [n_kv, T/n_stream, n_head, n_stream] (kq_soft_max runs in place)

    uint64_t Ein = 0;  ///< inp_embd [n_embd_inp, T] when the input embedding is wider than n_embd (deepstack), else E
    uint64_t Eo = 0;   ///< [n_embd, n_outputs]: the last layer's rows after inp_out_ids (l_out, result_norm)

    // --- graph inputs (llm_graph_context::build_inp_*, src/llama-graph.cpp) ------------------------
    uint64_t inputs = 0; ///< I: all inputs, allocated before the first node
    uint64_t out_ids = 0;///< inp_out_ids i32 [n_outputs]
    uint64_t s_copy = 0; ///< inp_s_copy i32 [n_seq] of recurrent layers (0 without)
    uint64_t inputs_kv = 0;  ///< the part of I that the full/MLA cache's inputs take (k_idxs, v_idxs, rotations, mask)
    uint64_t inputs_swa = 0; ///< the part of I that the window cache's inputs take (0 without window layers)

    /// H = I - tok - E: the inputs freed during the last attention layer (mask, indices, positions). They leave a
    /// hole right above inp_embd that the last layer and the output stage reuse.
    uint64_t hole() const { return inputs - tok - Ein; }
};

/// The tensors of the reserve graph for model m under settings s and context c (see compute_graph).
compute_graph compute_graph_of(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c);

/// The peak of the reserve graph's stage set for `g` (compute_graph_of, possibly with g.cuda set), without a
/// recorded graph: llamacpp_compute_bytes() for the stage-set models.
uint64_t stage_peak(const model_desc & m, const compute_graph & g);

/// The compute buffers of a run whose every layer, the output and the KV cache are on one GPU (-ngl all, one
/// device, no tensor overrides), as llama.cpp's scheduler splits the reserve graph (ggml-backend.cpp
/// ggml_backend_sched_split_graph): the graph inputs (tokens, positions, masks, KV indices, output ids) and the token
/// embedding's get_rows stay on the host backend, whose compute buffer is the host buffer type of the GPU
/// (CUDA_Host: llama-context.cpp:407-418); the GPU's split starts with a copy of every input it reads
/// (ggml-backend.cpp:1399-1411), so its peak is the CPU graph's without inp_tokens and the float-embedding input
/// inp_embd that only the host holds. In bytes. Checked against the release's scheduler on a simulated CUDA device
/// (tools/simcuda, tests/conformance/measure_cuda.mjs).
struct device_compute {
    uint64_t gpu = 0;   ///< the GPU's compute buffer (CUDA0)
    uint64_t host = 0;  ///< the host backend's (CUDA_Host): every graph input + the [n_embd, T] embedding rows
};
device_compute full_offload_compute(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                    bool cuda);

/// The compute buffers of a plan from llama.cpp's scheduler replayed over the recorded reserve graph (compute_sched.cpp):
/// per device of plan.devices (the GPUs in order, the host last), in bytes.
struct sched_compute_result {
    std::vector<uint64_t> prompt; ///< the prompt graph's (n_ubatch tokens): what a no_alloc fit reserves
    std::vector<uint64_t> token;  ///< the token graph's (one token per sequence)
    std::vector<uint64_t> bytes;  ///< the buffers a context allocates: the larger of the two, per device
    std::string variant;          ///< the template variant ("llama v0.5.0 graph fa=1 kv=f16 st=1")
    int n_splits = 0;             ///< splits of the prompt graph
    int n_copies = 1;             ///< graph copies (4 under pipeline parallelism)
    /// what the replay assumed rather than read from source ("" for CUDA/HIP): a Vulkan device's driver limits
    std::string assumed;
};

/// The compute buffers of `plan` (placed by placement.cpp on `gpus`, CUDA, HIP or Vulkan, or none) from a format-2
/// template: the recorded graph with each weight and cache tensor on its planned device, split by the scheduler
/// (sched.h) over the release's CUDA devices (backend_cuda.h) or v0.5.0's Vulkan devices (backend_vulkan.h, their
/// driver limits assumed per vendor: `assumed`) and the CPU. nullopt when no template covers m's shape and the
/// plan's settings, or the GPU backend's answers are not modelled (Metal; Vulkan at 5b4ebc5; a Vulkan buffer past
/// the 1 GiB suballocation block, which ggml-alloc splits into chunks), with the reason in `why`.
std::optional<sched_compute_result> sched_compute(const model_desc & m, const llamacpp_plan & plan,
                                                  const std::vector<device_spec> & gpus, std::string * why = nullptr);

/// The CPU build's compute buffer of m under s and c from a format-2 template (sched_compute with every layer on the
/// host): the larger of the prompt and token graphs' peaks, in bytes, and the template variant; nullopt when no
/// template covers them.
std::optional<graph_replay_result> sched_compute_cpu(const model_desc & m, const llamacpp_settings & s,
                                                     const llamacpp_context & c, std::string * why = nullptr);

/// How a plan places the graph, as the CUDA conformance rows are classed (tests/conformance/cuda_conformance.mjs
/// PLACEMENTS): "full" (one GPU, every layer and the output), "ngl0" (GPUs, no layer), "partial", "multi" (several
/// GPUs, every layer), "cpumoe" (--cpu-moe / --n-cpu-moe); "" without GPUs.
std::string gpu_placement_class(const model_desc & m, const llamacpp_plan & plan);

/// The measured error of kvfit's estimated compute buffer on a device of that placement class (`host` the host's
/// buffer, else a GPU's), from data/llamacpp_cuda_compute_error.json (written by cuda_conformance.mjs --ranges from
/// the rows kvfit estimated): {lo, hi, rows}; nullopt when that class was never measured for the release.
struct measured_error {
    double lo = 0, hi = 0;
    uint32_t rows = 0;
};
std::optional<measured_error> gpu_compute_error(const llamacpp_settings & s, const std::string & placement, bool host);

/// llamacpp_kv_caches() and, when `by_layer` is given, each layer's KV bytes (n_layer + n_layer_mtp entries, the
/// bytes its caches add to their groups: llamacpp_kv_bytes_by_layer()) from the same pass. Throws as llamacpp_kv_caches.
std::vector<kv_cache_buffer> kv_caches_by_layer(const model_desc & m, const llamacpp_settings & s,
                                                const llamacpp_context & c, std::vector<uint64_t> * by_layer);

/// Cells per stream of the window cache ("swa": window and chunked layers) as llamacpp_kv_caches() sizes it, without
/// building the caches; c.n_ctx_seq when the model has no window layer (rules.cpp, llama_kv_cache_iswa).
uint64_t window_cells_per_stream(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c);

/// Output stage: inp_embd, `n_e` live [n_embd, T] tensors (the last l_out, result_norm) and the logits.
/// The n_e tensors drop into the freed input hole H while they fit (best fit); the logits go on top.
/// Example n_e 2, H >= 2E: tok + E + 2E + L; H < E: tok + E + H + 2E + L.
uint64_t output_stage(const compute_graph & g, uint64_t n_e);

// Stage sets, one per family of layer graphs; each returns max over its stages in bytes.
/// Dense GQA/MHA decoder, one KV cache (src/models/llama.cpp). Also the default for unmeasured graphs.
uint64_t stages_dense(const model_desc & m, const compute_graph & g);
/// Two KV caches, window and full layers (src/models/gemma3.cpp, llama_kv_cache_iswa).
uint64_t stages_windowed(const model_desc & m, const compute_graph & g);
/// Routed experts of the last layer over its n_outputs rows (compute_swa.cpp): I + 2E + ffn_inp + moe_block.
uint64_t last_layer_rows_moe(const model_desc & m, const compute_graph & g);
/// True when a window model's layers differ in query width or FFN kind (dense and routed layers, a shared expert,
/// a dense MLP beside the experts): gemma4, mimo2, step35 (compute_swa.cpp).
bool windowed_mixed_layers(const model_desc & m);
/// Window + full layers of unlike shapes (compute_swa.cpp).
uint64_t stages_windowed_mixed(const model_desc & m, const compute_graph & g);
/// MLA attention with a K-only latent cache and MoE FFN (src/models/deepseek2.cpp).
uint64_t stages_mla_moe(const model_desc & m, const compute_graph & g);
/// MLA with compressed queries (q_lora_rank > 0) and MoE, no indexer (src/models/deepseek2.cpp: Kimi-K2.5,
/// mistral4.cpp). compute_mla.cpp.
uint64_t stages_mla_lora_moe(const model_desc & m, const compute_graph & g);
/// MLA + MoE + DSA lightning indexer (src/models/deepseek32.cpp, glm-dsa.cpp). compute_mla.cpp.
uint64_t stages_mla_dsa(const model_desc & m, const compute_graph & g);
/// MLA + Kimi Delta Attention layers + MoE (src/models/kimi-linear.cpp, kimi-k3.cpp). compute_mla.cpp.
uint64_t stages_mla_kda(const model_desc & m, const compute_graph & g);
/// True for an MSA model: no MLA and no recurrent layers, full-attention layers with a ratio-1 indexer cache, no
/// compressed cache (DeepSeek-V4's are not MSA). compute_mla.cpp.
bool msa_indexer(const model_desc & m);
/// MSA: GQA with indexer-selected blocks + MoE (src/models/minimax-m3.cpp). compute_mla.cpp.
uint64_t stages_msa(const model_desc & m, const compute_graph & g);
/// Gated DeltaNet layers + gated full attention (src/models/qwen35.cpp, src/models/delta-net-base.cpp).
uint64_t stages_gated_deltanet(const model_desc & m, const compute_graph & g);
/// Short-convolution layers + GQA (src/models/lfm2.cpp).
uint64_t stages_short_conv(const model_desc & m, const compute_graph & g);
/// Mamba2 layers alone or with attention and dense/MoE FFN blocks (src/models/mamba-base.cpp, nemotron-h.cpp,
/// granite-hybrid.cpp).
uint64_t stages_mamba2(const model_desc & m, const compute_graph & g);
/// Attention decoder whose input embedding is wider than n_embd (deepstack: Qwen3-VL, src/models/qwen3vl.cpp,
/// qwen3vlmoe.cpp), dense or routed-expert FFN. compute_hybrid.cpp.
uint64_t stages_deepstack(const model_desc & m, const compute_graph & g);
/// Latent routed experts (moe_latent_size; src/models/nemotron-h.cpp build_ffn_layer): the MoE block's stage and
/// the output stage after a last MoE block. compute_hybrid.cpp.
uint64_t latent_moe_stage(const model_desc & m, const compute_graph & g);
uint64_t latent_moe_output(const model_desc & m, const compute_graph & g);
/// Mamba/RWKV layers: approximate scratch of one recurrent layer (no measured oracle yet).
uint64_t stages_ssm(const model_desc & m, const compute_graph & g);

/// True when some layer's FFN is routed experts.
bool any_moe(const model_desc & m);
/// Routed-expert FFN above the live slots (build_moe_ffn): gate, up, swiglu, then down; `hole` is a freed block
/// under the FFN input that ffn_moe_gate may drop into (0 when none).
uint64_t moe_block(const model_desc & m, const compute_graph & g, uint64_t hole);
/// The FFN block of one layer above the live slots: 3F for a dense SwiGLU FFN; for routed experts the router
/// scratch R, moe gate/up (2 Fm) and moe_down Dm, or the shared expert beside the routed output, whichever is
/// larger. A dense FFN without gate (ffn_gated false) is F.
uint64_t ffn_block(const model_desc & m, const compute_graph & g);
/// Largest single tensor of the FFN block: F, or max(Fm, Dm) for routed experts.
uint64_t ffn_largest(const model_desc & m, const compute_graph & g);

} // namespace kvfit::detail
