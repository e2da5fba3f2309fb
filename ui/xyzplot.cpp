#include "ui/xyzplot.h"

#include "imaging/plot_sheet.h"
#include "imaging/png.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QUuid>

#include <stdexcept>

namespace dd::ui {

PlotRun::PlotRun(std::vector<compare::PlotAxis> axes, int cells)
    : m_id(QUuid::createUuid().toString(QUuid::WithoutBraces).left(8)), m_axes(std::move(axes)), m_cells(cells) {}

std::optional<int> PlotRun::cellOf(const QString& specJson) const {
    if (!specJson.contains(m_id)) return std::nullopt;
    const auto spec = nlohmann::json::parse(specJson.toStdString(), nullptr, false);
    if (!spec.is_object() || !spec.contains("xyz_plot") || !spec["xyz_plot"].is_string()) return std::nullopt;
    const QString tag = QString::fromStdString(spec["xyz_plot"].get<std::string>());
    if (!tag.startsWith(m_id + '/')) return std::nullopt;
    bool ok = false;
    const int cell = tag.mid(m_id.size() + 1).toInt(&ok);
    return ok && cell >= 0 && cell < m_cells ? std::optional<int>(cell) : std::nullopt;
}

bool PlotRun::add(int cell, const QString& image) {
    const bool wasMissing = !m_images.contains(cell);
    m_images[cell] = image;
    return wasMissing && collected() == m_cells;
}

QStringList PlotRun::writeSheets(const QString& folder) const {
    const auto labels = [&](size_t a) {
        std::vector<std::string> out;
        if (a < m_axes.size())
            for (const auto& v : m_axes[a].values) out.push_back(m_axes[a].field + ": " + v);
        return out;
    };
    imaging::SheetLayout layout{labels(0), labels(1), {}};
    const int perSheet = int(std::max<size_t>(1, layout.columns.size()) * std::max<size_t>(1, layout.rows.size()));
    const auto zs = labels(2);
    const auto first = imaging::readPngText(m_images.value(0).toStdString());
    const std::string parameters = first.count("parameters") ? first.at("parameters") : std::string();
    nlohmann::json plot = nlohmann::json::array();
    for (const auto& a : m_axes) plot.push_back({{"field", a.field}, {"values", a.values}});
    QStringList written;
    for (int z = 0; z * perSheet < m_cells; ++z) {
        layout.title = size_t(z) < zs.size() ? zs[size_t(z)] : std::string();
        std::vector<api::Image> cells;
        for (int c = z * perSheet; c < (z + 1) * perSheet; ++c) cells.push_back(imaging::readImage(m_images.value(c).toStdString()));
        QString sheet;
        for (int n = 1; sheet.isEmpty() || QFile::exists(sheet); ++n) sheet = QDir(folder).filePath(QStringLiteral("xyz-%1.png").arg(n, 4, 10, QChar('0')));
        imaging::writePng(sheet.toStdString(), imaging::composeSheet(cells, layout), {{"parameters", parameters}, {"xyz_plot", plot.dump()}});
        written << sheet;
    }
    return written;
}

} // namespace dd::ui
