// make_task: the catalog's names (run_spec.h) mapped to their implementations.
#include "task.h"

#include <map>
#include <sstream>

#include "run_spec.h"

namespace ddpdesk {
namespace {

using Factory = std::unique_ptr<Task> (*)(const RunSpec&, const torch::Device&,
                                          const std::string& fmnist_dir);

std::unique_ptr<Task> script_task(const RunSpec& spec, const torch::Device& device,
                                  const std::string&) {
  return make_script_task(spec, device);
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = {
      {"seed", make_builtin_task},
      {"fmnist-mlp", make_builtin_task},
      {"fmnist-cnn", make_builtin_task},
      {"script", script_task},
  };
  return table;
}

}  // namespace

bool has_task_implementation(const std::string& name) {
  return factories().count(name) > 0;
}

std::unique_ptr<Task> make_task(const RunSpec& spec, const torch::Device& device,
                                const std::string& fmnist_dir) {
  const auto it = factories().find(spec.task);
  if (it == factories().end()) throw BadInput({"task", spec.task, "this build has no such task"});
  return it->second(spec, device, fmnist_dir);
}

std::string dtype_name(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat:
      return "float32";
    case torch::kDouble:
      return "float64";
    case torch::kHalf:
      return "float16";
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kLong:
      return "int64";
    case torch::kInt:
      return "int32";
    case torch::kShort:
      return "int16";
    case torch::kChar:
      return "int8";
    case torch::kByte:
      return "uint8";
    case torch::kBool:
      return "bool";
    default:
      return c10::toString(t.scalar_type());
  }
}

std::string shape_text(torch::IntArrayRef shape) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

TensorInfo tensor_info(const torch::Tensor& t) {
  return {dtype_name(t), std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end())};
}

}  // namespace ddpdesk
