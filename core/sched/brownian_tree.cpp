// Ref: torchsde 0.2.6 _brownian/brownian_interval.py (BrownianInterval with halfway_tree, no Lévy area) and
// derived.py (BrownianTree: tol 1e-6, pool_size 24); k-diffusion sampling.py BatchedBrownianTree and
// BrownianTreeNoiseSampler; numpy random/bit_generator.pyx SeedSequence (mix_entropy, generate_state).
#include "core/sched/brownian_tree.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <stdexcept>
#include <unordered_map>

namespace dd::sched {
namespace {

constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kPoolSize = 24;

// numpy's _int_to_uint32_array: little-endian 32-bit words, [0] for zero.
void appendWords(uint64_t n, std::vector<uint32_t>& out) {
    if (n == 0) out.push_back(0);
    for (; n > 0; n >>= 32) out.push_back(uint32_t(n));
}

// Python's round(x, 6): the correctly rounded 6-decimal value (printf rounds the exact binary value the same way).
double round6(double x) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6f", x);
    return std::strtod(text, nullptr);
}

} // namespace

std::vector<uint32_t> seedSequenceState(uint64_t entropy, const std::vector<uint64_t>& spawnKey, int poolSize, int n) {
    std::vector<uint32_t> words, spawn;
    appendWords(entropy, words);
    for (uint64_t k : spawnKey) appendWords(k, spawn);
    if (!spawn.empty() && words.size() < size_t(poolSize)) words.resize(size_t(poolSize), 0);
    words.insert(words.end(), spawn.begin(), spawn.end());

    uint32_t hashConst = kInitA;
    const auto hashmix = [&](uint32_t v) {
        v ^= hashConst;
        hashConst *= kMultA;
        v *= hashConst;
        return v ^ (v >> 16);
    };
    const auto mix = [](uint32_t x, uint32_t y) {
        uint32_t r = kMixMultL * x - kMixMultR * y;
        return r ^ (r >> 16);
    };
    std::vector<uint32_t> pool(static_cast<size_t>(poolSize));
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = hashmix(i < words.size() ? words[i] : 0);
    for (size_t src = 0; src < pool.size(); ++src)
        for (size_t dst = 0; dst < pool.size(); ++dst)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
    for (size_t src = pool.size(); src < words.size(); ++src)
        for (size_t dst = 0; dst < pool.size(); ++dst) pool[dst] = mix(pool[dst], hashmix(words[src]));

    std::vector<uint32_t> state(static_cast<size_t>(n));
    uint32_t h = kInitB;
    for (size_t i = 0; i < state.size(); ++i) {
        uint32_t v = pool[i % pool.size()] ^ h;
        h *= kMultB;
        v *= h;
        state[i] = v ^ (v >> 16);
    }
    return state;
}

struct BrownianTree::Impl {
    struct Node {
        double start, end;
        int parent;
        bool isLeft;
        bool split = false;
        double midway = 0;
        int left = -1, right = -1;
        uint64_t spawnKey = 0;
        int depth = 0;
        uint32_t wSeed = 0;  // the seed of the bridge that splits this interval
    };
    std::vector<int64_t> shape;
    uint64_t seed;
    ImageRng::Kind kind;
    std::vector<Node> nodes;
    at::Tensor rootW;
    // Recent increments by node (torchsde keeps an LRU cache too): a query walks down from the root.
    std::unordered_map<int, at::Tensor> cache;
    std::list<int> order;

    at::Tensor randn(uint32_t s) const { return ImageRng(kind, s).randn(shape); }

    void splitExact(int i, double mid) {
        Node& n = nodes[size_t(i)];
        n.midway = round6(mid);
        if (n.parent >= 0) {
            const Node& p = nodes[size_t(n.parent)];
            n.spawnKey = 2 * p.spawnKey + (n.isLeft ? 0 : 1);
            n.depth = p.depth + 1;
        }
        n.wSeed = seedSequenceState(seed, {n.spawnKey, uint64_t(n.depth)}, kPoolSize, 4)[0];
        n.split = true;
        const double start = n.start, end = n.end;
        nodes.push_back({start, round6(mid), i, true});
        nodes.push_back({round6(mid), end, i, false});
        nodes[size_t(i)].left = int(nodes.size()) - 2;
        nodes[size_t(i)].right = int(nodes.size()) - 1;
    }

    // The halfway tree: split at the middle, then on down towards `at`.
    void split(int i, double at) {
        for (;;) {
            const Node& n = nodes[size_t(i)];
            splitExact(i, 0.5 * (n.end + n.start));
            const Node& s = nodes[size_t(i)];
            if (at > s.midway) i = s.right;
            else if (at < s.midway) i = s.left;
            else return;
        }
    }

