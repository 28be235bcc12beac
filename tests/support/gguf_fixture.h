// Helpers for GGUF tests: a scratch directory and a small model writer for any architecture.
#pragma once

#include "kvfit/gguf_writer.h"

#include <filesystem>
#include <string>
#include <unistd.h>

namespace kvfit::test {

/// A fresh directory under the system temp dir, removed with the object.
struct scratch_dir {
    std::filesystem::path path;
    explicit scratch_dir(const std::string & name)
        : path(std::filesystem::temp_directory_path() / ("kvfit_" + name + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~scratch_dir() { std::filesystem::remove_all(path); }
    std::string file(const std::string & name) const { return (path / name).string(); }
};

/// A writer holding general.architecture, general.alignment 32, block_count, embedding_length and one
/// f16 [n_embd, n_vocab] token_embd; the caller adds the architecture's keys and block tensors.
inline gguf_writer model_writer(const std::string & arch, uint32_t n_block, uint32_t n_embd = 256,
                                uint32_t n_vocab = 512) {
    gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string(arch));
    w.add("general.alignment", gguf_wvalue::u32(32));
    w.add(arch + ".block_count", gguf_wvalue::u32(n_block));
    w.add(arch + ".embedding_length", gguf_wvalue::u32(n_embd));
    w.add(arch + ".context_length", gguf_wvalue::u32(8192));
    w.add("tokenizer.ggml.tokens", gguf_wvalue::array_string(std::vector<std::string>(n_vocab, "t")));
    w.add_tensor("token_embd.weight", ggml_type::f16, {n_embd, n_vocab});
    return w;
}

} // namespace kvfit::test
