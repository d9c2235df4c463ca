// The user's task on models built from torch.nn's train/eval layers, made at test time by
// PyTorch (py/make_layer_models.py): every scripted one passes the worker's model check; traced
// ones whose dropout, batch norm, RNN dropout or RReLU is fixed to the traced mode are refused in
// one line; and a scripted transformer classifier (MultiheadAttention, dropout 0) trains step by
// step as PyTorch DDP does and accumulates exactly. The Python work (fixtures, the DDP reference)
// runs once per test program through py/python_batch.py, kept in the build tree between runs.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rank_launcher.h"
#include "shell_text.h"

using namespace ddpdesk::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSource = DDPDESK_SOURCE_DIR;
const std::string kScripts = kSource + "/tests/integration/py";

// What the check must answer for each model, as py/make_layer_models.py writes it beside them
// (expected.txt, which the GPU check reads too): accepted (scripted ones, and traced ones whose
// layer has no mode) or refused (traced ones whose dropout, batch norm, RNN dropout or RReLU is
// fixed to the traced mode); and for an accepted one, whether its training step draws random
// numbers — found there by running it under two seeds, an oracle for the worker's reading of
// the graph.
struct Expected {
  std::string model;
  bool accepted = false;
  bool random = false;
};

std::vector<Expected> read_expected(const std::string& file) {
  std::vector<Expected> out;
  std::ifstream in(file);
  for (std::string model, verdict; in >> model >> verdict;) {
    Expected e{model, verdict == "accepted", false};
    if (e.accepted) {
      std::string draws;
      in >> draws;
      e.random = draws == "random";
    }
    out.push_back(e);
  }
  return out;
}

// The transformer runs: world 2 x batch 4 x accumulation 2, as PyTorch DDP is run.
constexpr int kWorld = 2, kBatch = 4, kAccum = 2, kEpochs = 2;
const std::vector<std::string> kCommon = {"--lr",   "0.005",  "--weight-decay",
                                          "0.0001", "--seed", "7"};

// Equal up to the rounding of float sums taken in another order (test_user_task's bound).
bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-6 + 1e-5 * std::fabs(b);
}

