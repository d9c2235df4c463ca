// Telemetry's metrics file across a rank's restarts: a resumed rank appends to the file its
// earlier life wrote. When that life died mid-line (killed while writing), the new hello still
// starts a line of its own, so everyone who follows the file reads every complete line, and the
// half line stays as it was (nothing is rewritten). A file that ended cleanly gets no blank line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry.h"
#include "temp_jsonl.h"

using namespace ddpdesk;
using ddpdesk::test::TempJsonl;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void run_rank(const fs::path& file) {
  Telemetry::Options o;
  o.hello.rank = 0;
  o.hello.world = 1;
  o.hello.device = "cpu";
  o.metrics_file = file.string();
  Telemetry t(o);
  wire::Step s;
  s.step = 3;
  t.send(s);
  t.close();
}

bool parses(const std::string& line) {
  return !nlohmann::json::parse(line, nullptr, false).is_discarded();
}

}  // namespace

TEST(TelemetryFile, ARankThatDiedMidLineLeavesTheNextHelloOnALineOfItsOwn) {
  TempJsonl f("half-line");
  const std::string whole = R"({"type":"step","rank":0,"step":1})";
  const std::string half = R"({"type":"step","rank":0,"st)";
  write(f.path, whole + "\n" + half);
  run_rank(f.path);
  const auto got = lines(f.path);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], whole);
  EXPECT_EQ(got[1], half);  // left as it was
  ASSERT_TRUE(parses(got[2])) << got[2];
  EXPECT_EQ(nlohmann::json::parse(got[2])["type"], "hello");
  ASSERT_TRUE(parses(got[3])) << got[3];
  EXPECT_EQ(nlohmann::json::parse(got[3])["step"], 3);
}

TEST(TelemetryFile, AFileThatEndedCleanlyGetsNoBlankLine) {
  TempJsonl f("whole-line");
  write(f.path, std::string(R"({"type":"step","rank":0,"step":1})") + "\n");
  run_rank(f.path);
  const auto got = lines(f.path);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& l : got) EXPECT_TRUE(parses(l)) << l;
}

TEST(TelemetryFile, ANewFileStartsWithTheHello) {
  TempJsonl f("new");
  run_rank(f.path);
  const auto got = lines(f.path);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(got[0])["type"], "hello");
}
