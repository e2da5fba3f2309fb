#pragma once
// A QStringList as the engine's std::vector<std::string> (folder lists, file names).
#include <QStringList>

#include <string>
#include <vector>

namespace dd::ui {

inline std::vector<std::string> toStdStrings(const QStringList& list) {
    std::vector<std::string> out;
    out.reserve(size_t(list.size()));
    for (const QString& s : list) out.push_back(s.toStdString());
    return out;
}

} // namespace dd::ui
