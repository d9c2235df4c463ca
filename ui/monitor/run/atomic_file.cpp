#include "run/atomic_file.h"

#include <QSaveFile>

namespace ddpdesk {

bool writeFileAtomically(const QString& path, const QByteArray& data, QString* error) {
  QSaveFile f(path);
  // flush() before commit(): commit() closes the file and renames it over `path` even when that
  // last flush of the buffer failed (a full disk), which would leave an empty or cut-short file
  // where the previous one was. A failed flush leaves the temporary file to be removed instead.
  if (!f.open(QIODevice::WriteOnly) || f.write(data) != data.size() || !f.flush() || !f.commit()) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace ddpdesk
