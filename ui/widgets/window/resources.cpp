#include "window/resources.h"

#include <QtGlobal>

// Q_INIT_RESOURCE declares a function at the scope it is used in: keep it outside the namespace.
static void initDdpdeskResources() {
  Q_INIT_RESOURCE(ddpdesk);
}

namespace ddpdesk {

void ensureResources() {
  static const bool done = (initDdpdeskResources(), true);
  (void)done;
}

}  // namespace ddpdesk