    // The intervals [ta, tb] is made of, left to right (torchsde _loc_inner, from the root).
    void locate(int i, double ta, double tb, std::vector<int>& out) {
        for (;;) {
            const Node& n = nodes[size_t(i)];
            if (ta < n.start || tb > n.end) {  // after a split towards the far end, from the parent again
                i = n.parent;
                continue;
            }
            if (ta == n.start && tb == n.end) {
                out.push_back(i);
                return;
            }
            if (!n.split) {
                const bool fromStart = ta == n.start;
                split(i, fromStart ? tb : ta);
                i = fromStart ? nodes[size_t(i)].left : nodes[size_t(i)].right;
                continue;
            }
            if (tb <= n.midway) { i = n.left; continue; }
            if (ta >= n.midway) { i = n.right; continue; }
            const double mid = n.midway;
            const int right = n.right;
            locate(n.left, ta, mid, out);
            i = right, ta = mid;
        }
    }

    // The increment over node i: its parent's, bridged at the parent's midpoint.
    at::Tensor increment(int i) {
        if (i == 0) return rootW;
        if (auto it = cache.find(i); it != cache.end()) return it->second;
        const Node n = nodes[size_t(i)];
        const Node& p = nodes[size_t(n.parent)];
        const at::Tensor W = increment(n.parent);
        const double hReciprocal = 1 / (p.end - p.start);
        const double leftDiff = p.midway - p.start, rightDiff = p.end - p.midway;
        const at::Tensor mean = W * leftDiff * hReciprocal;
        const double var = leftDiff * rightDiff * hReciprocal;
        const at::Tensor leftW = mean + randn(p.wSeed) * std::sqrt(var);
        at::Tensor out = n.isLeft ? leftW : W - leftW;
        cache.emplace(i, out);
        order.push_back(i);
        if (order.size() > 128) cache.erase(order.front()), order.pop_front();
        return out;
    }
};

BrownianTree::BrownianTree(double t0, double t1, std::vector<int64_t> shape, uint64_t seed, ImageRng::Kind kind)
    : m(std::make_unique<Impl>()) {
    if (!(t0 <= t1)) throw std::invalid_argument("BrownianTree: t0 must not exceed t1");
    m->shape = std::move(shape);
    m->seed = seed;
    m->kind = kind;
    m->nodes.push_back({round6(t0), round6(t1), -1, false});
    const uint32_t rootSeed = seedSequenceState(seed, {}, kPoolSize, 3)[0];
    m->rootW = m->randn(rootSeed) * std::sqrt(t1 - t0);
}

BrownianTree::~BrownianTree() = default;
BrownianTree::BrownianTree(BrownianTree&&) noexcept = default;

at::Tensor BrownianTree::increment(double ta, double tb) {
    const auto& root = m->nodes[0];
    ta = std::clamp(ta, root.start, root.end);
    tb = std::clamp(tb, root.start, root.end);
    if (ta > tb) throw std::invalid_argument("BrownianTree: query times must satisfy ta <= tb");
    if (ta == tb) return torch::zeros(m->shape, torch::kFloat32);
    std::vector<int> intervals;
    m->locate(0, round6(ta), round6(tb), intervals);
    at::Tensor W = m->increment(intervals[0]);
    for (size_t k = 1; k < intervals.size(); ++k) W = W + m->increment(intervals[k]);
    return W;
}

BrownianNoise::BrownianNoise(std::vector<int64_t> shape, float sigmaMin, float sigmaMax, const std::vector<uint64_t>& seeds,
                             ImageRng::Kind kind)
    : m_perImage(!shape.empty() && seeds.size() == size_t(shape[0])) {
    if (seeds.empty()) throw std::invalid_argument("BrownianNoise: no seed");
    std::vector<int64_t> treeShape = shape;
    if (m_perImage) treeShape.erase(treeShape.begin());
    const double lo = std::min(sigmaMin, sigmaMax), hi = std::max(sigmaMin, sigmaMax);
    for (size_t i = 0; i < (m_perImage ? seeds.size() : 1); ++i) m_trees.emplace_back(lo, hi, treeShape, seeds[i], kind);
}

at::Tensor BrownianNoise::operator()(float sigma, float sigmaNext) {
    const float lo = std::min(sigma, sigmaNext), hi = std::max(sigma, sigmaNext);
    const double sign = sigma < sigmaNext ? 1.0 : -1.0;
    std::vector<at::Tensor> parts;
    for (auto& tree : m_trees) parts.push_back(tree.increment(lo, hi));
    const at::Tensor w = (m_perImage ? torch::stack(parts) : parts[0]) * sign;
    return w / torch::scalar_tensor(std::sqrt(std::fabs(sigmaNext - sigma)), torch::kFloat32);
}

} // namespace dd::sched
