#include "window/gui_app.h"

#include <QApplication>
#include <QFileInfo>
#include <QTimer>
#include <iostream>

#include <CLI/CLI.hpp>

#include "form/run_spec_form.h"
#include "run/monitor_settings.h"
#include "slurm/login_resume.h"
#include "spec_flags.h"
#include "ssh/ssh_target.h"
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

  CLI::App cli{"Launches LibTorch DDP training ranks on this machine and monitors them.",
               "ddpdesk"};
  bool start = monitorSettings().autostart;
  bool headless = false;
  cli.add_flag("--headless", headless, "run in the terminal, without a window");
  cli.add_flag("--start", start, "start the run at once");
  std::string attach;
  cli.add_option("--attach", attach,
                 "follow the run in this directory (its ranks write metrics/rank-N.jsonl), or "
                 "on another host: ssh://[user@]host[:port]/dir");
  SpecFlags flags(cli, /*with_nproc=*/true);
  cli.footer(
      "In the terminal instead: ddpdesk --headless --help (a run, --queue, --sweep); comparing "
      "runs there: ddpdesk --headless --compare --help");
  // What Qt left of its part must be ours too: anything else is an unknown option.
  for (int i = 1; i < qtArgs.argc; ++i) ourArgs.ptrs.insert(ourArgs.ptrs.end() - 1, qtArgs.ptrs[i]);
  ourArgs.argc = int(ourArgs.ptrs.size()) - 1;
  if (const int rc = parse_cli(cli, ourArgs.argc, ourArgs.ptrs.data()); rc >= 0) return rc;
  RunSpec spec;
  // --resume ssh://… : the spec is read from the run's directory on the cluster first.
  const auto problems = buildSpecFromCommandLine(flags, &spec);
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "ddpdesk: " << p << "\n";
    return 2;
  }
  // Flags or a config given on the command line win over the remembered spec.
  bool given = false;
  for (const CLI::Option* o : cli.get_options())
    if (o->count() > 0 && o->get_name() != "--start" && o->get_name() != "--headless" &&
        o->get_name() != "--attach")
      given = true;
  if (!attach.empty() && (given || start)) {
    std::cerr << "ddpdesk: invalid --attach with run flags: a followed run keeps the flags it "
                 "was started with\n";
    return 2;
  }
  if (!attach.empty()) {  // a host that cannot be reached is shown in the window
    const QString target = QString::fromStdString(attach);
    QString error;
    if (SshTarget::looksLikeUrl(target) && !SshTarget::parse(target, &error)) {
      std::cerr << "ddpdesk: " << error.toStdString() << "\n";
      return 2;
    }
    if (!SshTarget::looksLikeUrl(target) && !QFileInfo(target).isDir()) {
      std::cerr << "ddpdesk: invalid --attach '" << attach << "': not a directory\n";
      return 2;
    }
  }

  MainWindow window;
  if (given) window.form()->setSpec(spec);
  window.startProbe();
  fitToScreen(&window);
  window.show();
  if (start) QTimer::singleShot(0, &window, &MainWindow::startRunWhenReady);
  if (!attach.empty()) window.followRun(QString::fromStdString(attach));
  return app.exec();
}

}  // namespace ddpdesk
