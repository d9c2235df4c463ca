// The user's task (`ddpdesk-worker --task script`) end to end, against PyTorch itself: a model
// scripted by examples/make_user_task.py on data it writes, trained by real worker processes and
// by torch's own DistributedDataParallel (tests/integration/py/user_ddp_reference.py); the
// trained model.pt loaded back with torch.jit.load; and the dry run's answer to broken input.
// Fixtures are made at test time by Debian's python3-torch into one temporary folder, removed at
// the end (DDPDESK_KEEP_TEST_FILES=1 keeps it and prints where). Every Python computation that
// does not depend on a worker's output (the fixtures, the PyTorch DDP references, the untrained
// model's check) runs up front in one Python process (py/python_batch.py: torch imported once,
// reference ranks forked), its results kept in the build tree keyed by the scripts and their
// arguments, so the sanitizer build's run of this test reuses the release build's.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "rank_launcher.h"
#include "shell_text.h"

using namespace ddpdesk::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSource = DDPDESK_SOURCE_DIR;
const std::string kPython = "/usr/bin/python3";  // Debian's, with python3-torch
const std::string kScripts = kSource + "/tests/integration/py";

// Step losses: PyTorch and the engine order float sums differently, so equal up to rounding.
constexpr double kRel = 1e-5, kAbs = 1e-6;

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += " " + quoted(a);
  return out;
}

struct Shell {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs `program args...` through the shell, capturing its output in `log`.
Shell run_command(const std::string& program, const std::vector<std::string>& args,
                  const std::string& log) {
  const int status =
      std::system(("timeout 300 " + program + join(args) + " > " + quoted(log) + " 2>&1").c_str());
  Shell s;
  s.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  s.output = read_text(log);
  return s;
}

json last_json_line(const std::string& text) {
  std::istringstream in(text);
  json last;
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) last = j;
  }
  return last;
}

// What one side (worker or reference) produced: rank 0's step global losses in order, its
// evaluation losses and accuracies per epoch, and each rank's step messages (worker only).
struct Losses {
  std::vector<double> steps;
  std::vector<double> eval_loss, eval_accuracy;
  std::vector<std::vector<json>> rank_steps;
};

// The largest |a - b| and whether every pair is within kAbs + kRel * |b|.
struct Comparison {
  double max_abs = 0, max_rel = 0;
  bool within = true;
  std::size_t worst = 0;
};

Comparison compare(const std::vector<double>& a, const std::vector<double>& b) {
  Comparison c;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    if (d > c.max_abs) {
      c.max_abs = d;
      c.worst = i;
    }
    c.max_rel = std::max(c.max_rel, d / std::max(std::fabs(b[i]), 1e-30));
    if (d > kAbs + kRel * std::fabs(b[i])) c.within = false;
  }
  return c;
}

std::string describe(const Comparison& c) {
  std::ostringstream s;
  s << "max |difference| " << c.max_abs << " (relative " << c.max_rel << ") at step "
    << c.worst + 1;
  return s.str();
}

// A run's settings, shared by the worker and the reference.
struct RunSettings {
  int world = 2, batch = 4, accum = 2, epochs = 1;
  std::string model, train, eval, loss = "cross_entropy";
  std::vector<std::string> extra;          // more worker flags
  std::map<std::string, std::string> env;  // worker environment
};

const std::vector<std::string> kCommon = {"--lr",   "0.005",  "--weight-decay",
                                          "0.0001", "--seed", "7"};

// examples/make_user_task.py's flags for each fixture folder. "plain": 256 training and 128
// validation samples, a multiple of 16, so world 2 x batch 4 x accum 2 and one batch of 16 see
// the same windows. "mse": the module's own per_sample_loss, mse targets, and 251 samples (a
// short last micro-batch and window, the sampler's padding on 2 ranks).
const std::map<std::string, std::vector<std::string>> kFixtures = {
    {"plain",
     {"--data", "synthetic", "--model", "small", "--limit", "256", "--eval-limit", "128", "--seed",
      "5"}},
    {"mse",
     {"--data", "synthetic", "--model", "small", "--loss", "mse", "--loss-method", "--limit", "251",
      "--eval-limit", "64", "--seed", "11"}},
    {"bn",
     {"--data", "synthetic", "--model", "small", "--batchnorm", "--limit", "256", "--eval-limit",
      "128", "--seed", "5"}},
};

