// `ddpdesk` with a window: the entry point the thin main calls when there is a display and no
// --headless. Options: the run spec flags and --config (as for --headless) fill the form;
// --start (or DDPDESK_AUTOSTART=1) starts the run at once, as the screenshot script does.
#pragma once

namespace ddpdesk {

// True when a window can be shown: a DISPLAY, a WAYLAND_DISPLAY or an explicit QT_QPA_PLATFORM.
bool guiAvailable();
int runGui(int argc, char** argv);

}  // namespace ddpdesk
