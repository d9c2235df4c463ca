#include "tensor_file.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>

namespace ddpdesk {
namespace {

// safetensors data is little-endian; the views below reinterpret it in place.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ddpdesk reads safetensors data in place and needs a little-endian machine");

bool starts_with(const MappedFile& file, const unsigned char* magic, std::size_t n) {
  return file.size() >= n && std::memcmp(file.data(), magic, n) == 0;
}

// The first bytes of a legacy (pre-1.6, non-zip) torch.save file: the pickle opcode PROTO with
// any protocol, then LONG1 of 10 bytes holding torch's magic number 0x1950a86a20f9469cfc6c.
bool is_legacy_torch_save(const MappedFile& file) {
  static const unsigned char magic[] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                        0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  return file.size() >= 2 + sizeof magic && file.data()[0] == 0x80 &&
         std::memcmp(file.data() + 2, magic, sizeof magic) == 0;
}

torch::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "BOOL") return torch::kBool;
  if (dtype == "U8") return torch::kByte;
  if (dtype == "I8") return torch::kChar;
  if (dtype == "I16") return torch::kShort;
  if (dtype == "I32") return torch::kInt;
  if (dtype == "I64") return torch::kLong;
  if (dtype == "F16") return torch::kHalf;
  if (dtype == "BF16") return torch::kBFloat16;
  if (dtype == "F32") return torch::kFloat;
  if (dtype == "F64") return torch::kDouble;
  // parse_safetensors already refused every other dtype.
  throw TensorFileError("dtype " + dtype + " is not supported");
}

std::map<std::string, torch::Tensor> load_safetensors(std::shared_ptr<MappedFile> file) {
  const SafetensorsHeader header = parse_safetensors(file->data(), file->size());
  std::map<std::string, torch::Tensor> out;
  for (const auto& e : header.tensors) {
    const auto options = torch::TensorOptions().dtype(scalar_type(e.dtype));
    const std::size_t bytes = e.end - e.begin;
    if (bytes == 0) {  // Nothing to view (and an empty file has no mapping to point into).
      out[e.name] = torch::empty(e.shape, options);
      continue;
    }
    const unsigned char* p = file->data() + header.data_offset + e.begin;
    if (e.dtype == "BOOL") {
      // A bool byte other than 0 or 1 is undefined behaviour in C++ and in Torch's kernels.
      for (std::size_t i = 0; i < bytes; ++i)
        if (p[i] > 1)
          throw TensorFileError("tensor '" + e.name + "': BOOL element " + std::to_string(i) +
                                " is byte " + std::to_string(p[i]) + ", not 0 or 1");
    }
    const std::size_t element = safetensors_element_size(e.dtype);
    if (reinterpret_cast<std::uintptr_t>(p) % element != 0) {
      // Torch's kernels assume naturally aligned elements; the format does not promise them.
      torch::Tensor t = torch::empty(e.shape, options);
      std::memcpy(t.data_ptr(), p, bytes);
      out[e.name] = std::move(t);
      continue;
    }
    // The deleter owns a reference to the mapping: it stays mapped while any view lives.
    out[e.name] = torch::from_blob(
        const_cast<unsigned char*>(p), e.shape, [file](void*) {}, options);
  }
  return out;
}

std::string describe(const c10::IValue& v) {
  if (v.isTensor()) return "a single tensor";
  if (v.isList()) return "a list";
  if (v.isTuple()) return "a tuple";
  if (v.isGenericDict()) return "a dict";
  if (v.isString()) return "a string";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isBool()) return "a bool";
  if (v.isNone()) return "None";
  if (v.isObject()) return "an object of class " + v.type()->str();
  return std::string("a ") + v.tagKind();
}

