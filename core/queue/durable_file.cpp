#include "core/queue/durable_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dd::queue {
namespace fs = std::filesystem;
namespace {

std::string errnoText() { return std::strerror(errno); }

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw FileWriteError(path + ": " + why); }

void writeAll(int fd, std::string_view bytes, const std::string& path) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(path, "write failed: " + errnoText());
        bytes.remove_prefix(std::size_t(n));
    }
}

// The folder entry (a new name, a rename) is only durable once the folder itself is synced.
void syncFolder(const fs::path& dir) {
    const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

std::string temporaryFor(const fs::path& target) {
    static std::atomic<unsigned> counter{0};
    const std::string name = "." + target.filename().string() + "." + std::to_string(::getpid()) + "-" +
                             std::to_string(counter++) + ".ddtmp";
    return (target.parent_path() / name).string();
}

} // namespace

bool isTemporaryName(std::string_view name) {
    return name.size() > 7 && name.front() == '.' && name.substr(name.size() - 6) == ".ddtmp";
}

void writeFileDurably(const std::string& path, std::string_view bytes, Replace replace) {
    const fs::path target(path);
    if (target.filename().empty()) fail(path, "not a file name");
    if (replace == Replace::Never && fs::exists(fs::symlink_status(target))) throw FileExistsError(path + ": already exists");
    const std::string tmp = temporaryFor(target);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) fail(path, "cannot create a file in " + target.parent_path().string() + ": " + errnoText());
    try {
        writeAll(fd, bytes, path);
        if (::fsync(fd) != 0) fail(path, "fsync failed: " + errnoText());
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (::close(fd) != 0) {
        ::unlink(tmp.c_str());
        fail(path, "close failed (disk full?): " + errnoText());
    }
    if (replace == Replace::Never) {
        // link() fails with EEXIST instead of replacing: two writers racing for one name cannot clobber.
        const int rc = ::link(tmp.c_str(), path.c_str());
        const int err = errno;
        ::unlink(tmp.c_str());
        if (rc != 0) {
            if (err == EEXIST) throw FileExistsError(path + ": already exists");
            fail(path, std::string("cannot create: ") + std::strerror(err));
        }
    } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = errnoText();
        ::unlink(tmp.c_str());
        fail(path, "cannot replace: " + why);
    }
    syncFolder(target.parent_path());
}

int removeStaleTemporaries(const std::string& dir, std::string_view forName) {
    int removed = 0;
    std::error_code ec;
    const std::string prefix = "." + std::string(forName) + ".";
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string n = e.path().filename().string();
        if (!isTemporaryName(n) || (!forName.empty() && n.rfind(prefix, 0) != 0)) continue;
        if (fs::remove(e.path(), ec)) ++removed;
    }
    return removed;
}

AppendLog::AppendLog(const std::string& path) : m_path(path) {
    const bool existed = fs::exists(path);
    m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m_fd < 0) fail(path, "cannot open for appending: " + errnoText());
    if (!existed) syncFolder(fs::path(path).parent_path());
}

AppendLog::~AppendLog() {
    if (m_fd >= 0) ::close(m_fd);
}

void AppendLog::append(std::string_view line) {
    if (line.find('\n') != std::string_view::npos) fail(m_path, "a journal line must not contain a newline");
    std::string buf(line);
    buf += '\n';
    writeAll(m_fd, buf, m_path);  // O_APPEND: one write() per line, so lines never interleave
    if (::fdatasync(m_fd) != 0) fail(m_path, "fsync failed: " + errnoText());
}

} // namespace dd::queue
