#include "server/base64.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace dd::server {

std::string toBase64(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()), int(bytes.size()));
    out.resize(size_t(n));
    return out;
}

std::string fromBase64(std::string_view text) {
    if (text.rfind("data:", 0) == 0) {
        const auto comma = text.find(',');
        if (comma == std::string_view::npos || text.substr(0, comma).find(";base64") == std::string_view::npos)
            throw std::invalid_argument("a data URL that is not base64");
        text.remove_prefix(comma + 1);
    }
    std::string clean;
    clean.reserve(text.size());
    for (char c : text)
        if (c != '\n' && c != '\r' && c != ' ') clean += c;
    // Clients often drop the padding; EVP_DecodeBlock needs whole quads.
    while (clean.size() % 4) clean += '=';
    std::string out(clean.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(clean.data()), int(clean.size()));
    if (n < 0) throw std::invalid_argument("not base64");
    size_t pad = 0;  // EVP_DecodeBlock counts the padding as zero bytes
    for (size_t i = clean.size(); i > 0 && clean[i - 1] == '=' && pad < 2; --i) ++pad;
    out.resize(size_t(n) - pad);
    return out;
}

} // namespace dd::server
