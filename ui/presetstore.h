#pragma once
// Where presets live: the shipped ones (<resources>/presets) and the user's custom ones
// (<AppConfigLocation>/presets), read together.
#include "core/memory/preset.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace dd::ui {

struct PresetEntry {
    memory::Preset preset;
    bool custom = false;  // the user's own (saved from the preset dialog)
};

QString shippedPresetDir();
QString customPresetDir();
// Shipped then custom, each sorted by budget; files that fail to parse are named in `errors`.
std::vector<PresetEntry> loadAllPresets(QStringList* errors = nullptr);
// Writes <customPresetDir>/<name>.json (atomic). Throws std::runtime_error naming the file.
QString saveCustomPreset(const memory::Preset& preset);
// Memory the recommendation is sized against: the GPU's total on CUDA, else RAM.
struct MachineMemory {
    bool cuda = false;
    qint64 bytes = 0;
    QString device;
};
MachineMemory machineMemory();
// The recommended preset's name for this machine ("" if none fits).
QString recommendedPresetName(const std::vector<PresetEntry>& presets, const MachineMemory& machine);

} // namespace dd::ui
