#include "window/gui_args.h"

#include <set>

#include "run_spec.h"

namespace ddpdesk {

SplitArguments splitArguments(int argc, const char* const* argv) {
  std::set<std::string> withValue = {"--config", "--attach"};
  for (const FieldInfo& f : run_spec_fields()) withValue.insert(field_label(f.key, Spelling::Flag));
  const std::set<std::string> switches = {"--start", "--headless"};

  SplitArguments out;
  const std::string prog = argc > 0 ? argv[0] : "ddpdesk";
  out.ours.push_back(prog);
  out.qt.push_back(prog);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string name = a.substr(0, a.find('='));
    if (switches.count(a)) {
      out.ours.push_back(a);
    } else if (withValue.count(name)) {
      out.ours.push_back(a);
      if (name == a && i + 1 < argc) out.ours.push_back(argv[++i]);  // "--flag value"
    } else {
      out.qt.push_back(a);
    }
  }
  return out;
}

}  // namespace ddpdesk
