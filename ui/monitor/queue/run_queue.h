// RunQueue: run specs waiting their turn on this machine, started one after another through one
// RunController, and kept in a JSON file (written atomically at every change) so the queue
// survives closing the window and a crash of the app. An entry that was running when the app
// died reads back as Interrupted; like a Stopped one it continues from its run directory's
// checkpoint when its turn comes again. Before an entry starts it goes through the checks of any
// run (pre_start_check.h), in the background; one they rule out fails with their line and no
// rank spawned, and the queue goes on.
//
// File (docs/queue-and-sweeps.md):
//   {"version": 1, "paused": false, "stop_on_failure": false,
//    "entries": [{"id": 1, "spec": {...run spec fields...}, "state": "queued",
//                 "run_dir": "", "reason": ""}, ...]}
// Only "spec" is required in an entry; "fields" and "sweep" (set for the runs of a sweep) are
// kept as they are.
#pragma once

#include <QJsonObject>
#include <QJsonValue>
#include <QObject>
#include <QString>
#include <functional>
#include <vector>

#include "run/file_lock.h"
#include "run_spec.h"

namespace ddpdesk {

class PreStartCheck;
class RunController;

struct QueueEntry {
  enum class State { Queued, Running, Finished, Failed, Stopped, Interrupted };
  int id = 0;
  RunSpec spec;  // as queued
  State state = State::Queued;
  QString runDir;     // where it ran (set when it starts)
  QString reason;     // why it failed or stopped (first line)
  QJsonObject extra;  // "fields" and "sweep": a sweep's account of the run, kept as is

  // Queued, Stopped and Interrupted entries still have to run.
  bool pending() const;
  static QString stateName(State s);  // "queued", "running", ...
  // What sets it apart, in a line: a sweep's fields ("accum_steps=2, batch_size=16"), or the
  // spec's main ones ("name: seed, 2 rank(s), batch 4 x accum 1, lr 0.001, 3 epoch(s)").
  QString label() const;
  // The head of `reason` for an entry refused before it started (RunQueue says so at once, in
  // its message).
  static constexpr const char* kCouldNotStart = "could not start: ";
};

class RunQueue : public QObject {
  Q_OBJECT
 public:
  // Starts runs through `controller`, which it shares with whoever else starts runs (the GUI's
  // Start button): the queue waits while a run of theirs is active.
  explicit RunQueue(RunController* controller, QObject* parent = nullptr);

  // <GenericDataLocation>/ddpdesk/queue.json: the GUI's queue.
  static QString defaultPath();
  // Reads the queue from `path` (a missing file is an empty queue, written at the first change).
  // Entries found Running were cut short by a crash: they become Interrupted. False with one
  // line naming the entry and field when the file cannot be used; nothing is changed then.
  bool load(const QString& path, QString* error = nullptr);
  QString path() const { return path_; }
  bool save(QString* error = nullptr);
  // Makes the loaded file this process's to run (headless --queue and --sweep): it must be
  // writable (every change is written back), and no other ddpdesk may be running it: its lock
  // file <file>.lock (file_lock.h) is taken and held while this queue lives. False with one line
  // naming the file, and the process that runs it when that is why; nothing written then.
  bool claim(QString* error = nullptr);

  // How a run is started (default: the controller's start()). The GUI passes its own, which also
  // resets the live views.
  using Launcher = std::function<bool(const RunSpec&, QString*)>;
  void setLauncher(Launcher launcher) { launcher_ = std::move(launcher); }

  // Queued at the end; returns the new entry's id.
  int add(const RunSpec& spec, const QJsonObject& extra = {});
  bool remove(int id);             // any entry but the running one
  bool move(int id, int toIndex);  // reorder (the running entry too: order only says what is next)
  const std::vector<QueueEntry>& entries() const { return entries_; }
  int indexOf(int id) const;
  int currentId() const { return current_; }
  int pendingCount() const;

  bool isPaused() const { return paused_; }
  // Paused: the running run goes on, the next does not start. Resuming starts the next at once.
  void setPaused(bool paused);
  bool stopOnFailure() const { return stop_on_failure_; }
  // A failed run pauses the queue (the default is to go on with the next).
  void setStopOnFailure(bool stop);

  // Starts the next pending entry unless paused or a run is active; emits idle() when there is
  // nothing it may start.
  void startNext();

 Q_SIGNALS:
  void changed();
  void entryStarted(int id);
  void entryEnded(int id);
  // An entry's state, run directory or place in the queue changed (also just before removal).
  void entryChanged(const ddpdesk::QueueEntry& entry);
  // Nothing more will start on its own: the queue is empty of pending entries, or paused.
  void idle();
  // Something worth telling (a run that could not start, a file that could not be written).
  void message(const QString& text);

 private:
  void onControllerState();
  void onChecked(const QString& problem, const QString& warning);
  void failToStart(int id, const QString& error);
  void persist();
  QueueEntry* find(int id);

  RunController* controller_;
  Launcher launcher_;
  QString path_;
  FileLock lock_;  // claim()'s
  std::vector<QueueEntry> entries_;
  QJsonObject extra_;  // other top-level keys of the file, kept
  int next_id_ = 1;
  int current_ = -1;
  bool paused_ = false;
  bool stop_on_failure_ = false;
  bool starting_ = false;  // inside startNext(): a synchronous failure must not recurse
  PreStartCheck* check_;
  int checking_ = -1;  // the entry whose pre-start check is running
  int checked_ = -1;   // the entry whose check passed, to start when the queue may
};

// A queue file's value as text (field_value_text, the one rule, on its JSON): for its error
// lines and an entry's label.
QString queueValueText(const QJsonValue& v);

}  // namespace ddpdesk
