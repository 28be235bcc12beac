#pragma once
/// @file safetensors.h
/// Safetensors reader: the header of a .safetensors file (8-byte little-endian length N, then N bytes of JSON),
/// never the tensor data; shards from model.safetensors.index.json; exact weights for a config.json model.
/// Format and checks: huggingface/safetensors safetensors/src/tensor.rs (Metadata::validate, Dtype::bitsize).
///
/// Layout of a file:
///   bytes 0-7      N, u64 little-endian (kvfit refuses N > 100,000,000, as safetensors' MAX_HEADER_SIZE)
///   bytes 8..8+N   {"__metadata__": {"k": "v"}, "name": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}}
///   bytes 8+N..    the data section; data_offsets are relative to its start
/// The tensors, sorted by offset, must tile the data section exactly: the first starts at 0, each starts where the
/// previous ends, the last ends at the end of the file, and each holds n_elements * bits(dtype) / 8 bytes.
/// Worked example: BF16 [4096, 4096] holds 4096 * 4096 * 16 / 8 = 33,554,432 bytes.

#include "kvfit/model.h"
#include "kvfit/sources.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvfit {

/// Element types of safetensors (enum Dtype in safetensors/src/tensor.rs). F4 packs two values per byte, the F6
/// types four values in three bytes; a tensor of a sub-byte type must fill whole bytes.
enum class st_dtype : uint8_t {
    boolean, f4, f6_e2m3, f6_e3m2, u8, i8, f8_e5m2, f8_e4m3, f8_e8m0, i16, u16, f16, bf16, i32, u32, f32, c64, f64,
    i64, u64,
};

/// The dtype as the header spells it: "BOOL", "F4", "BF16", "F8_E4M3", ...
const char * st_dtype_name(st_dtype t);
/// Bits per element: F4 4, F6_* 6, BOOL/U8/I8/F8_* 8, I16/U16/F16/BF16 16, I32/U32/F32 32, C64/F64/I64/U64 64.
uint32_t st_dtype_bits(st_dtype t);
/// True for the integer types (U8 ... U64, not BOOL): the containers GPTQ/AWQ/MXFP4 pack quantized values into.
bool st_dtype_is_integer(st_dtype t);
/// Dtype of a header spelling; nullopt when unknown. Case-sensitive, as the format is.
std::optional<st_dtype> st_dtype_from_name(std::string_view name);

/// Largest header kvfit reads, bytes (safetensors' MAX_HEADER_SIZE).
inline constexpr uint64_t safetensors_max_header_bytes = 100'000'000;

/// One tensor of a safetensors header. `begin` and `end` are offsets into the data section, bytes.
struct st_tensor {
    std::string name;
    st_dtype dtype = st_dtype::f32;
    std::vector<uint64_t> shape;   ///< as stored, outermost first ([rows, columns] for a PyTorch Linear weight)
    uint64_t begin = 0;            ///< data_offsets[0], bytes from the start of the data section
    uint64_t end = 0;              ///< data_offsets[1]
    uint64_t n_elements = 0;       ///< product of shape (1 for a scalar, shape [])
    uint64_t bytes() const { return end - begin; }
    bool operator==(const st_tensor &) const = default;
};

/// A parsed safetensors header. Every check is made at parse time: an object that exists is well-formed.
class safetensors_file {
public:
    /// Read the header of the file at `path` (two reads: the length, then the JSON). Throws kvfit::error
    /// "<path>: cannot open: ..." and every error parse() throws.
    static safetensors_file open(const std::string & path);

    /// Parse the first bytes of a file of `file_bytes` bytes; `prefix` must hold at least 8 + N bytes (more is
    /// ignored), so a download of the header alone is enough. `where` names the file in messages.
    /// Throws kvfit::error, one line naming the file and, where there is one, the tensor:
    /// - "<where>: offset 0x0: truncated: ..." for fewer than 8 bytes or fewer than 8 + N;
    /// - "<where>: offset 0x0: header length N exceeds the limit 100000000" / "... exceeds the file's B bytes";
    /// - "<where>: offset 0x8: header ...": not JSON, not an object, not starting with '{', bad __metadata__;
    /// - "<where>: tensor '<name>': ...": unknown dtype, bad shape or data_offsets, element count or size
    ///   overflow, a sub-byte tensor not filling whole bytes, data_offsets holding a size other than the shape's,
    ///   data past the end of the file, a tensor overlapping the previous one or leaving a gap after it;
    /// - "<where>: data section holds D bytes but the tensors end at E" for trailing bytes.
    static safetensors_file parse(std::string_view prefix, uint64_t file_bytes, std::string where);

    /// The bytes to read before parse(): 8 + N, from the first 8 bytes of a file of `file_bytes` bytes.
    /// Throws the length errors of parse().
    static uint64_t prefix_bytes(std::string_view first8, uint64_t file_bytes, std::string_view where);

