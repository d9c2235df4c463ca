// The last non-empty line of a tool's output (last_line.h).
#include "run/last_line.h"

#include <QList>

QString lastLine(const QByteArray& output) {
  const QList<QByteArray> lines = output.split('\n');
  for (auto it = lines.crbegin(); it != lines.crend(); ++it) {
    const QString line = QString::fromLocal8Bit(*it).trimmed();
    if (!line.isEmpty()) return line;
  }
  return {};
}
