// TFRecord framing and the scalar Event encoding, byte for byte: one complete record worked out
// by hand, then what readers must survive (a half-written last record) and refuse (a flipped
// byte, with a one-line reason).
#include <QtTest>
#include <string>

#include "crc32c.h"
#include "event.h"
#include "event_file.h"
#include "qt_test_main.h"
#include "tfrecord.h"

using namespace ddpdesk::tb;

namespace {

std::string bytes(std::initializer_list<unsigned> values) {
  std::string out;
  for (unsigned v : values) out.push_back(static_cast<char>(v));
  return out;
}

// Event{wall_time: 1.5, step: 3, summary {value {tag: "loss", simple_value: 0.5}}}, by hand:
//   09 | 00 00 00 00 00 00 F8 3F   field 1 (wall_time), wire type 1 (fixed64): 1.5 =
//   0x3FF8000000000000 LE 10 | 03                        field 2 (step), wire type 0 (varint): 3 2A
//   | 0D                        field 5 (summary), wire type 2, 13 bytes:
//     0A | 0B                        Summary field 1 (value), wire type 2, 11 bytes:
//       0A | 04 | 6C 6F 73 73          Value field 1 (tag), 4 bytes "loss"
//       15 | 00 00 00 3F               Value field 2 (simple_value), wire type 5: 0.5f = 0x3F000000
//       LE
// 9 + 2 + 2 + 13 = 26 bytes.
const std::string kEvent =
    bytes({0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F, 0x10, 0x03, 0x2A, 0x0D,
           0x0A, 0x0B, 0x0A, 0x04, 0x6C, 0x6F, 0x73, 0x73, 0x15, 0x00, 0x00, 0x00, 0x3F});

// The record around it:
//   1A 00 00 00 00 00 00 00   length 26, uint64 LE
//   12 9B D8 2D               masked CRC of those 8 bytes: crc32c = 0xD81D45AA (bit-at-a-time
//                             reference); rotated right by 15: 0x8B55B03A; + 0xA282EAD8 =
//                             0x2DD89B12, written LE
//   <the 26 bytes above>
//   80 65 5E E3               masked CRC of the data: crc32c = 0xBD54206D; rotated: 0x40DB7AA8;
//                             + 0xA282EAD8 = 0xE35E6580, LE
const std::string kRecord =
    bytes({0x1A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x9B, 0xD8, 0x2D}) + kEvent +
    bytes({0x80, 0x65, 0x5E, 0xE3});

std::string twoRecords() {
  std::string file;
  append_record(file, encode_file_version_event(1000.25));
  append_record(file, encode_scalar_event(1001.5, 7, "loss", 0.25f));
  return file;
}

}  // namespace

