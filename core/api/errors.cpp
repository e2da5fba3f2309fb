#include "core/api/errors.h"

#include <new>

namespace dd::api {

std::string failureMessage(const std::exception& e) {
    if (dynamic_cast<const Cancelled*>(&e)) return "Cancelled.";
    if (dynamic_cast<const std::bad_alloc*>(&e))
        return "Out of memory: a memory allocation failed. Try a smaller size, a smaller batch or a lower-memory preset.";
    return e.what();
}

} // namespace dd::api
