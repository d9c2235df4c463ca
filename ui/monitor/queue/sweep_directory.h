// Where a sweep lives on disk, next to the runs it queued (each in its own run directory):
//   <XDG data>/ddpdesk/sweeps/<yyyyMMdd-HHmmss>-<name>/
//     sweep.json   the definition, as given (the file, or what the GUI's dialog built)
//     index.json   its runs in order: the fields each one varies, state, run directory and
//                  reason, kept current as they run; and the combinations skipped, with why
//     queue.json   headless sweeps only: the queue that runs them (`--queue` it to continue
//                  a sweep whose app was killed)
// Runs queued from a sweep carry "sweep" (this directory) and "sweep_run" (their number) in
// their queue entry, so whichever queue runs them keeps index.json current.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include "sweep.h"

namespace ddpdesk {

class RunQueue;
struct QueueEntry;

class SweepDirectory {
 public:
  // <GenericDataLocation>/ddpdesk/sweeps
  static QString sweepsRoot();
  static QString indexPath(const QString& dir);
  static QString definitionPath(const QString& dir);
  static QString queuePath(const QString& dir);

  // Creates a new sweep directory under `root` holding sweep.json (`definition`) and index.json
  // (every run queued, the skipped combinations). Returns the directory, or empty with *error.
  static QString create(const SweepPlan& plan, const QByteArray& definition,
                        QString* error = nullptr, const QString& root = sweepsRoot());
  // Queues every run of the sweep in `dir` (made by create()), each entry carrying the sweep's
  // directory, its run number and fields.
  static void addRuns(const SweepPlan& plan, const QString& dir, RunQueue* queue);
  // Writes a queue entry's state, run directory and reason into its sweep's index.json (when
  // it belongs to a sweep); `removed` marks an entry taken out of the queue.
  static bool record(const QueueEntry& entry, bool removed = false, QString* error = nullptr);
  // Keeps the index of every sweep whose runs `queue` holds current.
  static void follow(RunQueue* queue);
};

}  // namespace ddpdesk
