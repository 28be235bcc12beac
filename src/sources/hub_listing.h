#pragma once
// The Hub's file listing (GET /api/models/<org>/<name>/tree/<rev>?recursive=true) as the remote source reads it
// (src/sources/remote.cpp); declared here for the fuzz target and the tests. Not part of the public API.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// One file of the listing. `id` keys the cache: the LFS sha256, else the git blob id.
struct hub_file {
    std::string path;
    uint64_t size = 0;
    std::string id;
};

/// The files of a listing: entries of type "file" whose path holds only [A-Za-z0-9._-/+ ] (no ".."), with the
/// LFS size and oid when present (else the blob's), an id only when it is [A-Za-z0-9._-]{1,128}. Other entries
/// are skipped. Throws kvfit::error "<label>: file listing: expected a JSON array" for anything else.
std::vector<hub_file> parse_hub_listing(std::string_view text, const std::string & label);

} // namespace kvfit::detail