// The runs compared with PyTorch DDP, on the fixture folder `d`.
RunSettings two_epochs_with_eval(const std::string& d) {  // on "plain"
  RunSettings r;
  r.model = d + "/model.pt";
  r.train = d + "/train.safetensors";
  r.eval = d + "/eval.safetensors";
  r.epochs = 2;
  return r;
}

RunSettings model_loss(const std::string& d) {  // on "mse"
  RunSettings r;
  r.model = d + "/model.pt";
  r.train = d + "/train.pt";
  r.loss = "model";
  return r;
}

RunSettings batchnorm_accumulated(const std::string& d) {  // on "bn"
  RunSettings r;
  r.model = d + "/model.pt";
  r.train = d + "/train.safetensors";
  r.eval = d + "/eval.safetensors";
  return r;
}

// user_ddp_reference.py's arguments for a run (its --out added by the caller).
std::vector<std::string> reference_args(const RunSettings& r) {
  std::vector<std::string> args = {kScripts + "/user_ddp_reference.py",
                                   "--nproc",
                                   std::to_string(r.world),
                                   "--model",
                                   r.model,
                                   "--data",
                                   r.train,
                                   "--loss",
                                   r.loss,
                                   "--batch",
                                   std::to_string(r.batch),
                                   "--accum",
                                   std::to_string(r.accum),
                                   "--epochs",
                                   std::to_string(r.epochs)};
  if (!r.eval.empty()) args.insert(args.end(), {"--eval-data", r.eval});
  args.insert(args.end(), kCommon.begin(), kCommon.end());
  return args;
}

// check_model_pt.py's arguments for a model.pt and the fixture flags it was made with.
std::vector<std::string> check_args(const std::string& model_pt, const std::string& eval_data,
                                    const std::string& loss,
                                    const std::vector<std::string>& example_flags) {
  std::vector<std::string> args = {kScripts + "/check_model_pt.py",
                                   "--model-pt",
                                   model_pt,
                                   "--eval-data",
                                   eval_data,
                                   "--loss",
                                   loss,
                                   "--"};
  args.insert(args.end(), example_flags.begin(), example_flags.end());
  return args;
}

class UserTask : public ::testing::Test {
 protected:
  // Runs every Python job that needs no worker output in one python_batch.py process. Jobs are
  // found again by their exact arguments: a test whose settings differ from these simply runs
  // its script itself (slower, never wrong).
  static void SetUpTestSuite() {
    root_ = temp_dir("usertask");
    const std::string root = "{root}";
    json jobs = json::array();
    auto add = [&](const std::string& id, std::vector<std::string> argv) {
      jobs.push_back({{"id", id}, {"argv", argv}});
    };
    for (const auto& [name, flags] : kFixtures) {
      std::vector<std::string> argv = {kSource + "/examples/make_user_task.py", "--out",
                                       root + "/" + name};
      argv.insert(argv.end(), flags.begin(), flags.end());
      add(name, argv);
    }
    add("bad", {kScripts + "/make_bad_inputs.py", "--out", root + "/bad"});
    const std::vector<RunSettings> references = {two_epochs_with_eval(root + "/plain"),
                                                 model_loss(root + "/mse"),
                                                 batchnorm_accumulated(root + "/bn")};
    for (std::size_t i = 0; i < references.size(); ++i) {
      const std::string id = "reference-" + std::to_string(i);
      std::vector<std::string> argv = reference_args(references[i]);
      argv.insert(argv.end(), {"--out", root + "/" + id + ".jsonl"});
      add(id, argv);
    }
    // The untrained model, against which a trained model.pt must have moved.
    add("check-untrained", check_args(root + "/plain/model.pt", root + "/plain/eval.safetensors",
                                      "cross_entropy", kFixtures.at("plain")));
    { std::ofstream(root_ + "/jobs.json") << jobs.dump(1); }
    std::vector<std::string> args = {kScripts + "/python_batch.py", "--jobs", root_ + "/jobs.json",
                                     "--out", root_ + "/python"};
    const std::string cache = DDPDESK_PYTHON_RESULTS_DIR;
    if (!cache.empty()) args.insert(args.end(), {"--cache", cache});
    const Shell s = run_command(kPython, args, root_ + "/python_batch.log");
    const json said = last_json_line(s.output);
    if (s.code != 0 || !said.contains("root")) {
      batch_error_ =
          "py/python_batch.py failed (exit " + std::to_string(s.code) + "):\n" + s.output;
      return;
    }
    batch_root_ = said["root"];
    std::ifstream in(batch_root_ + "/results.json");
    const json codes = json::parse(in, nullptr, false);
    for (const auto& job : jobs) {
      std::string key;
      for (const std::string a : job["argv"]) key += " " + replace_root(a);
      const std::string id = job["id"];
      batched_[key] = {id, codes.is_object() && codes.contains(id) ? codes[id].get<int>() : -1};
    }
    std::printf("Python fixtures and references: %s%s\n", batch_root_.c_str(),
                said.value("cached", false) ? " (made by an earlier run)" : "");
  }

