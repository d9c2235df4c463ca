// ddpdesk: the desktop launcher and live monitor. Thin by design: `--headless` (or a build
// without the GUI) runs the terminal front end from ddpdesk_monitor.
#include <cstring>

#include "headless_runner.h"

int main(int argc, char** argv) {
#ifdef DDPDESK_WITH_GUI
  bool headless = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--headless") == 0) headless = true;
  if (!headless) {
    // The GUI front end (ddpdesk_ui) goes here.
  }
#endif
  return ddpdesk::runHeadless(argc, argv);
}
