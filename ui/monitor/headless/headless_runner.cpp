#include "headless/headless_runner.h"

#include <QEventLoop>

#include <QCoreApplication>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "checks/pre_start_check.h"
#include "headless/breakdown_text.h"
#include "headless/command_line.h"
#include "headless/compare_headless.h"
#include "headless/headless_message.h"
#include "headless/progress_printer.h"
#include "headless/signal_notifier.h"
#include "headless/system_text.h"
#include "local/script_rank.h"
#include "metrics/metrics_store.h"
#include "metrics/straggler_watch.h"
#include "run/end_command.h"
#include "run/progress_text.h"
#include "run/restart_policy.h"
#include "run/run_controller.h"
#include "slurm/login_resume.h"
#include "slurm/slurm_job.h"

namespace ddpdesk {
namespace {

void printSummary(const RunController& c, const StragglerWatch& stragglers) {
  const MetricsStore& store = *c.store();
  const int world = std::max(1, store.progress().world);
  // samples/s: each rank's own average training throughput over the run (RankAverageThroughput).
  std::printf("\n%-5s %-8s %-8s %-12s %-12s %s\n", "rank", "pid", "steps", "last loss", "samples/s",
              "exit");
  for (const auto& r : c.ranks()) {
    const RankInfo& info = store.rankInfo(r.rank);
    const StepSeries& s = store.rankSeries(r.rank);
    std::printf("%-5d %-8lld %-8zu %-12s %-12.0f %s\n", r.rank, static_cast<long long>(r.pid),
                s.size(), formatLoss(info.loss).toStdString().c_str(),
                info.training.perRankSamplesPerSec(world), r.exitText.toStdString().c_str());
  }
  // What each rank cost its machine, from its system samples (when the workers sent them).
  if (const QStringList table = formatSystemTable(store); !table.isEmpty()) {
    std::printf("\nsystem use per rank:\n");
    for (const QString& line : table) std::printf("%s\n", line.toStdString().c_str());
  }
  // Where each rank's steps went (workers that report a step breakdown), and a straggler the run
  // ended with.
  if (const QStringList table = formatBreakdownTable(store); !table.isEmpty()) {
    std::printf("\ntime per optimizer step, averaged over the run:\n");
    for (const QString& line : table) std::printf("%s\n", line.toStdString().c_str());
  }
  if (const QString s = stragglers.summary(); !s.isEmpty())
    std::printf("%s\n", s.toStdString().c_str());
  const RunProgress p = store.progress();
  const double secs = c.startedAt().msecsTo(c.endedAt()) / 1000.0;
  std::printf("\n%s after %s: %lld steps, %lld samples, global loss %s",
              RunController::stateName(c.state()).toLower().toStdString().c_str(),
              formatDuration(secs).toStdString().c_str(), static_cast<long long>(p.step),
              static_cast<long long>(p.samples), formatLoss(p.globalLoss).toStdString().c_str());
  if (!std::isnan(p.evalLoss))
    std::printf(", validation loss %s", formatLoss(p.evalLoss).toStdString().c_str());
  if (!std::isnan(p.evalAccuracy)) std::printf(", accuracy %.2f%%", p.evalAccuracy * 100.0);
  if (const QString t = formatThroughputLine(store); !t.isEmpty())
    std::printf("\n%s", t.toStdString().c_str());
  if (const QString d = startedDetail(store); !d.isEmpty())
    std::printf("\nstarted: %s", d.toStdString().c_str());
  std::printf("\nrun directory: %s\n", c.runDirectory().toStdString().c_str());
  if (const QString why = c.metricsIncomplete(); !why.isEmpty())
    std::printf("metrics.jsonl is incomplete: %s\n", why.toStdString().c_str());
  std::fflush(stdout);
}

bool isScriptRun(const RunController& c) {
  const TaskInfo* task = find_task(c.spec().task);
  return task && task->python_script;
}

// What the ranks run: the worker, or a script run's interpreter and script (scriptRank's rule).
QString rankProgramText(const RunController& c) {
  if (!isScriptRun(c)) return c.workerProgram();
  const ScriptRank rank = scriptRank(c.spec(), c.runDirectory(), QString());
  return rank.arguments.isEmpty() ? rank.program
                                  : rank.program + QLatin1Char(' ') + rank.arguments.first();
}

// What a stop does: the worker and a script using ddpdesk's client agree on a step boundary
// with the other ranks; a script rank that never spoke to the client just gets SIGTERM.
QString stopLine(const RunController& c) {
  bool allConnected = true;
  for (const auto& r : c.ranks()) allConnected = allConnected && r.connected;
  if (isScriptRun(c) && !allConnected)
    return QStringLiteral("asking the ranks to stop (SIGTERM; Ctrl+C again to kill them)");
  return QStringLiteral("stopping at the next step boundary (Ctrl+C again to kill the ranks)");
}

// `attachDir` empty: start the run in `spec`; else follow the run in that directory.
int runController(const RunSpec& spec, const QString& attachDir) {
  RunController controller;
  const bool attach = !attachDir.isEmpty();
  QString error;
  if (attach && !controller.attach(attachDir, &error)) {
    printHeadlessMessage(error);
    return 2;
  }
  SignalNotifier signalsIn({SIGINT, SIGTERM, SIGHUP});
  // On another host: nothing to follow until it answers; a host that cannot be followed is bad
  // input (one line, exit 2), and by then the controller has left nothing behind.
  if (attach && controller.isRemote() && !RunController::isTerminal(controller.state())) {
    QEventLoop wait;
    QObject::connect(&controller, &RunController::remoteConnected, &wait, &QEventLoop::quit);
    QObject::connect(&controller, &RunController::attachFailed, &wait, [&](const QString& why) {
      error = why;
      wait.quit();
    });
    int interrupted = 0;  // Ctrl+C while connecting: give up (the controller kills ssh)
    QObject::connect(&signalsIn, &SignalNotifier::received, &wait, [&](int signo) {
      interrupted = signo;
      wait.quit();
    });
    wait.exec();
    if (interrupted) {
      printHeadlessMessage(QStringLiteral("no longer following %1").arg(attachDir));
      return 128 + interrupted;
    }
    if (!error.isEmpty()) {
      printHeadlessMessage(error);
      return 2;
    }
  }
  ProgressPrinter progress(attach ? controller.spec().epochs : spec.epochs);
  int signalled = 0;

  QObject::connect(&signalsIn, &SignalNotifier::received, [&](int signo) {
    progress.breakLine();
    if (attach) {  // the ranks are not ours: stop watching, leave them running
      signalled = signo;
      printHeadlessMessage(
          QStringLiteral("no longer following %1; its ranks go on").arg(attachDir));
      QCoreApplication::exit(0);
      return;
    }
    if (signalled == 0) {
      signalled = signo;
      printHeadlessMessage(stopLine(controller));
      controller.noteStopSignal(signo);
      controller.stop();
    } else {
      printHeadlessMessage(QStringLiteral("killing the ranks"));
      controller.kill();
    }
  });
  QObject::connect(&controller, &RunController::warning, [&](const QString& w) {
    progress.breakLine();
    printHeadlessMessage(QStringLiteral("warning: ") + w);
  });
  QObject::connect(controller.endCommands(), &EndCommands::warning,
                   [](const QString& w) { printHeadlessMessage(QStringLiteral("warning: ") + w); });
  // The Slurm job's state, a line each time it changes (pending with its reason, running, ended).
  QObject::connect(&controller, &RunController::launcherStatusChanged, [&](const QString& text) {
    progress.breakLine();
    printHeadlessMessage(text);
  });
  // A failure the run recovers from (max_restarts): a line, then the ranks start again.
  QObject::connect(&controller, &RunController::restarting,
                   [&](int attempt, int maxRestarts, const QString& cause, int delayMs) {
                     progress.breakLine();
                     printHeadlessMessage(restartLine(attempt, maxRestarts, delayMs,
                                                      controller.store()->progress().step, cause));
                   });
  // The hang doctor's verdict on a stall (the stall itself came as a warning), and its file.
  QObject::connect(
      &controller, &RunController::stacksTaken,
      [&](const QString&, const QString& verdict, const QString& path) {
        progress.breakLine();
        printHeadlessMessage(QStringLiteral("hang doctor: ") + verdict);
        printHeadlessMessage(path.isEmpty() ? QStringLiteral("the stacks file could not be written")
                                            : QStringLiteral("stacks in ") + path);
      });
  QObject::connect(controller.store(), &MetricsStore::updated,
                   [&] { progress.update(controller.store()->progress()); });
  // One line when a rank becomes a straggler, one when it is back in line.
  StragglerWatch stragglers;
  stragglers.setStore(controller.store());
  QObject::connect(&stragglers, &StragglerWatch::flagged, [&](int, const QString& text) {
    progress.breakLine();
    printHeadlessMessage(QStringLiteral("warning: ") + text);
  });
  QObject::connect(&stragglers, &StragglerWatch::cleared, [&](int, const QString& text) {
    progress.breakLine();
    printHeadlessMessage(text);
  });
  QObject::connect(&controller, &RunController::stateChanged,
                   [&](RunController::State s, RunController::State) {
                     if (s == RunController::State::Stopping && signalled == 0) {
                       progress.breakLine();
                       printHeadlessMessage(QStringLiteral("the ranks are stopping"));
                     }
                     if (RunController::isTerminal(s)) QCoreApplication::exit(0);
                   });

  if (attach) {
    QString how = QStringLiteral("metrics/rank-N.jsonl");
    if (controller.isRemote()) how += QStringLiteral(", through ssh");
    // A run ddpdesk submitted to Slurm: the job is followed too, and ends the run.
    if (controller.isSlurm())
      how += QStringLiteral(", Slurm job %1").arg(controller.slurmJob()->jobId());
    printHeadlessMessage(QStringLiteral("following %1 (%2)").arg(controller.runDirectory(), how));
  } else {
    // Bad input only this machine can tell, before anything is spawned or written.
    const PreStartVerdict verdict = checkBeforeStartNow(spec, controller.workerProgram());
    if (!verdict.warning.isEmpty())
      printHeadlessMessage(QStringLiteral("warning: ") + verdict.warning);
    if (!verdict.ok()) {
      printHeadlessMessage(verdict.problem);
      return 2;
    }
    if (!controller.start(spec, &error)) {
      printHeadlessMessage(error);
      return 1;
    }
    QStringList pids;
    for (qint64 pid : controller.pids()) pids << QString::number(pid);
    // A Slurm run says where it is once sbatch took it ("job N submitted, ..."): a refused job
    // leaves one line and no directory.
    if (!controller.isSlurm()) {
      printHeadlessMessage(QStringLiteral("run directory %1").arg(controller.runDirectory()));
      printHeadlessMessage(QStringLiteral("started %1 rank(s) of %2, pids %3")
                               .arg(controller.worldSize())
                               .arg(rankProgramText(controller), pids.join(QLatin1Char(' '))));
    }
  }
  // A rank that fails at once can end the run before the loop starts; exit() would be lost.
  if (!RunController::isTerminal(controller.state())) QCoreApplication::exec();

  progress.finish(controller.store()->progress());
  if (attach && !RunController::isTerminal(controller.state())) return 128 + signalled;
  if (controller.failure().rejected) {  // bad input Slurm found: nothing ran, nothing is left
    printHeadlessMessage(controller.reason());
    waitForEndCommands(controller);
    return 2;
  }
  printSummary(controller, stragglers);
  if (controller.state() == RunController::State::Stopped)
    printHeadlessMessage(controller.reason());
  else if (controller.state() != RunController::State::Finished)
    printHeadlessMessage(QStringLiteral("run failed: ") + controller.reason());
  waitForEndCommands(controller);
  // The one mapping, shared with the on_end command's DDPDESK_EXIT_CODE.
  return runExitCode(RunController::stateName(controller.state()), false, signalled);
}

}  // namespace

void waitForEndCommands(RunController& controller) {
  EndCommands& commands = *controller.endCommands();
  // A quick one (a curl, a mail handed to the local MTA) ends without a word.
  if (commands.waitForAll(250)) return;
  printHeadlessMessage(QStringLiteral("waiting for the on_end command (at most %1 s)")
                           .arg(commands.timeout() / 1000));
  // Past the limit the command is killed and reported; the margin is for that.
  commands.waitForAll(commands.timeout() + 5000);
}

int runHeadless(int argc, char** argv) {
  if (wantsCompare(argc, argv)) return runCompareHeadless(argc, argv);  // compares, runs nothing
  CommandLine cli(
      "Comparing runs instead: ddpdesk --headless --compare DIR DIR... (ddpdesk --headless "
      "--compare --help for --x, --match, --tag, --csv)");
  if (const int rc = cli.parse(argc, argv); rc >= 0) return rc;
  if (cli.queue().given()) {
    QCoreApplication app(argc, argv);
    return cli.queue().run();
  }
  if (cli.attaching()) {
    QCoreApplication app(argc, argv);
    return runController(RunSpec(), QString::fromStdString(cli.attach()));
  }
  // Before the spec: --resume ssh://… reads it over ssh, in an event loop.
  QCoreApplication app(argc, argv);
  RunSpec spec;
  const auto problems = buildSpecFromCommandLine(cli.specFlags(), &spec);
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "ddpdesk: " << p << "\n";
    return 2;
  }
  return runController(spec, QString());
}

}  // namespace ddpdesk
