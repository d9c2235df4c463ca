// The user task's data files: safetensors written here byte by byte (every accepted dtype, odd
// shapes, each layout error with its message), torch.save archives made at test time by Debian's
// Python, and the mapping that lets ranks share one file's pages instead of copying it.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "safetensors.h"
#include "tensor_file.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// ---- a tiny safetensors writer ----------------------------------------------------------------

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// The file as the format lays it out: length, header text, data.
std::string raw_file(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

struct Spec {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

// Tensors stored back to back in the given order. `data_offset_mod8` pads the header with spaces
// so that the data section starts at that remainder modulo 8 (0 is what real writers produce).
std::string safetensors_file(const std::vector<Spec>& specs,
                             const ordered_json& metadata = ordered_json(),
                             int data_offset_mod8 = 0) {
  ordered_json header = ordered_json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::string data;
  for (const auto& s : specs) {
    header[s.name] = {{"dtype", s.dtype},
                      {"shape", s.shape},
                      {"data_offsets", {data.size(), data.size() + s.bytes.size()}}};
    data += s.bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != static_cast<std::size_t>(data_offset_mod8)) text += ' ';
  return raw_file(text, data);
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A deterministic byte pattern; BOOL data may only hold 0 and 1.
std::string pattern(std::size_t n, bool boolean = false) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>(boolean ? (i * 7 + 3) % 3 % 2 : (i * 37 + 11) % 256);
  return s;
}

std::string raw_bytes(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

// ---- /proc/self: where a pointer lives, and how much anonymous memory the process holds --------

// The file mapped at `p`, or "" when `p` lies in no file mapping.
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    const auto dash = range.find('-');
    const auto lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const auto hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return path;
  }
  return "";
}

bool file_is_mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.size() >= path.size() &&
        line.compare(line.size() - path.size(), path.size(), path) == 0)
      return true;
  return false;
}

// Reads one byte of every page of a tensor's data; returns the number of pages read.
long touch_every_page(const torch::Tensor& t) {
  const auto* bytes = static_cast<const volatile unsigned char*>(t.data_ptr());
  const std::size_t size = t.numel() * t.element_size();
  long pages = 0;
  unsigned sink = 0;
  for (std::size_t off = 0; off < size; off += 4096, ++pages) sink += bytes[off];
  (void)sink;
  return pages;
}

long rss_anon_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "RssAnon:") {
      long kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 16, '\n');
  }
  return -1;
}

// ---- fixture: one temporary directory per test, removed whether the test passed or not ---------

class TensorFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddpdesk-tensor-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl).string();
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  // The message load_tensor_file gives for a file holding `bytes`, "" when it loads.
  std::string error_for(const std::string& bytes) const {
    return error_at(write("bad.safetensors", bytes));
  }

  static std::string error_at(const std::string& p) {
    try {
      ddpdesk::load_tensor_file(p);
    } catch (const ddpdesk::TensorFileError& e) {
      return e.what();
    }
    return "";
  }

  // Makes the files Python writes (see kTorchSaveFiles below) on first use, in a folder removed
  // after the last test; a fatal failure when Python could not write them.
  static void python_files();
  static std::string python_file(const std::string& name) { return python_dir_ + "/" + name; }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!python_dir_.empty()) fs::remove_all(python_dir_, ec);
    python_dir_.clear();
  }

  std::string dir_;
  static std::string python_dir_;
};

std::string TensorFile::python_dir_;

#define EXPECT_ERROR(bytes, substring)                                                    \
  do {                                                                                    \
    const std::string msg_ = error_for(bytes);                                            \
    EXPECT_NE(msg_.find(substring), std::string::npos)                                    \
        << "message: \"" << msg_ << "\"\nexpected to contain: \"" << (substring) << "\""; \
    EXPECT_EQ(msg_.find('\n'), std::string::npos) << msg_;                                \
  } while (0)

// ---- safetensors: values ---------------------------------------------------------------------

