// Files the monitor writes whole (spec.json, status.json, the queue, a sweep's index) go through
// a temporary file and a rename, so a crash mid-write leaves the previous version, never half
// of one; so does a full disk (nothing is renamed over the previous version unless every byte
// was written).
#pragma once

#include <QByteArray>
#include <QString>

namespace ddpdesk {

// Why writeFileAtomically(path) would fail for want of permission, checked without writing:
// "FILE is not writable" (an existing file QSaveFile refuses to replace) or "its directory DIR
// is not writable" (where the temporary file goes); empty when it may write.
QString atomicWriteProblem(const QString& path);

// False with *error (one line naming the file) when it could not be written.
bool writeFileAtomically(const QString& path, const QByteArray& data, QString* error = nullptr);

}  // namespace ddpdesk
