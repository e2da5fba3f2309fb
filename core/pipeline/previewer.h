#pragma once
// What the live preview is made with: TAESD when one is set and fits the model's latents, else the latent→RGB
// linear approximation (preview.h). The engine asks it only for steps the observer wants a preview of, so a
// skipped preview costs nothing; `built()` counts the previews actually computed.
// Engine-thread only, like every torch object.
#include "core/api/image.h"
#include "core/io/checkpoint.h"
#include "core/nn/taesd.h"

#include <string>

namespace dd::pipeline {

class Previewer {
public:
    // "" = the linear approximation. Loads TAESD on `device` now; throws dd::io::ModelFileError naming the file,
    // and then the previous choice stays.
    void useTaesd(const std::string& path, torch::Device device);
    const std::string& taesdPath() const { return m_path; }
    // `latent`: one UNet-space latent [C,h,w]. TAESD moves to the latent's device the first time it differs.
    api::Image make(const at::Tensor& latent, io::ModelFamily family);
    // "taesd" or "linear": what make() uses for latents with `channels` channels.
    const char* kindFor(int64_t channels) const;
    int64_t built() const { return m_built; }

private:
    nn::AutoencoderTiny m_taesd{nullptr};
    std::string m_path;
    int64_t m_built = 0;
};

} // namespace dd::pipeline