  static std::string replace_root(std::string a) {
    if (a.rfind("{root}", 0) == 0) a = batch_root_ + a.substr(6);
    return a;
  }

  struct Batched {
    std::string id;
    int code = -1;
  };
  // The batch job that ran exactly these arguments (the --out it was given aside), if any.
  static std::optional<Batched> batched(const std::vector<std::string>& argv) {
    std::string key;
    for (const auto& a : argv) key += " " + a;
    const auto it = batched_.find(key);
    if (it == batched_.end()) return std::nullopt;
    return it->second;
  }

  static void TearDownTestSuite() {
    if (root_.empty()) return;
    const char* keep = std::getenv("DDPDESK_KEEP_TEST_FILES");
    if (keep && std::string(keep) == "1") {
      std::printf("kept %s\n", root_.c_str());
    } else {
      std::error_code ec;
      fs::remove_all(root_, ec);
    }
    root_.clear();
    made_.clear();
    batched_.clear();
    batch_root_.clear();
    batch_error_.clear();
  }

  void SetUp() override {
    // (python_batch.py names a python3 without torch, and scripts/install-deps.sh)
    if (!batch_error_.empty()) GTEST_FAIL() << batch_error_;
  }

  // A folder of fixtures made once per test program: `flags` for examples/make_user_task.py,
  // or the bad-input set of make_bad_inputs.py when `name` is "bad".
  static std::string fixture(const std::string& name, const std::vector<std::string>& flags = {}) {
    const std::string dir = root_ + "/" + name;
    if (made_.count(name)) return dir;
    std::vector<std::string> key = {kScripts + "/make_bad_inputs.py", "--out",
                                    batch_root_ + "/bad"};
    if (name != "bad") {
      key = {kSource + "/examples/make_user_task.py", "--out", batch_root_ + "/" + name};
      key.insert(key.end(), flags.begin(), flags.end());
    }
    if (const auto b = batched(key); b && b->code == 0) return batch_root_ + "/" + name;
    Shell s;
    if (name == "bad") {
      s = run_command(kPython, {kScripts + "/make_bad_inputs.py", "--out", dir}, dir + ".log");
    } else {
      std::vector<std::string> args = {kSource + "/examples/make_user_task.py", "--out", dir};
      args.insert(args.end(), flags.begin(), flags.end());
      s = run_command(kPython, args, dir + ".log");
    }
    if (s.code != 0) throw std::runtime_error("making fixture " + name + " failed:\n" + s.output);
    made_.insert(name);
    return dir;
  }

  static std::string plain() { return fixture("plain", kFixtures.at("plain")); }

  std::string scratch(const std::string& tag) {
    const std::string dir = root_ + "/" + tag + "-" + std::to_string(++runs_);
    fs::create_directories(dir);
    return dir;
  }

  std::vector<std::string> worker_args(const RunSettings& r, const std::string& metrics) const {
    std::vector<std::string> args = {"--task",         "script",
                                     "--model",        r.model,
                                     "--train-data",   r.train,
                                     "--loss",         r.loss,
                                     "--batch-size",   std::to_string(r.batch),
                                     "--accum-steps",  std::to_string(r.accum),
                                     "--epochs",       std::to_string(r.epochs),
                                     "--metrics-file", metrics};
    if (!r.eval.empty()) args.insert(args.end(), {"--eval-data", r.eval});
    args.insert(args.end(), kCommon.begin(), kCommon.end());
    args.insert(args.end(), r.extra.begin(), r.extra.end());
    return args;
  }

