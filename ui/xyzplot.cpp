#include "ui/xyzplot.h"

#include "core/io/atomic_file.h"
#include "imaging/plot_sheet.h"
#include "imaging/png.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
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

nlohmann::json PlotRun::toJson() const {
    nlohmann::json images = nlohmann::json::object();
    for (auto it = m_images.begin(); it != m_images.end(); ++it) images[std::to_string(it.key())] = it.value().toStdString();
    return {{"id", m_id.toStdString()}, {"axes", m_axes}, {"cells", m_cells}, {"images", images}};
}

PlotRun PlotRun::fromJson(const nlohmann::json& j) {
    PlotRun run(j.at("axes").get<std::vector<compare::PlotAxis>>(), j.at("cells").get<int>());
    run.m_id = QString::fromStdString(j.at("id").get<std::string>());
    for (const auto& [cell, image] : j.at("images").items()) run.m_images[std::stoi(cell)] = QString::fromStdString(image.get<std::string>());
    return run;
}

bool PlotRun::add(int cell, const QString& image) {
    const bool wasMissing = !m_images.contains(cell);
    m_images[cell] = image;
    return wasMissing && collected() == m_cells;
}

QStringList PlotRun::writeSheets(const QString& folder) const {
    std::vector<api::Image> cells;
    for (int c = 0; c < m_cells; ++c) cells.push_back(imaging::readImage(m_images.value(c).toStdString()));
    const auto first = imaging::readPngText(m_images.value(0).toStdString());
    const auto parameters = first.find("parameters");
    QStringList written;
    for (const auto& sheet : imaging::writePlotSheets(m_axes, cells, parameters == first.end() ? std::string() : parameters->second,
                                                      folder.toStdString()))
        written << QString::fromStdString(sheet);
    return written;
}

PlotBook::PlotBook(QString file) : m_file(std::move(file)) {
    QFile f(m_file);
    if (!f.exists()) return;
    try {
        if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot be read");
        for (const auto& j : nlohmann::json::parse(f.readAll().toStdString())) m_runs.push_back(PlotRun::fromJson(j));
    } catch (const std::exception& e) {
        m_runs.clear();
        f.close();
        QFile::remove(m_file + ".damaged");
        QFile::rename(m_file, m_file + ".damaged");
        m_problem = QStringLiteral("%1: %2; set aside as %1.damaged (the plots' images are in the library)").arg(m_file, e.what());
    }
}

const PlotRun& PlotBook::start(std::vector<compare::PlotAxis> axes, int cells) {
    m_runs.emplace_back(std::move(axes), cells);
    save();
    return m_runs.back();
}

void PlotBook::drop(const QString& id) {
    std::erase_if(m_runs, [&](const PlotRun& r) { return r.id() == id; });
    save();
}

std::optional<PlotRun> PlotBook::cellSaved(const QString& specJson, const QString& image) {
    for (auto it = m_runs.begin(); it != m_runs.end(); ++it) {
        const auto cell = it->cellOf(specJson);
        if (!cell) continue;
        const bool complete = it->add(*cell, image);
        std::optional<PlotRun> done;
        if (complete) done = std::move(*it), m_runs.erase(it);
        save();
        return done;
    }
    return std::nullopt;
}

// Whole or not at all (io/atomic_file.h): a crash while writing leaves the previous book. A book that cannot be
// written costs only the sheets of a plot interrupted before its end; the cells are in the library either way.
void PlotBook::save() {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& r : m_runs) all.push_back(r.toJson());
    QDir().mkpath(QFileInfo(m_file).absolutePath());
    const std::string text = all.dump(1);
    try {
        io::writeFileAtomically(m_file.toStdString(), [&](std::ostream& out) { out << text; });
    } catch (const std::exception&) {
    }
}

} // namespace dd::ui