TEST_F(TensorFile, EveryDtypeRoundTripsBitExactly) {
  struct Case {
    const char* dtype;
    torch::ScalarType type;
    std::size_t size;
  };
  const std::vector<Case> cases = {
      {"BOOL", torch::kBool, 1},  {"U8", torch::kByte, 1},       {"I8", torch::kChar, 1},
      {"I16", torch::kShort, 2},  {"I32", torch::kInt, 4},       {"I64", torch::kLong, 8},
      {"F16", torch::kHalf, 2},   {"BF16", torch::kBFloat16, 2}, {"F32", torch::kFloat, 4},
      {"F64", torch::kDouble, 8},
  };
  std::vector<Spec> specs;
  for (const auto& c : cases) {
    EXPECT_EQ(ddpdesk::safetensors_element_size(c.dtype), c.size) << c.dtype;
    // Data offsets that are multiples of 8, so every tensor is a view of the mapping.
    specs.push_back({std::string("t_") + c.dtype,
                     c.dtype,
                     {3, 8},
                     pattern(24 * c.size, c.type == torch::kBool)});
  }
  const auto tensors = ddpdesk::load_tensor_file(write("all.safetensors", safetensors_file(specs)));
  ASSERT_EQ(tensors.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].dtype);
    const auto& t = tensors.at(specs[i].name);
    EXPECT_EQ(t.scalar_type(), cases[i].type);
    EXPECT_EQ(t.sizes(), torch::IntArrayRef({3, 8}));
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(raw_bytes(t), specs[i].bytes);  // raw bits, so F16/BF16 need no float compare
  }
}

TEST_F(TensorFile, KnownValues) {
  const std::vector<float> f = {0.5f, -1.25f, 3.0f, 1e-3f, -0.0f, 65504.0f};
  const std::vector<std::int64_t> l = {-1, 0, std::int64_t(1) << 40};
  // 1.0 and -2.0 as IEEE half (0x3C00, 0xC000) and as bfloat16 (0x3F80, 0xC000).
  const std::vector<std::uint16_t> h = {0x3C00, 0xC000}, bf = {0x3F80, 0xC000};
  const auto tensors = ddpdesk::load_tensor_file(
      write("v.safetensors", safetensors_file({{"f", "F32", {2, 3}, bytes_of(f)},
                                               {"l", "I64", {3}, bytes_of(l)},
                                               {"h", "F16", {2}, bytes_of(h)},
                                               {"bf", "BF16", {2}, bytes_of(bf)}})));
  EXPECT_TRUE(torch::equal(tensors.at("f"), torch::tensor(f).reshape({2, 3})));
  EXPECT_TRUE(torch::equal(tensors.at("l"), torch::tensor(l)));
  EXPECT_TRUE(torch::equal(tensors.at("h").to(torch::kFloat), torch::tensor({1.0f, -2.0f})));
  EXPECT_TRUE(torch::equal(tensors.at("bf").to(torch::kFloat), torch::tensor({1.0f, -2.0f})));
}

TEST_F(TensorFile, ZeroDimEmptyAndNoTensors) {
  const std::vector<double> d = {2.5};
  const auto tensors = ddpdesk::load_tensor_file(
      write("z.safetensors", safetensors_file({{"scalar", "F64", {}, bytes_of(d)},
                                               {"empty", "F32", {0, 3}, ""},
                                               {"empty_end", "I64", {4, 0}, ""}})));
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors.at("scalar").dim(), 0);
  EXPECT_EQ(tensors.at("scalar").item<double>(), 2.5);
  EXPECT_EQ(tensors.at("empty").sizes(), torch::IntArrayRef({0, 3}));
  EXPECT_EQ(tensors.at("empty").scalar_type(), torch::kFloat);
  EXPECT_EQ(tensors.at("empty_end").sizes(), torch::IntArrayRef({4, 0}));

  // A header with no tensors at all is a valid (empty) file.
  EXPECT_TRUE(ddpdesk::load_tensor_file(write("none.safetensors", raw_file("{}"))).empty());
}

