#include "headless/headless_queue.h"

#include "headless/headless_message.h"

#include <CLI/CLI.hpp>
#include <QCoreApplication>
#include <QFile>
#include <QTimer>
#include <cstdio>
#include <iostream>
#include <memory>

#include "headless/headless_message.h"
#include "headless/headless_runner.h"
#include "headless/progress_printer.h"
#include "headless/signal_notifier.h"
#include "queue/run_queue.h"
#include "queue/sweep_directory.h"
#include "run/end_command.h"
#include "run/run_controller.h"
#include "slurm/slurm_job.h"

namespace ddpdesk {
namespace {

void printSummary(const RunQueue& queue) {
  std::printf("\n%-4s %-12s %-40s %s\n", "id", "state", "run", "run directory");
  for (const QueueEntry& e : queue.entries())
    std::printf("%-4d %-12s %-40s %s\n", e.id, QueueEntry::stateName(e.state).toUtf8().constData(),
                e.label().toUtf8().constData(), e.runDir.toUtf8().constData());
  std::fflush(stdout);
}

int runQueue(RunController& controller, RunQueue& queue, std::optional<bool> stopOnFailure) {
  SweepDirectory::follow(&queue);
  if (stopOnFailure) queue.setStopOnFailure(*stopOnFailure);
  std::unique_ptr<ProgressPrinter> progress;
  int signalled = 0;
  bool failed = false;
  const int total = int(queue.entries().size());

  SignalNotifier signalsIn({SIGINT, SIGTERM});
  QObject::connect(&signalsIn, &SignalNotifier::received, [&](int signo) {
    if (progress) progress->breakLine();
    if (signalled == 0) {
      signalled = signo;
      printHeadlessMessage(
          QStringLiteral("stopping the queue: the running run stops at its next step boundary "
                         "(Ctrl+C again to kill its ranks)"));
      queue.setPaused(true);
      controller.noteStopSignal(signo);
      controller.stop();
      if (!controller.isActive()) QCoreApplication::exit(0);
    } else {
      controller.kill();
    }
  });
  QObject::connect(&controller, &RunController::warning, [&](const QString& w) {
    if (progress) progress->breakLine();
    printHeadlessMessage(QStringLiteral("warning: ") + w);
  });
  QObject::connect(controller.endCommands(), &EndCommands::warning,
                   [](const QString& w) { printHeadlessMessage(QStringLiteral("warning: ") + w); });
  QObject::connect(&queue, &RunQueue::message, [&](const QString& m) { printHeadlessMessage(m); });
  QObject::connect(controller.store(), &MetricsStore::updated, [&] {
    if (progress) progress->update(controller.store()->progress());
  });
  // A Slurm entry is known by its job, whose id comes once sbatch answers: its line waits.
  QString startedLine;
  QObject::connect(&queue, &RunQueue::entryStarted, [&](int id) {
    const QueueEntry& e = queue.entries()[queue.indexOf(id)];
    progress = std::make_unique<ProgressPrinter>(e.spec.epochs);
    startedLine = QStringLiteral("queue: run %1/%2 (%3) %4 in %5, ")
                      .arg(queue.indexOf(id) + 1)
                      .arg(total)
                      .arg(e.label())
                      .arg(controller.spec().resume.empty() ? QStringLiteral("started")
                                                            : QStringLiteral("resumed"))
                      .arg(e.runDir);
    if (controller.isSlurm()) {
      if (!controller.slurmJob()->jobId().isEmpty()) {
        printHeadlessMessage(startedLine + QStringLiteral("job ") + controller.slurmJob()->jobId());
        startedLine.clear();
      }
      return;
    }
    QStringList pids;
    for (qint64 pid : controller.pids()) pids << QString::number(pid);
    printHeadlessMessage(startedLine + QStringLiteral("pids ") + pids.join(QLatin1Char(' ')));
    startedLine.clear();
  });
  QObject::connect(&controller, &RunController::jobSubmitted, [&](const QString& job) {
    if (startedLine.isEmpty()) return;
    if (progress) progress->breakLine();
    printHeadlessMessage(startedLine + QStringLiteral("job ") + job);
    startedLine.clear();
  });
  // The Slurm job's state, as a single headless run prints it (pending with its reason, ...).
  QObject::connect(&controller, &RunController::launcherStatusChanged, [&](const QString& text) {
    if (progress) progress->breakLine();
    printHeadlessMessage(text);
  });
  QObject::connect(&queue, &RunQueue::entryEnded, [&](int id) {
    startedLine.clear();  // a refused job: its ending says so
    if (progress) progress->finish(controller.store()->progress());
    progress.reset();
    const QueueEntry& e = queue.entries()[queue.indexOf(id)];
    if (e.state == QueueEntry::State::Failed) failed = true;
    // Refused before it started: the queue's own line said so already.
    if (e.reason.startsWith(QLatin1String(QueueEntry::kCouldNotStart))) return;
    printHeadlessMessage(
        QStringLiteral("queue: run %1/%2 %3%4")
            .arg(queue.indexOf(id) + 1)
            .arg(total)
            .arg(QueueEntry::stateName(e.state))
            .arg(e.reason.isEmpty() ? QString() : QStringLiteral(": ") + e.reason));
  });
  QObject::connect(&queue, &RunQueue::idle, [&] { QCoreApplication::exit(0); });

  if (queue.pendingCount() == 0) {
    printHeadlessMessage(QStringLiteral("queue %1: nothing left to run").arg(queue.path()));
    printSummary(queue);
    return 0;
  }
  // From inside the event loop: idle() may come at once, and exit() needs a running loop.
  QTimer::singleShot(0, &queue, [&] {
    if (queue.isPaused())
      queue.setPaused(false);  // the command is the request to run it
    else
      queue.startNext();
  });
  QCoreApplication::exec();
  printSummary(queue);
  waitForEndCommands(controller);
  if (signalled) return 128 + signalled;
  for (const QueueEntry& e : queue.entries())
    failed = failed || e.state == QueueEntry::State::Failed;
  if (failed) return 1;
  return queue.pendingCount() == 0 ? 0 : 1;
}

}  // namespace

int runQueueFile(const QString& path, std::optional<bool> stopOnFailure) {
  if (!QFile::exists(path)) {
    printHeadlessMessage(QString::fromStdString(
        format_error({"queue", path.toStdString(), "no such file"}, Spelling::Flag)));
    return 2;
  }
  RunController controller;
  RunQueue queue(&controller);
  QString error;
  if (!queue.load(path, &error)) {
    printHeadlessMessage(error + QStringLiteral(" (in %1)").arg(path));
    return 2;
  }
  if (!queue.claim(&error)) {
    printHeadlessMessage(error);
    return 2;
  }
  printHeadlessMessage(QStringLiteral("queue %1: %2 entries, %3 to run")
                           .arg(queue.path())
                           .arg(queue.entries().size())
                           .arg(queue.pendingCount()));
  return runQueue(controller, queue, stopOnFailure);
}

int runSweepFile(const QString& path, std::optional<bool> stopOnFailure) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    printHeadlessMessage(QString::fromStdString(format_error(
        {"sweep", path.toStdString(), "cannot read it (" + f.errorString().toStdString() + ")"},
        Spelling::Flag)));
    return 2;
  }
  const QByteArray text = f.readAll();
  const SweepPlan plan = parse_sweep(text.toStdString());
  if (!plan.ok()) {
    printHeadlessMessage(QString::fromStdString(plan.error) + QStringLiteral(" (in %1)").arg(path));
    return 2;
  }
  for (const SweepSkip& s : plan.skipped)
    printHeadlessMessage(
        QStringLiteral("sweep: skipped %1: %2")
            .arg(QString::fromStdString(s.fields.dump()), QString::fromStdString(s.reason)));
  QString error;
  const QString dir = SweepDirectory::create(plan, text, &error);
  if (dir.isEmpty()) {
    printHeadlessMessage(error);
    return 1;
  }
  RunController controller;
  RunQueue queue(&controller);
  queue.load(SweepDirectory::queuePath(dir));  // no file yet: an empty queue kept there
  if (!queue.claim(&error)) {  // a new directory: only --queue of its file could come first
    printHeadlessMessage(error);
    return 2;
  }
  queue.setStopOnFailure(plan.stop_on_failure);
  SweepDirectory::addRuns(plan, dir, &queue);
  printHeadlessMessage(
      QStringLiteral("sweep directory %1: %2 run(s), %3 skipped (after a crash, continue with "
                     "--queue %4)")
          .arg(dir)
          .arg(plan.runs.size())
          .arg(plan.skipped.size())
          .arg(SweepDirectory::queuePath(dir)));
  return runQueue(controller, queue, stopOnFailure);
}

}  // namespace ddpdesk

