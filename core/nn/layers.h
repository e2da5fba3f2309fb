#pragma once
// The leaf layers every network here is built from (Linear, Conv2d, GroupNorm, LayerNorm, Embedding): torch's
// own layers plus one guard point around forward. libtorch has no module hooks, so this is where offloading
// (core/memory/offload) materialises a leaf's weights on the compute device and fp8 storage upcasts them,
// and where it puts them back afterwards. Without a hook the guard costs one pointer test.
//
// They derive from torch's Impl classes, so `as<torch::nn::LinearImpl>()` and the state-dict names are
// unchanged; every parameter of our networks lives in one of these leaves.
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "core/nn/cpu_kernels.h"

namespace dd::nn {

// Called around every forward of a hooked leaf, on the thread that runs the network.
struct LeafHook {
    virtual ~LeafHook() = default;
    virtual void enter(torch::nn::Module& leaf) = 0;
    virtual void exit(torch::nn::Module& leaf) noexcept = 0;
};

// The mixin that marks a module as a guarded leaf.
struct HookedLeaf {
    LeafHook* leafHook = nullptr;
};

class LeafScope {
public:
    LeafScope(LeafHook* hook, torch::nn::Module& leaf) : m_hook(hook), m_leaf(leaf) {
        if (m_hook) m_hook->enter(m_leaf);
    }
    ~LeafScope() {
        if (m_hook) m_hook->exit(m_leaf);
    }
    LeafScope(const LeafScope&) = delete;
    LeafScope& operator=(const LeafScope&) = delete;

private:
    LeafHook* m_hook;
    torch::nn::Module& m_leaf;
};

// Loading builds networks whose every weight the checkpoint is about to replace. Inside this scope (one
// thread) Linear, Conv2d and Embedding register their weights uninitialised instead of drawing torch's random
// initialisation: that saves the draw, and because the pages of an untouched torch::empty are never faulted
// in, it saves the memory of a whole fp32 copy of the model (diffusers' low_cpu_mem_usage / accelerate's
// init_empty_weights). Norm layers initialise as usual (ones and zeros, tiny).
class UninitialisedWeights {
public:
    UninitialisedWeights() : m_previous(active()) { flag() = true; }
    ~UninitialisedWeights() { flag() = m_previous; }
    UninitialisedWeights(const UninitialisedWeights&) = delete;
    UninitialisedWeights& operator=(const UninitialisedWeights&) = delete;
    static bool active() { return flag(); }

private:
    static bool& flag() {
        thread_local bool on = false;
        return on;
    }
    bool m_previous;
};

// Builds a network every weight of which a loader is about to replace from a file: `build()` runs inside
// UninitialisedWeights. The loaders (sd_model, clip_text, control_stack) all go through here.
template <typename Build>
auto buildForLoading(Build&& build) {
    const UninitialisedWeights fromFile;
    return build();
}

#define DD_GUARDED_FORWARD(Name)                                                                                \
    torch::Tensor forward(const torch::Tensor& x) {                                                             \
        const LeafScope scope(leafHook, *this);                                                                 \
        return torch::nn::Name##Impl::forward(x);                                                               \
    }

// Linear and Conv2d have no option that supplies the weight, so under UninitialisedWeights torch's constructor
// is given a 1x1 stand-in (its initialisation costs nothing) and the real shapes are registered right after.
struct LinearImpl : torch::nn::LinearImpl, HookedLeaf {
    LinearImpl(int64_t in, int64_t out) : LinearImpl(torch::nn::LinearOptions(in, out)) {}
    explicit LinearImpl(const torch::nn::LinearOptions& o)
        : torch::nn::LinearImpl(UninitialisedWeights::active() ? torch::nn::LinearOptions(1, 1).bias(o.bias()) : o) {
        if (!UninitialisedWeights::active()) return;
        options = o;
        parameters_.clear();
        weight = register_parameter("weight", torch::empty({o.out_features(), o.in_features()}));
        bias = register_parameter("bias", o.bias() ? torch::empty({o.out_features()}) : torch::Tensor(), o.bias());
    }
    // torch's arithmetic or oneDNN's (core/nn/cpu_kernels.h).
    torch::Tensor forward(const torch::Tensor& x) {
        const LeafScope scope(leafHook, *this);
        return nn::linear(x, weight, bias);
    }
};
TORCH_MODULE(Linear);

struct Conv2dImpl : torch::nn::Conv2dImpl, HookedLeaf {
    Conv2dImpl(int64_t in, int64_t out, torch::ExpandingArray<2> kernel)
        : Conv2dImpl(torch::nn::Conv2dOptions(in, out, kernel)) {}
    explicit Conv2dImpl(const torch::nn::Conv2dOptions& o) : torch::nn::Conv2dImpl(constructed(o)) {
        if (!defers(o)) return;
        // The stand-in shares stride, padding, dilation and groups, so only the shapes change.
        options.in_channels(o.in_channels()).out_channels(o.out_channels()).kernel_size(o.kernel_size());
        parameters_.clear();
        std::vector<int64_t> shape{o.out_channels(), o.in_channels() / o.groups()};
        shape.insert(shape.end(), o.kernel_size()->begin(), o.kernel_size()->end());
        weight = register_parameter("weight", torch::empty(shape));
        bias = register_parameter("bias", o.bias() ? torch::empty({o.out_channels()}) : torch::Tensor(), o.bias());
    }
    torch::Tensor forward(const torch::Tensor& x) {
        const LeafScope scope(leafHook, *this);
        return convolve(x);
    }
    // torch's convolution, or with explicit zero padding core/nn/cpu_kernels.h's (Winograd where it applies).
    torch::Tensor convolve(const torch::Tensor& x) {
        const auto* pad = std::get_if<torch::ExpandingArray<2>>(&options.padding());
        if (!pad || !std::holds_alternative<torch::enumtype::kZeros>(options.padding_mode()))
            return torch::nn::Conv2dImpl::forward(x);
        return nn::conv2d(x, weight, bias, options.stride(), *pad, options.dilation(), options.groups());
    }

private:
    // Explicit padding only: "same" padding depends on the kernel size, which the stand-in does not have.
    static bool defers(const torch::nn::Conv2dOptions& o) {
        return UninitialisedWeights::active() && std::holds_alternative<torch::ExpandingArray<2>>(o.padding());
    }
    static torch::nn::Conv2dOptions constructed(const torch::nn::Conv2dOptions& o) {
        if (!defers(o)) return o;
        auto standIn = o;
        return standIn.in_channels(o.groups()).out_channels(o.groups()).kernel_size(1);
    }
};
TORCH_MODULE(Conv2d);

// Embedding takes its weight as an option, which skips the initialisation.
struct EmbeddingImpl : torch::nn::EmbeddingImpl, HookedLeaf {
    EmbeddingImpl(int64_t count, int64_t dim) : EmbeddingImpl(torch::nn::EmbeddingOptions(count, dim)) {}
    explicit EmbeddingImpl(const torch::nn::EmbeddingOptions& o) : torch::nn::EmbeddingImpl(constructed(o)) {}
    DD_GUARDED_FORWARD(Embedding)

private:
    static torch::nn::EmbeddingOptions constructed(torch::nn::EmbeddingOptions o) {
        if (UninitialisedWeights::active() && !o._weight().defined())
            o._weight(torch::empty({o.num_embeddings(), o.embedding_dim()}));
        return o;
    }
};
TORCH_MODULE(Embedding);

#define DD_GUARDED_LEAF(Name)                                                                                   \
    struct Name##Impl : torch::nn::Name##Impl, HookedLeaf {                                                     \
        using torch::nn::Name##Impl::Name##Impl;                                                                \
        DD_GUARDED_FORWARD(Name)                                                                                \
    };                                                                                                          \
    TORCH_MODULE(Name)

DD_GUARDED_LEAF(GroupNorm);
DD_GUARDED_LEAF(LayerNorm);

#undef DD_GUARDED_LEAF
#undef DD_GUARDED_FORWARD

} // namespace dd::nn