TEST_F(TensorFile, HeaderMetadataAndOrder) {
  const std::string file =
      safetensors_file({{"b", "U8", {4}, "wxyz"}, {"a", "I16", {1}, "pq"}},
                       ordered_json{{"format", "pt"}, {"note", "ddpdesk test"}});
  const auto* p = reinterpret_cast<const unsigned char*>(file.data());
  const auto h = ddpdesk::parse_safetensors(p, file.size());
  EXPECT_EQ(h.data_offset, file.size() - 6);
  EXPECT_EQ(h.data_offset % 8, 0u);
  EXPECT_EQ(h.metadata,
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "ddpdesk test"}}));
  ASSERT_EQ(h.tensors.size(), 2u);  // data order, not name order
  EXPECT_EQ(h.tensors[0].name, "b");
  EXPECT_EQ(h.tensors[0].dtype, "U8");
  EXPECT_EQ(h.tensors[0].shape, std::vector<std::int64_t>{4});
  EXPECT_EQ(h.tensors[0].begin, 0u);
  EXPECT_EQ(h.tensors[0].end, 4u);
  EXPECT_EQ(h.tensors[1].name, "a");
  EXPECT_EQ(h.tensors[1].begin, 4u);
  EXPECT_EQ(h.tensors[1].end, 6u);
  // Metadata is not a tensor.
  EXPECT_EQ(ddpdesk::load_tensor_file(write("m.safetensors", file)).size(), 2u);
}

TEST_F(TensorFile, MisalignedDataIsCopiedWithTheSameValues) {
  const std::vector<float> f = {1.5f, -2.0f, 7.25f};
  const std::vector<double> d = {3.0, -0.125};
  // Data starts at an odd offset, and a 3-byte tensor pushes the rest further out of line.
  const std::string file = safetensors_file(
      {{"u", "U8", {3}, "abc"}, {"f", "F32", {3}, bytes_of(f)}, {"d", "F64", {2}, bytes_of(d)}},
      ordered_json(), 1);
  const auto tensors = ddpdesk::load_tensor_file(write("odd.safetensors", file));
  EXPECT_TRUE(torch::equal(tensors.at("f"), torch::tensor(f)));
  EXPECT_TRUE(torch::equal(tensors.at("d"), torch::tensor(d)));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensors.at("f").data_ptr()) % 4, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensors.at("d").data_ptr()) % 8, 0u);
  EXPECT_EQ(raw_bytes(tensors.at("u")), "abc");
}

// ---- safetensors: errors ---------------------------------------------------------------------

TEST_F(TensorFile, BadOffsets) {
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"),
               "tensor 'a': data_offsets [0, 8) run past the end of the data (4 bytes");
  EXPECT_ERROR(
      raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", std::string(8, 'x')),
      "tensor 'a': data_offsets [8, 0) begin after they end");
  EXPECT_ERROR(raw_file(R"({"inputs":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}})",
                        std::string(24, 'x')),
               "tensor 'inputs': data_offsets [0, 12) hold 12 bytes but F32 [2, 3] needs 24");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        std::string(12, 'x')),
               "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  // A range inside another one also overlaps, even with a tensor between them.
  EXPECT_ERROR(raw_file(R"({"big":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
                        R"("x":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                        std::string(16, 'x')),
               "tensors 'big' [0, 16) and 'x' [2, 4) overlap");
  EXPECT_ERROR(
      raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", std::string(8, 'x')),
      "tensor 'a': data_offsets [0] is not a pair [begin, end]");
  EXPECT_ERROR(
      raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-4,4]}})", std::string(8, 'x')),
      "is not a pair [begin, end] of non-negative integers");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"F32","shape":[2]}})", std::string(8, 'x')),
               "tensor 'a': no \"data_offsets\"");
  // Shapes whose byte count wraps around 2^64 must not pass as small tensors.
  EXPECT_ERROR(
      raw_file(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})"),
      "tensor 'a': F32 [4611686018427387904, 4] needs more than 2^64 bytes");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],)"
                        R"("data_offsets":[0,0]}})"),
               "needs more than 2^64 bytes");
}

