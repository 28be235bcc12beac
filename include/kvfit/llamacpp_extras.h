#pragma once
/// @file llamacpp_extras.h
/// What a llama-server process holds besides the text model's context (issue 14 items 3, 4, 6):
/// - a multimodal projector, `--mmproj FILE` (tools/mtmd/clip.cpp): its weights and the clip compute buffer,
///   on the first GPU or, with `--no-mmproj-offload`, in host RAM (src/runtimes/llamacpp/mmproj.cpp);
/// - LoRA adapters, `--lora FILE`, `--lora-scaled FILE:S` (src/llama-adapter.cpp), each pair of tensors in the buffer
///   type of its base weight (src/runtimes/llamacpp/lora.cpp);
/// - host RAM (src/runtimes/llamacpp/host_ram.cpp): llama-server's prompt cache (`--cache-ram`), context checkpoints
///   (`--ctx-checkpoints`), the page cache of a mapped model versus allocated weights (`--no-mmap`), pinned buffers and
///   CPU-resident layers, against `--ram SIZE` (or this machine's MemTotal under `--gpu auto`).
/// Rules and measurements: docs/rules/llamacpp-mmproj.md, docs/rules/llamacpp-host-ram.md,
/// tests/conformance/measured/spec-{mmproj,lora,ckpt}.{5b4ebc5,v0.5.0}.jsonl (both releases allocate the same bytes).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

class gguf_file;
struct model_desc;
struct llamacpp_plan;
struct runtime_plan;

// ============================================================================================================
// Projectors (mmproj.cpp)
// ============================================================================================================

/// A clip projector as llama.cpp's clip_model_loader reads it from an mmproj GGUF header (clip.cpp load_hparams,
/// load_tensors; keys from clip-impl.h KEY_*). Hyperparameters are those of the vision tower (clip.vision.*).
struct mmproj_desc {
    std::string path;             ///< the file given to --mmproj
    bool has_vision = false;      ///< clip.has_vision_encoder
    bool has_audio = false;       ///< clip.has_audio_encoder
    /// Vision projector type: clip.vision.projector_type, else clip.projector_type ("qwen2vl_merger",
    /// "qwen2.5vl_merger", "qwen3vl_merger", "gemma3", ...); "" without a vision encoder.
    std::string vision_projector;
    /// Audio projector type: clip.audio.projector_type, else clip.projector_type; "" without an audio encoder.
    std::string audio_projector;
    uint32_t n_embd = 0;          ///< clip.vision.embedding_length (E)
    uint32_t n_ff = 0;            ///< clip.vision.feed_forward_length (F)
    uint32_t n_layer = 0;         ///< clip.vision.block_count
    uint32_t n_head = 0;          ///< clip.vision.attention.head_count (H)
    uint32_t patch_size = 0;      ///< clip.vision.patch_size (p), pixels
    uint32_t image_size = 0;      ///< clip.vision.image_size, pixels
    uint32_t projection_dim = 0;  ///< clip.vision.projection_dim
    uint32_t n_merge = 2;         ///< clip.vision.spatial_merge_size (default 2, clip.cpp for the Qwen-VL towers)
    uint32_t n_deepstack = 0;     ///< Qwen3-VL deepstack mergers: tensors v.deepstack.<il>.fc1.weight (clip.cpp:2301-2310)
    uint64_t weights_bytes = 0;   ///< sum of ggml_nbytes of every tensor (clip.cpp get_tensor adds each to mem_usage)
    uint32_t n_tensors = 0;       ///< tensors in the file
    /// true when read from a config.json's vision_config (mmproj_from_hf_config): weights_bytes is then the F16
    /// mmproj the converter would write (matrices f16, vectors f32), an estimate until the GGUF is given
    bool from_config = false;
};

/// Read the projector from an mmproj GGUF (header only). Throws kvfit::error "--mmproj F: <reason>" when the file is
/// not a GGUF or has no clip encoder (neither clip.has_vision_encoder nor clip.has_audio_encoder).
mmproj_desc read_mmproj(const std::string & path);

/// The same from a parsed GGUF (tests build the header in memory).
mmproj_desc mmproj_from_gguf(const gguf_file & f, const std::string & path);

/// The projector of a config.json's vision_config, as convert_hf_to_gguf.py --mmproj would write it in F16
/// (conversion/qwenvl.py, qwen3vl.py, gemma.py; tensor list as tests/conformance/spec_models.mjs, which loads in
/// llama.cpp): Qwen2-VL (embed_dim, mlp_ratio), Qwen2.5-VL (fullatt_block_indexes), Qwen3-VL and Qwen3.5
/// (num_position_embeddings, deepstack_visual_indexes), Gemma 3 (mm_tokens_per_image). from_config is set.
/// `read_mmproj` takes this path for a .json file or a directory holding config.json. Throws kvfit::error
/// "--mmproj F: ..." for a config without vision_config or with a vision tower of another kind.
mmproj_desc mmproj_from_hf_config(std::string_view json_text, const std::string & path);

