#pragma once
// Base64 as A1111's API carries images ("data:image/png;base64," prefixes accepted on input), through OpenSSL.
#include <string>
#include <string_view>

namespace dd::server {

std::string toBase64(std::string_view bytes);
// Throws std::invalid_argument for text that is not base64 (after an optional "data:...;base64," prefix).
std::string fromBase64(std::string_view text);

} // namespace dd::server
