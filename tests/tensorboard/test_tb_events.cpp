// Scalar events the ways writers other than ddpdesk store them (one-element float and double
// tensors, as PyTorch's SummaryWriter writes with new_style=True; tensor_content; unpacked
// lists), what is not a scalar (histograms, text, vectors) left out, and the event file writer
// read back by the reader.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>

#include "event.h"
#include "event_file.h"
#include "event_writer.h"
#include "protobuf.h"
#include "qt_test_main.h"
#include "tfrecord.h"

using namespace ddpdesk::tb;

namespace {

std::string packedFloats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) {
    char b[4];
    std::memcpy(b, &v, 4);
    out.append(b, 4);
  }
  return out;
}

std::string packedDouble(double v) {
  char b[8];
  std::memcpy(b, &v, 8);
  return std::string(b, 8);
}

std::string shape(std::initializer_list<std::int64_t> dims) {
  std::string s;
  for (std::int64_t d : dims) {
    std::string dim;
    pb::put_int64(dim, 1, d);
    pb::put_bytes(s, 2, dim);
  }
  return s;
}

std::string metadata(const std::string& plugin) {
  std::string pd, md;
  pb::put_bytes(pd, 1, plugin);
  pb::put_bytes(md, 1, pd);
  return md;
}

// An Event at step 4 with one Summary.Value {tag, tensor, metadata (when plugin is set)}.
std::string tensorEvent(const std::string& tag, const std::string& tensor,
                        const std::string& plugin = "scalars") {
  std::string value, summary, event;
  pb::put_bytes(value, 1, tag);
  pb::put_bytes(value, 8, tensor);
  if (!plugin.empty()) pb::put_bytes(value, 9, metadata(plugin));
  pb::put_bytes(summary, 1, value);
  pb::put_double(event, 1, 12.5);
  pb::put_int64(event, 2, 4);
  pb::put_bytes(event, 5, summary);
  return event;
}

std::string tensor(int dtype, int field, const std::string& payload,
                   const std::string& tensorShape = {}) {
  std::string t;
  pb::put_int64(t, 1, dtype);
  if (!tensorShape.empty()) pb::put_bytes(t, 2, tensorShape);
  pb::put_bytes(t, field, payload);
  return t;
}

QStringList eventFiles(const QString& dir) {
  return QDir(dir).entryList({QStringLiteral("events.out.tfevents.*")}, QDir::Files, QDir::Name);
}

}  // namespace

