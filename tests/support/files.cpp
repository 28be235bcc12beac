#include "support/files.h"
#include "kvfit/sources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace kvfit::test {

std::string read_text(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << "cannot open " << path;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string shared_config(const std::string & file) {
    return read_text(std::string(KVFIT_SHARED_DIR) + "/configs/" + file);
}

kvfit::model_desc catalog_model(const std::string & name) {
    kvfit::warnings w;
    return kvfit::load_model(name, w);
}

} // namespace kvfit::test
