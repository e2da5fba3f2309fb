#pragma once
// Files that survive a crash or kill -9 at any instant: readers see either nothing or the complete file.
// Used by the exporter (images, sidecars) and the queue journal. POSIX only; pure (no torch, no Qt).
//
//   writeFileDurably(dir + "/cat.png", pngBytes, Replace::Never);  // throws FileExistsError if it exists
//   AppendLog log(dir + "/queue.jsonl");  log.append(line);         // fsync'ed before append() returns
#include <stdexcept>
#include <string>
#include <string_view>

namespace dd::queue {

class FileWriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
class FileExistsError : public FileWriteError {
public:
    using FileWriteError::FileWriteError;
};

enum class Replace { Never, Allowed };

// Writes a hidden temporary file in the same folder (".<name>.<pid>-<n>.ddtmp"), flushes and fsyncs it,
// then publishes it under `path`: link(2) for Replace::Never (atomic "create if absent": an existing file is
// never touched), rename(2) for Replace::Allowed; then fsyncs the folder so the name itself is durable.
// On any failure the temporary file is removed and FileWriteError names `path` and the reason.
void writeFileDurably(const std::string& path, std::string_view bytes, Replace replace = Replace::Never);

// Temporaries left by a process killed mid-write (".*.ddtmp" in `dir`); returns how many were removed.
// `forName` non-empty: only the temporaries of that file name (safe while other processes write other names
// into `dir`, e.g. batch shards sharing one output folder); empty: all (no other writer may be active).
int removeStaleTemporaries(const std::string& dir, std::string_view forName = {});

// True for names writeFileDurably uses for its temporaries.
bool isTemporaryName(std::string_view fileName);

// An append-only text file: every append() writes one line and fsyncs before returning. A kill during
// append() can leave a torn last line without '\n'; readers skip it (see JobQueue).
class AppendLog {
public:
    explicit AppendLog(const std::string& path);  // creates the file (and fsyncs its folder) when missing
    ~AppendLog();
    AppendLog(const AppendLog&) = delete;
    AppendLog& operator=(const AppendLog&) = delete;

    void append(std::string_view line);  // `line` must not contain '\n'
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
    int m_fd = -1;
};

// Test hook (fault injection): every operation at `point` fails with `error` (ENOSPC: disk full, EACCES:
// permission denied, ENOENT: folder vanished) until it is cleared with error 0. A Write fault writes half of
// the bytes first, as a disk filling up mid-write does. Process-wide; tests only.
enum class FaultPoint { Create, Write, Sync, Publish };
void injectFault(FaultPoint point, int error);

} // namespace dd::queue