  Losses worker(const RunSettings& r) {
    const std::string dir = scratch("worker");
    LaunchOptions o;
    o.world = r.world;
    o.args = worker_args(r, dir + "/m{rank}.jsonl");
    o.env = r.env;
    o.timeout_s = 120;
    RankRun run = launch_ranks(o);
    EXPECT_FALSE(run.timed_out);
    Losses out;
    for (int k = 0; k < r.world; ++k) {
      EXPECT_EQ(run.exit_codes[k], 0) << "rank " << k << ":\n" << run.stderr_text[k];
      out.rank_steps.push_back(read_messages(dir + "/m" + std::to_string(k) + ".jsonl", "step"));
    }
    for (const auto& s : out.rank_steps[0]) out.steps.push_back(s["global_loss"]);
    for (const auto& e : read_messages(dir + "/m0.jsonl", "eval")) {
      out.eval_loss.push_back(e["loss"]);
      if (e.contains("accuracy") && e["accuracy"].is_number())
        out.eval_accuracy.push_back(e["accuracy"]);
    }
    return out;
  }

  Losses reference(const RunSettings& r) {
    std::vector<std::string> args = reference_args(r);
    std::string out_file;
    Shell s;
    if (const auto b = batched(args)) {
      out_file = batch_root_ + "/" + b->id + ".jsonl";
      s = {b->code, read_text(batch_root_ + "/" + b->id + ".log")};
    } else {
      out_file = scratch("reference") + "/ref.jsonl";
      args.insert(args.end(), {"--out", out_file});
      s = run_command(kPython, args, out_file + ".log");
    }
    EXPECT_EQ(s.code, 0) << s.output;
    Losses out;
    std::ifstream in(out_file);
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j.contains("global_loss")) out.steps.push_back(j["global_loss"]);
      if (j.contains("eval_loss")) out.eval_loss.push_back(j["eval_loss"]);
      if (j.contains("accuracy")) out.eval_accuracy.push_back(j["accuracy"]);
    }
    return out;
  }

  // check_model_pt.py's answer for a trained model.pt.
  json check_model(const std::string& model_pt, const std::string& eval_data,
                   const std::string& loss, const std::vector<std::string>& example_flags) {
    const std::vector<std::string> args = check_args(model_pt, eval_data, loss, example_flags);
    Shell s;
    if (const auto b = batched(args))
      s = {b->code, read_text(batch_root_ + "/" + b->id + ".log")};
    else
      s = run_command(kPython, args, scratch("check") + "/log.txt");
    EXPECT_EQ(s.code, 0) << s.output;
    return last_json_line(s.output);
  }

  static std::string root_;
  static std::set<std::string> made_;
  static int runs_;  // numbers scratch folders across the whole program
  static std::string batch_root_, batch_error_;
  static std::map<std::string, Batched> batched_;  // by " arg arg ..."
};

std::string UserTask::root_;
std::set<std::string> UserTask::made_;
int UserTask::runs_ = 0;
std::string UserTask::batch_root_;
std::string UserTask::batch_error_;
std::map<std::string, UserTask::Batched> UserTask::batched_;

}  // namespace

// (a) Step by step the same global loss as torch's DDP + DistributedSampler + Adam + no_sync
// accumulation, on the same scripted model and data, over two epochs (sampler reshuffled per
// epoch), and the same validation loss and accuracy after each epoch.
TEST_F(UserTask, MatchesPyTorchDdpStepByStep) {
  const RunSettings r = two_epochs_with_eval(plain());
  const Losses ours = worker(r), torch_ddp = reference(r);
  ASSERT_EQ(torch_ddp.steps.size(), 32u);  // 256 / (2 x 4 x 2) = 16 steps per epoch
  ASSERT_EQ(ours.steps.size(), torch_ddp.steps.size());
  const Comparison c = compare(ours.steps, torch_ddp.steps);
  std::printf("engine vs PyTorch DDP, %zu steps: %s\n", ours.steps.size(), describe(c).c_str());
  EXPECT_TRUE(c.within) << describe(c);
  // The model learns: equal losses of a model that does not train would prove little.
  EXPECT_LT(torch_ddp.steps.back(), torch_ddp.steps.front() * 0.9);
  ASSERT_EQ(torch_ddp.eval_loss.size(), 2u);
  ASSERT_EQ(ours.eval_loss.size(), 2u);
  EXPECT_TRUE(compare(ours.eval_loss, torch_ddp.eval_loss).within)
      << ours.eval_loss[1] << " vs " << torch_ddp.eval_loss[1];
  ASSERT_EQ(ours.eval_accuracy.size(), 2u);
  EXPECT_EQ(ours.eval_accuracy, torch_ddp.eval_accuracy);
}

