#pragma once
/// @file launch.h
/// Standing in front of a launch: read the command a person is about to run (`kvfit exec -- llama-server ...`,
/// src/launch/exec.cpp) and read the log llama.cpp wrote (`kvfit explain LOG`, src/launch/explain.cpp).
/// Both turn text into the same llamacpp_settings + placement_settings the planner takes.

#include "kvfit/llamacpp.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

// --- commands (src/launch/exec.cpp) ---------------------------------------------------------------------

/// Which runtime a command starts, from its program name (basename of argv[0]).
enum class launch_runtime : uint8_t { llamacpp, vllm, unknown };

/// A launch command, parsed. Flags are spelled as llama.cpp's common/arg.cpp spells them (short and long).
struct launch_command {
    std::vector<std::string> argv;          ///< the command exactly as given (argv[0] is the program)
    launch_runtime runtime = launch_runtime::unknown;
    std::string model_path;                 ///< -m/--model
    std::string hf_repo;                    ///< -hf/--hf-repo (a remote model)
    std::string mmproj_path;                ///< --mmproj/-mm (multimodal projector file)
    bool mmproj_offload = true;             ///< false with --no-mmproj-offload
    llamacpp_settings settings;             ///< -c (0 or absent: n_ctx_train), -np, -b, -ub, -ctk, -ctv, -fa,
                                            ///< --kv-unified, --swa-full
    placement_settings placement;           ///< -ngl (absent: all layers), -ts, -ot, --cpu-moe, --n-cpu-moe, -nkvo
    bool no_mmap = false;                   ///< --no-mmap (no effect on GPU memory; noted)
    std::string fit;                        ///< --fit value as given ("on", "off"); empty when absent
    // settings.spec: --spec-type draft-mtp, --spec-draft-n-max, -md (path only: the caller loads it into
    // settings.spec.draft), -ngld, -ctkd, -ctvd, -devd; -cd is refused (not a flag of either release)
    /// Flags kvfit does not model, each with the value that followed it ("--foo 3"); passed through untouched.
    std::vector<std::string> not_modelled;
    /// --lora FILE[,FILE] and --lora-scaled FILE:S[,...] as given (read by the caller into settings.lora with
    /// read_lora / read_lora_scaled, llamacpp_extras.h); --cache-ram and --ctx-checkpoints go to settings.
    std::vector<std::string> lora, lora_scaled;
    /// -fitt/--fit-target MiB[,MiB...]: the free memory llama.cpp's --fit keeps per device (common/arg.cpp:2892), the
    /// largest value when several are given, bytes; 0 when absent. `kvfit exec` plans with it as the margin unless
    /// --margin is given.
    uint64_t fit_target_bytes = 0;
    /// -dev/--device LIST: the GPUs llama.cpp uses, by index ("CUDA0,CUDA2" -> {0, 2}; the digits after the backend's
    /// name, common/arg.cpp parse_device_list); "none" -> no GPU. Absent: every GPU.
    std::optional<std::vector<uint32_t>> devices;
    /// -sm none: llama.cpp keeps the whole model on the main GPU (-mg/--main-gpu, default 0; llama-model.cpp
    /// LLAMA_SPLIT_MODE_NONE), so kvfit exec plans that GPU alone.
    bool split_none = false;
    uint32_t main_gpu = 0;                  ///< -mg/--main-gpu
};

/// Parse a command line. llama-server, llama-cli (and other llama-* tools) are llama.cpp; `vllm serve` is vLLM
/// (recognised, flags not read). Flags may be written "--flag value" or "--flag=value", in any spelling of llama.cpp's
/// tables (llamacpp.h: llamacpp_flags(), llamacpp_command_flags(); -ngl, --gpu-layers and --n-gpu-layers alike);
/// llamacpp_ignored_flags() pass through silently, any other flag is listed in not_modelled.
/// Throws kvfit::error "exec: <flag> '<value>': ..." for a malformed value of a modelled flag, and
/// "exec: no command after --" for an empty argv.
launch_command parse_launch_command(const std::vector<std::string> & argv);

/// A copy of argv with the flag set to `value`: the first occurrence of any of `names` gets the new value
/// (an empty value removes a flag that takes none), others are removed; absent flags are appended.
/// Example: with_flag({"llama-server","-m","x.gguf","-c","131072"}, {"-c","--ctx-size"}, "32768")
///          -> {"llama-server","-m","x.gguf","-c","32768"}.
std::vector<std::string> with_flag(const std::vector<std::string> & argv, const std::vector<std::string> & names,
                                   const std::string & value, bool takes_value = true);

