// JSON within a memory budget (src/sources/json_bounded.h). nlohmann's DOM parser stores every value it reads: a 40 MiB
// config.json of numbers became 1.17 GB (issue 25). Its SAX interface hands each token over as it is lexed; this
// handler stores a value only when the key filter keeps its member, counts what it stores and stops at the limits.
#include "sources/json_bounded.h"

#include "kvfit/error.h"

#include <fmt/format.h>

namespace kvfit::detail {
namespace {

using json = nlohmann::json;

class bounded_sax {
  public:
    bounded_sax(const json_limits & limits, const json_key_filter & keep) : limits_(limits), keep_(keep) {}

    bool null() { return scalar(nullptr); }
    bool boolean(bool v) { return scalar(v); }
    bool number_integer(json::number_integer_t v) { return scalar(v); }
    bool number_unsigned(json::number_unsigned_t v) { return scalar(v); }
    bool number_float(json::number_float_t v, const json::string_t &) { return scalar(v); }
    bool string(json::string_t & v) {
        if (skipping()) return true;
        if (v.size() > limits_.max_string_bytes) {
            return fail(fmt::format("a string of {} bytes at '{}' exceeds the limit of {} bytes", v.size(), where(),
                                    limits_.max_string_bytes));
        }
        if (!count_bytes(v.size())) return false;
        return scalar(std::move(v));
    }
    bool binary(json::binary_t &) { return fail("binary values are not JSON"); } // only CBOR / MessagePack have them
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(json::string_t & k) {
        if (skip_depth_ > 0) return true;
        if (keep_ && !keep_(path_, k)) {
            skip_next_ = true;
            return true;
        }
        if (k.size() > limits_.max_string_bytes) {
            return fail(fmt::format("a member name of {} bytes in '{}' exceeds the limit of {} bytes", k.size(), where(),
                                    limits_.max_string_bytes));
        }
        if (!count_bytes(k.size())) return false;
        if (limits_.unique_root_keys && stack_.back()->contains(k)) {
            if (stack_.size() == 1) return fail(fmt::format("member '{}' given twice", k.substr(0, 64)));
            // an object that is an element of a root member's array: a set's "models" item (its own request fields)
            if (stack_.size() == 3 && stack_[1]->is_array()) {
                return fail(fmt::format("member '{}' given twice in '{}' item {}", k.substr(0, 64), path_[0].substr(0, 64),
                                        stack_[1]->size()));
            }
        }
        slot_ = &(*stack_.back())[k];
        key_ = std::move(k);
        return true;
    }

    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception & e) {
        // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
        std::string what = e.what();
        if (const auto close = what.find("] "); what.starts_with("[json.exception") && close != std::string::npos) {
            what = what.substr(close + 2);
        }
        return fail("not valid JSON: " + what);
    }

    json root;
    std::string failure; ///< why the parse stopped, "" when it did not

  private:
    bool skipping() {
        if (skip_depth_ > 0) return true;
        if (skip_next_) { // the value of a member the filter dropped
            skip_next_ = false;
            return true;
        }
        return false;
    }

    bool count() {
        if (++n_values_ > limits_.max_values) {
            return fail(fmt::format("more than {} JSON values in the keys kvfit reads", limits_.max_values));
        }
        return true;
    }

    bool count_bytes(uint64_t n) {
        if ((string_bytes_ += n) > limits_.max_total_string_bytes) {
            return fail(fmt::format("more than {} bytes of strings in the keys kvfit reads", limits_.max_total_string_bytes));
        }
        return true;
    }

    // Where the next kept value goes: the root, the end of the enclosing array, or the member key() made.
    json * place() {
        if (stack_.empty()) return &root;
        json & top = *stack_.back();
        if (top.is_array()) {
            top.push_back(nullptr);
            return &top.back();
        }
        return slot_;
    }

    template <typename V> bool scalar(V && v) {
        if (skipping()) return true;
        if (!count()) return false;
        *place() = std::forward<V>(v);
        return true;
    }

    bool open(json empty) {
        if (skip_depth_ > 0) {
            ++skip_depth_;
            return true;
        }
        if (skip_next_) {
            skip_next_ = false;
            skip_depth_ = 1;
            return true;
        }
        const bool in_array = !stack_.empty() && stack_.back()->is_array();
        if (!stack_.empty()) path_.push_back(in_array ? std::string() : key_);
        if (stack_.size() >= limits_.max_depth) {
            return fail(fmt::format("JSON nested deeper than {} levels at '{}'", limits_.max_depth, where()));
        }
        if (!count()) return false;
        json * p = place();
        *p = std::move(empty);
        stack_.push_back(p);
        return true;
    }

    bool close() {
        if (skip_depth_ > 0) {
            --skip_depth_;
            return true;
        }
        stack_.pop_back();
        if (!path_.empty()) path_.pop_back();
        return true;
    }

    std::string where() const {
        std::string out;
        for (const auto & k : path_) out += k.empty() ? "[]" : (out.empty() ? "" : ".") + k;
        if (!stack_.empty() && stack_.back()->is_object() && !key_.empty()) out += (out.empty() ? "" : ".") + key_;
        return out.empty() ? "(root)" : out;
    }

    bool fail(std::string why) {
        if (failure.empty()) failure = std::move(why);
        return false;
    }

    const json_limits & limits_;
    const json_key_filter & keep_;
    std::vector<json *> stack_;     // the kept containers being filled, root first
    std::vector<std::string> path_; // their member names ("" for an array element), for the filter and messages
    json * slot_ = nullptr;         // the member key() made in the innermost object
    std::string key_;               // its name
    uint64_t skip_depth_ = 0;       // > 0: inside a dropped container, this many levels deep
    bool skip_next_ = false;        // the next value belongs to a dropped member
    uint64_t n_values_ = 0;
    uint64_t string_bytes_ = 0;
};

} // namespace

nlohmann::json parse_json_bounded(std::string_view text, std::string_view where, const json_limits & limits,
                                  const json_key_filter & keep) {
    bounded_sax sax(limits, keep);
    bool ok = false;
    try {
        ok = json::sax_parse(text.begin(), text.end(), &sax);
    } catch (const json::exception & e) { // the lexer's own errors (invalid UTF-8 in a string) come as exceptions
        throw error::at(where, fmt::format("not valid JSON: {}", e.what()));
    }
    if (!ok) throw error::at(where, sax.failure.empty() ? "not valid JSON" : sax.failure);
    return std::move(sax.root);
}

} // namespace kvfit::detail
