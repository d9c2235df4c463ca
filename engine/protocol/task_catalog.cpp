// The one table of tasks and the user tasks' vocabulary (declared in run_spec.h, where the
// RunSpec that names them is): task_catalog, find_task, known_tasks, known_losses, the user
// task's and the Python script's fields, and the script's placeholders.
#include "run_spec.h"

#include <cctype>

namespace ddpdesk {

const std::vector<TaskInfo>& task_catalog() {
  static const std::vector<TaskInfo> tasks = {
      {"seed", "the seed script's regression: variable-length samples, masked max", false, false},
      {"fmnist-mlp", "Fashion-MNIST, 784-512-256-10 MLP", true, false, false, true},
      {"fmnist-cnn", "Fashion-MNIST, two conv layers + two linear", true, false, false, true},
      {"script", "your TorchScript model on your tensor data", false, true, false, true},
      {"python", "your Python DDP training script, started as torchrun starts it", false, false,
       true},
  };
  return tasks;
}

const TaskInfo* find_task(const std::string& name) {
  for (const auto& t : task_catalog())
    if (name == t.name) return &t;
  return nullptr;
}

const std::vector<std::string>& known_tasks() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : task_catalog()) v.push_back(t.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& known_losses() {
  static const std::vector<std::string> losses = {"cross_entropy", "mse", "bce", "model"};
  return losses;
}

const std::vector<std::string>& known_precisions() {
  static const std::vector<std::string> precisions = {"fp32", "bf16", "fp16"};
  return precisions;
}

bool is_user_task_field(const std::string& key) {
  return key == "model" || key == "train_data" || key == "eval_data" || key == "loss" ||
         key == "input_name" || key == "target_name";
}

bool is_script_field(const std::string& key) {
  return key == "script" || key == "script_args" || key == "python" || key == "workdir" ||
         key == "loss_pattern" || key == "logdir";
}

const std::vector<std::string>& script_placeholders() {
  static const std::vector<std::string> names = {"batch_size", "accum_steps", "epochs",
                                                 "lr",         "seed",        "precision",
                                                 "nproc",      "run_dir",     "resume"};
  return names;
}

std::string unknown_placeholder(const std::string& text) {
  for (std::size_t open = text.find('{'); open != std::string::npos;
       open = text.find('{', open + 1)) {
    std::size_t end = open + 1;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    if (end == open + 1 || end >= text.size() || text[end] != '}') continue;
    if (!std::isalpha(static_cast<unsigned char>(text[open + 1]))) continue;
    const std::string name = text.substr(open + 1, end - open - 1);
    bool known = false;
    for (const auto& p : script_placeholders()) known = known || p == name;
    if (!known) return "{" + name + "}";
  }
  return {};
}

}  // namespace ddpdesk
