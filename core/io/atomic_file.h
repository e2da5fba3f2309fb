#pragma once
// Writing a file so that readers see either the old file or the complete new one, never a partial one:
// `write` fills "<path>.partial", which is renamed over `path` only when every byte was written.
#include <functional>
#include <ostream>
#include <string>

namespace dd::io {

// Throws ModelFileError naming `path` (folder missing, disk full, rename refused); the partial file is removed.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write);

} // namespace dd::io
