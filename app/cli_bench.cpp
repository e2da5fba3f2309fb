#include "app/cli_commands.h"

#include <stdexcept>

namespace dd::cli {

int benchCommand(const std::vector<std::string>&) { throw std::invalid_argument("bench is not built yet"); }

} // namespace dd::cli
