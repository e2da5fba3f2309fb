#include "core/io/atomic_file.h"

#include "core/io/model_error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace dd::io {

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
    const std::string tmp = path + ".partial";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw ModelFileError(path, std::string("cannot write: ") + std::strerror(errno));
        write(out);
        out.flush();
        if (!out) {
            out.close();
            std::remove(tmp.c_str());
            throw ModelFileError(path, "write failed (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw ModelFileError(path, "cannot replace file: " + ec.message());
    }
}

} // namespace dd::io
