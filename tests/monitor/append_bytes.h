// Test helper: appends (or, with mode "w", rewrites) raw bytes to a file, flushed and closed at
// once, so a file can be written in pieces between a reader's polls.
#pragma once

#include <QString>
#include <QTest>
#include <cstdio>
#include <string>

namespace ddpdesk::test {

inline void appendBytes(const QString& path, const std::string& bytes, const char* mode = "a") {
  std::FILE* f = std::fopen(path.toLocal8Bit().constData(), mode);
  QVERIFY(f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

}  // namespace ddpdesk::test
