#pragma once
/// @file local.h
/// Models already on disk, read where the tools that downloaded them keep them. Nothing here touches the network.
///
/// Ollama (`ollama:NAME[:TAG]`, the names `ollama list` shows): under the models directory ($OLLAMA_MODELS, else
/// ~/.ollama/models) the manifest manifests/<host>/<namespace>/<model>/<tag> is a JSON document
/// {"schemaVersion": 2, "mediaType": ..., "config": {...}, "layers": [{"mediaType", "digest", "size"}, ...]} and each
/// layer is the file blobs/sha256-<64 hex digits> (Ollama server/internal/manifest/manifest.go, server/layer.go).
/// Names follow Ollama's types/model/name.go: [host/][namespace/]model[:tag], defaults registry.ollama.ai, library
/// and latest; each part starts with a letter or digit and holds [A-Za-z0-9._-] (the host also ':' and a port),
/// at most 80 characters (the host 350). The layer of mediaType application/vnd.ollama.image.model is the GGUF
/// planned; application/vnd.ollama.image.projector (a vision projector, llama-server --mmproj) and
/// application/vnd.ollama.image.adapter (a LoRA, --lora) are read too: their GGUF headers are checked and their
/// bytes reported (the Ollama runtime counts the projector, --mmproj-size).
///
/// Hugging Face hub cache (the layout huggingface_hub and llama.cpp's -hf write): <root>/models--<org>--<name>/
/// refs/<revision> holds a commit id and snapshots/<commit>/ the files (links into blobs/). Roots, in order:
/// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
/// (huggingface_hub constants.py); then $LLAMA_CACHE, which llama.cpp's -hf uses as the root of the same layout
/// (llama.cpp common/hf-cache.cpp get_cache_directory, v0.5.0 and 5b4ebc5).
///
/// llama.cpp's flat cache: fs_get_cache_directory() (common/common.cpp): $LLAMA_CACHE, else
/// $XDG_CACHE_HOME/llama.cpp, else ~/.cache/llama.cpp; files there are named <org>_<repo>_<tag>.gguf (docker
/// models, common/download.cpp) or by their Hub file name (older -hf downloads, common/arg.cpp).
///
/// LM Studio: ~/.lmstudio/models/<publisher>/<repo>/*.gguf and ~/.cache/lm-studio/models/<publisher>/<repo>/*.gguf.

#include "kvfit/model.h"
#include "kvfit/sources.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// Where the stores are. local_roots_from_env() fills it; tests point it at temp directories.
struct local_roots {
    std::string ollama;                   ///< Ollama's models directory ("" = none)
    std::vector<std::string> hf_hub;      ///< hub-layout caches, in lookup order
    std::vector<std::string> llamacpp;    ///< llama.cpp's flat cache directories
    std::vector<std::string> lmstudio;    ///< LM Studio's models directories
};

/// The roots the environment names (see the file comment); a root whose variables are all unset is left out.
local_roots local_roots_from_env();

/// A parsed Ollama name.
struct ollama_name {
    std::string host = "registry.ollama.ai", ns = "library", model, tag = "latest";
    /// As Ollama shows it, defaults left out: "qwen3:8b", "user/model:latest", "host:5000/ns/model:tag".
    std::string display() const;
};

/// Parse "ollama:NAME[:TAG]" (or NAME[:TAG]). Throws kvfit::error "<spec>: ..." for an empty part, more than three
/// '/'-separated parts, a part with other characters or too long.
ollama_name parse_ollama_name(std::string_view spec);

/// One layer of a manifest as found on disk.
struct ollama_layer {
    std::string media_type;    ///< "application/vnd.ollama.image.model", ...projector, ...adapter
    std::string digest;        ///< "sha256:<hex>"
    uint64_t size = 0;         ///< as the manifest states it (and the blob's size: checked)
    std::string path;          ///< blobs/sha256-<hex>
};

/// An Ollama model: the manifest read and its GGUF layers resolved.
struct ollama_model {
    ollama_name name;
    std::string manifest_path;
    ollama_layer model;                    ///< the GGUF planned
    std::vector<ollama_layer> projectors;  ///< vision projectors (GGUF)
    std::vector<ollama_layer> adapters;    ///< LoRA adapters (GGUF)
};

/// Read the manifest of `name` under the Ollama models directory `root` and resolve its layers. Throws kvfit::error
/// with one line: no such manifest (listing the models present when few), a manifest over 4 MiB, not JSON or not
/// the manifest shape, a digest that is not sha256:<64 hex>, no model layer, a missing blob, a blob whose size differs
/// from the manifest's (an interrupted pull). Blob contents are not hashed (Ollama verifies them when it pulls).
ollama_model resolve_ollama(const ollama_name & name, const std::string & root);

/// Load `ollama:NAME[:TAG]`: the model layer's GGUF (model_from_gguf), name = the display name, source = the spec.
/// Projector and adapter layers add a warning each with their bytes (their GGUF headers must parse).
model_desc model_from_ollama(std::string_view spec, const local_roots & roots, warnings & warn);

/// The snapshot directory of `repo` ("org/name") at `revision` (a branch or tag under refs/, or a commit id) in the
/// first hub root holding it; "" when none does.
std::string hf_cache_snapshot(const std::vector<std::string> & hub_roots, std::string_view repo, std::string_view revision);

/// One model found on disk.
struct local_model {
    std::string spec;     ///< how to name it to kvfit: "ollama:qwen3:8b", "hf:org/name", "hf:org/name:f.gguf", a path
    std::string store;    ///< "ollama", "hf-cache", "llama.cpp", "lm-studio"
    std::string path;     ///< the file (GGUF) or directory (a config.json snapshot) that is read
    uint64_t bytes = 0;   ///< bytes on disk of the model's files (all shards; projectors not included)
};

/// Every model in the stores, store by store, each sorted by spec. Unreadable entries are skipped; an Ollama
/// manifest that does not resolve is listed with its path so --list --local shows its error.
std::vector<local_model> find_local_models(const local_roots & roots);

/// Load a local model as found (a path, or an ollama: spec). Throws what the sources throw.
model_desc load_local_model(const local_model & l, const local_roots & roots, warnings & warn);

} // namespace kvfit