class UserTaskLayers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = temp_dir("usertask-layers");
    const std::string fixtures = "{root}/layers";
    json jobs = json::array();
    jobs.push_back(
        {{"id", "layers"}, {"argv", {kScripts + "/make_layer_models.py", "--out", fixtures}}});
    jobs.push_back({{"id", "reference"}, {"argv", reference_args(fixtures)}});
    { std::ofstream(root_ + "/jobs.json") << jobs.dump(1); }
    std::string cmd = "timeout 600 /usr/bin/python3 " + quoted(kScripts + "/python_batch.py") +
                      " --jobs " + quoted(root_ + "/jobs.json") + " --out " +
                      quoted(root_ + "/python");
    // A folder of its own: test_user_task's batch keeps one set of results in its folder.
    const std::string cache = DDPDESK_PYTHON_RESULTS_DIR;
    if (!cache.empty()) cmd += " --cache " + quoted(cache);
    const std::string log = root_ + "/python_batch.log";
    const int status = std::system((cmd + " > " + quoted(log) + " 2>&1").c_str());
    const std::string text = read_text(log);
    json said;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (auto j = json::parse(line, nullptr, false); !j.is_discarded() && j.contains("root"))
        said = j;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || said.is_null()) {
      error_ = "py/python_batch.py failed:\n" + text;
      return;
    }
    batch_ = said["root"];
    const json codes = json::parse(read_text(batch_ + "/results.json"), nullptr, false);
    for (const char* id : {"layers", "reference"})
      if (!codes.is_object() || codes.value(id, -1) != 0)
        error_ +=
            std::string("python job ") + id + " failed:\n" + read_text(batch_ + "/" + id + ".log");
    fixtures_ = batch_ + "/layers";
    expected_ = read_expected(fixtures_ + "/expected.txt");
    if (expected_.size() != 37)
      error_ += "expected.txt names " + std::to_string(expected_.size()) + " models, not 37";
  }

  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void SetUp() override {
    if (!error_.empty()) GTEST_FAIL() << error_;
  }

  // user_ddp_reference.py on the transformer, as the worker runs below.
  static std::vector<std::string> reference_args(const std::string& d) {
    std::vector<std::string> a = {kScripts + "/user_ddp_reference.py",
                                  "--nproc",
                                  std::to_string(kWorld),
                                  "--model",
                                  d + "/transformer.pt",
                                  "--data",
                                  d + "/transformer-train.safetensors",
                                  "--eval-data",
                                  d + "/transformer-eval.safetensors",
                                  "--loss",
                                  "cross_entropy",
                                  "--batch",
                                  std::to_string(kBatch),
                                  "--accum",
                                  std::to_string(kAccum),
                                  "--epochs",
                                  std::to_string(kEpochs),
                                  "--out",
                                  "{root}/reference.jsonl"};
    a.insert(a.end(), kCommon.begin(), kCommon.end());
    return a;
  }

  // `ddpdesk-worker --check` of one model on the token data.
  static RankRun check(const std::string& model, const std::string& data = "tokens.safetensors") {
    LaunchOptions o;
    o.args = {"--check",
              "--task",
              "script",
              "--model",
              fixtures_ + "/" + model,
              "--train-data",
              fixtures_ + "/" + data};
    o.timeout_s = 60;
    return launch_ranks(o);
  }

  // Step messages of each rank of a transformer run.
  static std::vector<std::vector<json>> train(int world, int batch, int accum, int epochs,
                                              std::vector<json>* evals = nullptr,
                                              bool graphed = false) {
    const std::string dir = temp_dir("usertask-layers-run");
    LaunchOptions o;
    o.world = world;
    o.args = {"--task",         "script",
              "--model",        fixtures_ + "/transformer.pt",
              "--train-data",   fixtures_ + "/transformer-train.safetensors",
              "--eval-data",    fixtures_ + "/transformer-eval.safetensors",
              "--loss",         "cross_entropy",
              "--batch-size",   std::to_string(batch),
              "--accum-steps",  std::to_string(accum),
              "--epochs",       std::to_string(epochs),
              "--metrics-file", dir + "/m{rank}.jsonl"};
    o.args.insert(o.args.end(), kCommon.begin(), kCommon.end());
    o.env = {{"DDPDESK_DEBUG_STEPS", "1"}};
    if (graphed) o.env["DDPDESK_FAULT_GRAPHED_CPU"] = "1";
    o.timeout_s = 120;
    const RankRun r = launch_ranks(o);
    EXPECT_FALSE(r.timed_out);
    std::vector<std::vector<json>> steps;
    for (int k = 0; k < world; ++k) {
      EXPECT_EQ(r.exit_codes[k], 0) << "rank " << k << ":\n" << r.stderr_text[k];
      steps.push_back(read_messages(dir + "/m" + std::to_string(k) + ".jsonl", "step"));
    }
    if (evals) *evals = read_messages(dir + "/m0.jsonl", "eval");
    std::error_code ec;
    fs::remove_all(dir, ec);
    return steps;
  }

  static std::string root_, batch_, fixtures_, error_;
  static std::vector<Expected> expected_;
};

std::string UserTaskLayers::root_;
std::string UserTaskLayers::batch_;
std::string UserTaskLayers::fixtures_;
std::string UserTaskLayers::error_;
std::vector<Expected> UserTaskLayers::expected_;

}  // namespace

