// The user's task: a scripted TorchScript module (torch.jit.script(model).save(path)) trained on
// tensors from a safetensors or torch.save file, with a built-in per-sample loss or the module's
// own per_sample_loss(output, target). Everything that can be wrong with the files is found here,
// at load time, by checks and a dry run (two samples through forward and loss), and reported as
// BadInput naming the field: a run never starts on input that cannot train.
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/nn/functional/loss.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include <unistd.h>

#include "file_sink.h"
#include "module_graph_check.h"
#include "run_spec.h"
#include "script_version.h"
#include "task.h"
#include "tensor_file.h"
#include "torch_message.h"

namespace ddpdesk {
namespace {

namespace fs = std::filesystem;

// The line of a LibTorch message that says what went wrong (torch_message.h).
std::string first_line(const std::string& s) {
  return torch_message_line(s);
}

// "invalid --train-data 'path': what" — the one shape of every message here.
[[noreturn]] void bad(const std::string& field, const std::string& value, const std::string& what) {
  throw BadInput({field, value, what});
}

std::string per_sample_shape(const torch::Tensor& t) {
  return shape_text(t.sizes().slice(std::min<std::size_t>(1, t.dim())));
}

// One data file's input and target tensors, checked, first `limit` samples (0: all).
struct TensorPair {
  torch::Tensor inputs, targets;
};

TensorPair read_pair(const RunSpec& spec, const std::string& field, const std::string& path,
                     std::int64_t limit) {
  std::error_code ec;
  if (!fs::exists(path, ec)) bad(field, path, "no such file");
  std::map<std::string, torch::Tensor> tensors;
  try {
    tensors = load_tensor_file(path);
  } catch (const std::exception& e) {
    bad(field, path, first_line(e.what()));
  }
  auto pick = [&](const std::string& name_field, const std::string& name) {
    auto it = tensors.find(name);
    if (it != tensors.end()) return it->second.detach();  // data, never a leaf of the graph
    std::string have;
    for (const auto& [k, v] : tensors) have += (have.empty() ? "" : ", ") + k;
    bad(name_field, name,
        "'" + path + "' has no tensor of that name (it has: " + (have.empty() ? "none" : have) +
            ")");
  };
  TensorPair p{pick("input_name", spec.input_name), pick("target_name", spec.target_name)};
  for (const auto* t : {&p.inputs, &p.targets}) {
    const std::string& name = t == &p.inputs ? spec.input_name : spec.target_name;
    if (t->dim() == 0)
      bad(field, path,
          "tensor '" + name + "' is 0-dimensional: the first dimension must be the sample");
  }
  if (p.inputs.size(0) != p.targets.size(0))
    bad(field, path,
        "tensor '" + spec.input_name + "' has " + std::to_string(p.inputs.size(0)) +
            " samples but '" + spec.target_name + "' has " + std::to_string(p.targets.size(0)));
  if (p.inputs.size(0) == 0) bad(field, path, "it holds no samples");
  if (limit > 0) {
    if (limit > p.inputs.size(0))
      bad("dataset_size", std::to_string(limit),
          "the training data has only " + std::to_string(p.inputs.size(0)) + " samples");
    p.inputs = p.inputs.narrow(0, 0, limit);
    p.targets = p.targets.narrow(0, 0, limit);
  }
  // Non-finite values, found in slices so a big file needs no second copy of itself.
  for (const auto* t : {&p.inputs, &p.targets}) {
    if (!t->is_floating_point()) continue;
    const std::string& name = t == &p.inputs ? spec.input_name : spec.target_name;
    const std::int64_t n = t->size(0),
                       chunk = std::max<std::int64_t>(
                           1, (1 << 24) / std::max<std::int64_t>(1, t->numel() / n));
    for (std::int64_t s = 0; s < n; s += chunk) {
      const torch::Tensor part = t->narrow(0, s, std::min(chunk, n - s));
      const torch::Tensor finite = torch::isfinite(part).reshape({part.size(0), -1}).all(1);
      if (finite.all().item<bool>()) continue;
      const std::int64_t at = s + (~finite).nonzero()[0][0].item<std::int64_t>();
      const torch::Tensor sample = t->select(0, at);
      const char* what = torch::isnan(sample).any().item<bool>() ? "NaN" : "an infinite value";
      bad(field, path, "tensor '" + name + "' holds " + what + " at sample " + std::to_string(at));
    }
  }
  return p;
}

class TensorDataset final : public Dataset {
 public:
  TensorDataset(TensorPair data, torch::ScalarType input_type, torch::ScalarType target_type)
      : data_(std::move(data)), input_type_(input_type), target_type_(target_type) {}
  std::int64_t size() const override { return data_.inputs.size(0); }
  Batch batch(const std::vector<std::int64_t>& indices) const override {
    const torch::Tensor idx =
        torch::from_blob(const_cast<std::int64_t*>(indices.data()),
                         {static_cast<std::int64_t>(indices.size())}, torch::kLong);
    Batch b;
    b.input = data_.inputs.index_select(0, idx).to(input_type_);
    b.target = data_.targets.index_select(0, idx).to(target_type_);
    b.size = static_cast<std::int64_t>(indices.size());
    return b;
  }
  std::optional<Batch> whole() const override {
    Batch all;
    all.input = data_.inputs.to(input_type_);
    all.target = data_.targets.to(target_type_);
    all.size = data_.inputs.size(0);
    return all;
  }
  const TensorPair& tensors() const { return data_; }

