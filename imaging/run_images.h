#pragma once
// The pixels a run's settings name, read and prepared for the engine (core/api/run_images.h): the init image,
// the inpainting mask as A1111 prepares it, and the ControlNets' control images.
#include "core/api/generation_settings.h"
#include "core/api/image.h"
#include "core/api/run_images.h"

#include <string>
#include <vector>

namespace dd::imaging {

// A mask image as grey (Pillow's L: (19595 R + 38470 G + 7471 B + 2^15) >> 16, in R = G = B), brought to
// width × height (bilinear, with a note in `notes` when it had another size), inverted if asked, and feathered
// with A1111's "Mask blur": two separable OpenCV Gaussian passes of sigma `blur`, kernel 2·int(2.5·sigma + 0.5) + 1.
// Throws std::invalid_argument naming `name` when nothing is left to repaint.
api::Image prepareMask(const api::Image& mask, int width, int height, const api::InpaintSetting& inpaint,
                       const std::string& name, std::vector<std::string>* notes = nullptr);

// Outpainting: `image` extended by o's sides, the new area pre-filled by o.fill ("edge": the border pixels
// stretched out; "mirror": reflected; "blur": edge, then blurred with a sigma of a quarter of the widest side;
// "noise": uniform noise drawn from `seed`).
api::Image extendForOutpaint(const api::Image& image, const api::OutpaintSetting& o, uint64_t seed);
// Its hard mask, before the blur: white over the new area and o.overlap pixels into the picture.
api::Image outpaintMask(int width, int height, const api::OutpaintSetting& o);

// Reads what `s` names: s.initImage, s.inpaint.mask (prepared as above, at the init image's size) and the
// control images; their SHA-256 go into initHash / maskHash, resize notes into notes. An outpainting's init image
// is the extended one and its mask the prepared outpaintMask. Throws std::runtime_error or std::invalid_argument
// naming the file.
api::RunImages readRunImages(const api::GenerationSettings& s);

} // namespace dd::imaging