// (a) The module's own per_sample_loss (`--loss model`), mse targets, and a data set that leaves
// a short last micro-batch and window and needs the sampler's padding (251 samples on 2 ranks).
TEST_F(UserTask, ModelLossWithShortLastWindowMatchesPyTorchDdp) {
  const RunSettings r = model_loss(fixture("mse", kFixtures.at("mse")));
  const Losses ours = worker(r), torch_ddp = reference(r);
  // 126 per rank: 32 micro-batches (the last holds 2), 16 windows (the last holds 6 samples).
  ASSERT_EQ(torch_ddp.steps.size(), 16u);
  ASSERT_EQ(ours.steps.size(), torch_ddp.steps.size());
  const Comparison c = compare(ours.steps, torch_ddp.steps);
  std::printf("--loss model vs PyTorch DDP: %s\n", describe(c).c_str());
  EXPECT_TRUE(c.within) << describe(c);
  EXPECT_EQ(ours.rank_steps[0].back()["samples"].get<std::int64_t>(), 252);
}

// (b) Exact accumulation: world 2 x batch 4 x accum 2 gives world 1 x batch 16 at every step.
TEST_F(UserTask, AccumulationEqualsOneBigBatch) {
  const std::string d = plain();
  RunSettings acc;
  acc.model = d + "/model.pt";
  acc.train = d + "/train.safetensors";
  RunSettings big = acc;
  big.world = 1;
  big.batch = 16;
  big.accum = 1;
  const Losses a = worker(acc), b = worker(big);
  ASSERT_EQ(b.steps.size(), 16u);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  const Comparison c = compare(a.steps, b.steps);
  std::printf("world 2 x 4 x 2 vs world 1 x 16: %s\n", describe(c).c_str());
  EXPECT_TRUE(c.within) << describe(c);
  EXPECT_NE(a.steps.front(), a.steps.back());
}

// (b) BatchNorm in train mode normalises each micro-batch by its own statistics, so the split
// changes the losses (documented, not a bug), though the same split still matches PyTorch DDP;
// buffers stay bitwise equal on every rank (rank 0's win, as under DDP), and the saved model.pt
// carries them: its eval-mode loss is the run's.
TEST_F(UserTask, BatchNormDependsOnTheMicroBatchButBuffersStayEqual) {
  const std::vector<std::string>& flags = kFixtures.at("bn");
  const std::string run_dir = scratch("bn-run") + "/run";
  RunSettings acc = batchnorm_accumulated(fixture("bn", flags));
  acc.env = {{"DDPDESK_DEBUG_STEPS", "1"}};
  acc.extra = {"--run-dir", run_dir};
  RunSettings big = acc;
  big.world = 1;
  big.batch = 16;
  big.accum = 1;
  big.extra.clear();
  const Losses a = worker(acc), b = worker(big);
  ASSERT_EQ(a.steps.size(), 16u);
  ASSERT_EQ(b.steps.size(), a.steps.size());
  const Comparison c = compare(a.steps, b.steps);
  std::printf("BatchNorm, world 2 x 4 x 2 vs world 1 x 16: %s\n", describe(c).c_str());
  EXPECT_FALSE(c.within) << "BatchNorm over micro-batches of 4 and of 16 cannot give equal losses";
  EXPECT_GT(c.max_rel, 1e-3);
  // Yet with the same split it is PyTorch DDP's run, validation (with rank 0's running
  // statistics on every rank) included.
  const Losses torch_ddp = reference(acc);
  ASSERT_EQ(torch_ddp.steps.size(), a.steps.size());
  const Comparison same = compare(a.steps, torch_ddp.steps);
  std::printf("BatchNorm, engine vs PyTorch DDP: %s\n", describe(same).c_str());
  EXPECT_TRUE(same.within) << describe(same);
  ASSERT_EQ(torch_ddp.eval_loss.size(), 1u);
  ASSERT_EQ(a.eval_loss.size(), 1u);
  EXPECT_TRUE(compare(a.eval_loss, torch_ddp.eval_loss).within)
      << a.eval_loss[0] << " vs " << torch_ddp.eval_loss[0];

  ASSERT_EQ(a.rank_steps[1].size(), a.rank_steps[0].size());
  for (std::size_t i = 0; i < a.rank_steps[0].size(); ++i) {
    const json& r0 = a.rank_steps[0][i];
    const json& r1 = a.rank_steps[1][i];
    ASSERT_TRUE(r0.contains("buffer_hash"))
        << "DDPDESK_DEBUG_STEPS=1 step messages need buffer_hash";
    EXPECT_EQ(r0["buffer_hash"], r1["buffer_hash"]) << "step " << i + 1;
    EXPECT_EQ(r0["param_hash"], r1["param_hash"]) << "step " << i + 1;
  }
  // The running statistics do move, or equal hashes would prove nothing.
  EXPECT_NE(a.rank_steps[0].front()["buffer_hash"], a.rank_steps[0].back()["buffer_hash"]);

  const json check = check_model(run_dir + "/model.pt", acc.eval, "cross_entropy", flags);
  EXPECT_EQ(check["keys_match"], true) << check.dump();
  ASSERT_EQ(a.eval_loss.size(), 1u);
  ASSERT_TRUE(check["eval_loss"].is_number()) << check.dump();
  EXPECT_NEAR(check["eval_loss"].get<double>(), a.eval_loss[0], 1e-5 * std::fabs(a.eval_loss[0]));
}

