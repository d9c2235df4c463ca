// The main window's menu bar (File, Run, View), built from the window's public parts and slots
// only, so that an entry is added here without touching how the window is put together.
#pragma once

namespace ddpdesk {

class MainWindow;

void addWindowMenus(MainWindow* window);

}  // namespace ddpdesk
