// The traced-module check (traced_module_check.h): which ops have a train/eval flag, which
// values come from the module's `training` attribute, and where a constant flag is fixed.
#include "traced_module_check.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

namespace ddpdesk {
namespace {

// Ops whose result depends on train/eval, by the argument that tells them which. A scripted
// module feeds them self.training, or calls them with a constant under an `if self.training`
// branch (torch.nn's attention does: `if not training: dropout_p = 0.0`, then
// `if dropout_p > 0.0: dropout(x, dropout_p, True)`); a traced one feeds them, as a constant,
// the mode the module was in when it was traced, and has no such branch (tracing keeps no `if`).
const std::map<std::string, std::string>& mode_flags() {
  static const std::map<std::string, std::string> ops = {
      {"aten::dropout", "train"},
      {"aten::dropout_", "train"},
      {"aten::feature_dropout", "train"},
      {"aten::feature_dropout_", "train"},
      {"aten::alpha_dropout", "train"},
      {"aten::alpha_dropout_", "train"},
      {"aten::feature_alpha_dropout", "train"},
      {"aten::feature_alpha_dropout_", "train"},
      {"aten::batch_norm", "training"},
      {"aten::instance_norm", "use_input_stats"},
      {"aten::lstm", "train"},  // the flag of dropout between layers
      {"aten::gru", "train"},
      {"aten::rnn_tanh", "train"},
      {"aten::rnn_relu", "train"},
      {"aten::rrelu", "training"},
      {"aten::rrelu_", "training"},
  };
  return ops;
}

// torch.nn's fast paths, taken only in eval mode and without a backward: a scripted module
// reaches them under its own `if self.training` tests, a module traced in eval mode always.
bool eval_only(const torch::jit::Node* n) {
  return n->kind() == c10::Symbol::fromQualString("aten::_transformer_encoder_layer_fwd") ||
         n->kind() == c10::Symbol::fromQualString("aten::_native_multi_head_attention");
}

// Argument `name` of an op, where it is a constant of the graph.
std::optional<c10::IValue> constant_argument(const torch::jit::Node* n, const char* name) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return std::nullopt;
  const auto index = schema->argumentIndexWithName(name);
  if (!index || static_cast<std::size_t>(*index) >= n->inputs().size()) return std::nullopt;
  const auto value = torch::jit::toIValue(n->input(*index));
  return value ? std::optional<c10::IValue>(*value) : std::nullopt;
}

// Whether the mode cannot change what the op computes: dropout of probability 0, and a norm
// without running statistics (it normalises by the batch's own in both modes, so torch.nn's
// scripted code passes a constant True itself).
bool mode_is_moot(const torch::jit::Node* n) {
  for (const char* rate : {"p", "dropout"})
    if (const auto p = constant_argument(n, rate); p && p->isDouble() && p->toDouble() == 0)
      return true;
  const auto mean = constant_argument(n, "running_mean"), var = constant_argument(n, "running_var");
  return mean && mean->isNone() && var && var->isNone();
}

using ValueSet = std::unordered_set<const torch::jit::Value*>;

// Marks the values that come from the module's `training` attribute: its reads, whatever is
// computed from them, and what an If or Loop yields when its inputs or results are such values.
void mark_training_values(torch::jit::Block* block, ValueSet& marked) {
  const auto is_marked = [&](const torch::jit::Value* v) { return marked.count(v) > 0; };
  for (torch::jit::Node* n : block->nodes()) {
    const bool from_inputs = std::any_of(n->inputs().begin(), n->inputs().end(), is_marked);
    if (n->kind() == c10::prim::Loop && from_inputs)
      for (torch::jit::Block* b : n->blocks())
        for (const torch::jit::Value* v : b->inputs()) marked.insert(v);
    for (torch::jit::Block* b : n->blocks()) mark_training_values(b, marked);
    bool from_training =
        from_inputs || (n->kind() == c10::prim::GetAttr && n->s(c10::attr::name) == "training");
    for (torch::jit::Block* b : n->blocks())
      from_training =
          from_training || std::any_of(b->outputs().begin(), b->outputs().end(), is_marked);
    if (from_training)
      for (const torch::jit::Value* v : n->outputs()) marked.insert(v);
  }
}

// Whether some op's mode is fixed: a constant flag where the mode matters, outside every branch
// that the `training` attribute picks (inside one, the op follows the mode whatever its flag).
bool has_frozen_mode_op(torch::jit::Block* block, const ValueSet& from_training) {
  for (torch::jit::Node* n : block->nodes()) {
    const bool picked_by_mode = n->kind() == c10::prim::If && from_training.count(n->input(0));
    if (!picked_by_mode)
      for (torch::jit::Block* sub : n->blocks())
        if (has_frozen_mode_op(sub, from_training)) return true;
    const auto op = mode_flags().find(n->kind().toQualString());
    if (op != mode_flags().end() && constant_argument(n, op->second.c_str()) && !mode_is_moot(n))
      return true;
    if (eval_only(n)) return true;
  }
  return false;
}

}  // namespace

bool has_frozen_mode(const torch::jit::Module& module) {
  // Inlining follows submodule calls only while the graph optimiser is on (it is off for
  // training, see ScriptTask's constructor): switch it on just for this look at the graph.
  std::shared_ptr<torch::jit::Graph> graph;
  {
    torch::jit::GraphOptimizerEnabledGuard optimise(true);
    graph = module.get_method("forward").graph()->copy();
    torch::jit::Inline(*graph);
  }
  ValueSet from_training;
  mark_training_values(graph->block(), from_training);
  return has_frozen_mode_op(graph->block(), from_training);
}

}  // namespace ddpdesk