// Scripted models over every torch.nn layer with a train/eval mode are accepted: their mode
// follows module.train() (the fixture script checks each output changes with it), or the layer
// has no running statistics and so no mode at all, which makes a traced one harmless too.
TEST_F(UserTaskLayers, LayersThatFollowTheModePassTheModelCheck) {
  int accepted = 0, random = 0;
  for (const Expected& e : expected_) {
    if (!e.accepted) continue;
    SCOPED_TRACE(e.model);
    ++accepted;
    random += e.random ? 1 : 0;
    const RankRun r = e.model == "transformer.pt" ? check(e.model, "transformer-train.safetensors")
                                                  : check(e.model);
    EXPECT_EQ(r.exit_codes[0], 0) << r.stderr_text[0];
    const json said = json::parse(r.stdout_text[0], nullptr, false);
    EXPECT_TRUE(!said.is_discarded() && said.value("ok", false)) << r.stdout_text[0];
    // Dropout of every kind (attention's and an RNN's too), RReLU: random; norms, dropout of
    // probability zero: not.
    EXPECT_EQ(said.value("draws_random_numbers", !e.random), e.random) << r.stdout_text[0];
  }
  // Every scripted layer, the two traced ones without a mode, the transformer.
  EXPECT_EQ(accepted, 30);
  EXPECT_EQ(random, 20);
}

// Traced models whose dropout, batch norm, LSTM dropout or RReLU is a constant of the traced
// mode are refused in one line, exit 2; a traced wrapper around a scripted encoder (which reads
// `training` itself) included, and an encoder layer traced on torch.nn's eval-only fast path
// (whose missing backward would otherwise end the run at its first step).
TEST_F(UserTaskLayers, TracedLayersWithAModeAreRefusedInOneLine) {
  int refused = 0;
  for (const Expected& e : expected_) {
    if (e.accepted) continue;
    SCOPED_TRACE(e.model);
    ++refused;
    const std::string model = fixtures_ + "/" + e.model;
    const RankRun r = check(e.model);
    const std::string& err = r.stderr_text[0];
    EXPECT_EQ(r.exit_codes[0], 2) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(
        err.rfind("ddpdesk-worker: invalid --model '" + model + "': made by torch.jit.trace", 0),
        0u)
        << err;
  }
  EXPECT_EQ(refused, 7);
}

// A scripted transformer classifier (embedding, two TransformerEncoderLayers, mean, linear;
// dropout 0) gives PyTorch DDP's global loss at every step over two epochs, and its validation
// loss and accuracy after each.
TEST_F(UserTaskLayers, TransformerMatchesPyTorchDdpStepByStep) {
  std::vector<json> evals;
  const auto ours = train(kWorld, kBatch, kAccum, kEpochs, &evals);
  std::vector<json> want;
  std::ifstream in(batch_ + "/reference.jsonl");
  for (std::string line; std::getline(in, line);) want.push_back(json::parse(line));
  std::vector<double> torch_steps, torch_eval, torch_accuracy;
  for (const auto& j : want) {
    if (j.contains("global_loss")) torch_steps.push_back(j["global_loss"]);
    if (j.contains("eval_loss")) torch_eval.push_back(j["eval_loss"]);
    if (j.contains("accuracy")) torch_accuracy.push_back(j["accuracy"]);
  }
  ASSERT_EQ(torch_steps.size(), 32u);  // 256 / (2 x 4 x 2) = 16 steps per epoch
  ASSERT_EQ(ours[0].size(), torch_steps.size());
  double worst = 0;
  for (std::size_t i = 0; i < torch_steps.size(); ++i) {
    const double got = ours[0][i]["global_loss"];
    worst = std::max(worst, std::fabs(got - torch_steps[i]));
    EXPECT_TRUE(close(got, torch_steps[i]))
        << "step " << i + 1 << ": " << got << " vs " << torch_steps[i];
  }
  std::printf("transformer, engine vs PyTorch DDP, %zu steps: max |difference| %g\n",
              torch_steps.size(), worst);
  // The model learns: equal losses of a model that does not train would prove little.
  EXPECT_LT(torch_steps.back(), torch_steps.front() * 0.9);
  ASSERT_EQ(torch_eval.size(), 2u);
  ASSERT_EQ(evals.size(), 2u);
  for (std::size_t e = 0; e < evals.size(); ++e) {
    EXPECT_TRUE(close(evals[e]["loss"], torch_eval[e]))
        << evals[e]["loss"] << " vs " << torch_eval[e];
    EXPECT_EQ(evals[e]["accuracy"].get<double>(), torch_accuracy.at(e));
  }
}