class TestTbEvents : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void tensorScalars_data() {
    QTest::addColumn<QByteArray>("event");
    QTest::addColumn<double>("want");
    auto row = [](const char* name, const std::string& t, double want) {
      QTest::newRow(name) << QByteArray::fromStdString(tensorEvent("acc", t)) << want;
    };
    row("float_val packed", tensor(1, 5, packedFloats({0.75f})), 0.75);
    row("double_val packed", tensor(2, 6, packedDouble(0.1)), 0.1);
    row("tensor_content float", tensor(1, 4, packedFloats({-3.5f})), -3.5);
    row("tensor_content double", tensor(2, 4, packedDouble(1e-300)), 1e-300);
    row("shape [1]", tensor(1, 5, packedFloats({2.0f}), shape({1})), 2.0);
    row("shape [1,1]", tensor(2, 6, packedDouble(3.0), shape({1, 1})), 3.0);
    std::string unpacked;  // float_val as one fixed32 field, as some old writers did
    pb::put_int64(unpacked, 1, 1);
    pb::put_float(unpacked, 5, 6.25f);
    row("float_val unpacked", unpacked, 6.25);
  }
  void tensorScalars() {
    QFETCH(QByteArray, event);
    QFETCH(double, want);
    Event e;
    QCOMPARE(QString::fromStdString(decode_event(event.toStdString(), &e)), QString());
    QCOMPARE(e.step, std::int64_t(4));
    QCOMPARE(e.wall_time, 12.5);
    QCOMPARE(int(e.scalars.size()), 1);
    QCOMPARE(QString::fromStdString(e.scalars[0].tag), QStringLiteral("acc"));
    QCOMPARE(e.scalars[0].value, want);
  }

  void notScalars_data() {
    QTest::addColumn<QByteArray>("event");
    auto row = [](const char* name, const std::string& ev) {
      QTest::newRow(name) << QByteArray::fromStdString(ev);
    };
    row("two floats", tensorEvent("v", tensor(1, 5, packedFloats({1, 2}))));
    row("shape [2] with content", tensorEvent("v", tensor(1, 4, packedFloats({1, 2}), shape({2}))));
    row("shape [3], one value", tensorEvent("v", tensor(1, 5, packedFloats({1}), shape({3}))));
    row("int32 tensor", tensorEvent("v", tensor(3, 7, std::string(1, '\x05'))));
    row("string tensor (text plugin)", tensorEvent("v", tensor(7, 8, "hello"), "text"));
    row("float scalar of another plugin",
        tensorEvent("v", tensor(1, 5, packedFloats({1})), "histograms"));
    row("dtype says double, list is float", tensorEvent("v", tensor(2, 5, packedFloats({1}))));
  }
  void notScalars() {
    QFETCH(QByteArray, event);
    Event e;
    QCOMPARE(QString::fromStdString(decode_event(event.toStdString(), &e)), QString());
    QCOMPARE(e.step, std::int64_t(4));
    QVERIFY(e.scalars.empty());
  }

  void severalValuesInOneEventAndUnknownFieldsSkipped() {
    std::string v1, v2, summary, event;
    pb::put_bytes(v1, 1, "a");
    pb::put_float(v1, 2, 1.5f);
    pb::put_bytes(v2, 1, "b");
    pb::put_bytes(v2, 7, "node");  // node_name: ignored
    pb::put_float(v2, 2, -2.0f);
    pb::put_bytes(summary, 1, v1);
    pb::put_bytes(summary, 1, v2);
    pb::put_double(event, 1, 3.0);
    pb::put_int64(event, 2, 9);
    pb::put_bytes(event, 6, "log message");  // log_message: skipped
    pb::put_bytes(event, 5, summary);
    Event e;
    QVERIFY(decode_event(event, &e).empty());
    QCOMPARE(int(e.scalars.size()), 2);
    QCOMPARE(QString::fromStdString(e.scalars[1].tag), QStringLiteral("b"));
    QCOMPARE(e.scalars[1].value, -2.0);
  }

  void writerRoundTrip() {
    QTemporaryDir tmp;
    const QString dir = tmp.filePath(QStringLiteral("tb/rank-0"));  // created by the writer
    {
      EventFileWriter w(dir.toStdString(), 3600.0);
      for (int i = 1; i <= 500; ++i)
        w.add_scalar(i % 2 ? "loss" : "lr", 1.0 / i, i, 1.7e9 + i * 0.125);
      w.close();
      QVERIFY(!w.failed());
    }
    const QStringList files = eventFiles(dir);
    QCOMPARE(files.size(), 1);
    const QRegularExpression name(QStringLiteral("^events\\.out\\.tfevents\\.(\\d+)\\.(.+)$"));
    const auto m = name.match(files[0]);
    QVERIFY2(m.hasMatch(), qPrintable(files[0]));
    QVERIFY(std::abs(m.captured(1).toDouble() - unix_time_now()) < 600);
    QCOMPARE(m.captured(2), QSysInfo::machineHostName());
    const EventFile f = read_event_file(QDir(dir).filePath(files[0]).toStdString());
    QVERIFY2(f.ok() && !f.truncated, f.problem().c_str());
    QCOMPARE(QString::fromStdString(f.file_version), QStringLiteral("brain.Event:2"));
    QCOMPARE(f.records, std::int64_t(501));
    QCOMPARE(int(f.scalars.size()), 500);
    for (int i = 1; i <= 500; ++i) {
      const ScalarPoint& p = f.scalars[std::size_t(i - 1)];
      QCOMPARE(QString::fromStdString(p.tag), QString(i % 2 ? "loss" : "lr"));
      QCOMPARE(p.step, std::int64_t(i));
      QCOMPARE(p.wall_time, 1.7e9 + i * 0.125);
      QCOMPARE(p.value, double(float(1.0 / i)));  // simple_value is a float
    }
  }

  // Records wait in memory until the interval passes or the writer flushes or closes.
  void writesOnlyWhenDueOrFlushed() {
    QTemporaryDir tmp;
    EventFileWriter slow(tmp.path().toStdString(), 3600.0);
    QFile file(QString::fromStdString(slow.path()));
    const qint64 header = file.size();
    QVERIFY(header > 0);  // the version record is on disk at once
    slow.add_scalar("loss", 1.0, 1, 1.0);
    slow.flush_if_due();
    QCOMPARE(file.size(), header);
    slow.flush();
    QVERIFY(file.size() > header);

    QTemporaryDir tmp2;
    EventFileWriter eager(tmp2.path().toStdString(), 0.0);
    QFile file2(QString::fromStdString(eager.path()));
    const qint64 header2 = file2.size();
    eager.add_scalar("loss", 1.0, 1, 1.0);
    QCOMPARE(file2.size(), header2);
    eager.flush_if_due();
    QVERIFY(file2.size() > header2);
  }

  void twoWritersInOneDirectoryGetTwoFiles() {
    QTemporaryDir tmp;
    EventFileWriter a(tmp.path().toStdString()), b(tmp.path().toStdString());
    QVERIFY(a.path() != b.path());
    QCOMPARE(eventFiles(tmp.path()).size(), 2);
  }

  void anImpossibleDirectoryThrowsNamingIt() {
    QTemporaryDir tmp;
    QFile blocker(tmp.filePath(QStringLiteral("file")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const std::string dir = tmp.filePath(QStringLiteral("file/tb")).toStdString();
    try {
      EventFileWriter w(dir);
      QFAIL("no exception");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find(dir) != std::string::npos, e.what());
    }
  }

  void unreadableFileIsAnError() {
    const EventFile f = read_event_file("/nonexistent/events.out.tfevents.1.x");
    QVERIFY(!f.ok());
    QVERIFY(QString::fromStdString(f.error).startsWith("cannot read"));
  }

  void eventFileNames() {
    QVERIFY(is_event_file_name("events.out.tfevents.1700000000.host"));
    QVERIFY(is_event_file_name("events.out.tfevents.1700000000.host.123.0"));
    QVERIFY(!is_event_file_name("metrics.jsonl"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTbEvents)
#include "test_tb_events.moc"
