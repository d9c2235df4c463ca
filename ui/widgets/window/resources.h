// The app's Qt resources (icons, built-in presets) live in this static library; a static
// library's resources are linked in only when something references them, hence this call.
#pragma once

namespace ddpdesk {
void ensureResources();
}