 private:
  TensorPair data_;
  torch::ScalarType input_type_, target_type_;
};

class ScriptTask final : public Task {
 public:
  ScriptTask(const RunSpec& spec, const torch::Device& device) : spec_(spec), device_(device) {
    // The graph executor's optimised graphs (after a few profiling runs) differentiate with
    // TorchScript's own autodiff and decompose ops such as dropout: the numbers, and the random
    // draws, would change a few steps into every process. Unoptimised, the module runs the
    // same kernels and autograd as eager PyTorch at every step, so a resumed run repeats an
    // uninterrupted one bit for bit and the losses match PyTorch DDP.
    torch::jit::setGraphExecutorOptimize(false);
    load_model();
    TensorPair train = read_pair(spec, "train_data", spec.train_data, spec.dataset_size);
    // Floating inputs are fed at the parameters' precision (float16 files train as float32);
    // targets as each loss wants them.
    const torch::ScalarType input_type =
        train.inputs.is_floating_point() ? torch::kFloat : train.inputs.scalar_type();
    check_targets(train.targets, "train_data", spec.train_data);
    const torch::ScalarType target_type = target_type_for(train.targets);
    input_info_ = tensor_info(train.inputs);
    target_info_ = tensor_info(train.targets);
    train_ = std::make_unique<TensorDataset>(std::move(train), input_type, target_type);
    dry_run(*train_, "train_data", spec.train_data);
    if (!spec.eval_data.empty()) {
      TensorPair eval = read_pair(spec, "eval_data", spec.eval_data, 0);
      for (const auto& [e, t, name] :
           {std::tuple{&eval.inputs, &train_->tensors().inputs, spec.input_name},
            std::tuple{&eval.targets, &train_->tensors().targets, spec.target_name}}) {
        if (e->sizes().slice(1) != t->sizes().slice(1))
          bad("eval_data", spec.eval_data,
              "tensor '" + name + "' has samples of shape " + per_sample_shape(*e) +
                  " but the training data's are " + per_sample_shape(*t));
      }
      check_targets(eval.targets, "eval_data", spec.eval_data);
      eval_ = std::make_unique<TensorDataset>(std::move(eval), input_type, target_type);
      dry_run(*eval_, "eval_data", spec.eval_data);
    } else {
      warnings_.push_back("no --eval-data: the run reports no validation loss");
    }
    module_.train(true);
  }

  const Dataset& train_data() const override { return *train_; }
  const Dataset* eval_data() const override { return eval_.get(); }
  std::int64_t eval_batch() const override { return 256; }

  std::vector<torch::Tensor> parameters() override {
    std::vector<torch::Tensor> out;
    for (const auto& p : module_.parameters(true)) out.push_back(p);
    return out;
  }
  std::vector<NamedTensor> buffers() override {
    std::vector<NamedTensor> out;
    for (const auto& b : module_.named_buffers(true)) out.push_back({b.name, b.value});
    return out;
  }
  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> out;
    for (const auto& p : module_.named_parameters(true)) out.push_back({p.name, p.value});
    for (auto& b : buffers()) out.push_back(std::move(b));
    return out;
  }

  void set_training(bool on) override { module_.train(on); }

  torch::Tensor forward(const Batch& batch) override {
    return module_.forward({batch.input}).toTensor();
  }

  torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) override {
    return per_sample_loss(output, batch.target).sum();
  }

  double correct(const torch::Tensor& output, const Batch& batch) override {
    if (spec_.loss == "cross_entropy")
      return per_sample_mean(output.argmax(1).eq(batch.target).to(torch::kDouble))
          .sum()
          .item<double>();
    if (spec_.loss == "bce")
      return per_sample_mean(output.gt(0).eq(batch.target.gt(0.5)).to(torch::kDouble))
          .sum()
          .item<double>();
    return -1;
  }
  bool classification() const override { return spec_.is_classification(); }
  // Read from the module's graph at load (module_graph_check.h): dropout and the like.
  bool draws_random_numbers() const override { return draws_random_; }
  // Its samples have fixed shapes (one tensor each); what a CUDA graph cannot hold is randomness.
  bool capturable() const override { return !draws_random_; }