// Torch's messages can span lines (and carry a C++ backtrace) or hold raw bytes from the file;
// a TensorFileError is one printable line.
std::string first_line(const char* what) {
  std::string s = what;
  const auto nl = s.find('\n');
  if (nl != std::string::npos) s.erase(nl);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

// Python pickles a dict of exactly one entry as EMPTY_DICT, key, value, SETITEM (more entries
// use MARK ... SETITEMS). LibTorch 1.13's unpickler lacks SETITEM, so such a file (one tensor
// saved as {'x': t}) fails there. This rewrites the top-level form
//   PROTO '}' [memo op] <key> <value> 's' '.'
// into the equivalent '}' [memo op] MARK <key> <value> SETITEMS '.'; nullopt when the pickle
// does not have that shape.
std::optional<std::string> single_setitem_as_setitems(const std::string& pkl) {
  const std::size_t n = pkl.size();
  if (n < 6 || pkl[0] != '\x80' || pkl[2] != '}' || pkl[n - 2] != 's' || pkl[n - 1] != '.')
    return std::nullopt;
  // The dict's memo op, if any: BINPUT (1-byte index), LONG_BINPUT (4 bytes) or MEMOIZE.
  const std::size_t memo = pkl[3] == 'q' ? 2 : pkl[3] == 'r' ? 5 : pkl[3] == '\x94' ? 1 : 0;
  const std::size_t body = 3 + memo;
  if (body > n - 2) return std::nullopt;
  return pkl.substr(0, body) + '(' + pkl.substr(body, n - 2 - body) + "u.";
}

// Called when LibTorch could not read the archive: looks at its pickle for the known causes.
// Throws TensorFileError for a cause worth naming, returns the archive with a one-entry dict
// rewritten (see above) when that applies, and nullopt when LibTorch's own error says most.
std::optional<std::vector<char>> diagnose_archive(const MappedFile& file) {
  using namespace caffe2::serialize;
  PyTorchStreamReader reader(
      std::make_shared<MemoryReadAdapter>(file.data(), static_cast<off_t>(file.size())));
  if (!reader.hasRecord("data.pkl")) return std::nullopt;
  const auto [pkl_ptr, pkl_size] = reader.getRecord("data.pkl");
  const std::string pkl(static_cast<const char*>(pkl_ptr.get()), pkl_size);
  if (pkl.size() >= 2 && pkl[0] == '\x80' && pkl[1] != 2)
    throw TensorFileError(
        "the archive was pickled with protocol " +
        std::to_string(static_cast<unsigned char>(pkl[1])) +
        "; LibTorch reads only protocol 2, torch.save's default (leave pickle_protocol out)");
  // collections.OrderedDict (what state_dict() returns) is rebuilt in a way LibTorch cannot use.
  if (pkl.size() > 27 && pkl.compare(2, 25, "ccollections\nOrderedDict\n") == 0)
    throw TensorFileError(
        "the torch.save file holds a collections.OrderedDict; save a plain dict (dict(d))");

  const auto rewritten = single_setitem_as_setitems(pkl);
  if (!rewritten) return std::nullopt;
  std::vector<char> out;
  PyTorchStreamWriter writer([&out](const void* p, std::size_t size) {
    out.insert(out.end(), static_cast<const char*>(p), static_cast<const char*>(p) + size);
    return size;
  });
  for (const auto& name : reader.getAllRecords()) {
    if (name == "data.pkl") {
      writer.writeRecord(name, rewritten->data(), rewritten->size());
    } else {
      const auto [ptr, size] = reader.getRecord(name);
      writer.writeRecord(name, ptr.get(), size);
    }
  }
  writer.writeEndOfFile();
  return out;
}

// Torch's loaders throw c10::Error (and, from the zip reader, other std::exceptions).
template <typename F>
auto torch_call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw TensorFileError("cannot read the torch.save archive: " +
                          first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw TensorFileError("cannot read the torch.save archive: " + first_line(e.what()));
  }
}

std::map<std::string, torch::Tensor> load_torch_save(const MappedFile& file) {
  // pickle_load takes the whole archive as a vector; it copies, but only once per load.
  c10::IValue value;
  try {
    value = torch_call([&] {
      return torch::pickle_load(std::vector<char>(file.data(), file.data() + file.size()));
    });
  } catch (const TensorFileError&) {
    std::optional<std::vector<char>> rewritten;
    try {
      rewritten = diagnose_archive(file);
    } catch (const TensorFileError&) {
      throw;
    } catch (const std::exception&) {
      // Not an archive the diagnosis can open: LibTorch's first error says more.
    }
    if (!rewritten) throw;
    value = torch_call([&] { return torch::pickle_load(*rewritten); });
  }
  if (!value.isGenericDict())
    throw TensorFileError("the torch.save file holds " + describe(value) +
                          ", not a dict of str -> Tensor");
  std::map<std::string, torch::Tensor> out;
  for (const auto& kv : value.toGenericDict()) {
    if (!kv.key().isString())
      throw TensorFileError("the torch.save dict has a key that is " + describe(kv.key()) +
                            ", not a str (a dict of str -> Tensor is needed)");
    const std::string name = kv.key().toStringRef();
    if (!kv.value().isTensor())
      throw TensorFileError("the torch.save dict's entry '" + name + "' is " +
                            describe(kv.value()) + ", not a tensor");
    out[name] = kv.value().toTensor();
  }
  return out;
}

}  // namespace

std::map<std::string, torch::Tensor> load_tensor_file(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  static const unsigned char zip[] = {'P', 'K', 0x03, 0x04};
  if (starts_with(*file, zip, sizeof zip)) return load_torch_save(*file);
  if (is_legacy_torch_save(*file))
    throw TensorFileError(
        "this is a legacy torch.save file; save it again with the default zip format "
        "(torch.save(..., _use_new_zipfile_serialization=True), the default since PyTorch 1.6)");
  return load_safetensors(std::move(file));
}

}  // namespace ddpdesk
