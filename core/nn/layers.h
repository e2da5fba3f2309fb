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

#define DD_GUARDED_LEAF(Name)                                                                                   \
    struct Name##Impl : torch::nn::Name##Impl, HookedLeaf {                                                     \
        using torch::nn::Name##Impl::Name##Impl;                                                                \
        torch::Tensor forward(const torch::Tensor& x) {                                                         \
            const LeafScope scope(leafHook, *this);                                                             \
            return torch::nn::Name##Impl::forward(x);                                                           \
        }                                                                                                       \
    };                                                                                                          \
    TORCH_MODULE(Name)

DD_GUARDED_LEAF(Linear);
DD_GUARDED_LEAF(Conv2d);
DD_GUARDED_LEAF(GroupNorm);
DD_GUARDED_LEAF(LayerNorm);
DD_GUARDED_LEAF(Embedding);

#undef DD_GUARDED_LEAF

} // namespace dd::nn
