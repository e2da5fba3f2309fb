#pragma once
// What A1111's API answers (modules/api/api.py, models.py, processing.py::Processed.js): the `info` JSON string
// of a run, the png-info reading, and the lists clients fetch to fill their menus.
#include "server/a1111_request.h"
#include "server/generation_service.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace dd::server {

// Processed.js()'s keys, from the run as made; "warnings" adds what the request asked for and did not get.
nlohmann::json runInfo(const ApiRun& request, const ServiceResult& result, const std::string& version);

// /sdapi/v1/png-info: {"info": the A1111 text, "items": the other text chunks, "parameters": the text read into
// A1111's key → value dictionary}. `text` is the image's text metadata (settings::readImageText).
nlohmann::json pngInfo(const std::map<std::string, std::string>& text);

nlohmann::json samplerList();    // /sdapi/v1/samplers
nlohmann::json schedulerList();  // /sdapi/v1/schedulers

// FastAPI's 422 body for one field.
nlohmann::json validationError(const std::string& field, const std::string& message, const std::string& type);
// A1111's body for any other failure (api.py's handle_exception): {"error", "detail", "body", "errors"}.
nlohmann::json failureBody(const std::string& error, const std::string& message);

} // namespace dd::server
