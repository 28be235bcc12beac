// Every ```console example in README.md runs here and must print exactly what README shows:
// a block starts with "$ kvfit ARGS", the output follows, and an optional "$ echo $?" line gives the status.
#include "support/run_cli.h"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

namespace {

struct example {
    std::string args;
    std::string output;
    int status = 0;
    bool has_status = false;
};

std::vector<example> readme_examples() {
    std::ifstream in(std::string(KVFIT_SOURCE_DIR) + "/README.md");
    std::vector<example> out;
    std::string line;
    bool in_block = false;
    example * cur = nullptr;
    bool expect_status = false;
    while (std::getline(in, line)) {
        if (!in_block && line == "```console") { in_block = true; cur = nullptr; continue; }
        if (!in_block) continue;
        if (line == "```") { in_block = false; continue; }
        if (line.rfind("$ kvfit", 0) == 0) {
            out.push_back({line.substr(7), "", 0, false});
            cur = &out.back();
        } else if (line == "$ echo $?") {
            expect_status = true;
        } else if (expect_status && cur) {
            cur->status = std::stoi(line);
            cur->has_status = true;
            expect_status = false;
        } else if (cur) {
            cur->output += line + "\n";
        }
    }
    return out;
}

TEST(readme, console_examples_print_what_readme_shows) {
    const auto examples = readme_examples();
    ASSERT_GE(examples.size(), 3u);
    for (const auto & e : examples) {
        const auto r = kvfit::test::run_kvfit_env("cd " + std::string(KVFIT_SOURCE_DIR) + " &&", e.args);
        EXPECT_EQ(r.err + r.out, e.output) << "README example: kvfit" << e.args;
        if (e.has_status) EXPECT_EQ(r.status, e.status) << "README example: kvfit" << e.args;
    }
}

} // namespace
