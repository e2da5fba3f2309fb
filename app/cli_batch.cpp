#include "app/cli_commands.h"

#include <stdexcept>

namespace dd::cli {

int batchCommand(const std::vector<std::string>&) { throw std::invalid_argument("batch is not built yet"); }

} // namespace dd::cli
