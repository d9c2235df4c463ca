#include "plot/curve_column.h"

namespace ddpdesk {
namespace {

// Views of the same storage (the shorter a prefix of the longer); an empty one shares anything.
bool sameStorage(const ColumnView& a, const ColumnView& b) {
  return a.empty() || b.empty() || &a[0] == &b[0];
}

}  // namespace

void CurveColumn::append(const Input& in, std::size_t n) {
  if (n == 0) return;
  const std::size_t from = size();
  if (in.column) {
    const ColumnView& c = *in.column;
    const bool sameEntries =
        from == 0 || (in.scale == scale_ && (in.rebase || (shared_ && sameStorage(view_, c))));
    if (sameEntries) {
      view_ = c.prefix(from + n);
      scale_ = in.scale;
      shared_ = true;
      own_.clear();
      return;
    }
    own();
    for (std::size_t i = from; i < from + n; ++i) own_.push_back(c[i] * in.scale);
    return;
  }
  own();
  for (std::size_t i = 0; i < n; ++i) own_.push_back(in.values[i]);
}

void CurveColumn::own() {
  if (!shared_) return;
  own_.clear();
  for (std::size_t i = 0; i < view_.size(); ++i) own_.push_back(view_[i] * scale_);
  view_ = ColumnView();
  scale_ = 1.0;
  shared_ = false;
}

void CurveColumn::clear() {
  view_ = ColumnView();
  own_.clear();
  scale_ = 1.0;
  shared_ = false;
}

}  // namespace ddpdesk
