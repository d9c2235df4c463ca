// TensorBoard logs for the comparison tests, written with ddpdesk_tensorboard's writer (a test
// that includes this links ddpdesk_tensorboard): a known loss series, optionally with one byte
// of its event file flipped so that a record's CRC fails.
#pragma once

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QString>
#include <QStringList>

#include "event_writer.h"

namespace ddpdesk::testing {

// A TensorBoard log in `dir`: "train/loss" at steps 1..`steps`, loss 1/step, 1 s apart; with
// `flipAt` >= 0, that byte of the event file flipped. The event file's path (empty: not written).
inline QString tensorBoardLog(const QString& dir, int steps, qint64 flipAt = -1) {
  {
    tb::EventFileWriter w(dir.toStdString());
    for (int i = 1; i <= steps; ++i) w.add_scalar("train/loss", 1.0 / i, i, 1000.0 + i);
  }
  const QStringList files = QDir(dir).entryList({QStringLiteral("events.out.tfevents.*")});
  if (files.size() != 1) return {};
  const QString path = QDir(dir).filePath(files.front());
  if (flipAt >= 0) {
    QFile f(path);
    if (!f.open(QIODevice::ReadWrite)) return {};
    QByteArray bytes = f.readAll();
    if (flipAt >= bytes.size()) return {};
    bytes[flipAt] = char(bytes[flipAt] ^ 0x01);
    f.seek(0);
    f.write(bytes);
  }
  return path;
}

}  // namespace ddpdesk::testing
