// script_version.h: LibTorch's refusal of a TorchScript file from a newer PyTorch (a format
// version, or an op, it does not know), found in its message and said in one line with both
// versions (or the op) and the remedy. The real refusal, from the
// worker's own LibTorch, is test_user_task's ModelFromANewerPyTorchIsOneLineNamingBothVersions.
#include <gtest/gtest.h>

#include "script_version.h"

namespace ddpdesk {
namespace {

// c10::Error::what() of LibTorch 1.13 for an archive recording version 99 (inline_container.cc),
// its backtrace cut short.
const char* const kLibTorch113 =
    "[enforce fail at inline_container.cc:165] . Attempted to read a PyTorch file with version "
    "99, but the maximum supported version for reading is 10. The version of your PyTorch "
    "installation may be too old, please upgrade PyTorch to latest version to mitigate this "
    "issue.\nException raised from init at ../caffe2/serialize/inline_container.cc:165";

TEST(ScriptVersion, FindsBothVersionsInLibTorchsRefusal) {
  const auto v = newer_file_format(kLibTorch113);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->file, 99u);
  EXPECT_EQ(v->supported, 10u);
  // Without the "[enforce fail ...]" prefix (c10::Error's what_without_backtrace) too.
  const auto bare = newer_file_format(
      "Attempted to read a PyTorch file with version 11, but the maximum supported version for "
      "reading is 10. The version of your PyTorch installation may be too old");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->file, 11u);
  EXPECT_EQ(bare->supported, 10u);
}

TEST(ScriptVersion, OtherLoadFailuresAreNotANewerPyTorch) {
  for (const char* other : {
           // An archive too old: the minimum, not the maximum.
           "Attempted to read a PyTorch file with version 0, but the minimum supported version "
           "for reading is 1. Your PyTorch script module file is too old.",
           "PytorchStreamReader failed reading zip archive: failed finding central directory",
           "PytorchStreamReader failed locating file constants.pkl: file not found",
           "",
           // Numbers that are not the refusal's: missing, not above the maximum, absurd.
           "Attempted to read a PyTorch file with version , but the maximum supported version "
           "for reading is 10.",
           "Attempted to read a PyTorch file with version 10, but the maximum supported version "
           "for reading is 10.",
           "Attempted to read a PyTorch file with version 99999999999999999999999, but the "
           "maximum supported version for reading is 10.",
       }) {
    SCOPED_TRACE(other);
    EXPECT_FALSE(newer_file_format(other).has_value());
  }
}

TEST(ScriptVersion, MessageNamesBothVersionsAndTheRemedyOnOneLine) {
  const std::string m = newer_pytorch_message({99, 10}, "1.13.0");
  EXPECT_EQ(m,
            "saved by a newer PyTorch (file format version 99) than this worker's LibTorch "
            "1.13.0 reads (format versions up to 10): build ddpdesk against the PyTorch that "
            "saved it (docs/user-task.md, \"Which PyTorch\"), or save the model with PyTorch "
            "1.13");
  EXPECT_EQ(m.find('\n'), std::string::npos);
  // The PyTorch to save with is the worker's major.minor, whatever LibTorch it was built on.
  const std::string two = newer_pytorch_message({12, 11}, "2.3.1");
  EXPECT_NE(two.find("LibTorch 2.3.1 reads (format versions up to 11)"), std::string::npos);
  const std::string tail = ", or save the model with PyTorch 2.3";
  ASSERT_GT(two.size(), tail.size());
  EXPECT_EQ(two.substr(two.size() - tail.size()), tail) << two;
}

// LibTorch 1.13's message for a call to an op it lacks: its first line is empty.
TEST(ScriptVersion, FindsTheOperatorLibTorchLacks) {
  EXPECT_EQ(unknown_operator("\nUnknown builtin op: aten::scaled_dot_product_attention.\nCould "
                             "not find any similar ops to aten::scaled_dot_product_attention."),
            "aten::scaled_dot_product_attention");
  EXPECT_EQ(unknown_operator("Unknown builtin op: my_ops::warp."), "my_ops::warp");
  EXPECT_FALSE(unknown_operator("Unknown builtin op: .\n").has_value());
  EXPECT_FALSE(unknown_operator(kLibTorch113).has_value());
  EXPECT_FALSE(newer_file_format("\nUnknown builtin op: aten::x.\n").has_value());
  EXPECT_EQ(unknown_operator_message("aten::newer", "1.13.0"),
            "it calls aten::newer, which this worker's LibTorch 1.13.0 does not have (an op of a "
            "newer PyTorch, or a custom one): build ddpdesk against the PyTorch that saved it "
            "(docs/user-task.md, \"Which PyTorch\"), or save the model with PyTorch 1.13");
}

}  // namespace
}  // namespace ddpdesk
