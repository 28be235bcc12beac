#pragma once
// File helpers for tests: whole-file reads of repo fixtures and of ../shared.
#include "kvfit/model.h"

#include <string>

namespace kvfit::test {

/// The bytes of the file at `path`; fails the current test (and returns "") when it cannot be opened.
std::string read_text(const std::string & path);

/// The text of ../shared/configs/<file> (KVFIT_SHARED_DIR).
std::string shared_config(const std::string & file);

/// A model by catalog name or path, as the CLI loads it (kvfit::load_model), its warnings dropped.
kvfit::model_desc catalog_model(const std::string & name);

/// A GoogleTest parameter name from a file name: every character but a letter or digit becomes '_'
/// ("Qwen__Qwen3.5-27B.json" -> "Qwen__Qwen3_5_27B_json"), so value-parameterised tests are named for their file.
inline std::string test_name_of_file(std::string name) {
    for (char & ch : name) {
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))) ch = '_';
    }
    return name;
}

/// Every config.json under ../shared/configs (file names), in the order of SOURCES.md.
inline constexpr const char * k_shared_configs[] = {
    "Qwen__Qwen3.5-27B.json", "Qwen__Qwen3-Next-80B-A3B-Thinking.json", "Qwen__Qwen3-8B.json", "Qwen__Qwen2.5-7B.json",
    "meta-llama__Meta-Llama-3.1-8B.json", "meta-llama__Llama-2-7b-hf.json", "meta-llama__Llama-4-Scout-17B-16E-Instruct.json",
    "mistralai__Mixtral-8x7B-v0.1.json", "deepseek-ai__DeepSeek-V3.json", "openai__gpt-oss-20b.json",
    "nvidia__Nemotron-H-56B-Base-8K.json", "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json",
    "deepseek-ai__DeepSeek-V3.2.json", "zai-org__GLM-5.json", "moonshotai__Kimi-K2.5.json",
    "deepseek-ai__DeepSeek-V4-Flash.json", "MiniMaxAI__MiniMax-M2.5.json", "google__gemma-4-26B-A4B.json",
    "XiaomiMiMo__MiMo-V2-Flash.json", "stepfun-ai__Step-3.7-Flash.json",
    "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json", "Qwen__Qwen3-VL-30B-A3B-Instruct.json",
    "Qwen__Qwen3.5-35B-A3B.json", "openai__gpt-oss-120b.json",
};

} // namespace kvfit::test