TEST_F(TensorFile, Truncated) {
  const std::vector<float> f(64, 1.0f);
  const std::string good = safetensors_file({{"x", "F32", {64}, bytes_of(f)}});
  ASSERT_EQ(error_for(good), "");
  const auto header_len = good.size() - 256 - 8;

  EXPECT_ERROR(good.substr(0, 8 + header_len / 2), "header length " + std::to_string(header_len) +
                                                       " exceeds the file size " +
                                                       std::to_string(8 + header_len / 2));
  EXPECT_ERROR(good.substr(0, good.size() - 4),
               "tensor 'x': data_offsets [0, 256) run past the end of the data (252 bytes");
  EXPECT_ERROR(good.substr(0, 5), "file is 5 bytes, too short");
  EXPECT_ERROR("", "file is empty");
}

TEST_F(TensorFile, HeaderLengthOverTheLimit) {
  EXPECT_ERROR(le64(100'000'001) + std::string(64, ' '),
               "header length 100000001 exceeds the limit of 100000000 bytes");
  EXPECT_ERROR(le64(123456789012ull) + std::string(4088, ' '),
               "header length 123456789012 exceeds the limit");
  // At the limit it is only the file size that fails.
  EXPECT_ERROR(le64(100'000'000) + "{}", "header length 100000000 exceeds the file size 10");
}

TEST_F(TensorFile, HeaderNotJsonOrNotAnObject) {
  EXPECT_ERROR(raw_file("{nope"), "header is not valid JSON: ");
  EXPECT_ERROR(raw_file(""), "header is not valid JSON: ");
  EXPECT_ERROR(raw_file("[1, 2]"), "header is array [1,2], not a JSON object");
  EXPECT_ERROR(raw_file("42"), "header is number 42, not a JSON object");
  EXPECT_ERROR(raw_file(R"({"a": 3})"), "tensor 'a': entry is number 3, not an object");
  EXPECT_ERROR(raw_file(R"({"__metadata__": {"k": 1}})"),
               "__metadata__ 'k' is number 1, not a string");
  EXPECT_ERROR(raw_file(R"({"__metadata__": [1]})"), "__metadata__ is array, not an object");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                        R"("a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})"),
               "header names 'a' twice");
}

TEST_F(TensorFile, UnsupportedDtypes) {
  for (const std::string dtype : {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "C64", "f32"}) {
    SCOPED_TRACE(dtype);
    EXPECT_EQ(ddpdesk::safetensors_element_size(dtype), 0u);
    EXPECT_ERROR(
        raw_file(R"({"weights":{"dtype":")" + dtype + R"(","shape":[1],"data_offsets":[0,8]}})",
                 std::string(8, 'x')),
        "tensor 'weights': dtype " + dtype + " is not supported");
  }
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", "xxxx"),
               "tensor 'a': dtype 4 is not a string");
  EXPECT_ERROR(raw_file(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "xxxx"),
               "tensor 'a': no \"dtype\"");
}

TEST_F(TensorFile, BadShapes) {
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}})"),
               "tensor 'a': shape [2,-1] has a negative dimension");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,10]}})",
                        std::string(10, 'x')),
               "tensor 'a': shape [2.5] has a dimension 2.5 that is not an integer");
  EXPECT_ERROR(
      raw_file(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", std::string(8, 'x')),
      "that is not an integer");
  EXPECT_ERROR(
      raw_file(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", std::string(8, 'x')),
      "tensor 'a': shape 2 is not an array");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", std::string(8, 'x')),
               "tensor 'a': no \"shape\"");
  EXPECT_ERROR(raw_file(R"({"a":{"dtype":"U8","shape":[9223372036854775808],)"
                        R"("data_offsets":[0,0]}})"),
               "has a dimension too large");
}

