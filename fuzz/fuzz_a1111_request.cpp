// Any bytes as the body of an A1111 API request (/sdapi/v1/txt2img, /img2img) and as a base64 image: read into
// settings or refused with FieldError (HTTP 422), never a crash; what is read passes validate() and answers.
#include "server/a1111_request.h"
#include "server/a1111_response.h"
#include "server/base64.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        (void)dd::server::fromBase64(text);
    } catch (const std::invalid_argument&) {
    }
    const auto body = nlohmann::json::parse(text, nullptr, false);
    if (body.is_discarded()) return 0;
    for (auto read : {&dd::server::readTxt2Img, &dd::server::readImg2Img}) {
        try {
            const auto run = read(body);
            dd::server::ServiceResult result;
            result.settings = run.settings;
            (void)dd::server::runInfo(run, result, "fuzz").dump();
        } catch (const dd::server::FieldError&) {
        }
    }
    return 0;
}
