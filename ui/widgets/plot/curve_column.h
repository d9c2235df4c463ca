// CurveColumn: one coordinate (the keys or the values) of a chart curve's points. A curve that
// draws a metrics store's column as it is (x by step or by samples, a rank's loss, its samples/s
// over the world size) shares the column's chunks (ChunkedView) instead of copying them: copies
// cost 8 bytes a point for each coordinate of each curve, and were most of what a big run's
// charts held. Entries that no column holds (wall time shifted after a resume, a smoothed curve,
// evaluation points) are owned; a shared column switches to owning its entries (copying those it
// had) the first time it is given entries its source does not hold.
#pragma once

#include <cstddef>

#include "metrics/chunked_array.h"

namespace ddpdesk {

class CurveColumn {
 public:
  // Where the entries an append() adds come from: `n` values to copy, or a column whose entries
  // [size(), size() + n) are the new ones, each multiplied by `scale`.
  struct Input {
    const double* values = nullptr;
    const ColumnView* column = nullptr;
    double scale = 1.0;
    // `column` holds the same entries as the one shared so far, in other storage (another
    // curve's keys that moved to storage of their own): share it from now on.
    bool rebase = false;
  };
  static Input copy(const double* values) { return Input{values, nullptr, 1.0, false}; }
  static Input share(const ColumnView& column, double scale = 1.0, bool rebase = false) {
    return Input{nullptr, &column, scale, rebase};
  }

  void append(const Input& in, std::size_t n);
  void clear();

  std::size_t size() const { return shared_ ? view_.size() : own_.size(); }
  double operator[](std::size_t i) const { return (shared_ ? view_[i] : own_[i]) * scale_; }
  // The stored entries; each is multiplied by scale() when read.
  const ColumnView& entries() const { return shared_ ? view_ : own_; }
  double scale() const { return scale_; }
  // Entries borrowed from a column rather than owned.
  bool shared() const { return shared_; }

 private:
  void own();  // copies the shared entries into storage of its own

  ColumnView view_;
  Column own_;
  double scale_ = 1.0;
  bool shared_ = false;
};

}  // namespace ddpdesk