TEST_F(TensorFile, BoolBytesMustBeZeroOrOne) {
  EXPECT_ERROR(safetensors_file({{"mask", "BOOL", {4}, std::string("\x01\x00\x02\x01", 4)}}),
               "tensor 'mask': BOOL element 2 is byte 2, not 0 or 1");
}

TEST_F(TensorFile, FileSystemErrors) {
  EXPECT_EQ(error_at(path("missing.safetensors")), "no such file");
  EXPECT_EQ(error_at(dir_), "is a directory");
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_at(fifo), "is not a regular file");
  if (::geteuid() != 0) {  // root reads anything
    const std::string locked = write("locked.safetensors", raw_file("{}"));
    ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
    EXPECT_EQ(error_at(locked), "permission denied");
  }
}

// ---- memory mapping --------------------------------------------------------------------------

TEST_F(TensorFile, LoadsShareTheFileMappingInsteadOfCopying) {
  // 64 MiB of F32, written in pieces so the test itself holds no copy of it.
  const std::int64_t n = 16 << 20;
  const std::string p = path("big.safetensors");
  {
    ordered_json h = {{"x", {{"dtype", "F32"}, {"shape", {n}}, {"data_offsets", {0, n * 4}}}}};
    std::string text = h.dump();
    while ((8 + text.size()) % 8) text += ' ';
    std::ofstream out(p, std::ios::binary);
    out << le64(text.size()) << text;
    std::vector<float> chunk(1 << 16);
    for (std::int64_t i = 0; i < n; i += static_cast<std::int64_t>(chunk.size())) {
      for (std::size_t j = 0; j < chunk.size(); ++j) chunk[j] = static_cast<float>((i + j) % 7);
      out.write(reinterpret_cast<const char*>(chunk.data()), chunk.size() * sizeof(float));
    }
  }
  const double expected = 3.0 * n - 3.0 * (n % 7) + (n % 7) * (n % 7 - 1) / 2.0;

  const long anon_before = rss_anon_kib();
  ASSERT_GT(anon_before, 0) << "no RssAnon in /proc/self/status";
  torch::Tensor a = ddpdesk::load_tensor_file(p).at("x");
  torch::Tensor b = ddpdesk::load_tensor_file(p).at("x");
  // Touch every page of both, as training would, without allocating: a reduction to double
  // would allocate a 128 MiB temporary, and under AddressSanitizer freed memory stays resident
  // in its quarantine and would count as anonymous memory the loader never used.
  const long anon_touched = touch_every_page(a) + touch_every_page(b);
  const long grown_kib = rss_anon_kib() - anon_before;
  EXPECT_GT(anon_touched, 0);
  EXPECT_EQ(a.sum(torch::kDouble).item<double>(), expected);
  EXPECT_EQ(b.sum(torch::kDouble).item<double>(), expected);

  // Each tensor's data lies in a mapping of the file itself...
  EXPECT_EQ(mapping_of(a.data_ptr()), p);
  EXPECT_EQ(mapping_of(b.data_ptr()), p);
  EXPECT_FALSE(a.storage().resizable());
  // ...and two loads of 64 MiB added far less than one copy to the anonymous memory. The bound
  // is half a copy: under AddressSanitizer, touching the two mappings writes their shadow (an
  // eighth of 128 MiB, 16 MiB of anonymous memory), while a load that copied adds 64 MiB.
  EXPECT_LT(grown_kib, 32 * 1024) << "RssAnon grew by " << grown_kib << " KiB";

  // The mapping lives as long as any tensor on it, and goes with the last one.
  b = torch::Tensor();
  EXPECT_TRUE(file_is_mapped(p));
  EXPECT_EQ(a[n - 1].item<float>(), static_cast<float>((n - 1) % 7));
  a = torch::Tensor();
  EXPECT_FALSE(file_is_mapped(p));
}

// ---- torch.save (zip) and Python-written safetensors -----------------------------------------