/// argv as one shell line, single-quoting words with characters the shell would interpret.
std::string shell_join(const std::vector<std::string> & argv);

// --- logs (src/launch/explain.cpp) ----------------------------------------------------------------------

/// One "<device> <what> buffer size = X MiB" line.
struct log_buffer {
    size_t line_no = 0;      ///< 1-based line in the log
    std::string device;      ///< "CPU_Mapped", "CPU", "CUDA0", "ROCm0", "Metal", ...
    double mib = 0;          ///< the figure as printed (2 decimals; 4 in the "is ... MiB" compute line)
    int cache = -1;          ///< KV buffers: index of the KV cache the line belongs to (0 = first created)
};

/// "llama_kv_cache: size = X MiB (N cells, L layers, a/b seqs), K (t): X MiB, V (t): Y MiB".
struct log_kv_cache {
    size_t line_no = 0;
    double mib = 0, k_mib = 0, v_mib = 0;
    uint64_t cells = 0;
    uint32_t n_layer = 0, seqs_used = 0, seqs = 0;
    std::string type_k, type_v;
    std::string which;       ///< "base"/"swa" after llama_kv_cache_iswa's "creating non-SWA/SWA" line, else "base"
};

/// "llama_memory_recurrent: size = X MiB (N cells, L layers, S seqs ...), R (f32): X MiB, S (f32): Y MiB".
struct log_recurrent {
    size_t line_no = 0;
    double mib = 0, r_mib = 0, s_mib = 0;
    uint64_t cells = 0;
    uint32_t n_layer = 0, seqs = 0;
};

/// A numeric "llama_context: <key> = <value>" line (n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max).
struct log_value {
    size_t line_no = 0;
    std::string text;        ///< value as printed ("4096", "enabled", "false")
};

/// The one-line error of `kvfit explain` for a file that holds no startup line of any runtime it reads (an empty file,
/// prose, a binary): thrown by the llama.cpp reader (parse_llamacpp_log) and by the serving-log reader
/// (serving_log.h parse_serving_log) alike, so that every such file gets the same message.
extern const char * const k_no_startup_log;

/// What kvfit reads from a llama.cpp log. Lines it does not know are ignored.
struct llamacpp_log {
    std::string model_path;                  ///< from "llama_model_loader: loaded meta data ... from <path> (version"
                                             ///< (a draft model announced by "loading draft model '...'" excluded)
    size_t first_line = 1, last_line = 0;    ///< the log lines of this run, 1-based (parse_llamacpp_runs)
    std::vector<std::pair<std::string, log_value>> context;  ///< llama_context key = value, in log order
    std::optional<uint32_t> offloaded, offload_total;        ///< "offloaded N/M layers to GPU"
    size_t offloaded_line = 0;
    std::vector<std::pair<std::string, uint64_t>> iswa_cells; ///< "creating non-SWA|SWA KV cache, size = N cells"
    std::vector<log_buffer> model_buffers, kv_buffers, rs_buffers, output_buffers, compute_buffers;
    std::vector<log_buffer> compute_buffers_4dp;  ///< "~llama_context: X compute buffer size is N.NNNN MiB" (real runs)
    std::vector<log_kv_cache> kv_caches;
    std::optional<log_recurrent> recurrent;
    // projector and adapters (issue 14: clip.cpp, llama-adapter.cpp; kept apart from the text model's buffers)
    std::optional<log_buffer> mmproj_weights;     ///< clip "load_hparams: model size: X MiB" (device "clip")
    std::vector<log_buffer> clip_compute_buffers; ///< clip "reserve_compute_meta: X compute buffer size = N MiB"
    std::vector<log_buffer> lora_buffers;         ///< "llama_adapter_lora_init_impl: X LoRA buffer size = N MiB"
    std::optional<bool> clip_flash_attn;          ///< clip "warmup: flash attention is enabled|disabled" (clip.cpp:3742)
    /// Line of the second "llama_context: n_ctx" (the draft / MTP context of speculative decoding, created after the
    /// target's: common_speculative_init_result); 0 when the log creates one context. Lines from it on are the draft's.
    size_t draft_context_line = 0;
    /// Size lines ("... buffer size = ...") whose figure is no number llama.cpp prints (negative, 1e9999, nan, edited):
    /// line number and the line as read (at most 16 kept). explain_log reports each as a difference, never drops it.
    std::vector<std::pair<size_t, std::string>> unreadable;
    /// Value of a llama_context key (the first, i.e. the target context's), or nullptr.
    const log_value * value(std::string_view key) const;
};

