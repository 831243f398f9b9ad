// kite serve's API keys: the key file's format, and a reload that replaces the file's keys
// but not --api-key's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "server/api_keys.h"

namespace kite::server {
namespace {

std::filesystem::path write_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("kite_keys_" + std::to_string(getpid()) + "_" + name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

TEST(ApiKeyFile, OneKeyALineWithoutBlanksCommentsOrSurroundingSpace) {
    const auto path = write_file("good", "# ops\nalpha\n\n  beta \t\r\n#gamma\ndelta");
    EXPECT_EQ(read_api_key_file(path.string()),
              (std::vector<std::string>{"alpha", "beta", "delta"}));
    std::filesystem::remove(path);
}

TEST(ApiKeyFile, AFileWithoutKeysOrThatCannotBeReadIsAnError) {
    const auto empty = write_file("empty", "\n# none\n   \n");
    EXPECT_THROW(read_api_key_file(empty.string()), Error);
    std::filesystem::remove(empty);
    EXPECT_THROW(read_api_key_file(empty.string()), Error);  // gone now
}

TEST(ApiKeys, AnyListedKeyIsAcceptedAndAReloadKeepsTheFlagsKey) {
    EXPECT_FALSE(ApiKeys().enabled());
    ApiKeys keys("flag", {"one", "two"});
    EXPECT_TRUE(keys.enabled());
    for (const char* k : {"flag", "one", "two"}) EXPECT_TRUE(keys.accepts(k)) << k;
    for (const char* k : {"", "on", "one ", "flagx", "three"}) EXPECT_FALSE(keys.accepts(k)) << k;
    keys.replace_file_keys({"three"});
    EXPECT_TRUE(keys.accepts("three"));
    EXPECT_TRUE(keys.accepts("flag"));
    EXPECT_FALSE(keys.accepts("one"));
    EXPECT_EQ(keys.file_key_count(), 1u);
    EXPECT_TRUE(ApiKeys("", {"only"}).enabled());
}

}  // namespace
}  // namespace kite::server