// The files the tests below read, written by Debian's python3-torch. One Python process writes
// them all, once per test program, into a folder of its own: importing torch costs about two
// seconds of CPU, and these tests only read what it wrote.
// TorchSaveZipValuesAndDtypes's files.
const char* const kTorchSaveFiles = R"(
import sys, torch
d = sys.argv[1]
torch.save({
    'f32': torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5,
    'f64': torch.tensor([1.0 / 3.0, -2.0], dtype=torch.float64),
    'f16': torch.tensor([1.5, -2.25, 65504.0], dtype=torch.float16),
    'bf16': torch.tensor([1.5, -2.25, 3.0e38], dtype=torch.bfloat16),
    'i64': torch.tensor([-1, 0, 1 << 40]),
    'i32': torch.tensor([-7, 7], dtype=torch.int32),
    'i16': torch.tensor([-300, 300], dtype=torch.int16),
    'i8': torch.tensor([-128, 127], dtype=torch.int8),
    'u8': torch.tensor([0, 255], dtype=torch.uint8),
    'bool': torch.tensor([True, False, True]),
    'scalar': torch.tensor(2.5),
    'empty': torch.zeros(0, 3),
    'transposed': torch.arange(6, dtype=torch.float32).reshape(2, 3).t(),
}, d + '/data.pt')
# One entry: Python pickles it with SETITEM, which LibTorch 1.13's unpickler lacks.
torch.save({'only': torch.arange(5)}, d + '/one.pt')
)";

// TorchSaveThatIsNotADictOfTensors's files.
const char* const kNotADictFiles = R"(
import sys, torch
d = sys.argv[1]
torch.save([torch.zeros(2), torch.ones(2)], d + '/list.pt')
torch.save(torch.zeros(2), d + '/tensor.pt')
torch.save({1: torch.zeros(2)}, d + '/intkey.pt')
torch.save({'a': torch.zeros(2), 'n': 3}, d + '/int.pt')
torch.save({'n': 3}, d + '/one_int.pt')
torch.save({'a': torch.zeros(2), 'b': torch.ones(2)}, d + '/p4.pt', pickle_protocol=4)
import collections
torch.save(collections.OrderedDict(a=torch.zeros(2), b=torch.ones(2)), d + '/ordered.pt')
torch.save({'x': torch.zeros(2)}, d + '/legacy.pt', _use_new_zipfile_serialization=False)
)";

// SafetensorsWrittenByPython's files, laid out the way the safetensors package does it:
// header padded with spaces to 8 bytes, data back to back in the order of the header.
const char* const kPythonSafetensors = R"(
import json, struct, sys, torch
d = sys.argv[1]
tensors = {'inputs': torch.linspace(-1, 1, 12).reshape(3, 4),
           'targets': torch.tensor([3, 1, 4], dtype=torch.int64),
           'half': torch.tensor([0.1, 0.2], dtype=torch.float16)}
names = {torch.float32: 'F32', torch.int64: 'I64', torch.float16: 'F16'}
header, data = {'__metadata__': {'format': 'pt'}}, b''
for k, t in tensors.items():
    raw = bytes(t.contiguous().view(torch.uint8).flatten().tolist())
    header[k] = {'dtype': names[t.dtype], 'shape': list(t.shape),
                 'data_offsets': [len(data), len(data) + len(raw)]}
    data += raw
text = json.dumps(header).encode()
text += b' ' * (-(8 + len(text)) % 8)
open(d + '/py.safetensors', 'wb').write(struct.pack('<Q', len(text)) + text + data)
torch.save(tensors, d + '/py.pt')
)";

void TensorFile::python_files() {
  static std::string error;
  if (python_dir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddpdesk-tensor-python-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      error = "cannot create " + tmpl;
    } else {
      python_dir_ = fs::canonical(tmpl).string();
      const std::string file = python_dir_ + "/make.py";
      std::ofstream(file) << kTorchSaveFiles << kNotADictFiles << kPythonSafetensors;
      const std::string cmd = "/usr/bin/python3 " + file + " " + python_dir_;
      if (std::system(cmd.c_str()) != 0)
        error = "failed: " + cmd + " (does /usr/bin/python3 import torch? " +
                "scripts/install-deps.sh installs python3-torch)";
    }
  }
  if (!error.empty()) FAIL() << error;
}

