// LineBuffer: lines cut anywhere by read boundaries come out whole; many lines per chunk; the
// length limit rejects (wire) or splits (logs).
#include <QtTest>
#include <string>
#include <vector>

#include "metrics/line_buffer.h"
#include "qt_test_main.h"

using ddpdesk::LineBuffer;

class TestLineBuffer : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void manyLinesInOneChunk() {
    LineBuffer b(100);
    std::vector<std::string> got;
    const std::string data = "a\nbb\n\nccc\n";
    QVERIFY(b.feed(data.data(), data.size(), [&](std::string_view l) { got.emplace_back(l); }));
    QCOMPARE(got, (std::vector<std::string>{"a", "bb", "", "ccc"}));
    QVERIFY(b.pending().empty());
  }

  void linesCutAtEveryPosition() {
    const std::string data = "first line\nsecond\nthird one here\n";
    for (std::size_t cut1 = 0; cut1 <= data.size(); ++cut1) {
      for (std::size_t cut2 = cut1; cut2 <= data.size(); ++cut2) {
        LineBuffer b(100);
        std::vector<std::string> got;
        auto sink = [&](std::string_view l) { got.emplace_back(l); };
        QVERIFY(b.feed(data.data(), cut1, sink));
        QVERIFY(b.feed(data.data() + cut1, cut2 - cut1, sink));
        QVERIFY(b.feed(data.data() + cut2, data.size() - cut2, sink));
        QCOMPARE(got, (std::vector<std::string>{"first line", "second", "third one here"}));
      }
    }
  }

  void pendingKeepsUnfinishedLine() {
    LineBuffer b(100);
    int n = 0;
    QVERIFY(b.feed("abc\nde", 6, [&](std::string_view) { ++n; }));
    QCOMPARE(n, 1);
    QCOMPARE(std::string(b.pending()), std::string("de"));
  }

  void rejectsOverlongLine() {
    LineBuffer b(10);
    int n = 0;
    const std::string ok = "0123456789\n";  // exactly the limit is fine
    QVERIFY(b.feed(ok.data(), ok.size(), [&](std::string_view) { ++n; }));
    QCOMPARE(n, 1);
    const std::string bad = "01234567890\n";
    QVERIFY(!b.feed(bad.data(), bad.size(), [&](std::string_view) { ++n; }));
    // Without a newline in sight the limit applies to what is buffered.
    LineBuffer c(10);
    QVERIFY(c.feed("01234", 5, [&](std::string_view) {}));
    QVERIFY(!c.feed("567890", 6, [&](std::string_view) {}));
  }

  void splitsOverlongLineForLogs() {
    LineBuffer b(4, LineBuffer::Overflow::Split);
    std::vector<std::string> got;
    const std::string data = "abcdefghij\nxy\n";
    QVERIFY(b.feed(data.data(), data.size(), [&](std::string_view l) { got.emplace_back(l); }));
    QCOMPARE(got, (std::vector<std::string>{"abcd", "efgh", "ij", "xy"}));
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestLineBuffer)
#include "test_line_buffer.moc"