// (c) <run_dir>/model.pt is TorchScript that torch.jit.load reads, with the eager module's
// state_dict keys, holding the trained weights: its validation loss is the run's last one.
TEST_F(UserTask, SavedModelLoadsInPyTorchAndGivesTheLastEvalLoss) {
  const std::vector<std::string>& flags = kFixtures.at("plain");
  const std::string run_dir = scratch("run") + "/run";
  RunSettings r = two_epochs_with_eval(plain());
  r.extra = {"--run-dir", run_dir};
  const Losses ours = worker(r);
  ASSERT_EQ(ours.eval_loss.size(), 2u);
  ASSERT_TRUE(fs::exists(run_dir + "/model.pt"));

  const json trained = check_model(run_dir + "/model.pt", r.eval, "cross_entropy", flags);
  EXPECT_EQ(trained["keys_match"], true) << trained.dump();
  EXPECT_EQ(trained["shapes_match"], true) << trained.dump();
  ASSERT_TRUE(trained["eval_loss"].is_number()) << trained.dump();
  const double want = ours.eval_loss.back();
  EXPECT_NEAR(trained["eval_loss"].get<double>(), want, 1e-5 * std::fabs(want));
  ASSERT_EQ(ours.eval_accuracy.size(), 2u);
  EXPECT_DOUBLE_EQ(trained["accuracy"].get<double>(), ours.eval_accuracy.back());
  // The file holds the trained weights, not the ones it started from.
  const json initial = check_model(r.model, r.eval, "cross_entropy", flags);
  ASSERT_TRUE(initial["eval_loss"].is_number()) << initial.dump();
  EXPECT_GT(initial["eval_loss"].get<double>() - want, 1e-3);
}