class TestTbRecord : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void encodesTheHandWorkedEvent() {
    QCOMPARE(QByteArray::fromStdString(encode_scalar_event(1.5, 3, "loss", 0.5f)).toHex(' '),
             QByteArray::fromStdString(kEvent).toHex(' '));
  }

  void framesTheHandWorkedRecord() {
    std::string out;
    append_record(out, kEvent);
    QCOMPARE(QByteArray::fromStdString(out).toHex(' '),
             QByteArray::fromStdString(kRecord).toHex(' '));
  }

  void readsTheHandWorkedRecord() {
    RecordReader reader(kRecord);
    std::string_view data;
    QCOMPARE(reader.next(&data), RecordReader::Status::Record);
    QCOMPARE(std::string(data), kEvent);
    QCOMPARE(reader.next(&data), RecordReader::Status::End);
    Event e;
    QCOMPARE(QString::fromStdString(decode_event(data, &e)), QString());
    QCOMPARE(e.wall_time, 1.5);
    QCOMPARE(e.step, std::int64_t(3));
    QCOMPARE(int(e.scalars.size()), 1);
    QCOMPARE(QString::fromStdString(e.scalars[0].tag), QStringLiteral("loss"));
    QCOMPARE(e.scalars[0].value, 0.5);
  }

  // The writer's in-place encoder gives the bytes of the reference one: tags long enough for a
  // two-byte length, steps zero, negative and huge, a zero wall time.
  void inPlaceRecordsEqualTheReference() {
    const std::string longTag(300, 't');
    for (const std::string& tag : {std::string("loss"), std::string(), longTag})
      for (std::int64_t step : {std::int64_t(0), std::int64_t(-5), std::int64_t(1) << 50})
        for (double wall : {0.0, 1.7e9 + 0.25}) {
          std::string want = "prefix", got = "prefix";
          append_record(want, encode_scalar_event(wall, step, tag, 0.125f));
          append_scalar_record(got, wall, step, tag, 0.125f);
          QCOMPARE(QByteArray::fromStdString(got).toHex(), QByteArray::fromStdString(want).toHex());
        }
  }

  // Proto3 writes no field at its default: the version record has no step, a step-0 scalar none.
  void leavesDefaultsOut() {
    // 1A 0D "brain.Event:2" only: field 3 (file_version), wire type 2, 13 bytes.
    QCOMPARE(QByteArray::fromStdString(encode_file_version_event(0)), QByteArray("\x1A\x0D"
                                                                                 "brain.Event:2"));
    Event e;
    QVERIFY(decode_event(encode_scalar_event(2.0, 0, "x", 1.0f), &e).empty());
    QCOMPARE(e.step, std::int64_t(0));
    QVERIFY(encode_scalar_event(2.0, 0, "x", 1.0f).find('\x10') == std::string::npos);
  }

  void negativeAndLargeSteps() {
    for (std::int64_t step : {std::int64_t(-1), std::int64_t(1) << 40, INT64_MAX}) {
      Event e;
      QVERIFY(decode_event(encode_scalar_event(5.0, step, "t", 2.0f), &e).empty());
      QCOMPARE(e.step, step);
    }
  }

  void everyCutOfTheLastRecordIsTruncationNotCorruption() {
    const std::string file = twoRecords();
    std::string one;
    append_record(one, encode_file_version_event(1000.25));
    for (std::size_t cut = one.size() + 1; cut < file.size(); ++cut) {
      const EventFile f = decode_event_file(std::string_view(file).substr(0, cut));
      QVERIFY2(f.ok(), f.error.c_str());
      QVERIFY(f.truncated);
      QCOMPARE(f.records, std::int64_t(1));
      QCOMPARE(QString::fromStdString(f.file_version), QStringLiteral("brain.Event:2"));
      QVERIFY(f.scalars.empty());
      QVERIFY(QString::fromStdString(f.problem()).contains("incomplete"));
    }
    const EventFile whole = decode_event_file(file);
    QVERIFY(whole.ok() && !whole.truncated);
    QCOMPARE(int(whole.scalars.size()), 1);
    QCOMPARE(whole.scalars[0].step, std::int64_t(7));
    QCOMPARE(whole.scalars[0].wall_time, 1001.5);
  }

  void aFlippedByteIsRefusedWithAReason() {
    const std::string file = twoRecords();
    std::string one;
    append_record(one, encode_file_version_event(1000.25));
    // Every byte of the second record, flipped in turn: never a silent wrong value.
    for (std::size_t i = one.size(); i < file.size(); ++i) {
      std::string bad = file;
      bad[i] = static_cast<char>(bad[i] ^ 0x20);
      const EventFile f = decode_event_file(bad);
      QVERIFY2(!f.ok(), qPrintable(QStringLiteral("byte %1 flipped went unnoticed").arg(i)));
      QVERIFY(f.scalars.empty());
      QCOMPARE(f.records, std::int64_t(1));
      const QString reason = QString::fromStdString(f.error);
      QVERIFY(!reason.contains('\n'));
      QVERIFY2(reason.startsWith(QStringLiteral("record 2 at byte %1: ").arg(one.size())),
               qPrintable(reason));
      const bool inLength = i < one.size() + 12;
      QVERIFY2(reason.contains(inLength ? "length CRC mismatch" : "data CRC mismatch"),
               qPrintable(reason));
    }
  }

  void aMalformedEventInsideAGoodRecordIsAnError() {
    std::string file;
    append_record(file, bytes({0x2A, 0x7F, 0x0A}));  // summary claims 127 bytes, has 1
    const EventFile f = decode_event_file(file);
    QVERIFY(!f.ok());
    QVERIFY2(QString::fromStdString(f.error).contains("record 1: malformed Event"),
             f.error.c_str());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTbRecord)
#include "test_tb_record.moc"
