// MetricsTail: a metrics file written in pieces by the test, polled between the pieces. Every
// complete line comes out exactly once, whatever the pieces (a partial last line, a file that
// appears late, one replaced by rename, truncated, rewritten in place, reopened for append, a
// poll stopped by its byte limit).
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>
#include <string>
#include <vector>

#include "append_bytes.h"
#include "follow/metrics_tail.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using ddpdesk::test::appendBytes;

namespace {

struct Reader {
  MetricsTail tail;
  std::vector<std::string> lines;
  MetricsTail::Poll last;
  explicit Reader(const QString& path, qint64 limit = 8 << 20) : tail(path, limit) {}
  std::vector<std::string> poll() {
    std::vector<std::string> got;
    last = tail.poll([&](std::string_view l) { got.emplace_back(l); });
    lines.insert(lines.end(), got.begin(), got.end());
    return got;
  }
};

using Lines = std::vector<std::string>;

}  // namespace

class TestMetricsTail : public QObject {
  Q_OBJECT
  QTemporaryDir dir;
  QString path() const { return dir.filePath("rank-0.jsonl"); }

 private Q_SLOTS:
  void init() { QFile::remove(path()); }

  void aPartialLineWaitsForItsEnd() {
    appendBytes(path(), "one\ntw");
    Reader r(path());
    QCOMPARE(r.poll(), Lines({"one"}));
    QCOMPARE(r.poll(), Lines());
    appendBytes(path(), "o\nthr");
    QCOMPARE(r.poll(), Lines({"two"}));
    appendBytes(path(), "ee\n");
    QCOMPARE(r.poll(), Lines({"three"}));
    QVERIFY(!r.last.restarted);
    QCOMPARE(r.tail.offset(), qint64(14));
  }

  void aFileThatAppearsLateIsReadFromItsStart() {
    Reader r(path());
    QCOMPARE(r.poll(), Lines());
    QVERIFY(!r.last.exists);
    appendBytes(path(), "a\nb\n");
    QCOMPARE(r.poll(), Lines({"a", "b"}));
    QVERIFY(r.last.exists);
    QVERIFY(!r.last.restarted);  // a first sight is not a restart
  }

  void aReplacedFileIsReadAgainWithoutTheOldPartialLine() {
    appendBytes(path(), "old1\nold2\nhalf");
    Reader r(path());
    QCOMPARE(r.poll(), Lines({"old1", "old2"}));
    const QString next = dir.filePath("next.jsonl");
    appendBytes(next, "new1\nnew2\n", "w");
    QVERIFY(std::rename(next.toLocal8Bit().constData(), path().toLocal8Bit().constData()) == 0);
    QCOMPARE(r.poll(), Lines({"new1", "new2"}));  // not "halfnew1"
    QVERIFY(r.last.restarted);
    QCOMPARE(r.last.restartReason, QStringLiteral("replaced"));
    appendBytes(path(), "new3\n");
    QCOMPARE(r.poll(), Lines({"new3"}));
    QVERIFY(!r.last.restarted);
  }

  void aTruncatedFileIsReadAgainFromItsStart() {
    appendBytes(path(), "first line\nsecond line\n");
    Reader r(path());
    QCOMPARE(r.poll().size(), std::size_t(2));
    appendBytes(path(), "x\n", "w");  // same inode, shorter
    QCOMPARE(r.poll(), Lines({"x"}));
    QCOMPARE(r.last.restartReason, QStringLiteral("truncated"));
  }

  void aFileRewrittenInPlaceAndLongerIsReadAgain() {
    appendBytes(path(), "{\"pid\":1}\n");
    Reader r(path());
    QCOMPARE(r.poll(), Lines({"{\"pid\":1}"}));
    // Truncated and rewritten past the old offset between two polls: only its first bytes tell.
    appendBytes(path(), "{\"pid\":2}\nmore\n", "w");
    QCOMPARE(r.poll(), Lines({"{\"pid\":2}", "more"}));
    QCOMPARE(r.last.restartReason, QStringLiteral("rewritten"));
  }

  void aFileReopenedForAppendGoesOnWhereItWas() {
    appendBytes(path(), "hello 1\nstep 1\n");
    Reader r(path());
    QCOMPARE(r.poll().size(), std::size_t(2));
    appendBytes(path(), "hello 2\nstep 2\n");  // a resumed rank appends to its file
    QCOMPARE(r.poll(), Lines({"hello 2", "step 2"}));
    QVERIFY(!r.last.restarted);
  }

  void aVanishedFileIsNotARestartUntilANewOneAppears() {
    appendBytes(path(), "a\n");
    Reader r(path());
    QCOMPARE(r.poll(), Lines({"a"}));
    QFile::remove(path());
    QCOMPARE(r.poll(), Lines());
    QVERIFY(!r.last.exists);
    appendBytes(path(), "b\n");
    QCOMPARE(r.poll(), Lines({"b"}));
    QVERIFY(r.last.restarted);
  }

  void theByteLimitSplitsAReadAcrossPolls() {
    std::string all;
    Lines want;
    for (int i = 0; i < 100; ++i) {
      want.push_back("line " + std::to_string(i));
      all += want.back() + "\n";
    }
    appendBytes(path(), all);
    Reader r(path(), 64);
    int polls = 0;
    do {
      r.poll();
      ++polls;
    } while (r.last.more);
    QCOMPARE(r.lines, want);
    QVERIFY(polls > 10);
  }

  // Many random cuts, polls between them: exactly the lines written, in order.
  void randomPiecesLoseAndRepeatNothing() {
    std::string all;
    Lines want;
    auto* rng = QRandomGenerator::global();
    for (int i = 0; i < 2000; ++i) {
      want.push_back("{\"type\":\"step\",\"step\":" + std::to_string(i) + ",\"pad\":\"" +
                     std::string(rng->bounded(0, 200), 'x') + "\"}");
      all += want.back() + "\n";
    }
    Reader r(path());
    std::size_t at = 0;
    while (at < all.size()) {
      const std::size_t n = std::min<std::size_t>(all.size() - at, rng->bounded(1, 700));
      appendBytes(path(), all.substr(at, n));
      at += n;
      if (rng->bounded(3) != 0) r.poll();
    }
    r.poll();
    QCOMPARE(r.lines.size(), want.size());
    QCOMPARE(r.lines, want);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestMetricsTail)
#include "test_metrics_tail.moc"
