#include "window/gui_app.h"

#include <QApplication>
#include <QTimer>
#include <csignal>
#include <iostream>

#include "checks/pre_start_check.h"
#include "form/run_spec_form.h"
#include "form/spec_settings.h"
#include "headless/command_line.h"
#include "headless/headless_message.h"
#include "headless/signal_notifier.h"
#include "run/run_controller.h"
#include "slurm/login_resume.h"
#include "window/gui_args.h"
#include "window/main_window.h"
#include "window/screen_fit.h"

namespace ddpdesk {

bool guiAvailable() {
  return !qEnvironmentVariableIsEmpty("DISPLAY") ||
         !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
         !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

namespace {

// argv-style view of strings that outlive it.
struct Argv {
  explicit Argv(std::vector<std::string>& words) {
    for (std::string& w : words) ptrs.push_back(w.data());
    ptrs.push_back(nullptr);
    argc = int(words.size());
  }
  std::vector<char*> ptrs;
  int argc;
};

}  // namespace

int runGui(int argc, char** argv) {
  SplitArguments split = splitArguments(argc, argv);
  Argv qtArgs(split.qt);
  Argv ourArgs(split.ours);
  // QApplication keeps references to argc/argv: both live until the end of this function.
  QApplication app(qtArgs.argc, qtArgs.ptrs.data());
  QApplication::setOrganizationName(QStringLiteral("ddpdesk"));
  QApplication::setApplicationName(QStringLiteral("ddpdesk"));

  CommandLine cli(
      "In the terminal instead: ddpdesk --headless --help (a run, --queue, --sweep); comparing "
      "runs there: ddpdesk --headless --compare --help");
  // What Qt left of its part must be ours too: anything else is an unknown option.
  for (int i = 1; i < qtArgs.argc; ++i) ourArgs.ptrs.insert(ourArgs.ptrs.end() - 1, qtArgs.ptrs[i]);
  ourArgs.argc = int(ourArgs.ptrs.size()) - 1;
  if (const int rc = cli.parse(ourArgs.argc, ourArgs.ptrs.data()); rc >= 0) return rc;
  if (cli.queue().given()) {  // the window's queue is its Queue tab
    std::cerr << "ddpdesk: --queue and --sweep run in the terminal: add --headless\n";
    return 2;
  }
  // Plain flags change just their fields of the spec the window would open on; --config and
  // --resume give a whole spec (the file's, the resumed run's), as in the terminal.
  if (const RunSpec opening = openingSpec(); validate(opening).empty())
    cli.specFlags().set_base_spec(opening);
  RunSpec spec;
  // --resume ssh://… : the spec is read from the run's directory on the cluster first.
  const auto problems = buildSpecFromCommandLine(cli.specFlags(), &spec);
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "ddpdesk: " << p << "\n";
    return 2;
  }
  // A resume names a run directory or checkpoint that must be there and fit: the checks the
  // terminal makes before it starts, made before the window opens, with the same one line.
  if (!spec.resume.empty()) {
    const PreStartVerdict verdict =
        checkBeforeStartNow(spec, RunController::defaultWorkerProgram());
    if (!verdict.warning.isEmpty())
      printHeadlessMessage(QStringLiteral("warning: ") + verdict.warning);
    if (!verdict.ok()) {
      printHeadlessMessage(verdict.problem);
      return 2;
    }
  }
  const bool given = cli.specGiven();
  const bool start = cli.start() && !cli.attaching();
  const std::string attach = cli.attach();

  MainWindow window;
  // Stop signals end the window as Close does, never the run with it (the ranks checkpoint).
  SignalNotifier stopSignals({SIGINT, SIGTERM, SIGHUP});
  QObject::connect(&stopSignals, &SignalNotifier::received, &window, &MainWindow::closeOnSignal);
  if (given) window.form()->setSpec(spec);
  window.startProbe();
  fitToScreen(&window);
  window.show();
  if (start) QTimer::singleShot(0, &window, &MainWindow::startRunWhenReady);
  if (!attach.empty()) window.followRun(QString::fromStdString(attach));
  return app.exec();
}

}  // namespace ddpdesk
