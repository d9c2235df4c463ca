// Sizes a top-level window to what its screen can show: the size it asks for, but no larger
// than the screen's free area (less the window manager's frame), and placed inside it. A window
// larger than the screen hides its right-hand controls off-screen.
#pragma once

class QWidget;

namespace ddpdesk {

// Call before the first show(); a -geometry given on the command line still wins.
void fitToScreen(QWidget* window);

}  // namespace ddpdesk
