#pragma once
// An X/Y/Z plot in the window (docs/explore.md): its cells run as queued jobs of their own, whose specs carry the
// plot's id and the cell's index ("xyz_plot": "<id>/<cell>"); each saved image is collected here, and the sheets
// (one per Z value, imaging/plot_sheet.h) are written beside them when the last cell is in.
#include "core/compare/xyz_plot.h"

#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

namespace dd::ui {

class PlotRun {
public:
    PlotRun(std::vector<compare::PlotAxis> axes, int cells);
    const QString& id() const { return m_id; }
    int cells() const { return m_cells; }
    int collected() const { return int(m_images.size()); }
    QString jobTag(int cell) const { return m_id + '/' + QString::number(cell); }
    // The plot and cell a job's spec names, when it is one of this plot's.
    std::optional<int> cellOf(const QString& specJson) const;
    // A cell's saved image; true when it was the last one missing.
    bool add(int cell, const QString& image);
    // The sheets, xyz-NNNN.png in `folder` (never over a file), the first cell's A1111 text in each. Throws
    // std::runtime_error naming a cell image that cannot be read or a sheet that cannot be written.
    QStringList writeSheets(const QString& folder) const;

private:
    QString m_id;
    std::vector<compare::PlotAxis> m_axes;
    int m_cells;
    QMap<int, QString> m_images;
};

} // namespace dd::ui
