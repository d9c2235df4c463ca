// Opening a JSON-lines file that the monitor appends to (a run's metrics.jsonl, a script run's
// metrics/system.jsonl) where an earlier writer may have died mid-line: the half line it left is
// ended first, so the next message starts a line of its own and a reader skips the half one as one
// malformed line, instead of reading a message glued onto it. The ranks' own files keep the same
// rule (engine/telemetry/telemetry.cpp, python/ddpdesk/_client.py).
#pragma once

#include <QFile>
#include <QString>

namespace ddpdesk {

// Opens `file` (its file name set) for appending, WriteOnly | Append | `extra`, and ends a half
// line at its end with '\n'. False with *error (one line naming the file and why) when it cannot
// be opened or the half line cannot be ended. *endedHalfLine: whether there was one to end.
bool openJsonlForAppend(QFile& file, QIODevice::OpenMode extra, QString* error,
                        bool* endedHalfLine = nullptr);

}  // namespace ddpdesk
