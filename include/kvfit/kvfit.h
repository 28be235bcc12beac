#pragma once
/// @file kvfit.h
/// The umbrella header: the whole library API. A consumer links kvfit::kvfit (CMake: find_package(kvfit CONFIG),
/// or add_subdirectory) or `pkg-config kvfit`, builds as C++20, and includes this one header:
///
///   #include <kvfit/kvfit.h>
///   kvfit::plan_request q;
///   q.model = "Qwen3.5-9B";  // catalog name, config.json, model directory, .gguf (hf:org/name with libcurl)
///   q.gpu = "RTX 4060";
///   q.flags.set("ctx_size", "32768");
///   kvfit::plan_result r = kvfit::make_plan(q, [&](kvfit::warnings & w) { return kvfit::load_model(q.model, w); });
///   std::string json = kvfit::render_json(r);  // the CLI's --json
///
/// Every function throws kvfit::error (error.h) with a one-line message for bad input.

#include "kvfit/chart.h"
#include "kvfit/detect.h"
#include "kvfit/error.h"
#include "kvfit/printable.h"
#include "kvfit/ggml_type.h"
#include "kvfit/gguf.h"
#include "kvfit/gpus.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/local.h"
#include "kvfit/llamacpp_cpu.h"
#include "kvfit/llamacpp_extras.h"
#include "kvfit/mlx.h"
#include "kvfit/model.h"
#include "kvfit/model_set.h"
#include "kvfit/ollama.h"
#include "kvfit/plan.h"
#include "kvfit/ranking.h"
#include "kvfit/remote.h"
#include "kvfit/report.h"
#include "kvfit/runtime.h"
#include "kvfit/safetensors.h"
#include "kvfit/search.h"
#include "kvfit/sglang.h"
#include "kvfit/sources.h"
#include "kvfit/speed.h"
#include "kvfit/units.h"
#include "kvfit/version.h"
#include "kvfit/vllm.h"
