#pragma once
// A finished job's answer read back from the images it saved: each file's A1111 text, its sidecar's settings and
// seed. Used for a job finished by an earlier process, and by the window, whose runs save through its library.
#include "server/generation_service.h"

#include <string>
#include <vector>

namespace dd::server {

// Files that were deleted or damaged since are left out (the others still answer).
void addSavedImages(const std::vector<std::string>& files, ServiceResult& result);

} // namespace dd::server
