// A task is everything the trainer trains without knowing what it is: the model's parameters and
// buffers, training and validation data, the per-sample loss and the evaluation metrics. The
// built-in tasks (seed, fmnist-mlp, fmnist-cnn) and the user's TorchScript task sit behind it
// alike; the trainer, checkpoints, sampler and gradient sync never ask which one runs.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

#include "dataset.h"
#include "run_spec.h"

namespace ddpdesk {

struct RunSpec;

// Bad input found while setting a run up: the field, the value and why (FieldError), what()
// its one line naming the flag. A problem that is no value's (a checkpoint that does not load)
// gives the field and a line of its own; its error() has no `allowed` then. Thrown only by
// set-up code (make_task, choose_device, TrainingRun's constructor) and caught only around it,
// where the worker maps it to exit code 2; once training runs, every exception is a failure of
// the run (exit 1), whatever its type.
class BadInput : public std::invalid_argument {
 public:
  explicit BadInput(FieldError error)
      : std::invalid_argument(format_error(error, Spelling::Flag)), error_(std::move(error)) {}
  BadInput(std::string field, const std::string& line)
      : std::invalid_argument(line), error_{std::move(field), {}, {}, {}} {}
  const std::string& field() const { return error_.field; }
  const FieldError& error() const { return error_; }

 private:
  FieldError error_;
};

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

struct TensorInfo {
  std::string dtype;                // "float32", "int64", ...
  std::vector<std::int64_t> shape;  // the whole tensor, sample dimension first
};

// What a task is made of, for `ddpdesk-worker --check` and the GUI.
struct TaskSummary {
  std::int64_t parameters = 0;         // scalars
  std::int64_t parameter_tensors = 0;  // tensors
  std::int64_t buffers = 0;            // buffer tensors (e.g. BatchNorm running statistics)
  std::int64_t train_samples = 0;
  std::int64_t eval_samples = 0;
  TensorInfo input, target;                // of the training data
  std::vector<std::int64_t> output_shape;  // the model's output for one sample
  std::vector<std::string> warnings;       // worth saying, not worth refusing
};

class Task {
 public:
  virtual ~Task() = default;

  virtual const Dataset& train_data() const = 0;
  virtual const Dataset* eval_data() const = 0;  // null: the run has no validation
  virtual std::int64_t eval_batch() const = 0;   // samples per validation forward

  // Trainable parameters in registration order (gradient buckets go in reverse of it); each a
  // contiguous float32 leaf the optimizer updates in place.
  virtual std::vector<torch::Tensor> parameters() = 0;
  // Buffers kept equal on every rank the way PyTorch DDP does by default: rank 0's win.
  virtual std::vector<NamedTensor> buffers() = 0;
  // Parameters and buffers by name: what a checkpoint holds of the model.
  virtual std::vector<NamedTensor> state() = 0;

  virtual void set_training(bool on) = 0;
  virtual torch::Tensor forward(const Batch& batch) = 0;
  // Sum (not mean) of the batch's per-sample losses: the trainer divides by the window's global
  // sample count itself, which is what makes accumulation exact.
  virtual torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) = 0;
  // Correctly classified samples (fractions allowed), or a negative value for tasks without an
  // accuracy.
  virtual double correct(const torch::Tensor& output, const Batch& batch) = 0;
  virtual bool classification() const = 0;
  // Whether training draws random numbers (dropout, ...): the trainer then reseeds torch's
  // generator per rank and per step (about a microsecond, which the seed task's 0.1 ms steps
  // need not pay).
  virtual bool draws_random_numbers() const = 0;
  // Whether a training micro-step may be recorded as a CUDA graph (--cuda-graph): the catalog's
  // `capturable` (fixed-shape samples; forward and loss read nothing back to the host and draw
  // no random numbers).
  virtual bool capturable() const { return false; }

  virtual TaskSummary summary() const = 0;
  // Writes the trained model as a file a person can use elsewhere (the user's task: TorchScript
  // for torch.jit.load). Returns false when the task has no such form.
  virtual bool export_model(const std::string& path) {
    (void)path;
    return false;
  }
};

// The task the spec names, on `device`, checked by a dry run (one sample through forward and
// loss) before anything else starts. Throws BadInput for anything wrong with the spec's task,
// model or data. Parameters are initialised from torch's global seed, seeded here from the spec.
// `fmnist_dir`: where the Fashion-MNIST files are (empty: kSystemFmnistDir, dataset.h).
std::unique_ptr<Task> make_task(const RunSpec& spec, const torch::Device& device,
                                const std::string& fmnist_dir = {});

// Whether every catalog task has an implementation (a test keeps the table and the engine in step).
bool has_task_implementation(const std::string& name);

// Built-in and user tasks; make_task picks among them through the catalog.
std::unique_ptr<Task> make_builtin_task(const RunSpec& spec, const torch::Device& device,
                                        const std::string& fmnist_dir);
std::unique_ptr<Task> make_script_task(const RunSpec& spec, const torch::Device& device);

// Shape and dtype text for messages and summaries: "float32", "[64, 1, 28, 28]".
std::string dtype_name(const torch::Tensor& t);
std::string shape_text(torch::IntArrayRef shape);
TensorInfo tensor_info(const torch::Tensor& t);

}  // namespace ddpdesk
