#pragma once
// An X/Y/Z plot in the window (docs/explore.md): its cells run as queued jobs of their own, whose specs carry the
// plot's id and the cell's index ("xyz_plot": "<id>/<cell>"); each saved image is collected here, and the sheets
// (one per Z value, imaging/plot_sheet.h) are written beside them when the last cell is in. The plots under way are
// kept in a file (PlotBook), so a plot whose window quit or crashed gets its sheets when the queue, resumed after
// the restart, saves its last cell.
#include "core/compare/xyz_plot.h"

#include <QMap>
#include <QString>
#include <QStringList>

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <vector>

namespace dd::ui {

class PlotRun {
public:
    PlotRun(std::vector<compare::PlotAxis> axes, int cells);
    nlohmann::json toJson() const;
    static PlotRun fromJson(const nlohmann::json& j);  // throws nlohmann::json::exception
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

class PlotBook {
public:
    explicit PlotBook(QString file);  // reads the plots under way; a file that cannot be read is set aside (".damaged")
    const std::vector<PlotRun>& runs() const { return m_runs; }
    const PlotRun& start(std::vector<compare::PlotAxis> axes, int cells);
    void drop(const QString& id);
    // A saved job's image: the plot it completed, taken out of the book; nothing when it completed none.
    std::optional<PlotRun> cellSaved(const QString& specJson, const QString& image);
    QString problem() const { return m_problem; }  // what happened to a damaged file, once

private:
    void save();

    QString m_file, m_problem;
    std::vector<PlotRun> m_runs;
};

} // namespace dd::ui
