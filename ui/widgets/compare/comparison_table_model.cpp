#include "compare/comparison_table_model.h"

namespace ddpdesk {

void ComparisonTableModel::setTable(ComparisonTable table, std::vector<QColor> colors) {
  beginResetModel();
  table_ = std::move(table);
  colors_ = std::move(colors);
  header_ = table_.header();
  cells_.clear();
  for (std::size_t r = 0; r < table_.rows.size(); ++r) cells_.push_back(table_.cells(r));
  endResetModel();
}

int ComparisonTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(cells_.size());
}

int ComparisonTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(header_.size());
}

QVariant ComparisonTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(cells_.size())) return {};
  if (role == Qt::DisplayRole) return cells_[std::size_t(index.row())].value(index.column());
  if (role == Qt::DecorationRole && index.column() == 0 &&
      std::size_t(index.row()) < colors_.size())
    return colors_[std::size_t(index.row())];
  if (role == Qt::TextAlignmentRole && index.column() > table_.fields.size())
    return int(Qt::AlignRight | Qt::AlignVCenter);  // the figures
  return {};
}

QVariant ComparisonTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return header_.value(section);
}

}  // namespace ddpdesk