namespace ddpdesk {

QueueOptions::QueueOptions(CLI::App& app) {
  queueOption_ = app.add_option("--queue", queue_,
                                "run a queue file's entries one after another (the file is kept "
                                "current: run it again to continue)");
  sweepOption_ = app.add_option("--sweep", sweep_,
                                "expand a sweep file into runs and run them one after another");
  stopOption_ = app.add_flag("--stop-on-failure",
                             "with --queue or --sweep: a failed run stops "
                             "the queue (default: the file's setting)");
}

bool QueueOptions::given() const {
  return queueOption_->count() > 0 || sweepOption_->count() > 0;
}

int QueueOptions::check(const CLI::App& app) const {
  if (queueOption_->count() > 0 && sweepOption_->count() > 0) {
    printHeadlessMessage(QStringLiteral("--queue and --sweep cannot be used together"));
    return 2;
  }
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0 || o == queueOption_ || o == sweepOption_ || o == stopOption_ ||
        o->get_name() == "--headless")
      continue;
    printHeadlessMessage(
        QStringLiteral("%1 cannot be used with %2: put run spec fields in the file")
            .arg(QString::fromStdString(o->get_name()), queueOption_->count() > 0
                                                            ? QStringLiteral("--queue")
                                                            : QStringLiteral("--sweep")));
    return 2;
  }
  return -1;
}

int QueueOptions::run() const {
  const std::optional<bool> stop =
      stopOption_->count() > 0 ? std::optional<bool>(true) : std::nullopt;
  if (queueOption_->count() > 0) return runQueueFile(QString::fromStdString(queue_), stop);
  return runSweepFile(QString::fromStdString(sweep_), stop);
}

}  // namespace ddpdesk
