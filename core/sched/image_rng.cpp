// Ref: A1111 modules/rng_philox.py and modules/rng.py (what they compute, described in image_rng.h); Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3" (Philox4x32-10's rounds, multipliers and key schedule).
#include "core/sched/image_rng.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace dd::sched {
namespace {

struct Block {
    uint32_t x, y;  // the first two words of the output; the other two are not used
};

Block philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
    constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        if (round > 0) k0 += kW0, k1 += kW1;
        const uint64_t p0 = uint64_t(c0) * kM0, p1 = uint64_t(c2) * kM1;
        const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
        c1 = uint32_t(p1), c3 = uint32_t(p0), c0 = n0, c2 = n2;
    }
    return {c0, c1};
}

} // namespace

void philoxNormal(uint64_t seed, uint32_t offset, float* out, int64_t n) {
    // float32 constants, widened: A1111 multiplies uint32 arrays by float32 ones, which numpy does in double.
    const double unit = double(float(2.3283064e-10)), halfUnit = double(float(2.3283064e-10) / 2.0f);
    const double angle = double(float(2.3283064e-10 * 6.2831855)), halfAngle = double(float(2.3283064e-10 * 6.2831855) / 2.0f);
    const uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
    for (int64_t i = 0; i < n; ++i) {
        const Block b = philox(offset, 0, uint32_t(i), 0, k0, k1);
        const double u = double(b.x) * unit + halfUnit, v = double(b.y) * angle + halfAngle;
        out[i] = float(std::sqrt(-2.0 * std::log(u)) * std::sin(v));
    }
}

struct ImageRng::State {
    Kind kind;
    at::Generator cpu;
    uint64_t seed = 0;
    uint32_t offset = 0;
};

ImageRng::ImageRng(Kind kind, uint64_t seed) : m(std::make_shared<State>()) {
    m->kind = kind;
    m->seed = seed;
    if (kind == Kind::Cpu) m->cpu = at::make_generator<at::CPUGeneratorImpl>(seed);
}

ImageRng::ImageRng(at::Generator cpu) : m(std::make_shared<State>()) {
    m->kind = Kind::Cpu;
    m->cpu = std::move(cpu);
}

ImageRng::Kind ImageRng::kind() const { return m->kind; }

uint64_t ImageRng::seed() const { return m->kind == Kind::Cpu && m->cpu.defined() ? m->cpu.current_seed() : m->seed; }

at::Tensor ImageRng::randn(at::IntArrayRef shape, at::ScalarType dtype) {
    if (m->kind == Kind::Cpu) return torch::randn(shape, m->cpu, torch::TensorOptions().dtype(dtype));
    auto t = torch::empty(shape, torch::kFloat32);
    philoxNormal(m->seed, m->offset++, t.data_ptr<float>(), t.numel());
    return t.to(dtype);
}

ImageRng::Kind rngKind(const std::string& name) {
    if (name == "CPU") return ImageRng::Kind::Cpu;
    if (name == "NV") return ImageRng::Kind::Philox;
    throw std::invalid_argument("random numbers '" + name + "' are unknown (use \"CPU\" or \"NV\")");
}

} // namespace dd::sched