/// Parse a llama.cpp log (llama-server, llama-cli or library stderr; leading timestamps and log-level
/// prefixes such as "0.00.123.456 I " are skipped) as one run. Throws kvfit::error "log: ..." for a log with no
/// llama.cpp line at all, or with more than 65,536 size and context lines.
llamacpp_log parse_llamacpp_log(std::string_view text);

/// Parse a log read line by line from `in`, split into its runs: a model load ("llama_model_loader: loaded meta data
/// ...") after the current run created a context ("llama_context: n_ctx") starts the next run (two processes' logs
/// appended to one file), unless the line before announced a draft model ("loading draft model '...'",
/// common/speculative.cpp: loaded into the same process after the target's context). Memory: the lines kvfit reads
/// (at most 65,536 over all runs, at most 256 runs) and one line of at most 64 KiB, whatever the log's length; a
/// longer line is cut. Line numbers count from the start of `in`. Throws kvfit::error as parse_llamacpp_log, and
/// "log: more than 256 runs ...".
std::vector<llamacpp_log> parse_llamacpp_runs(std::istream & in);

/// Settings and placement reconstructed from a log, for planning the same run.
struct log_settings {
    llamacpp_settings settings;
    placement_settings placement;
    std::vector<device_spec> gpus;       ///< one per GPU device named in the model buffers, capacity unknown (1 TiB)
    std::vector<std::string> log_devices;///< the log's device name of each GPU, in order
    std::vector<std::string> notes;      ///< how each setting was inferred, and what could not be
};

/// Reconstruct n_ctx, n_seq, unified, n_batch, n_ubatch, flash attention, cache types, swa_full, -ngl and
/// --no-kv-offload from a parsed log; speculative decoding from the target's "n_rs_seq = N" (N > 0: draft-mtp with
/// --spec-draft-n-max N, common.h need_n_rs_seq) or, with a second context on a model with NextN layers, draft-mtp
/// with N = n_outputs_max / n_seq - 1 (server_output_limits); the MTP context's KV types from its cache line; the
/// target's n_outputs_max as logged (n_parallel under llama-server, n_batch under the addon; no line: n_batch).
/// GPUs are the devices of the model buffers (a Metal run's "MTL0_Mapped" weights are device MTL0, which its KV and
/// compute lines name); a log with none whose compute buffers name a GPU (-ngl 0 on a GPU
/// build: "offloaded 0/N layers") gets that GPU with no layer, and its CPU KV cache is not --no-kv-offload.
/// Throws kvfit::error "log: no 'llama_context: n_ctx' line" when the log
/// stops before a context was created.
log_settings settings_from_log(const llamacpp_log & log, const model_desc & m);

/// One line of the side-by-side explanation.
struct explain_row {
    size_t line_no = 0;       ///< log line (0 for a kvfit-only row)
    std::string what;         ///< "n_ctx", "model buffer CPU_Mapped", "KV cache 0 (base)", ...
    std::string log;          ///< the figure from the log
    std::string kvfit;        ///< kvfit's figure, printed the way llama.cpp prints it
    bool same = true;
    std::string note;         ///< how they differ, or why a difference is expected
};

/// The log beside the plan.
struct explanation {
    std::vector<explain_row> rows;
    std::vector<std::string> notes;
    size_t differences = 0;   ///< rows with same == false
    llamacpp_release release = llamacpp_release_default; ///< whose rules the plan applied
};

/// Plan the run the log describes and compare every size and context line (see llamacpp_log). `extras` (optional)
/// gives the projector and adapters the run loaded (settings.mmproj, mmproj_offload, lora: `kvfit explain --mmproj
/// FILE --lora FILE`): their lines are compared too; without them a log's projector / LoRA lines become notes.
explanation explain_log(const llamacpp_log & log, const model_desc & m, const llamacpp_settings * extras = nullptr);

/// The explanation as text: one line per row, "=" when equal, "DIFFERS" with the difference otherwise.
std::string render_explanation(const model_desc & m, const explanation & e);

} // namespace kvfit
