// Safetensors writer (src/kvfit/safetensors_writer.h).
#include "kvfit/safetensors_writer.h"
#include "kvfit/error.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

namespace kvfit {

void safetensors_writer::add(std::string name, st_dtype dtype, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    const uint64_t bytes = (n * st_dtype_bits(dtype) + 7) / 8;
    tensors_.push_back({std::move(name), dtype, std::move(shape), next_, next_ + bytes});
    next_ += bytes;
}

void safetensors_writer::add_metadata(std::string key, std::string value) {
    metadata_.emplace_back(std::move(key), std::move(value));
}

std::string safetensors_writer::header() const {
    // Written by hand, in the order added (an ordered_json object is quadratic in its key count).
    auto quoted = [](const std::string & s) { return nlohmann::json(s).dump(); };
    std::string text = "{";
    if (!metadata_.empty()) {
        text += "\"__metadata__\":{";
        for (size_t i = 0; i < metadata_.size(); ++i) {
            text += fmt::format("{}{}:{}", i ? "," : "", quoted(metadata_[i].first), quoted(metadata_[i].second));
        }
        text += "}";
    }
    for (const auto & t : tensors_) {
        text += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", text.size() > 1 ? "," : "",
                            quoted(t.name), st_dtype_name(t.dtype), fmt::join(t.shape, ","), t.begin, t.end);
    }
    text += "}";
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i, n >>= 8) out[size_t(i)] = char(n & 0xff);
    return out + text;
}

void safetensors_writer::write(const std::string & path) const {
    const std::string head = header();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw error::at(path, fmt::format("cannot write: {}", std::strerror(errno)));
    const bool ok = ::write(fd, head.data(), head.size()) == ssize_t(head.size()) &&
                    ::ftruncate(fd, off_t(head.size() + next_)) == 0;
    const int saved = errno;
    ::close(fd);
    if (!ok) throw error::at(path, fmt::format("cannot write: {}", std::strerror(saved)));
}

} // namespace kvfit
