#include "ui/xyzplot.h"

#include "imaging/plot_sheet.h"
#include "imaging/png.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
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
    nlohmann::json axes = nlohmann::json::array(), images = nlohmann::json::object();
    for (const auto& a : m_axes) axes.push_back({{"field", a.field}, {"values", a.values}});
    for (auto it = m_images.begin(); it != m_images.end(); ++it) images[std::to_string(it.key())] = it.value().toStdString();
    return {{"id", m_id.toStdString()}, {"axes", axes}, {"cells", m_cells}, {"images", images}};
}

PlotRun PlotRun::fromJson(const nlohmann::json& j) {
    std::vector<compare::PlotAxis> axes;
    for (const auto& a : j.at("axes")) axes.push_back({a.at("field").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
    PlotRun run(std::move(axes), j.at("cells").get<int>());
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

// Whole or not at all, as the queue's journal: a crash while writing leaves the previous book.
void PlotBook::save() {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& r : m_runs) all.push_back(r.toJson());
    QDir().mkpath(QFileInfo(m_file).absolutePath());
    QSaveFile out(m_file);
    if (out.open(QIODevice::WriteOnly)) {
        out.write(QByteArray::fromStdString(all.dump(1)));
        out.commit();
    }
}

} // namespace dd::ui
