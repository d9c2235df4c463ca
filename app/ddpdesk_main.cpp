// ddpdesk: the desktop launcher and live monitor. Thin by design: with a display and without
// `--headless` the window (ddpdesk_ui); otherwise, or in a build without the GUI, the terminal
// front end from ddpdesk_monitor.
#include <cstring>

#include "headless_runner.h"
#ifdef DDPDESK_WITH_GUI
#include "gui_app.h"
#endif

int main(int argc, char** argv) {
#ifdef DDPDESK_WITH_GUI
  bool headless = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--headless") == 0) headless = true;
  if (!headless && ddpdesk::guiAvailable()) return ddpdesk::runGui(argc, argv);
#endif
  return ddpdesk::runHeadless(argc, argv);
}
