#include "core/pipeline/device.h"

#include "core/memory/memory_probe.h"

#include <stdexcept>

namespace dd::pipeline {

torch::Device resolveDevice(const std::string& wanted) {
    if (wanted == "cpu") return torch::kCPU;
    const int devices = memory::cudaDeviceCount();
    if (wanted == "auto") return devices > 0 ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    const torch::Device d(wanted);  // "cuda", "cuda:1"
    if (devices == 0) throw std::invalid_argument("device '" + wanted + "' asked for, but no CUDA device is available (use auto or cpu)");
    if (d.has_index() && d.index() >= devices)
        throw std::invalid_argument("device '" + wanted + "' asked for, but only " + std::to_string(devices) + " CUDA device(s) exist");
    return d.has_index() ? d : torch::Device(torch::kCUDA, 0);
}

} // namespace dd::pipeline
