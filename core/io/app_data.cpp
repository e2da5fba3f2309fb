#include "core/io/app_data.h"

#include <cstdlib>

namespace dd::io {

std::filesystem::path appDataDir(const std::string& appFolder) {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    const char* home = std::getenv("HOME");
    const std::filesystem::path base = xdg && *xdg ? std::filesystem::path(xdg)
                                                   : std::filesystem::path(home && *home ? home : ".") / ".local/share";
    return base / appFolder;
}

} // namespace dd::io
