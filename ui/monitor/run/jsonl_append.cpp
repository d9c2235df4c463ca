// Appending to a JSON-lines file after a half line (jsonl_append.h).
#include "run/jsonl_append.h"

namespace ddpdesk {

bool openJsonlForAppend(QFile& file, QIODevice::OpenMode extra, QString* error,
                        bool* endedHalfLine) {
  if (endedHalfLine) *endedHalfLine = false;
  // Its last byte, read before it is opened for appending (an append-only handle cannot read).
  char last = '\n';
  {
    QFile in(file.fileName());
    if (in.open(QIODevice::ReadOnly) && in.size() > 0 && in.seek(in.size() - 1)) in.getChar(&last);
  }
  if (!file.open(QIODevice::WriteOnly | QIODevice::Append | extra)) {
    if (error)
      *error = QStringLiteral("cannot open %1: %2").arg(file.fileName(), file.errorString());
    return false;
  }
  if (last == '\n') return true;
  if (!file.putChar('\n') || !file.flush()) {
    if (error)
      *error = QStringLiteral("cannot write %1: %2").arg(file.fileName(), file.errorString());
    file.close();
    return false;
  }
  if (endedHalfLine) *endedHalfLine = true;
  return true;
}

}  // namespace ddpdesk
