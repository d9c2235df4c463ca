// The built-in tasks behind the Task interface: the seed regression (generated variable-length
// samples) and the two Fashion-MNIST classifiers (Debian's dataset-fashion-mnist).
#include <algorithm>

#include "models.h"
#include "run_spec.h"
#include "task.h"

namespace ddpdesk {
namespace {

class BuiltinTask final : public Task {
 public:
  BuiltinTask(std::shared_ptr<TaskModel> model, std::unique_ptr<Dataset> train,
              std::unique_ptr<Dataset> eval, std::int64_t eval_batch, bool classification,
              bool capturable)
      : model_(std::move(model)),
        train_(std::move(train)),
        eval_(std::move(eval)),
        eval_batch_(eval_batch),
        classification_(classification),
        capturable_(capturable) {}

  const Dataset& train_data() const override { return *train_; }
  const Dataset* eval_data() const override { return eval_.get(); }
  std::int64_t eval_batch() const override { return eval_batch_; }

  std::vector<torch::Tensor> parameters() override { return model_->parameters(); }
  std::vector<NamedTensor> buffers() override {
    std::vector<NamedTensor> out;
    for (const auto& b : model_->named_buffers(true)) out.push_back({b.key(), b.value()});
    return out;
  }
  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> out;
    for (const auto& p : model_->named_parameters(true)) out.push_back({p.key(), p.value()});
    for (auto& b : buffers()) out.push_back(std::move(b));
    return out;
  }

  void set_training(bool on) override { model_->train(on); }
  torch::Tensor forward(const Batch& batch) override { return model_->forward(batch); }
  torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) override {
    return model_->loss_sum(output, batch);
  }
  double correct(const torch::Tensor& output, const Batch& batch) override {
    return static_cast<double>(model_->correct(output, batch));
  }
  bool classification() const override { return classification_; }
  bool draws_random_numbers() const override { return false; }  // no dropout in these models
  bool capturable() const override { return capturable_; }

  TaskSummary summary() const override {
    TaskSummary s;
    for (const auto& p : model_->parameters()) {
      s.parameters += p.numel();
      ++s.parameter_tensors;
    }
    s.buffers = static_cast<std::int64_t>(model_->buffers().size());
    s.train_samples = train_->size();
    s.eval_samples = eval_ ? eval_->size() : 0;
    Batch one = train_->batch({0});
    s.input = tensor_info(one.input);
    s.input.shape.at(0) = s.train_samples;  // the seed task's rows vary: its first dim is rows
    s.target = tensor_info(one.target);
    s.target.shape.at(0) = s.train_samples;
    torch::NoGradGuard no_grad;
    const torch::Tensor out = model_->forward(one);
    s.output_shape.assign(out.sizes().begin() + 1, out.sizes().end());
    return s;
  }

 private:
  std::shared_ptr<TaskModel> model_;
  std::unique_ptr<Dataset> train_, eval_;
  std::int64_t eval_batch_;
  bool classification_;
  bool capturable_;
};

}  // namespace

std::unique_ptr<Task> make_builtin_task(const RunSpec& spec, const torch::Device& device,
                                        const std::string& fmnist_dir) {
  const std::int64_t n = spec.resolved_dataset_size();
  std::unique_ptr<Dataset> train, eval;
  std::int64_t eval_batch = 256;
  if (spec.task == "seed") {
    train = make_seed_dataset(n, spec.seed);
    eval = make_seed_dataset(std::max<std::int64_t>(1, n / 9), spec.seed, n);
  } else {
    // The spec's check (validate) holds dataset_size to the training images there are. The
    // monitor refuses a run whose files are missing before any rank starts (fmnist_files.h); a
    // broken file (or one gone since) is a failure of the machine, not bad input: it propagates
    // as std::runtime_error naming the file.
    const std::string dir = fmnist_dir.empty() ? kSystemFmnistDir : fmnist_dir;
    train = make_fmnist_dataset(dir, "train", spec.dataset_size);
    eval = make_fmnist_dataset(dir, "t10k");
    eval_batch = 1000;
  }
  torch::manual_seed(static_cast<std::uint64_t>(spec.seed));
  auto model = make_model(spec.task);
  model->to(device);
  const TaskInfo* info = find_task(spec.task);
  return std::make_unique<BuiltinTask>(std::move(model), std::move(train), std::move(eval),
                                       eval_batch, info && info->classification,
                                       info && info->capturable);
}

}  // namespace ddpdesk
