// Bad flags and bad config files: one line naming the field, the value and what is allowed;
// exit code 2; nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

struct BadInput {
  std::vector<std::string> args;
  std::string message;
};

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

TEST(WorkerCli, RejectsBadInputWithOneLineAndExitTwo) {
  const std::string dir = temp_dir("cli");
  write(dir + "/bad.json", R"({"batch_size": 0})");
  write(dir + "/unknown.json", R"({"batch": 4})");
  write(dir + "/broken.json", R"({"batch_size": )");
  write(dir + "/file", "x");
  const std::vector<BadInput> table = {
      {{"--batch-size", "0"}, "invalid --batch-size '0': must be an integer from 1 to 65536"},
      {{"--batch-size", "four"}, "invalid --batch-size 'four': must be an integer"},
      {{"--accum-steps", "-1"}, "invalid --accum-steps '-1': must be an integer from 1"},
      {{"--epochs", "1.5"}, "invalid --epochs '1.5': must be an integer"},
      {{"--lr", "-0.1"}, "invalid --lr '-0.1': must be a number greater than 0"},
      {{"--lr", "nan"}, "invalid --lr 'nan'"},
      {{"--weight-decay", "2"}, "invalid --weight-decay '2"},
      {{"--task", "resnet"},
       "invalid --task 'resnet': must be one of seed, fmnist-mlp, fmnist-cnn"},
      {{"--device", "tpu"}, "invalid --device 'tpu': must be cpu or cuda"},
      {{"--log-interval", "0"}, "invalid --log-interval '0'"},
      {{"--fit-batch", "2"}, "invalid --fit-batch '2': must be 0 or 1"},
      {{"--fit-batch=yes"}, "invalid --fit-batch 'yes': must be 0 or 1"},
      {{"--dataset-size", "-5"}, "invalid --dataset-size '-5'"},
      {{"--config", dir + "/bad.json"}, "invalid batch_size '0': must be an integer from 1"},
      {{"--config", dir + "/unknown.json"}, "invalid batch '4': is not a run spec field"},
      {{"--config", dir + "/broken.json"},
       "invalid --config '" + dir + "/broken.json': is not valid JSON (at line 1, column "},
      {{"--nrpoc", "2"}, "ddpdesk-worker: unknown option --nrpoc"},
      {{"--batch-size"},
       "ddpdesk-worker: invalid --batch-size: needs a value, not the flag --metrics-file"},
      {{"--config", dir + "/missing.json"},
       "invalid --config '" + dir + "/missing.json': cannot be read"},
      {{"--run-dir", dir + "/file/sub"}, "invalid --run-dir"},
      {{"--resume", dir + "/nothing-here"}, "invalid --resume"},
      {{"--no-such-flag"}, "--no-such-flag"},
      {{"--device", "cuda"}, "invalid --device 'cuda': needs a CUDA GPU and this machine has none"},
  };
  for (const auto& row : table) {
    LaunchOptions o;
    o.args = row.args;
    o.args.insert(o.args.end(), {"--metrics-file", dir + "/metrics.jsonl", "--epochs", "1"});
    if (row.args[0] == "--epochs") o.args.resize(o.args.size() - 2);
    o.timeout_s = 60;
    RankRun r = launch_ranks(o);
    std::string args;
    for (const auto& a : row.args) args += a + " ";
    EXPECT_EQ(r.exit_codes[0], 2) << args << "\n" << r.stderr_text[0];
    EXPECT_NE(r.stderr_text[0].find(row.message), std::string::npos)
        << args << "\nstderr: " << r.stderr_text[0];
    const std::string& err = r.stderr_text[0];
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << args << "\n" << err;
    // Only failures found after start-up (device) may have opened the metrics file.
    if (row.args[0] != "--device" && row.args[0] != "--resume") {
      EXPECT_FALSE(std::filesystem::exists(dir + "/metrics.jsonl")) << args;
    }
    std::filesystem::remove(dir + "/metrics.jsonl");
  }
}

TEST(WorkerCli, ProbeReportsDevicesAsJson) {
  LaunchOptions o;
  o.args = {"--probe"};
  RankRun r = launch_ranks(o);
  ASSERT_EQ(r.exit_codes[0], 0);
  auto j = nlohmann::json::parse(r.stdout_text[0]);
  EXPECT_TRUE(j.contains("cuda_available"));
  EXPECT_TRUE(j["device_count"].is_number_integer());
  EXPECT_TRUE(j["devices"].is_array());
}

TEST(WorkerCli, BadRankEnvironmentIsAnInputError) {
  LaunchOptions o;
  o.args = {"--epochs", "1"};
  o.env = {{"RANK", "3"}};  // WORLD_SIZE is set to 1 by the launcher
  RankRun r = launch_ranks(o);
  EXPECT_EQ(r.exit_codes[0], 2);
  EXPECT_NE(r.stderr_text[0].find("invalid rank 3"), std::string::npos) << r.stderr_text[0];
}