/// The clip compute buffer the server reserves for the projector: the scheduler reserve of one warmup image
/// (clip.cpp get_dummy_batch / warmup, the figure mtmd_get_memory_usage gives --fit), bytes, on the CPU build.
/// P patches: Qwen2-VL / Qwen2.5-VL / Qwen3-VL (46 x n_merge)^2 = 8464 (set_warmup_n_tokens(46*46), clip.cpp:1661-1670);
/// Gemma 3 (image_size / p)^2 = 4096. Without flash attention the largest term is one layer's f32 scores
/// H x P^2 x 4 (clip.cpp:789-793). Formulas per projector type: docs/rules/llamacpp-mmproj.md; Qwen2-VL-7B: FA off
/// 16 x 8464^2 x 4 + 4 x 8464 x (5 x 1280 + 3 x 14^2 + 4) = 4,821,636,096 B, FA on 280,056,832 B.
struct mmproj_compute {
    uint64_t bytes = 0;       ///< the compute buffer, bytes (0 with modelled false and no estimate)
    uint64_t n_patches = 0;   ///< P, patches of the warmup image
    bool modelled = true;     ///< false: an estimate outside the measured rules (why says which)
    std::string why;          ///< the reason when not modelled ("" otherwise)
};

/// The clip compute buffer of `p` with flash attention on or off (llama-server passes -fa to clip; auto resolves to
/// on where the backend has it, clip.cpp:3706-3737). An audio encoder, or a vision projector type without a rule,
/// gives modelled = false and the reason.
mmproj_compute llamacpp_mmproj_compute(const mmproj_desc & p, bool flash_attn);

// ============================================================================================================
// LoRA adapters (lora.cpp)
// ============================================================================================================

/// A LoRA adapter as llama_adapter_lora_init_impl loads it (src/llama-adapter.cpp:160-420): pairs
/// `<weight>.lora_a` / `<weight>.lora_b`, each pair allocated in the buffer type of its base weight, each tensor
/// padded to the buffer's alignment (32 B on the CPU). Bytes split by where the base weight lives.
struct lora_adapter {
    std::string path;                     ///< the file given
    double scale = 1.0;                   ///< --lora-scaled FILE:S (1 for --lora): no effect on memory
    std::string architecture;             ///< general.architecture of a GGUF adapter ("" from safetensors)
    bool from_safetensors = false;        ///< a PEFT adapter_model.safetensors: sized as convert_lora_to_gguf's f32
    uint32_t n_tensors = 0;               ///< lora_a + lora_b tensors
    std::vector<uint64_t> layer_bytes;    ///< per block il (blk.<il>.*, non-expert base weights), bytes
    std::vector<uint64_t> expert_bytes;   ///< per block il, adapters of routed-expert weights (*_exps)
    uint64_t input_bytes = 0;             ///< token_embd (the input layer: always host memory)
    uint64_t output_bytes = 0;            ///< output.weight and other tensors outside the blocks
    uint64_t bytes() const;               ///< all of them
};

/// Read a LoRA adapter: a GGUF (general.type adapter, adapter.type lora, tensors *.lora_a / *.lora_b) or a PEFT
/// safetensors header (*.lora_A.weight / *.lora_B.weight, blocks from ".layers.<il>."), sized as llama.cpp loads
/// the GGUF that convert_lora_to_gguf.py writes by default (f32, --outtype default, convert_lora_to_gguf.py:286-289).
/// Throws kvfit::error "--lora F: <reason>" for a file that is neither, a GGUF that is not a LoRA adapter, or one
/// without lora tensors. Measured: Llama-3.1-8B r16 f16 q/k/v/o 27,262,976 B (spec-lora jsonl).
lora_adapter read_lora(const std::string & path, double scale = 1.0);

/// `--lora-scaled FILE:SCALE` (common/arg.cpp: the last ':' splits them; also "FILE SCALE" as two words joined by
/// the caller). Throws kvfit::error "--lora-scaled 'x': expected FILE:SCALE".
lora_adapter read_lora_scaled(std::string_view spec);

/// The same from a parsed GGUF (tests).
lora_adapter lora_from_gguf(const gguf_file & f, const std::string & path, double scale = 1.0);

// ============================================================================================================
// Host RAM (host_ram.cpp)
// ============================================================================================================

/// llama-server's default prompt cache limit, MiB (common.h:632 cache_ram_mib = 8192).
inline constexpr int64_t llamacpp_default_cache_ram_mib = 8192;
/// llama-server's default checkpoints per slot (common.h n_ctx_checkpoints = 32).
inline constexpr uint32_t llamacpp_default_ctx_checkpoints = 32;

