#include "checkpoint.h"

#include "file_sink.h"
#include "fused_adam.h"
#include "run_layout.h"
#include "task.h"  // BadInput

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

namespace fs = std::filesystem;

namespace ddpdesk {
namespace {

// 1: the model as nn::Module::save wrote it (an archive per submodule). 2: the model as one
// name -> tensor dict, which any task (built-in or TorchScript) can give. Both load.
constexpr std::int64_t kFormat = 2;

void fsync_path(const std::string& p, int flags) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::int64_t read_int(torch::serialize::InputArchive& ar, const char* key) {
  c10::IValue v;
  if (!ar.try_read(key, v) || !v.isInt()) throw std::runtime_error(std::string("missing ") + key);
  return v.toInt();
}

// Test-only fault: die half-way through writing this checkpoint (see save_checkpoint).
void crash_here_if_asked(const std::string& tmp, std::int64_t step, std::int64_t kill_at_step) {
#ifdef DDPDESK_FAULT_INJECTION
  if (kill_at_step != step) return;
  std::error_code ec;
  const auto size = fs::file_size(tmp, ec);
  if (!ec) fs::resize_file(tmp, size / 2, ec);
  ::kill(::getpid(), SIGKILL);
#else
  (void)tmp, (void)step, (void)kill_at_step;
#endif
}

// Format 1 kept "a.b.c" as archive a, inside it archive b, inside it tensor c.
torch::Tensor read_nested(torch::serialize::InputArchive& ar, const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) {
    torch::Tensor t;
    if (!ar.try_read(name, t)) throw std::runtime_error("no tensor '" + name + "'");
    return t;
  }
  torch::serialize::InputArchive sub;
  if (!ar.try_read(name.substr(0, dot), sub)) throw std::runtime_error("no tensor '" + name + "'");
  return read_nested(sub, name.substr(dot + 1));
}

void copy_into(const NamedTensor& dst, const torch::Tensor& src) {
  if (src.sizes() != dst.tensor.sizes() || src.scalar_type() != dst.tensor.scalar_type())
    throw std::runtime_error("tensor '" + dst.name + "' does not match this task's model");
  torch::NoGradGuard no_grad;
  dst.tensor.copy_(src);
}

}  // namespace

std::string checkpoint_dir(const std::string& run_dir) {
  return run_layout::checkpoints_dir(run_dir);
}

std::string checkpoint_path(const std::string& run_dir, std::int64_t step) {
  return (fs::path(checkpoint_dir(run_dir)) / run_layout::checkpoint_name(step)).string();
}

void save_checkpoint(const std::string& path, const std::vector<NamedTensor>& model,
                     FusedAdam& optimizer, const TrainPosition& pos, const std::string& spec_json,
                     std::int64_t kill_at_step) {
  torch::serialize::OutputArchive ar;
  torch::serialize::OutputArchive optim_ar;
  c10::Dict<std::string, at::Tensor> state;
  for (const auto& t : model) state.insert(t.name, t.tensor.detach().to(torch::kCPU));
  optimizer.save(optim_ar);
  ar.write("model", c10::IValue(state));
  ar.write("optimizer", optim_ar);
  ar.write("format", c10::IValue(kFormat));
  ar.write("epoch", c10::IValue(pos.epoch));
  ar.write("window", c10::IValue(pos.window));
  ar.write("step", c10::IValue(pos.step));
  ar.write("samples", c10::IValue(pos.samples));
  ar.write("train_seconds", c10::IValue(pos.train_seconds));
  if (pos.loss_scale > 0) {
    ar.write("loss_scale", c10::IValue(pos.loss_scale));
    ar.write("scale_growth", c10::IValue(pos.scale_growth));
    ar.write("skipped_steps", c10::IValue(pos.skipped_steps));
  }
  ar.write("spec", c10::IValue(spec_json));
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    ar.write("rng", gen.get_state());
  }
  fs::path final_path(path);
  fs::create_directories(final_path.parent_path());
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    // Not ar.save_to(tmp): on a full disk LibTorch's writer would abort the process.
    write_file_through(tmp, [&](std::ostream& out) { ar.save_to(out); });
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    const std::string what = e.what();
    throw std::runtime_error("cannot write checkpoint '" + path +
                             "': " + what.substr(0, what.find('\n')));
  }
  crash_here_if_asked(tmp, pos.step, kill_at_step);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot move checkpoint into place at '" + path + "'");
  }
  fsync_path(final_path.parent_path().string(), O_RDONLY | O_DIRECTORY);
}

void load_checkpoint(const std::string& path, const std::vector<NamedTensor>& model,
                     FusedAdam& optimizer, TrainPosition& pos) {
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(path);
    const std::int64_t format = read_int(ar, "format");
    if (format != 1 && format != kFormat) throw std::runtime_error("unknown format");
    torch::serialize::InputArchive optim_ar;
    ar.read("optimizer", optim_ar);
    if (format == 1) {
      torch::serialize::InputArchive model_ar;
      ar.read("model", model_ar);
      for (const auto& t : model) copy_into(t, read_nested(model_ar, t.name));
    } else {
      c10::IValue v;
      ar.read("model", v);
      if (!v.isGenericDict()) throw std::runtime_error("model state is not a dict");
      const auto dict = v.toGenericDict();
      if (dict.size() != model.size())
        throw std::runtime_error("it holds " + std::to_string(dict.size()) +
                                 " model tensors, this task has " + std::to_string(model.size()));
      for (const auto& t : model) {
        auto it = dict.find(t.name);
        if (it == dict.end()) throw std::runtime_error("no tensor '" + t.name + "'");
        copy_into(t, it->value().toTensor());
      }
    }
    optimizer.load(optim_ar);
    pos.epoch = read_int(ar, "epoch");
    pos.window = read_int(ar, "window");
    pos.step = read_int(ar, "step");
    pos.samples = read_int(ar, "samples");
    c10::IValue secs;
    pos.train_seconds = ar.try_read("train_seconds", secs) && secs.isDouble() ? secs.toDouble() : 0;
    c10::IValue scale, growth, skipped;
    if (ar.try_read("loss_scale", scale) && scale.isDouble()) {
      pos.loss_scale = scale.toDouble();
      pos.scale_growth = read_int(ar, "scale_growth");
      pos.skipped_steps = read_int(ar, "skipped_steps");
    }
    torch::Tensor rng;
    ar.read("rng", rng);
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw std::runtime_error("cannot load checkpoint '" + path +
                             "': " + what.substr(0, what.find('\n')));
  }
}

std::vector<std::string> list_checkpoints(const std::string& run_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoint_dir(run_dir), ec)) {
    const std::string name = e.path().filename().string();
    if (run_layout::is_checkpoint_name(name)) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());  // zero-padded step numbers sort by step
  return out;
}

std::string resolve_checkpoint(const std::string& where) {
  std::error_code ec;
  if (fs::is_regular_file(where, ec)) return where;
  if (!fs::is_directory(where, ec))
    throw BadInput({"resume", where, "no such run directory or file"});
  auto all = list_checkpoints(where);
  if (all.empty()) throw BadInput({"resume", where, "the run has no checkpoint"});
  return all.back();
}

void prune_checkpoints(const std::string& run_dir, int keep) {
  // Torn temporary files from a writer that was killed (never ours: we just renamed ours).
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoint_dir(run_dir), ec))
    if (e.path().filename().string().find(".pt.tmp-") != std::string::npos)
      fs::remove(e.path(), ec);
  auto all = list_checkpoints(run_dir);
  for (std::size_t i = 0; i + keep < all.size(); ++i) std::remove(all[i].c_str());
}

}  // namespace ddpdesk
