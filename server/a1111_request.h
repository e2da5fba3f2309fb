#pragma once
// The bodies of A1111's /sdapi/v1/txt2img and /img2img (modules/api/models.py: StableDiffusionTxt2Img- and
// Img2ImgProcessingAPI) read into the settings a run takes. Clients such as the webuiapi package send every field
// with its default on every request, so a field DiffusionDesk does not compute is ignored silently at its default
// value and with a warning otherwise; a value of the wrong type or out of range is a FieldError (HTTP 422).
//
//   ApiRun run = readTxt2Img(body);            // body: the parsed JSON object
//   run.settings.model = catalog.path(run.checkpoint.empty() ? current : run.checkpoint);
#include "core/api/generation_settings.h"

#include <nlohmann/json_fwd.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace dd::server {

// What FastAPI answers with HTTP 422: {"detail": [{"loc": ["body", field], "msg": message, "type": type}]}.
class FieldError : public std::invalid_argument {
public:
    FieldError(std::string field, const std::string& message, std::string type = "value_error");
    const std::string& field() const { return m_field; }
    const std::string& type() const { return m_type; }
    const std::string& message() const { return m_message; }

private:
    std::string m_field, m_message, m_type;
};

struct ApiRun {
    api::GenerationSettings settings;   // model left empty; seed -1 already drawn at random (as A1111 does)
    std::string checkpoint;             // override_settings.sd_model_checkpoint ("" = the server's current model)
    std::string refinerCheckpoint;      // refiner_checkpoint ("" = none)
    int clipSkip = 0;                   // override_settings.CLIP_stop_at_last_layers (0 = the server's option)
    int iterations = 1;                 // n_iter: batches run one after the other, seeds continuing
    std::string taskId;                 // force_task_id: a repeated id answers the first run's images
    bool sendImages = true;
    std::vector<std::string> initImages;  // img2img: base64 images (the first is used)
    std::string mask;                     // img2img: base64 mask ("" = none)
    int resizeMode = 0;                   // img2img: 0 just resize, 1 crop and resize, 2 resize and fill, 3 as 0
    std::vector<std::string> warnings;    // fields that were not used, for the response's info
};

// Throws FieldError naming the field.
ApiRun readTxt2Img(const nlohmann::json& body);
ApiRun readImg2Img(const nlohmann::json& body);

// A1111's scheduler names for /sdapi/v1/schedulers and what they mean here.
struct ApiScheduler {
    std::string name;   // "karras"
    std::string label;  // "Karras"
};
const std::vector<ApiScheduler>& apiSchedulers();

} // namespace dd::server
