#include "gui_app.h"

#include <QApplication>
#include <QTimer>
#include <iostream>

#include "main_window.h"
#include "run_form.h"
#include "spec_flags.h"

namespace ddpdesk {

bool guiAvailable() {
  return !qEnvironmentVariableIsEmpty("DISPLAY") ||
         !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
         !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

int runGui(int argc, char** argv) {
  // First, so Qt takes its own arguments (-platform, -style, ...) out of argv.
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ddpdesk"));
  QApplication::setApplicationName(QStringLiteral("ddpdesk"));

  CLI::App cli{"Launches LibTorch DDP training ranks on this machine and monitors them.",
               "ddpdesk"};
  bool start = qEnvironmentVariable("DDPDESK_AUTOSTART") == QLatin1String("1");
  bool headless = false;
  cli.add_flag("--headless", headless, "run in the terminal, without a window");
  cli.add_flag("--start", start, "start the run at once");
  SpecFlags flags(cli, /*with_nproc=*/true);
  if (const int rc = parse_cli(cli, argc, argv); rc >= 0) return rc;
  RunSpec spec;
  const auto problems = flags.build(spec);
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "ddpdesk: " << p << "\n";
    return 2;
  }
  // Flags or a config given on the command line win over the remembered spec.
  bool given = false;
  for (const CLI::Option* o : cli.get_options())
    if (o->count() > 0 && o->get_name() != "--start" && o->get_name() != "--headless") given = true;

  MainWindow window;
  if (given) window.form()->setSpec(spec);
  window.startProbe();
  window.show();
  if (start) QTimer::singleShot(0, &window, &MainWindow::startRun);
  return app.exec();
}

}  // namespace ddpdesk
