// The comparison's table (run_comparison.h: the spec fields that differ, final and best loss,
// validation loss and accuracy, samples/s, wall time) as a read-only Qt model, each run's row
// marked with the colour of its curves.
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <vector>

#include "compare/run_comparison.h"

namespace ddpdesk {

class ComparisonTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;

  // `colors[i]`: run i's curve colour (none: no marker).
  void setTable(ComparisonTable table, std::vector<QColor> colors = {});
  const ComparisonTable& table() const { return table_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  ComparisonTable table_;
  QStringList header_;
  std::vector<QStringList> cells_;
  std::vector<QColor> colors_;
};

}  // namespace ddpdesk
