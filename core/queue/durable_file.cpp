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

std::atomic<int> g_faults[4]{};

// True (with errno set) when a test injected a failure at `point`.
bool injected(FaultPoint point) {
    const int error = g_faults[int(point)].load();
    if (error != 0) errno = error;
    return error != 0;
}

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw FileWriteError(path + ": " + why); }

void writeAll(int fd, std::string_view bytes, const std::string& path) {
    if (injected(FaultPoint::Write)) {
        const int error = errno;
        (void)!::write(fd, bytes.data(), bytes.size() / 2);
        errno = error;
        fail(path, "write failed: " + errnoText());
    }
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
    const int fd = injected(FaultPoint::Create) ? -1 : ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) fail(path, "cannot create a file in " + target.parent_path().string() + ": " + errnoText());
    try {
        writeAll(fd, bytes, path);
        if (injected(FaultPoint::Sync) || ::fsync(fd) != 0) fail(path, "fsync failed: " + errnoText());
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
        const int rc = injected(FaultPoint::Publish) ? -1 : ::link(tmp.c_str(), path.c_str());
        const int err = errno;
        ::unlink(tmp.c_str());
        if (rc != 0) {
            if (err == EEXIST) throw FileExistsError(path + ": already exists");
            fail(path, std::string("cannot create: ") + std::strerror(err));
        }
    } else if (injected(FaultPoint::Publish) || ::rename(tmp.c_str(), path.c_str()) != 0) {
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
    m_fd = injected(FaultPoint::Create) ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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
    // A failed append (disk full mid-line) is cut back off: a torn line in the middle of the journal would
    // swallow the next, complete line when it is appended after it.
    const off_t before = ::lseek(m_fd, 0, SEEK_END);
    try {
        writeAll(m_fd, buf, m_path);  // O_APPEND: one write() per line, so lines never interleave
        if (injected(FaultPoint::Sync) || ::fdatasync(m_fd) != 0) fail(m_path, "fsync failed: " + errnoText());
    } catch (...) {
        if (before >= 0) (void)!::ftruncate(m_fd, before);
        throw;
    }
}

void injectFault(FaultPoint point, int error) { g_faults[int(point)] = error; }

} // namespace dd::queue
