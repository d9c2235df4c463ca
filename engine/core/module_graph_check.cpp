// What a module's graph says (module_graph_check.h). The traced-module check: which ops have a
// train/eval flag, which values come from the module's `training` attribute, and where a
// constant flag is fixed. Random draws: which ops sample, and whether their probability is zero.
#include "module_graph_check.h"

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

// A copy of a method's graph with submodule calls inlined. Inlining follows them only while the
// graph optimiser is on (it is off for training, see ScriptTask's constructor): switched on just
// for this look at the graph.
std::shared_ptr<torch::jit::Graph> inlined_graph(const torch::jit::Module& module,
                                                 const std::string& method) {
  torch::jit::GraphOptimizerEnabledGuard optimise(true);
  std::shared_ptr<torch::jit::Graph> graph = module.get_method(method).graph()->copy();
  torch::jit::Inline(*graph);
  return graph;
}

// The number a value surely holds: a constant, an attribute of the module read through a chain
// of GetAttr from `self` (the graph's first input), or an If's output that every branch yields
// alike. Anything else is unknown.
std::optional<double> known_number(const torch::jit::Value* v, const torch::jit::Module& self,
                                   int depth = 0) {
  if (depth > 16) return std::nullopt;
  if (const auto c = torch::jit::toIValue(v)) {
    if (c->isDouble()) return c->toDouble();
    if (c->isInt()) return static_cast<double>(c->toInt());
    return std::nullopt;
  }
  const torch::jit::Node* n = v->node();
  if (n->kind() == c10::prim::GetAttr) {
    // The path of attribute names back to `self`.
    std::vector<std::string> path;
    const torch::jit::Value* at = v;
    while (at->node()->kind() == c10::prim::GetAttr) {
      path.push_back(at->node()->s(c10::attr::name));
      at = at->node()->input(0);
    }
    if (at != at->owningGraph()->inputs().at(0)) return std::nullopt;
    c10::IValue value = self._ivalue();
    for (auto name = path.rbegin(); name != path.rend(); ++name) {
      if (!value.isObject() || !value.toObject()->type()->hasAttribute(*name)) return std::nullopt;
      value = value.toObject()->getAttr(*name);
    }
    if (value.isDouble()) return value.toDouble();
    if (value.isInt()) return static_cast<double>(value.toInt());
    return std::nullopt;
  }
  if (n->kind() == c10::prim::If) {
    const std::size_t i = v->offset();
    std::optional<double> same;
    for (const torch::jit::Block* b : n->blocks()) {
      const auto x = known_number(b->outputs().at(i), self, depth + 1);
      if (!x || (same && *same != *x)) return std::nullopt;
      same = x;
    }
    return same;
  }
  return std::nullopt;
}

// Ops that sample, by the argument holding their probability (empty: always random): the
// dropout family, RReLU's slopes, an RNN's dropout between layers, attention's dropout, and the
// samplers TorchScript lists as nondeterministic, in place or not.
const std::map<std::string, std::string>& sampling_ops() {
  static const std::map<std::string, std::string> ops = {
      {"aten::dropout", "p"},
      {"aten::dropout_", "p"},
      {"aten::native_dropout", "p"},
      {"aten::feature_dropout", "p"},
      {"aten::feature_dropout_", "p"},
      {"aten::alpha_dropout", "p"},
      {"aten::alpha_dropout_", "p"},
      {"aten::feature_alpha_dropout", "p"},
      {"aten::feature_alpha_dropout_", "p"},
      {"aten::lstm", "dropout"},
      {"aten::gru", "dropout"},
      {"aten::rnn_tanh", "dropout"},
      {"aten::rnn_relu", "dropout"},
      {"aten::scaled_dot_product_attention", "dropout_p"},
      {"aten::rrelu", ""},
      {"aten::rrelu_", ""},
      {"aten::rrelu_with_noise", ""},
      {"aten::bernoulli", ""},
      {"aten::bernoulli_", ""},
      {"aten::uniform_", ""},
      {"aten::normal", ""},
      {"aten::normal_", ""},
      {"aten::random_", ""},
      {"aten::exponential_", ""},
      {"aten::geometric_", ""},
      {"aten::cauchy_", ""},
      {"aten::log_normal_", ""},
      {"aten::multinomial", ""},
      {"aten::poisson", ""},
      {"aten::binomial", ""},
      {"aten::rand", ""},
      {"aten::rand_like", ""},
      {"aten::randn", ""},
      {"aten::randn_like", ""},
      {"aten::randint", ""},
      {"aten::randint_like", ""},
      {"aten::randperm", ""},
  };
  return ops;
}

bool samples(const torch::jit::Node* n, const torch::jit::Module& self) {
  const auto op = sampling_ops().find(n->kind().toQualString());
  if (op == sampling_ops().end()) return n->kind().is_aten() && n->isNondeterministic();
  if (op->second.empty()) return true;
  // The flag that turns the draw off (dropout's `train`, an RNN's): a constant false.
  for (const char* flag : {"train"})
    if (const auto t = constant_argument(n, flag); t && t->isBool() && !t->toBool()) return false;
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return true;
  const auto index = schema->argumentIndexWithName(op->second);
  if (!index || static_cast<std::size_t>(*index) >= n->inputs().size()) return true;
  const auto p = known_number(n->input(*index), self);
  return !p || *p != 0;
}

bool has_sampling_op(const torch::jit::Block* block, const torch::jit::Module& self) {
  for (const torch::jit::Node* n : block->nodes()) {
    if (samples(n, self)) return true;
    for (const torch::jit::Block* sub : n->blocks())
      if (has_sampling_op(sub, self)) return true;
  }
  return false;
}

}  // namespace

bool draws_random_numbers(const torch::jit::Module& module,
                          const std::vector<std::string>& methods) {
  for (const std::string& m : methods)
    if (has_sampling_op(inlined_graph(module, m)->block(), module)) return true;
  return false;
}

bool has_frozen_mode(const torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = inlined_graph(module, "forward");
  ValueSet from_training;
  mark_training_values(graph->block(), from_training);
  return has_frozen_mode_op(graph->block(), from_training);
}

}  // namespace ddpdesk