/// One context checkpoint (llama_state_seq_get_size_ext(ctx, seq, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)) at its
/// largest, bytes; 0 for a model the server makes none for (neither recurrent layers nor window layers, or window
/// layers under --swa-full: server-context.cpp:3460-3472). Recurrent / hybrid (llama-memory-hybrid.cpp:191-197):
/// 28 + 24 x n_recurrent_layers + one sequence's state (Qwen3.5-9B 52,691,548 B). Sliding window
/// (llama-kv-cache-iswa.cpp:260-266, cells beyond the window skipped): 24 + 12 x c + L_swa x (24 + c x cell bytes),
/// c = n_swa (+ 12 x c with M-RoPE cells), gpt-oss-20b 3,147,576 B.
uint64_t llamacpp_checkpoint_bytes(const model_desc & m, const llamacpp_plan & p);

/// The host-RAM part of a plan: what llama-server holds in system memory, line by line, and its verdict.
struct host_ram_usage {
    struct line {
        std::string name;      ///< "buffers", "page_cache", "weights", "projector", "adapters", "prompt_cache", "checkpoints"
        uint64_t bytes = 0;
        bool bound = false;    ///< an upper bound that grows while serving (prompt cache, checkpoints)
        bool reclaimable = false; ///< file-backed page cache (mmap): counted, but the kernel may drop it under pressure
        std::string what;      ///< one line: what it is and the rule
    };
    std::vector<line> lines;
    uint64_t total_bytes = 0;       ///< sum of the lines
    /// What must fit --ram: total_bytes less the prompt cache, which llama-server evicts within its --cache-ram
    /// limit (server_prompt_cache::update, tools/server/server-task.cpp:1750-1772) rather than needs. Bytes.
    uint64_t needed_bytes = 0;
    uint64_t pinned_bytes = 0;      ///< of which pinned (CUDA_Host: compute and output buffers with GPUs, --no-mmap weights)
    uint64_t capacity_bytes = 0;    ///< --ram (or detected); 0 = unknown
    bool known = false;             ///< capacity given
    bool fits = true;               ///< needed_bytes <= capacity and the cache bounded (true when unknown)
    /// The lines allocated when llama.cpp starts: neither an upper bound that grows while serving (prompt cache,
    /// checkpoints) nor reclaimable page cache (KV, state, output and compute buffers on the host, --no-mmap weights,
    /// a host projector, host adapters). Bytes.
    uint64_t allocated_bytes = 0;
    /// allocated_bytes <= capacity (true when unknown): false means the launch itself cannot get its host buffers,
    /// which makes the plan not fit (exit 3) and bounds every search (plan.cpp fits).
    bool starts = true;
    bool unbounded = false;         ///< --cache-ram -1: no limit on the prompt cache
    /// known and needed_bytes > capacity: host RAM needed exceeds --ram, so the plan does not fit (exit 3; plan.cpp
    /// fits bounds every search by it). Mapped weights count: they are read from the page cache on every token, so a
    /// host that cannot keep them cached reads them from disk each token (the kernel evicts, it does not kill).
    bool over = false;
    /// known, not over, and total_bytes (the prompt cache at its limit) > capacity: a warning, not a verdict.
    bool cache_over = false;
    /// What puts it over, with the change that helps, one clause: the CPU-resident weights ("more layers on a GPU
    /// (-ngl), a smaller quant or more RAM"), the host's buffers ("a smaller -c, ..."), or the context checkpoints at
    /// their limit ("lower --ctx-checkpoints", "or -np" with several slots). "" when not over.
    std::string cause;
};

/// Host RAM of a llama-server plan: the host device's buffers (KV, state, output, compute; weights when not mapped),
/// the mapped weights as page cache, a projector or adapters kept on the host, the prompt cache limit (--cache-ram
/// MiB, default 8192; 0 none) and n_seq x --ctx-checkpoints x llamacpp_checkpoint_bytes. Verdict against
/// settings.ram_bytes. Rules: docs/rules/llamacpp-host-ram.md sections 3.1-3.5.
host_ram_usage llamacpp_host_ram(const model_desc & m, const llamacpp_plan & p);

/// MemTotal of /proc/meminfo, bytes; 0 when it cannot be read (not Linux). `--ram auto` and `--gpu auto` use it.
uint64_t detect_host_ram_bytes();

/// Place the projector and the adapters of p.settings on p's devices (called by plan_llamacpp after the layers):
/// the projector (weights + compute) on the first GPU unless --no-mmproj-offload or no GPU, else the host; each
/// adapter's blocks with their base weights' devices, token_embd's on the host, the output's with the output layer.
/// Throws kvfit::error when an adapter's general.architecture is not the model's ("model arch and LoRA arch
/// mismatch", llama-adapter.cpp).
void llamacpp_place_extras(const model_desc & m, llamacpp_plan & p);

/// The projector's, adapters' and host RAM's part of a runtime_plan (called by llamacpp_runtime_plan): the buffers
/// "projector" and "adapters" on their devices; detail.projector, detail.adapters and (when --ram, --mmproj, --lora,
/// --cache-ram or --ctx-checkpoints is given) detail.host_ram (docs/json.md); a warning when the clip compute is not
/// modelled, when --cache-ram is -1, or when the host RAM needed exceeds --ram.
void llamacpp_extras_report(const model_desc & m, const llamacpp_plan & p, runtime_plan & r);

} // namespace kvfit