// Exact accumulation: world 2 x batch 4 x accumulation 2 gives world 1 x batch 16's loss at
// every step (to the rounding of sums in another order), with both ranks' parameters bitwise
// equal after every step.
TEST_F(UserTaskLayers, TransformerAccumulationEqualsOneBigBatch) {
  const auto acc = train(kWorld, kBatch, kAccum, 1);
  const auto big = train(1, kWorld * kBatch * kAccum, 1, 1);
  ASSERT_EQ(big[0].size(), 16u);
  ASSERT_EQ(acc[0].size(), big[0].size());
  ASSERT_EQ(acc[1].size(), big[0].size());
  double worst = 0;
  for (std::size_t i = 0; i < big[0].size(); ++i) {
    const double want = big[0][i]["global_loss"], got = acc[0][i]["global_loss"];
    worst = std::max(worst, std::fabs(got - want));
    EXPECT_TRUE(close(got, want)) << "step " << i + 1 << ": " << got << " vs " << want;
    EXPECT_EQ(acc[0][i]["samples"], big[0][i]["samples"]) << "step " << i + 1;
    ASSERT_TRUE(acc[0][i].contains("param_hash")) << "DDPDESK_DEBUG_STEPS=1 needs param_hash";
    EXPECT_EQ(acc[0][i]["param_hash"], acc[1][i]["param_hash"]) << "step " << i + 1;
  }
  std::printf("transformer, world 2 x 4 x 2 vs world 1 x 16: max |difference| %g\n", worst);
  EXPECT_NE(acc[0].front()["global_loss"], acc[0].back()["global_loss"]);
}

// --cuda-graph's path for the user's model (without recording: the test-only
// DDPDESK_FAULT_GRAPHED_CPU on CPU ranks): the transformer (dropout 0, so it draws no random
// numbers and may be recorded: attention's dropout probability is an attribute of the module)
// trains bitwise as on the ordinary path, its data gathered from one copy.
TEST_F(UserTaskLayers, TransformerOnTheGraphedPathTrainsBitwiseAsOrdinary) {
  if (!DDPDESK_FAULTS_BUILT) GTEST_SKIP() << "built without DDPDESK_FAULT_INJECTION";
  const RankRun c = check("transformer.pt", "transformer-train.safetensors");
  ASSERT_EQ(c.exit_codes[0], 0) << c.stderr_text[0];
  const json said = json::parse(c.stdout_text[0], nullptr, false);
  EXPECT_EQ(said.value("draws_random_numbers", true), false) << c.stdout_text[0];
  const auto ordinary = train(kWorld, kBatch, kAccum, 1);
  const auto graphed = train(kWorld, kBatch, kAccum, 1, nullptr, true);
  for (int k = 0; k < kWorld; ++k) {
    ASSERT_EQ(ordinary[k].size(), 16u);
    ASSERT_EQ(graphed[k].size(), ordinary[k].size());
    for (std::size_t i = 0; i < ordinary[k].size(); ++i) {
      EXPECT_EQ(graphed[k][i]["global_loss"], ordinary[k][i]["global_loss"]) << "step " << i + 1;
      EXPECT_EQ(graphed[k][i]["param_hash"], ordinary[k][i]["param_hash"]) << "step " << i + 1;
      EXPECT_EQ(graphed[k][i]["time_ms"]["forward"], 0.0) << "the graphed path did not run";
    }
  }
}
