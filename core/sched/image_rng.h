#pragma once
// One image's random numbers, drawn in fp32 on the CPU; copies share the stream (as at::Generator's do).
//
//   * Cpu: torch's CPU generator (mt19937): diffusers' CPU generators and A1111's "RNG: CPU".
//   * Philox: A1111's "RNG: NV" (modules/rng_philox.py), the numbers an NVIDIA GPU gives torch.randn, computed on
//     the CPU. Philox4x32-10 keyed by the seed (low and high 32 bits); element i of the n drawn by one call is
//     counter (offset, 0, i, 0), and each call moves the offset on by one. Of each output block the first word is
//     u and the second v for one Box-Muller sine, in double precision: sqrt(-2 ln(u·2⁻³² + 2⁻³³)) ·
//     sin(v·c + c/2) with c = 2π·2⁻³² rounded to float, then rounded to float. A1111's "RNG: GPU" (torch.randn on
//     the card itself) is the same sequence in the card's float arithmetic: within about 1e-6 of these numbers.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>

namespace dd::sched {

class ImageRng {
public:
    enum class Kind { Cpu, Philox };
    ImageRng(Kind kind, uint64_t seed);
    explicit ImageRng(at::Generator cpu);  // an existing CPU generator, shared

    // randn of `shape` on the CPU, from this stream (torch's generator draws in `dtype` itself; Philox in fp32).
    at::Tensor randn(at::IntArrayRef shape, at::ScalarType dtype = at::kFloat);
    Kind kind() const;
    uint64_t seed() const;  // the seed the stream started from

private:
    struct State;
    std::shared_ptr<State> m;
};

// A1111's infotext names: "CPU" → Cpu, "NV" → Philox. Throws std::invalid_argument naming the choices.
ImageRng::Kind rngKind(const std::string& name);

// The Philox stream's numbers: `n` normals for (seed, offset), as one call at that offset draws them.
void philoxNormal(uint64_t seed, uint32_t offset, float* out, int64_t n);

} // namespace dd::sched