// (d) Broken input: exit 2, one line on stderr naming the flag, nothing written.
TEST_F(UserTask, DryRunRejectsBrokenInputWithOneLine) {
  const std::string d = fixture("bad");
  struct Case {
    const char* what;
    std::vector<std::string> args;   // replace the good ones of the same flag
    std::string flag;                // the flag the message must name
    std::vector<std::string> words;  // also in the message, after the value
  };
  const std::vector<Case> table = {
      {"missing model file", {"--model", d + "/no-such-model.pt"}, "--model", {}},
      {"a safetensors file as the model", {"--model", d + "/train.safetensors"}, "--model", {}},
      {"a torch.save state_dict as the model", {"--model", d + "/state_dict.pt"}, "--model", {}},
      {"a frozen module", {"--model", d + "/frozen.pt"}, "--model", {}},
      {"a traced module with dropout", {"--model", d + "/traced_dropout.pt"}, "--model", {}},
      {"a model saved by a newer PyTorch",
       {"--model", d + "/newer_pytorch.pt"},
       "--model",
       {"file format version 99", "LibTorch", "build ddpdesk against"}},
      {"a model calling an op of a newer PyTorch",
       {"--model", d + "/newer_op.pt"},
       "--model",
       {"aten::op_of_a_newer_pytorch", "LibTorch", "build ddpdesk against"}},
      {"missing training data", {"--train-data", d + "/nothing.safetensors"}, "--train-data", {}},
      {"no tensor of the input name", {"--input-name", "images"}, "--input-name", {"inputs"}},
      {"inputs and targets of different sample counts",
       {"--train-data", d + "/count_mismatch.safetensors"},
       "--train-data",
       {"64", "63"}},
      {"float targets with cross_entropy",
       {"--train-data", d + "/float_targets.safetensors"},
       "--loss",
       {"float32"}},
      {"model output of the wrong shape for mse targets",
       {"--train-data", d + "/wide_targets.safetensors", "--loss", "mse"},
       "--loss",
       {"[4]", "[3]"}},
      {"--loss model without per_sample_loss", {"--loss", "model"}, "--loss", {"per_sample_loss"}},
      {"per_sample_loss of the wrong shape",
       {"--model", d + "/loss_scalar.pt", "--loss", "model"},
       "--loss",
       {"per_sample_loss"}},
      {"a NaN in the inputs",
       {"--train-data", d + "/nan_inputs.safetensors"},
       "--train-data",
       {"NaN", "'inputs'", "37"}},
      {"broken validation data",
       {"--eval-data", d + "/count_mismatch.safetensors"},
       "--eval-data",
       {}},
  };
  for (const auto& c : table) {
    SCOPED_TRACE(c.what);
    const std::string dir = scratch("bad");
    std::map<std::string, std::string> flags = {{"--model", d + "/model.pt"},
                                                {"--train-data", d + "/train.safetensors"},
                                                {"--loss", "cross_entropy"}};
    for (std::size_t i = 0; i + 1 < c.args.size(); i += 2) flags[c.args[i]] = c.args[i + 1];
    LaunchOptions o;
    o.args = {"--task",    "script",     "--epochs",       "1",
              "--run-dir", dir + "/run", "--metrics-file", dir + "/m.jsonl"};
    for (const auto& [k, v] : flags) o.args.insert(o.args.end(), {k, v});
    o.timeout_s = 60;
    RankRun r = launch_ranks(o);
    const std::string& err = r.stderr_text[0];
    EXPECT_EQ(r.exit_codes[0], 2) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    const std::string prefix = "ddpdesk-worker: invalid " + c.flag + " '";
    ASSERT_EQ(err.rfind(prefix, 0), 0u) << "want " << prefix << "...\ngot: " << err;
    // What is wrong comes after the value: "... '<value>': <what>".
    const std::size_t after = err.find("': ", prefix.size());
    ASSERT_NE(after, std::string::npos) << err;
    const std::string what = err.substr(after + 3);
    for (const auto& w : c.words) EXPECT_NE(what.find(w), std::string::npos) << w << " in " << err;
    EXPECT_FALSE(fs::exists(dir + "/run")) << "bad input must not create the run directory";
    EXPECT_FALSE(fs::exists(dir + "/m.jsonl")) << "bad input must not open the metrics file";
#ifdef DDPDESK_BIN
    // The same through `ddpdesk --headless` (two ranks): its check runs the worker's dry run
    // before anything is spawned; the same line comes back under the app's name, exit 2, and no
    // run directory appears in its data directory.
    std::string cmd = "XDG_DATA_HOME='" + dir + "/data' DDPDESK_WORKER='" + worker_path() +
                      "' '" DDPDESK_BIN "' --headless --nproc 2 --task script --epochs 1";
    for (const auto& [k, v] : flags) cmd += " " + k + " '" + v + "'";
    cmd += " >'" + dir + "/headless.out' 2>'" + dir + "/headless.err'";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << cmd;
    EXPECT_EQ(WEXITSTATUS(status), 2) << cmd;
    std::ifstream in(dir + "/headless.err");
    const std::string herr((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(std::count(herr.begin(), herr.end(), '\n'), 1) << herr;
    EXPECT_EQ(herr.rfind("ddpdesk: invalid " + c.flag + " '", 0), 0u) << herr;
    EXPECT_NE(herr.find(what), std::string::npos) << "headless: " << herr << "worker: " << err;
    EXPECT_FALSE(fs::exists(dir + "/data/ddpdesk/runs") &&
                 !fs::is_empty(dir + "/data/ddpdesk/runs"))
        << "headless bad input must not create a run directory";
#endif
  }
}

// (d) A model saved by a newer PyTorch: model.pt with its recorded file format version raised to
// 99 (py/make_bad_inputs.py; the archive otherwise intact). `--check` exits 2 with exactly one
// line naming the file's version, the worker's LibTorch (as --probe reports it) with the highest
// version it reads, and the remedy; nothing of LibTorch's own message, no backtrace, nothing
// written. (Through `ddpdesk --headless` and a plain start: DryRunRejectsBrokenInputWithOneLine.)
TEST_F(UserTask, ModelFromANewerPyTorchIsOneLineNamingBothVersions) {
  const std::string d = fixture("bad");
  LaunchOptions probe;
  probe.args = {"--probe"};
  const RankRun p = launch_ranks(probe);
  ASSERT_EQ(p.exit_codes[0], 0) << p.stderr_text[0];
  const std::string libtorch = json::parse(p.stdout_text[0]).value("torch_version", "");
  ASSERT_NE(libtorch.find('.'), std::string::npos) << p.stdout_text[0];
  const std::string minor = libtorch.substr(0, libtorch.find('.', libtorch.find('.') + 1));

  const std::string dir = scratch("newer"), model = d + "/newer_pytorch.pt";
  LaunchOptions o;
  o.args = {"--check",
            "--task",
            "script",
            "--model",
            model,
            "--train-data",
            d + "/train.safetensors",
            "--loss",
            "cross_entropy",
            "--epochs",
            "1",
            "--run-dir",
            dir + "/run",
            "--metrics-file",
            dir + "/m.jsonl"};
  o.timeout_s = 60;
  const RankRun r = launch_ranks(o);
  const std::string& err = r.stderr_text[0];
  EXPECT_EQ(r.exit_codes[0], 2) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const std::string head = "ddpdesk-worker: invalid --model '" + model +
                           "': saved by a newer PyTorch (file format version 99) than this "
                           "worker's LibTorch " +
                           libtorch + " reads (format versions up to ";
  const std::string tail =
      "): build ddpdesk against the PyTorch that saved it (docs/user-task.md, \"Which "
      "PyTorch\"), or save the model with PyTorch " +
      minor + "\n";
  ASSERT_EQ(err.rfind(head, 0), 0u) << "want " << head << "...\ngot: " << err;
  ASSERT_GT(err.size(), head.size() + tail.size()) << err;
  EXPECT_EQ(err.substr(err.size() - tail.size()), tail) << err;
  const std::string supported = err.substr(head.size(), err.size() - head.size() - tail.size());
  ASSERT_TRUE(!supported.empty() && supported.find_first_not_of("0123456789") == std::string::npos)
      << err;
  EXPECT_LT(std::stoi(supported), 99) << err;
  // The window's answer on stdout: the same line, under the field.
  const json answer = json::parse(r.stdout_text[0], nullptr, false);
  ASSERT_TRUE(answer.is_object()) << r.stdout_text[0];
  EXPECT_EQ(answer.value("field", ""), "model");
  EXPECT_EQ("ddpdesk-worker: " + answer.value("error", "") + "\n", err);
  EXPECT_FALSE(fs::exists(dir + "/run"));
  EXPECT_FALSE(fs::exists(dir + "/m.jsonl"));
  // The section the line points to.
  EXPECT_NE(read_text(kSource + "/docs/user-task.md").find("\n## Which PyTorch\n"),
            std::string::npos);
}

// (e) The same tensors as safetensors and as a torch.save zip train identically, bit for bit.
TEST_F(UserTask, SafetensorsAndTorchSaveFilesGiveIdenticalRuns) {
  const std::string d = plain();
  RunSettings st;
  st.model = d + "/model.pt";
  st.train = d + "/train.safetensors";
  st.eval = d + "/eval.safetensors";
  st.env = {{"DDPDESK_DEBUG_STEPS", "1"}};
  RunSettings pt = st;
  pt.train = d + "/train.pt";
  pt.eval = d + "/eval.pt";
  const Losses a = worker(st), b = worker(pt);
  ASSERT_EQ(a.steps.size(), 16u);
  ASSERT_EQ(b.steps.size(), a.steps.size());
  EXPECT_EQ(a.steps, b.steps);
  for (std::size_t i = 0; i < a.steps.size(); ++i)
    EXPECT_EQ(a.rank_steps[0][i]["param_hash"], b.rank_steps[0][i]["param_hash"]) << i + 1;
  EXPECT_EQ(a.eval_loss, b.eval_loss);
  ASSERT_EQ(a.eval_loss.size(), 1u);
}
