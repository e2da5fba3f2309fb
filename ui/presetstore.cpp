#include "ui/presetstore.h"

#include "core/memory/memory_probe.h"
#include "core/memory/shipped_presets.h"

#include <QDir>
#include <QRegularExpression>
#include <QStandardPaths>

namespace dd::ui {

QString shippedPresetDir() { return QString::fromStdString(memory::shippedPresetDir()); }

QString customPresetDir() {
    return QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation) + QStringLiteral("/presets");
}

std::vector<PresetEntry> loadAllPresets(QStringList* errors) {
    std::vector<PresetEntry> all;
    for (const QString& dir : {shippedPresetDir(), customPresetDir()}) {
        if (!QDir(dir).exists()) continue;
        std::vector<std::string> errs;
        for (auto& p : memory::loadPresets(dir.toStdString(), &errs)) all.push_back({std::move(p), dir == customPresetDir()});
        if (errors)
            for (const auto& e : errs) *errors << QString::fromStdString(e);
    }
    return all;
}

QString saveCustomPreset(const memory::Preset& preset) {
    QDir().mkpath(customPresetDir());
    QString file = QString::fromStdString(preset.name);
    file.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]+")), QStringLiteral("_"));
    const QString path = customPresetDir() + '/' + file + QStringLiteral(".json");
    memory::savePreset(preset, path.toStdString());
    return path;
}

MachineMemory machineMemory() {
    const auto t = memory::presetTarget();
    return {t.cuda, t.bytes, QString::fromStdString(t.deviceName)};
}

QString recommendedPresetName(const std::vector<PresetEntry>& presets, const MachineMemory& machine) {
    std::vector<memory::Preset> shipped;
    for (const auto& e : presets)
        if (!e.custom) shipped.push_back(e.preset);
    const auto* best = memory::recommendPreset(shipped, machine.bytes, machine.cuda);
    return best ? QString::fromStdString(best->name) : QString();
}

} // namespace dd::ui
