// ddpdesk: the desktop launcher and live monitor. Thin by design: with a display and without
// `--headless` the window (ddpdesk_ui); otherwise, or in a build without the GUI, the terminal
// front end from ddpdesk_monitor.
#include <cstring>
#include <iostream>

#include "headless/headless_runner.h"
#include "run/monitor_settings.h"
#ifdef DDPDESK_WITH_GUI
#include "window/gui_app.h"
#endif

int main(int argc, char** argv) {
  // Every DDPDESK_* switch of the monitor side, read once before anything starts
  // (docs/environment.md); a malformed one is bad input whichever front end runs.
  const ddpdesk::MonitorSettingsResult settings = ddpdesk::readMonitorSettings();
  if (!settings.ok()) {
    std::cerr << "ddpdesk: " << settings.error.toStdString() << "\n";
    return 2;
  }
  ddpdesk::setMonitorSettings(settings.settings);
#ifdef DDPDESK_WITH_GUI
  bool headless = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--headless") == 0) headless = true;
  if (!headless && ddpdesk::guiAvailable()) return ddpdesk::runGui(argc, argv);
#endif
  return ddpdesk::runHeadless(argc, argv);
}
