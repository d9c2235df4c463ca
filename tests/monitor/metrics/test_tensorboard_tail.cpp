// Following TensorBoard event files while they are written (TensorBoardTail): each poll gives
// exactly the scalars appended since the last one; a record cut in half waits whole for the
// next poll; files that appear later are found; a corrupt record ends its file with one
// problem, said once, while other files go on; files last written before the tail began, hidden
// folders and folders deeper than the limit are left alone; a big file comes over several
// polls, a record longer than a poll's share whole. Records come from ddpdesk's encoder.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <numeric>

#include "event.h"
#include "metrics/tensorboard_tail.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

std::string scalarRecord(std::int64_t step, const std::string& tag, float value) {
  std::string out;
  tb::append_scalar_record(out, 1.7e9 + double(step), step, tag, value);
  return out;
}

void append(const QString& path, const std::string& bytes) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Append));
  QCOMPARE(f.write(bytes.data(), qint64(bytes.size())), qint64(bytes.size()));
}

std::vector<std::int64_t> steps(const std::vector<TailedScalar>& points) {
  std::vector<std::int64_t> out;
  for (const TailedScalar& p : points) out.push_back(p.step);
  return out;
}

}  // namespace

class TestTensorBoardTail : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void appendedRecordsOnceEachAndHalfRecordsWait() {
    QTemporaryDir root;
    const QString file = root.filePath("runs/exp/events.out.tfevents.1.host");
    TensorBoardTail tail({root.path()});
    QVERIFY(tail.poll().empty());  // nothing written yet
    QCOMPARE(tail.files(), 0);

    append(file, scalarRecord(1, "train/loss", 0.5f) + scalarRecord(2, "train/loss", 0.25f));
    auto got = tail.poll();
    QCOMPARE(steps(got), (std::vector<std::int64_t>{1, 2}));
    QCOMPARE(got[1].tag, std::string("train/loss"));
    QCOMPARE(got[1].value, 0.25);
    QCOMPARE(got[1].wallTime, 1.7e9 + 2);
    QCOMPARE(got[1].file, QFileInfo(file).absoluteFilePath());
    QVERIFY(tail.poll().empty());  // read once

    // A record the writer is still writing: nothing of it until it is whole.
    const std::string third = scalarRecord(3, "train/loss", 0.125f);
    append(file, third.substr(0, 7));
    QVERIFY(tail.poll().empty());
    append(file, third.substr(7, 10));
    QVERIFY(tail.poll().empty());
    append(file, third.substr(17) + scalarRecord(4, "train/lr", 1e-3f));
    got = tail.poll();
    QCOMPARE(steps(got), (std::vector<std::int64_t>{3, 4}));
    QCOMPARE(got[0].value, 0.125);
    QCOMPARE(got[1].value, double(1e-3f));
    QVERIFY(tail.problems().isEmpty());
  }

  void laterFilesFoundAndCorruptFilesEndAlone() {
    QTemporaryDir root;
    TensorBoardTail tail({root.path()});
    const QString good = root.filePath("a/events.out.tfevents.1.h");
    const QString bad = root.filePath("b/events.out.tfevents.2.h");
    append(good, scalarRecord(1, "loss", 1.0f));
    QCOMPARE(steps(tail.poll()), (std::vector<std::int64_t>{1}));

    std::string corrupt = scalarRecord(7, "loss", 7.0f);
    corrupt[corrupt.size() - 6] ^= 0x55;  // in the data: its CRC no longer matches
    append(bad, scalarRecord(6, "loss", 6.0f) + corrupt + scalarRecord(8, "loss", 8.0f));
    append(good, scalarRecord(2, "loss", 2.0f));
    auto got = tail.poll();
    // The later file's points before the corrupt record, and the first file's new one.
    std::vector<std::int64_t> s = steps(got);
    std::sort(s.begin(), s.end());
    QCOMPARE(s, (std::vector<std::int64_t>{2, 6}));
    QCOMPARE(tail.files(), 2);
    QCOMPARE(tail.problems().size(), 1);
    QVERIFY2(tail.problems().front().startsWith(QFileInfo(bad).absoluteFilePath() + ": "),
             qPrintable(tail.problems().front()));

    append(bad, scalarRecord(9, "loss", 9.0f));
    append(good, scalarRecord(3, "loss", 3.0f));
    QCOMPARE(steps(tail.poll()), (std::vector<std::int64_t>{3}));  // the corrupt file stays ended
    QCOMPARE(tail.problems().size(), 1);                           // and is said once
  }

  void earlierRunsHiddenAndDeepFoldersLeftAlone() {
    QTemporaryDir root;
    const QString old = root.filePath("runs/old/events.out.tfevents.1.h");
    append(old, scalarRecord(1, "loss", 99.0f));
    QFile oldFile(old);
    QVERIFY(oldFile.open(QIODevice::ReadWrite));
    QVERIFY(oldFile.setFileTime(QDateTime::currentDateTime().addSecs(-3600),
                                QFileDevice::FileModificationTime));
    oldFile.close();
    append(root.filePath(".cache/events.out.tfevents.2.h"), scalarRecord(2, "loss", 2.0f));
    append(root.filePath("1/2/3/events.out.tfevents.3.h"), scalarRecord(3, "loss", 3.0f));
    append(root.filePath("1/2/3/4/events.out.tfevents.4.h"), scalarRecord(4, "loss", 4.0f));
    append(root.filePath("notes.txt"), "not an event file");

    TensorBoardTail tail({root.path()}, QDateTime::currentDateTime().addSecs(-60), 3);
    QCOMPARE(steps(tail.poll()), (std::vector<std::int64_t>{3}));
    QCOMPARE(tail.files(), 1);
    QVERIFY(tail.problems().isEmpty());
    // The old run's file gains a point: it is being written now, so it is this run's.
    append(old, scalarRecord(5, "loss", 5.0f));
    QCOMPARE(steps(tail.poll()), (std::vector<std::int64_t>{1, 5}));
  }

  // A poll reads a bounded share of a file (here 100 bytes), beyond one record longer than
  // that: everything still arrives, once, in order, over the polls that follow.
  void bigFilesComeOverSeveralPolls() {
    QTemporaryDir root;
    const QString file = root.filePath("events.out.tfevents.1.h");
    std::string bytes;
    for (int i = 1; i <= 20; ++i) bytes += scalarRecord(i, "loss", float(i));
    const std::string longTag(300, 'x');  // a record three times the share
    bytes += scalarRecord(21, longTag, 21.0f);
    append(file, bytes);
    TensorBoardTail tail({root.path()}, QDateTime(), 4, 100);
    std::vector<std::int64_t> all;
    int polls = 0;
    for (; polls < 100 && all.size() < 21; ++polls)
      for (const TailedScalar& p : tail.poll()) all.push_back(p.step);
    QVERIFY2(polls > 3, "the file came in one read");
    std::vector<std::int64_t> expected(21);
    std::iota(expected.begin(), expected.end(), 1);
    QCOMPARE(all, expected);
    QVERIFY(tail.poll().empty());
    QVERIFY(tail.problems().isEmpty());
  }

  void missingRootsAreNoProblem() {
    TensorBoardTail tail({QStringLiteral("/nonexistent-ddpdesk-logdir"), QString()});
    QVERIFY(tail.poll().empty());
    QVERIFY(tail.problems().isEmpty());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTensorBoardTail)
#include "test_tensorboard_tail.moc"