  TaskSummary summary() const override {
    TaskSummary s;
    for (const auto& p : module_.parameters(true)) {
      s.parameters += p.numel();
      ++s.parameter_tensors;
    }
    for (const auto& b : module_.buffers(true)) {
      (void)b;
      ++s.buffers;
    }
    s.train_samples = train_->size();
    s.eval_samples = eval_ ? eval_->size() : 0;
    s.input = input_info_;
    s.target = target_info_;
    s.output_shape = output_shape_;
    s.warnings = warnings_;
    return s;
  }

  // TorchScript, CPU tensors, eval mode: ready for torch.jit.load(path) anywhere. Written to a
  // temporary file and renamed, so a reader never sees half a model.
  bool export_model(const std::string& path) override {
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    torch::jit::Module out = device_.is_cpu() ? module_ : module_.deepcopy();
    if (!device_.is_cpu()) out.to(torch::kCPU);
    const bool was_training = module_.is_training();
    out.train(false);
    try {
      // Not out.save(tmp): on a full disk LibTorch's writer would abort the process.
      write_file_through(tmp, [&](std::ostream& stream) { out.save(stream); });
    } catch (const std::exception& e) {
      module_.train(was_training);
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write '" + path + "': " + first_line(e.what()));
    }
    module_.train(was_training);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot move the model into place at '" + path + "'");
    }
    return true;
  }

 private:
  void load_model() {
    const std::string& path = spec_.model;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) bad("model", path, "no such file");
    try {
      module_ = torch::jit::load(path, device_);
    } catch (const std::exception& e) {
      // A newer PyTorch's file is TorchScript all right: say which versions (or which op), not
      // "upgrade PyTorch".
      if (const auto newer = newer_file_format(e.what()))
        bad("model", path, newer_pytorch_message(*newer, TORCH_VERSION));
      if (const auto op = unknown_operator(e.what()))
        bad("model", path, unknown_operator_message(*op, TORCH_VERSION));
      bad("model", path,
          "not a TorchScript file (save the model with torch.jit.script(model).save(path)): " +
              first_line(e.what()));
    }
    std::int64_t count = 0;
    for (const auto& p : module_.named_parameters(true)) {
      ++count;
      if (p.value.scalar_type() != torch::kFloat)
        bad("model", path,
            "parameter '" + p.name + "' is " + dtype_name(p.value) +
                ": ddpdesk trains float32 parameters (call .float() before scripting)");
    }
    if (count == 0)
      bad("model", path,
          "the module has no parameters to train (a module frozen with torch.jit.freeze has "
          "none: save it before freezing)");
    if (has_frozen_mode(module_))
      bad("model", path,
          "made by torch.jit.trace: its dropout or batch norm is fixed to the mode it was traced "
          "in and ignores train/eval; save it with torch.jit.script(model).save(path)");
    if (spec_.loss == "model" && !module_.find_method("per_sample_loss"))
      bad("loss", spec_.loss,
          "the module has no per_sample_loss(output, target) method (add one with "
          "@torch.jit.export)");
    draws_random_ = ::ddpdesk::draws_random_numbers(
        module_, spec_.loss == "model" ? std::vector<std::string>{"forward", "per_sample_loss"}
                                       : std::vector<std::string>{"forward"});
  }

  void check_targets(const torch::Tensor& t, const std::string& field, const std::string& path) {
    const std::string where = " (tensor '" + spec_.target_name + "' of '" + path + "')";
    if (spec_.loss == "cross_entropy") {
      if (t.is_floating_point() || t.scalar_type() == torch::kBool)
        bad("loss", spec_.loss, "targets must be integer class ids, got " + dtype_name(t) + where);
      const std::int64_t low = t.min().item<std::int64_t>();
      if (low < 0) bad(field, path, "class id " + std::to_string(low) + " is negative" + where);
    } else if (spec_.loss == "mse" || spec_.loss == "bce") {
      if (!t.is_floating_point())
        bad("loss", spec_.loss, "targets must be floating point, got " + dtype_name(t) + where);
      if (spec_.loss == "bce" && (t.min().item<double>() < 0 || t.max().item<double>() > 1))
        bad(field, path, "bce targets must lie in [0, 1]" + where);
    }
  }

  torch::ScalarType target_type_for(const torch::Tensor& t) const {
    if (spec_.loss == "cross_entropy") return torch::kLong;
    if (spec_.loss == "mse" || spec_.loss == "bce") return torch::kFloat;
    return t.is_floating_point() ? torch::kFloat : t.scalar_type();
  }

  // The mean over each sample's elements: [B, ...] -> [B].
  static torch::Tensor per_sample_mean(const torch::Tensor& t) {
    return t.dim() <= 1 ? t : t.reshape({t.size(0), -1}).mean(1);
  }

  torch::Tensor per_sample_loss(const torch::Tensor& output, const torch::Tensor& target) {
    namespace F = torch::nn::functional;
    if (spec_.loss == "cross_entropy")
      return per_sample_mean(
          F::cross_entropy(output, target, F::CrossEntropyFuncOptions().reduction(torch::kNone)));
    if (spec_.loss == "mse") return per_sample_mean((output - target).pow(2));
    if (spec_.loss == "bce")
      return per_sample_mean(F::binary_cross_entropy_with_logits(
          output, target, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone)));
    return module_.run_method("per_sample_loss", output, target).toTensor();
  }

  // Two samples through forward and loss, in eval mode (a dry run must not move BatchNorm's
  // running statistics) but with gradients on, so a loss that cannot train is found too.
  void dry_run(const Dataset& data, const std::string& field, const std::string& path) {
    const std::int64_t n = std::min<std::int64_t>(2, data.size());
    std::vector<std::int64_t> idx;
    for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
    Batch b = data.batch(idx);
    b.input = b.input.to(device_);
    b.target = b.target.to(device_);
    module_.train(false);
    c10::IValue out_value;
    try {
      out_value = module_.forward({b.input});
    } catch (const std::exception& e) {
      bad("model", spec_.model,
          "forward failed on samples of '" + path + "': " + first_line(e.what()));
    }
    if (!out_value.isTensor())
      bad("model", spec_.model,
          "forward must return one Tensor, it returned " + out_value.tagKind());
    const torch::Tensor out = out_value.toTensor();
    if (out.dim() == 0 || out.size(0) != n)
      bad("model", spec_.model,
          "forward returned " + shape_text(out.sizes()) + " for " + std::to_string(n) +
              " samples: its first dimension must be the batch");
    if (!out.requires_grad())
      bad("model", spec_.model, "its output does not depend on any parameter (nothing to train)");
    const std::string targets = "targets " + per_sample_shape(b.target) + " per sample";
    if (spec_.loss == "cross_entropy") {
      if (out.dim() < 2 || b.target.dim() != out.dim() - 1 ||
          b.target.sizes().slice(1) != out.sizes().slice(2))
        bad("loss", spec_.loss,
            "the model outputs " + per_sample_shape(out) + " per sample, which does not fit " +
                targets + " (cross_entropy wants [classes] logits for a class id)");
      const std::int64_t classes = out.size(1);
      const std::int64_t high =
          static_cast<const TensorDataset&>(data).tensors().targets.max().item<std::int64_t>();
      if (high >= classes)
        bad(field, path,
            "class id " + std::to_string(high) + " is outside the model's " +
                std::to_string(classes) + " outputs");
    } else if (spec_.loss == "mse" || spec_.loss == "bce") {
      if (out.sizes() != b.target.sizes())
        bad("loss", spec_.loss,
            "the model outputs " + per_sample_shape(out) + " per sample but the " + targets +
                " (reshape one of them so they match)");
    }
    torch::Tensor loss;
    try {
      loss = per_sample_loss(out, b.target);
    } catch (const std::exception& e) {
      bad("loss", spec_.loss, "the loss failed on the model's output: " + first_line(e.what()));
    }
    if (loss.dim() != 1 || loss.size(0) != n)
      bad("loss", spec_.loss,
          std::string(spec_.loss == "model" ? "per_sample_loss" : "the loss") + " returned " +
              shape_text(loss.sizes()) + " for " + std::to_string(n) +
              " samples: it must return one loss per sample, shape [" + std::to_string(n) + "]");
    if (!loss.requires_grad())
      bad("loss", spec_.loss, "the loss does not depend on the parameters (no gradient)");
    if (field == "train_data") output_shape_.assign(out.sizes().begin() + 1, out.sizes().end());
  }

  RunSpec spec_;
  torch::Device device_;
  torch::jit::Module module_;
  std::unique_ptr<TensorDataset> train_, eval_;
  TensorInfo input_info_, target_info_;
  std::vector<std::int64_t> output_shape_;
  std::vector<std::string> warnings_;
  bool draws_random_ = true;
};

}  // namespace

std::unique_ptr<Task> make_script_task(const RunSpec& spec, const torch::Device& device) {
  return std::make_unique<ScriptTask>(spec, device);
}

}  // namespace ddpdesk
