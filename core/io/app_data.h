#pragma once
// The app's data folder, where the window (Qt's AppDataLocation) and the CLI keep what they share: the image library's
// index, the prompt styles. $XDG_DATA_HOME (else ~/.local/share) / DiffusionDesk/DiffusionDesk.
#include <filesystem>
#include <string>

namespace dd::io {

std::filesystem::path appDataDir(const std::string& appFolder = "DiffusionDesk/DiffusionDesk");

} // namespace dd::io
