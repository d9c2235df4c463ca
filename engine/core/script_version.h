// A TorchScript file saved by a newer PyTorch than the worker's LibTorch. The archive records a
// file format version (its `version` or `.data/version` entry); LibTorch's reader refuses one
// above its own maximum with "Attempted to read a PyTorch file with version N, but the maximum
// supported version for reading is M. The version of your PyTorch installation may be too old,
// ..." (LibTorch 1.13 to 2.x), advice meant for Python users; a file it reads can still call an
// op it lacks ("Unknown builtin op: aten::..." after an empty first line). These functions find
// both in LibTorch's message and say them ddpdesk's way: the versions, or the op, and what to do.
// Plain C++ (no LibTorch), so the unit test runs without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddpdesk {

// The archive's format version and the highest one the worker's LibTorch reads.
struct NewerFileFormat {
  std::uint64_t file = 0, supported = 0;
};

namespace script_version_detail {

// The decimal number right after `label` in `text`, if there is one.
inline std::optional<std::uint64_t> number_after(const std::string& text,
                                                 const std::string& label) {
  const std::size_t at = text.find(label);
  if (at == std::string::npos) return std::nullopt;
  std::size_t i = at + label.size();
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
  std::uint64_t n = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return std::nullopt;  // no archive records such a number
    n = n * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  return n;
}

}  // namespace script_version_detail

// The versions in LibTorch's refusal of a newer archive; nullopt for any other message (an
// archive too old, not a zip, a missing record, ...), which keeps its own wording.
inline std::optional<NewerFileFormat> newer_file_format(const std::string& libtorch_error) {
  using script_version_detail::number_after;
  const auto file = number_after(libtorch_error, "Attempted to read a PyTorch file with version ");
  const auto supported =
      number_after(libtorch_error, "but the maximum supported version for reading is ");
  if (!file || !supported || *file <= *supported) return std::nullopt;
  return NewerFileFormat{*file, *supported};
}

// The operator LibTorch did not know ("Unknown builtin op: aten::name." on a line of its
// message): a file within the versions it reads, calling an op added by a newer PyTorch (or a
// custom one). nullopt for any other message.
inline std::optional<std::string> unknown_operator(const std::string& libtorch_error) {
  const std::string label = "Unknown builtin op: ";
  const std::size_t at = libtorch_error.find(label);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + label.size();
  std::size_t end = begin;
  while (end < libtorch_error.size() && libtorch_error[end] != '\n' && libtorch_error[end] != ' ')
    ++end;
  std::string op = libtorch_error.substr(begin, end - begin);
  if (!op.empty() && op.back() == '.') op.pop_back();
  if (op.empty()) return std::nullopt;
  return op;
}

namespace script_version_detail {

// The remedy for a file this LibTorch cannot read, `libtorch_version` its TORCH_VERSION.
inline std::string remedy(const std::string& libtorch_version) {
  // A PyTorch of the same major.minor writes what this LibTorch reads.
  const std::size_t second_dot = libtorch_version.find('.', libtorch_version.find('.') + 1);
  return "build ddpdesk against the PyTorch that saved it (docs/user-task.md, \"Which "
         "PyTorch\"), or save the model with PyTorch " +
         libtorch_version.substr(0, second_dot);
}

}  // namespace script_version_detail

// What is wrong with the model and the remedy, for `invalid --model 'path': <this>`.
// `libtorch_version` is the worker's TORCH_VERSION ("1.13.0").
inline std::string newer_pytorch_message(const NewerFileFormat& v,
                                         const std::string& libtorch_version) {
  return "saved by a newer PyTorch (file format version " + std::to_string(v.file) +
         ") than this worker's LibTorch " + libtorch_version + " reads (format versions up to " +
         std::to_string(v.supported) + "): " + script_version_detail::remedy(libtorch_version);
}

// The same for an operator the worker's LibTorch does not have.
inline std::string unknown_operator_message(const std::string& op,
                                            const std::string& libtorch_version) {
  return "it calls " + op + ", which this worker's LibTorch " + libtorch_version +
         " does not have (an op of a newer PyTorch, or a custom one): " +
         script_version_detail::remedy(libtorch_version);
}

}  // namespace ddpdesk
