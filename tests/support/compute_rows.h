#pragma once
// Measured llama.cpp compute buffers replayed against kvfit's compute model: one reader for the CSV files in
// tests/data/llamacpp_compute*.csv and one replay loop, shared by the tests of each stage set.
#include "kvfit/llamacpp.h"
#include "kvfit/model.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvfit::test {

/// One measured row. Files: `set,tag,n_ctx,n_seq,fa,type_k,type_v,ub,swa_full,unified,compute_bytes` (bytes, from
/// the instrumented harness) or `release,tag,n_ctx,n_seq,fa,type_k,type_v,ub,swa_full,compute_mib` (MiB with two
/// decimals, as sched_reserve logs it). The first column is a row set or a release name ("5b4ebc5", "v0.5.0"); a
/// release name sets `s.release`, any other leaves the default. The harness ran with n_batch = n_ubatch.
struct compute_row {
    std::string set;          ///< first column as written
    std::string tag;          ///< model tag, "<id>_v<n_vocab>" for the header-only GGUFs
    llamacpp_settings s;      ///< n_ctx, n_seq, flash attention, -ctk/-ctv, -ub (= -b), --swa-full, --kv-unified
    uint64_t bytes = 0;       ///< measured buffer, B (0 in a MiB file)
    double mib = 0;           ///< measured buffer, MiB as logged (0 in a bytes file)
};

/// The rows of `csv` (comment lines `#...`, the header and blank lines skipped). Fails the current test when the file
/// cannot be read or a row has the wrong number of cells.
std::vector<compute_row> read_compute_rows(const std::string & csv);

/// A tag "<id>_v<n_vocab>" split at its last "_v"; n_vocab 0 when the tag has no such suffix.
struct vocab_tag { std::string id; uint32_t n_vocab = 0; };
vocab_tag split_vocab_tag(const std::string & tag);

/// The model of a header-only GGUF `<dir>/<id>_v512.gguf` with n_vocab set to the tag's (the logits width is all
/// the vocabulary changes in the graph); cached per tag for the process.
const model_desc & vocab_model(const std::string & dir, const std::string & tag);

/// How a replay judges rows. `model` gives each row's model; `tolerance_pct` the allowed |error| in percent of the
/// measured buffer (0: byte-exact for a bytes row, within `mib_slack` MiB for a MiB row); `group` the summary line
/// a row counts in (default: its tag).
struct replay_rules {
    std::function<const model_desc &(const compute_row &)> model;
    std::function<double(const compute_row &)> tolerance_pct = [](const compute_row &) { return 0.0; };
    std::function<std::string(const compute_row &)> group = [](const compute_row & r) { return r.tag; };
    std::function<double(const compute_row &)> mib_slack = [](const compute_row &) { return 0.006; };
};

/// Replays every row: llamacpp_compute_bytes(model, s, llamacpp_context_size(model, s)) against the measurement, one
/// gtest expectation per row, then one summary line per group (rows, exact, worst error with its row). Returns the
/// number of rows replayed.
size_t replay_compute_rows(const std::vector<compute_row> & rows, const replay_rules & rules);

} // namespace kvfit::test
