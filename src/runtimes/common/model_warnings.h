#pragma once
// Issue 13 (caches and layouts without a source): warnings about a model under a serving runtime's rules, made before
// any plan so that every output shows them with the model source's warnings and --strict refuses them
// (src/planner/plan.cpp make_plan). Not part of the public API.
#include "kvfit/model.h"
#include "kvfit/runtime.h"

#include <string>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// For `runtime` "vllm" or "sglang" (registry names; nothing for the others), appends to `warn`:
/// - index keys beside a full-attention (not MLA) cache in a model that also has recurrent layers (llama.cpp's
///   hybrid-idx memory, qwen4exp): no vLLM or SGLang source was found; the plan sizes them as MiniMax-M3's MSA keys
///   (docs/rules/vllm-frontier.md §6), and the warning names that rule;
/// - weights asked in a quantized format the engine cannot make at load (--weights awq, gptq, nvfp4, mxfp4, fp8-block
///   on an unquantized checkpoint: weight_quant::requested): the launch line must name such a checkpoint;
/// - a GGUF format asked (--weights q4_k_m): sized so, but vLLM and SGLang load checkpoint repositories, not GGUF;
/// - NVFP4 weights (quant method, expert method or label nvfp4): the layout of runtimes/common/quant.cpp (4.5 bits per
///   weight plus fp32 globals) was not checked against any public log (vllm-frontier.md §8.1).
/// Example: "vllm: no vLLM source was found for the index keys of a hybrid recurrent model (llama.cpp's hybrid-idx
/// memory); they are sized as MiniMax-M3's MSA (...)".
void serving_model_warnings(std::string_view runtime, const model_desc & m, std::vector<std::string> & warn);

/// vLLM and SGLang plan CUDA (and ROCm) GPUs: an Apple GPU of the table (vendor "Apple") is refused by name, as MLX
/// refuses an NVIDIA card. Their memory rules are the CUDA ones (torch.cuda.mem_get_info, CUDA graphs, the CUDA
/// context); on a Mac vLLM runs on its CPU backend or the separate vllm-metal plugin, SGLang not at all, and neither
/// is modelled. Throws kvfit::error "vllm: M4 Max 64GB is an Apple GPU; vLLM's plan is for CUDA and ROCm GPUs (on a
/// Mac: --runtime llama.cpp, ollama or mlx)". `display` is "vLLM" or "SGLang".
void refuse_apple_gpus(std::string_view runtime, std::string_view display, const std::vector<device_spec> & gpus);

/// The GPU every rank of a vLLM or SGLang engine is planned on: the one with the least memory. Each worker profiles its
/// own GPU and the engine takes the minimum over workers (vLLM: v1/core/kv_cache_utils.py get_kv_cache_configs sizes
/// every worker's blocks by the smallest; SGLang: model_runner.py profile_max_num_token all-reduces min available
/// memory over the TP group), so a bigger card's extra memory is unused; when the GPUs differ `warnings` gets one line
/// naming them. Refuses (kvfit::error) an Apple GPU (refuse_apple_gpus) and GPUs of two vendors: one process runs on
/// one platform, CUDA or ROCm (vllm/platforms/__init__.py resolve_current_platform_cls_qualname; SGLang builds for one),
/// "vllm: RTX 4090 (NVIDIA) and RX 7900 XTX (AMD): one vLLM process runs on one platform (CUDA or ROCm); plan each
/// vendor's GPUs as their own instance (--gpu with one vendor's GPUs)". `gpus` is not empty.
device_spec serving_rank_gpu(std::string_view runtime, std::string_view display, const std::vector<device_spec> & gpus,
                             std::vector<std::string> & warnings);

} // namespace kvfit::detail
