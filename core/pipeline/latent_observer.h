#pragma once
// An observer that also receives the whole latent batch after each step, on the engine thread (tests, tools, the
// worker's timing): the torch-side extension of api::Observer.
#include "core/api/run_control.h"

namespace at {
class Tensor;
}

namespace dd::pipeline {

class LatentObserver : public api::Observer {
public:
    virtual void onLatents(int step, const at::Tensor& latents) = 0;
};

} // namespace dd::pipeline