    const std::string & path() const { return path_; }
    /// N: the JSON header's length, bytes.
    uint64_t header_bytes() const { return header_bytes_; }
    /// Start of the data section: 8 + N.
    uint64_t data_offset() const { return 8 + header_bytes_; }
    /// Size of the file, bytes.
    uint64_t file_bytes() const { return file_bytes_; }
    /// Tensors in data order (sorted by begin).
    const std::vector<st_tensor> & tensors() const { return tensors_; }
    /// The string pairs of __metadata__, in header order.
    const std::vector<std::pair<std::string, std::string>> & metadata() const { return metadata_; }
    /// Tensor named `name`, or nullptr.
    const st_tensor * find(std::string_view name) const;

private:
    std::string path_;
    uint64_t header_bytes_ = 0;
    uint64_t file_bytes_ = 0;
    std::vector<st_tensor> tensors_;
    std::vector<std::pair<std::string, std::string>> metadata_;
};

/// Shard file names of a model.safetensors.index.json ({"weight_map": {"tensor": "file", ...}}), each once,
/// sorted. Throws kvfit::error "<where>: ..." for invalid JSON, a missing weight_map, a value that is not a string,
/// or a file name with a '/' or '\' or "..", or that does not end in .safetensors.
std::vector<std::string> safetensors_index_shards(std::string_view index_json, std::string_view where);

/// Checks that each tensor the index places in a shard is in that shard. Throws kvfit::error
/// "<where>: tensor '<name>' is listed in <file> but that file does not hold it".
void safetensors_check_index(std::string_view index_json, std::string_view where,
                             const std::vector<safetensors_file> & shards);

/// The safetensors of a model directory: the shards named by model.safetensors.index.json when it exists, else
/// model.safetensors; empty when neither exists. Throws kvfit::error for a missing shard or a bad header.
std::vector<safetensors_file> safetensors_open_dir(const std::string & dir);

// --- weights from the headers ------------------------------------------------------------------------------------

/// The quantization of a checkpoint, from config.json's quantization_config.
struct st_quant {
    std::string method;     ///< "", "gptq", "awq", "fp8", "compressed-tensors", "mxfp4", "modelopt", "bitsandbytes"
    uint32_t bits = 0;      ///< bits per quantized weight; 0 when not quantized
    std::string format;     ///< weights.format label: "gptq-int4", "awq-int4", "fp8", "mxfp4", "nvfp4", ...
};

/// Reads quantization_config of a config.json text (absent: method "", bits 0). Bits per scheme:
/// gptq/awq "bits" (default 4); fp8 8; mxfp4 4; modelopt quant_algo NVFP4 4, FP8 8; compressed-tensors the first
/// config_groups entry's weights.num_bits (format "nvfp4-pack-quantized" -> label "nvfp4"); bitsandbytes
/// load_in_4bit 4, load_in_8bit 8. An unknown quant_method appends a warning and counts parameters as stored.
st_quant st_quant_from_config(std::string_view config_json, std::string_view where, warnings & warn);

/// Parameters a tensor stands for, under `q`. The bytes are always the file's (the tensors in the file already are
/// the quantized form). The rule per scheme:
/// - not quantized, and every float tensor: n_elements.
/// - scales, zero points and indices (names ending .scales .qzeros .g_idx .weight_scale .weight_scale_inv
///   .weight_scale_2 .weight_zero_point .weight_global_scale .input_scale .input_global_scale .weight_shape
///   .k_scale .v_scale _scales .absmax .quant_map .nested_absmax .nested_quant_map .quant_state.* .SCB): 0.
/// - packed integer weights (GPTQ/AWQ .qweight I32, compressed-tensors .weight_packed I32 or U8, MXFP4 *_blocks
///   U8, NVFP4 and bitsandbytes .weight U8): the dequantized count n_elements * bits(dtype) / q.bits.
///   GPTQ 4-bit qweight I32 [4096/8, 4096]: 512 * 4096 * 32 / 4 = 16,777,216 = 4096 * 4096.
/// - fp8 (F8_E4M3 weight, weight_scale_inv F32 [out/128, in/128]): the weight's n_elements; the scales 0.
uint64_t st_param_count(const st_tensor & t, const st_quant & q);

/// Replace m.weights by the exact bytes of the shards' tensors, grouped by placement (the model's shape stays the
/// config.json's). Names are read after dropping a language-model prefix ("model.language_model.",
/// "language_model.model.", "language_model.", "model."):
/// - embed_tokens.* -> token_embd; lm_head.*, norm.* -> output (tied: the norm alone);
/// - layers.<il>.* -> layers[il] for il < n_layer, tensors with ".experts." also in expert_params/expert_bytes;
/// - layers.<il>.* with il >= n_layer and mtp.* / mtp_layers.* -> weights.mtp (MTP / NextN blocks: not in the
///   totals, as for GGUF);
/// - visual.*, vision_tower.*, vision_model.*, multi_modal_projector.*, audio_tower.* ... -> other, and also
///   weights.vision (towers bundled with the text model);
/// - anything else -> other.
/// weights.exact becomes true and weights.format the quantization label or the dtype holding most bytes ("bf16").
/// Appends a warning naming what is reported apart (vision, MTP) and one per layer il < n_layer without tensors.
void apply_safetensors_weights(model_desc & m, const std::vector<safetensors_file> & shards,
                               std::string_view config_json, std::string_view where, warnings & warn);

} // namespace kvfit