TEST_F(TensorFile, TorchSaveZipValuesAndDtypes) {
  ASSERT_NO_FATAL_FAILURE(python_files());
  const auto t = ddpdesk::load_tensor_file(python_file("data.pt"));
  ASSERT_EQ(t.size(), 13u);
  const auto same = [&](const std::string& name, const torch::Tensor& want) {
    SCOPED_TRACE(name);
    const auto& got = t.at(name);
    EXPECT_EQ(got.scalar_type(), want.scalar_type());
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::equal(got, want)) << got << "\n" << want;
  };
  same("f32", torch::arange(6, torch::kFloat).reshape({2, 3}) * 0.5);
  same("f64", torch::tensor({1.0 / 3.0, -2.0}, torch::kDouble));
  same("f16", torch::tensor({1.5, -2.25, 65504.0}).to(torch::kHalf));
  same("bf16", torch::tensor({1.5, -2.25, 3.0e38}).to(torch::kBFloat16));
  same("i64", torch::tensor({std::int64_t(-1), std::int64_t(0), std::int64_t(1) << 40}));
  same("i32", torch::tensor({-7, 7}, torch::kInt));
  same("i16", torch::tensor({-300, 300}).to(torch::kShort));
  same("i8", torch::tensor({-128, 127}).to(torch::kChar));
  same("u8", torch::tensor({0, 255}).to(torch::kByte));
  same("bool", torch::tensor({true, false, true}));
  same("scalar", torch::tensor(2.5f));
  same("empty", torch::zeros({0, 3}));
  same("transposed", torch::arange(6, torch::kFloat).reshape({2, 3}).t());

  const auto one = ddpdesk::load_tensor_file(python_file("one.pt"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(torch::equal(one.at("only"), torch::arange(5)));
}

TEST_F(TensorFile, TorchSaveThatIsNotADictOfTensors) {
  ASSERT_NO_FATAL_FAILURE(python_files());
  const auto expect = [&](const std::string& file, const std::string& substring) {
    const std::string msg = error_at(python_file(file));
    EXPECT_NE(msg.find(substring), std::string::npos) << file << ": \"" << msg << "\"";
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  };
  expect("list.pt", "the torch.save file holds a list, not a dict of str -> Tensor");
  expect("tensor.pt", "the torch.save file holds a single tensor, not a dict");
  expect("intkey.pt", "has a key that is an int, not a str");
  expect("int.pt", "entry 'n' is an int, not a tensor");
  expect("one_int.pt", "entry 'n' is an int, not a tensor");
  expect("p4.pt", "the archive was pickled with protocol 4; LibTorch reads only protocol 2");
  expect("ordered.pt", "holds a collections.OrderedDict; save a plain dict");
  expect("legacy.pt", "legacy torch.save file");
  expect("legacy.pt", "_use_new_zipfile_serialization=True");
}

TEST_F(TensorFile, CorruptZipIsOneLine) {
  const std::string msg = error_for(std::string("PK\x03\x04", 4) + std::string(100, '\x07'));
  EXPECT_NE(msg.find("cannot read the torch.save archive: "), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST_F(TensorFile, SafetensorsWrittenByPython) {
  ASSERT_NO_FATAL_FAILURE(python_files());
  const auto st = ddpdesk::load_tensor_file(python_file("py.safetensors"));
  const auto pt = ddpdesk::load_tensor_file(python_file("py.pt"));
  ASSERT_EQ(st.size(), 3u);
  ASSERT_EQ(pt.size(), 3u);
  for (const auto& [name, t] : pt) {
    SCOPED_TRACE(name);
    EXPECT_EQ(st.at(name).scalar_type(), t.scalar_type());
    EXPECT_TRUE(torch::equal(st.at(name), t));
  }
  EXPECT_TRUE(torch::equal(st.at("targets"), torch::tensor({3, 1, 4}, torch::kLong)));
}

}  // namespace
