// Two independent encoders must agree: event files written at test time by a few lines of
// Python (tests/tensorboard/py/tb_events.py: struct and a CRC-32C of its own) in the layout
// PyTorch's SummaryWriter uses — float and double tensors of the scalars plugin, tensor_content,
// simple_value, a half-written last record — decode to the values the script put in, and the
// script's simple_value file equals, byte for byte, what ddpdesk's encoder makes of the same
// points.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <map>

#include "event.h"
#include "event_file.h"
#include "qt_test_main.h"
#include "tfrecord.h"

using namespace ddpdesk::tb;

namespace {

constexpr double kWall0 = 1700000000.0;
constexpr int kPoints = 50;

// The script's values (see its docstring).
double loss(int i) {
  return 1.0 / (i + 1);
}
double lr(int i) {
  return 0.001 * std::pow(0.99, i);
}

}  // namespace

class TestTbPython : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QString python() const {
    // Debian's interpreter: a python3 earlier on PATH (pyenv, a venv) is not needed here.
    return QFile::exists("/usr/bin/python3") ? QStringLiteral("/usr/bin/python3")
                                             : QStandardPaths::findExecutable("python3");
  }

 private Q_SLOTS:
  void initTestCase() {
    if (python().isEmpty()) QSKIP("no python3");
    QProcess p;
    p.start(python(), {QStringLiteral(DDPDESK_TB_PY), dir_.path()});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
             p.readAllStandardError().constData());
  }

  void decodesThePyTorchLayout() {
    const QString path =
        dir_.filePath(QStringLiteral("pytorch/events.out.tfevents.1700000000.pyhost.4242.0"));
    const EventFile f = read_event_file(path.toStdString());
    QVERIFY2(f.ok(), f.error.c_str());
    QVERIFY(f.truncated);  // the half record at the end
    QCOMPARE(QString::fromStdString(f.file_version), QStringLiteral("brain.Event:2"));
    QCOMPARE(f.records, std::int64_t(1 + 4 * kPoints));
    std::map<std::string, std::vector<ScalarPoint>> byTag;
    for (const ScalarPoint& p : f.scalars) byTag[p.tag].push_back(p);
    QCOMPARE(int(byTag.size()), 4);
    for (const auto& [tag, points] : byTag) {
      QCOMPARE(int(points.size()), kPoints);
      for (int i = 0; i < kPoints; ++i) {
        const ScalarPoint& p = points[std::size_t(i)];
        QCOMPARE(p.step, std::int64_t(10 * i));
        QCOMPARE(p.wall_time, kWall0 + 0.5 * i);
        double want = 0;
        if (tag == "train/loss")
          want = float(loss(i));  // float_val: float32
        else if (tag == "train/lr")
          want = lr(i);  // double_val: every bit
        else if (tag == "train/acc")
          want = float(i / 50.0);  // tensor_content: float32
        else if (tag == "old/simple")
          want = float(0.25 * i);
        else
          QFAIL(tag.c_str());
        QCOMPARE(p.value, want);
      }
    }
  }

  void bothEncodersWriteTheSameBytes() {
    QFile py(dir_.filePath(QStringLiteral("simple/events.out.tfevents.1700000000.pyhost")));
    QVERIFY(py.open(QIODevice::ReadOnly));
    const QByteArray theirs = py.readAll();
    std::string ours;
    append_record(ours, encode_file_version_event(kWall0));
    for (int i = 0; i < kPoints; ++i)
      append_record(ours, encode_scalar_event(kWall0 + 0.5 * i, 10 * i, "loss", float(loss(i))));
    QCOMPARE(theirs.size(), qsizetype(ours.size()));
    QVERIFY(theirs == QByteArray::fromStdString(ours));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTbPython)
#include "test_tb_python.moc"
