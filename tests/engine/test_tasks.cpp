// The task layer: every catalog name has an implementation, built-in tasks come through
// make_task, and a checkpoint written from a task's state loads back into a fresh task bit for
// bit (the format-2 dict) — also from the format-1 layout older runs wrote.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <torch/serialize/output-archive.h>
#include <torch/torch.h>

#include "checkpoint.h"
#include "fused_adam.h"
#include "models.h"
#include "run_spec.h"
#include "task.h"

namespace {

namespace fs = std::filesystem;
using namespace ddpdesk;

class TempDir {
 public:
  TempDir() {
    // Under TMPDIR, as every test's scratch files (a test run with its own TMPDIR leaves /tmp
    // untouched).
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ddpdesk-tasks-XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

RunSpec seed_spec(std::int64_t seed) {
  RunSpec s;
  s.task = "seed";
  s.dataset_size = 64;
  s.seed = seed;
  return s;
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(),
                     a.numel() * a.element_size()) == 0;
}

TEST(Tasks, EveryCatalogTaskHasAnImplementation) {
  for (const auto& t : task_catalog())
    EXPECT_EQ(has_task_implementation(t.name), !t.python_script) << t.name;
  EXPECT_FALSE(has_task_implementation("resnet"));
}

TEST(Tasks, BuiltinTaskThroughMakeTask) {
  auto task = make_task(seed_spec(3), torch::Device(torch::kCPU));
  EXPECT_EQ(task->train_data().size(), 64);
  ASSERT_NE(task->eval_data(), nullptr);
  EXPECT_FALSE(task->classification());
  EXPECT_EQ(task->parameters().size(), 2u);  // Linear(10, 1): weight, bias
  EXPECT_TRUE(task->buffers().empty());
  const TaskSummary s = task->summary();
  EXPECT_EQ(s.parameters, 11);
  EXPECT_EQ(s.train_samples, 64);
  EXPECT_TRUE(s.output_shape.empty());                        // one prediction per sample
  EXPECT_FALSE(task->export_model("/nonexistent/model.pt"));  // no TorchScript form
}

TEST(Tasks, MissingUserFilesAreBadInputNamingTheField) {
  RunSpec s;
  s.task = "script";
  s.model = "/nonexistent/model.pt";
  s.train_data = "/nonexistent/train.safetensors";
  try {
    make_task(s, torch::Device(torch::kCPU));
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_EQ(e.field(), "model");
    EXPECT_STREQ(e.what(), "invalid --model '/nonexistent/model.pt': no such file");
  }
}

TEST(Tasks, CheckpointRoundTripsTheTaskState) {
  TempDir dir;
  auto a = make_task(seed_spec(1), torch::Device(torch::kCPU));
  auto b = make_task(seed_spec(2), torch::Device(torch::kCPU));  // other seed: other init
  ASSERT_FALSE(same_bits(a->parameters()[0], b->parameters()[0]));
  FusedAdam opt_a(a->parameters(), {}), opt_b(b->parameters(), {});
  TrainPosition pos;
  pos.epoch = 2;
  pos.step = 17;
  const std::string path = dir.path() + "/c.pt";
  save_checkpoint(path, a->state(), opt_a, pos, "{}");
  TrainPosition back;
  load_checkpoint(path, b->state(), opt_b, back);
  EXPECT_EQ(back.step, 17);
  for (std::size_t i = 0; i < a->parameters().size(); ++i)
    EXPECT_TRUE(same_bits(a->parameters()[i], b->parameters()[i])) << i;
}

// A checkpoint that does not fit (here past RLIMIT_FSIZE: EFBIG, the same short write a full
// disk gives with ENOSPC) is an exception naming the file and the reason, and leaves no
// temporary file. LibTorch's zip writer used to abort the process there (std::terminate from
// its destructor), so the save runs in a child process.
TEST(Tasks, CheckpointThatDoesNotFitIsAnErrorNotAnAbort) {
  TempDir dir;
  torch::manual_seed(1);
  auto mlp = make_model("fmnist-mlp");  // about 1 MB of parameters, past the limit below
  std::vector<NamedTensor> state;
  for (const auto& p : mlp->named_parameters()) state.push_back({p.key(), p.value()});
  FusedAdam opt(mlp->parameters(), {});
  const std::string path = dir.path() + "/checkpoints/step-00000001.pt";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
    const rlimit limit{256 << 10, 256 << 10};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string message = "no error";
    try {
      save_checkpoint(path, state, opt, {}, "{}");
    } catch (const std::exception& e) {
      message = e.what();
    }
    (void)!::write(fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the save ended its process with signal " << WTERMSIG(status);
  EXPECT_EQ(message, "cannot write checkpoint '" + path + "': " + std::strerror(EFBIG));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path() + "/checkpoints"))
    left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << left.front();
}

TEST(Tasks, CheckpointOfAnotherModelIsRefused) {
  TempDir dir;
  auto seed = make_task(seed_spec(1), torch::Device(torch::kCPU));
  FusedAdam opt(seed->parameters(), {});
  const std::string path = dir.path() + "/c.pt";
  save_checkpoint(path, seed->state(), opt, {}, "{}");
  torch::manual_seed(0);
  auto mlp = make_model("fmnist-mlp");
  std::vector<NamedTensor> mlp_state;
  for (const auto& p : mlp->named_parameters()) mlp_state.push_back({p.key(), p.value()});
  FusedAdam mlp_opt(mlp->parameters(), {});
  TrainPosition pos;
  EXPECT_THROW(load_checkpoint(path, mlp_state, mlp_opt, pos), std::runtime_error);
}

// Runs before this change wrote the model with nn::Module::save (an archive per submodule).
TEST(Tasks, FormatOneCheckpointStillLoads) {
  TempDir dir;
  torch::manual_seed(5);
  auto old_model = make_model("fmnist-mlp");
  FusedAdam old_opt(old_model->parameters(), {});
  torch::serialize::OutputArchive ar, model_ar, optim_ar;
  old_model->save(model_ar);
  old_opt.save(optim_ar);
  ar.write("model", model_ar);
  ar.write("optimizer", optim_ar);
  ar.write("format", c10::IValue(std::int64_t{1}));
  for (const char* k : {"epoch", "window", "step", "samples"})
    ar.write(k, c10::IValue(std::int64_t{3}));
  ar.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  const std::string path = dir.path() + "/old.pt";
  ar.save_to(path);

  torch::manual_seed(6);
  auto fresh = make_model("fmnist-mlp");
  std::vector<NamedTensor> state;
  for (const auto& p : fresh->named_parameters()) state.push_back({p.key(), p.value()});
  FusedAdam opt(fresh->parameters(), {});
  TrainPosition pos;
  load_checkpoint(path, state, opt, pos);
  EXPECT_EQ(pos.step, 3);
  for (std::size_t i = 0; i < fresh->parameters().size(); ++i)
    EXPECT_TRUE(same_bits(fresh->parameters()[i], old_model->parameters()[i])) << i;
}

}  // namespace
