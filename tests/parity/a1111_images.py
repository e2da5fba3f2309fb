"""A1111's pixel resizing, written from its documented behaviour (modules/images.py resize_image, modules/upscaler.py
Upscaler.upscale): the reference for the fixtures that need it."""
from PIL import Image


def a1111_resize(img, upscaler, w, h):
    """A1111's resize_image(0, img, w, h, upscaler) with its built-in resizers, from its documented behaviour:
    "None" resizes with LANCZOS; "Lanczos" and "Nearest" enlarge by the scale with their filter while the image is
    below the size rounded down to 8 (at most three times), then LANCZOS to that size and to w x h."""
    lanczos = Image.Resampling.LANCZOS
    if upscaler == "None":
        return img.resize((w, h), resample=lanczos)
    scale = max(w / img.width, h / img.height)
    if scale > 1.0:
        dest_w, dest_h = int((img.width * scale) // 8 * 8), int((img.height * scale) // 8 * 8)
        resample = lanczos if upscaler == "Lanczos" else Image.Resampling.NEAREST
        for i in range(3):
            if img.width >= dest_w and img.height >= dest_h:
                break
            shape = img.size
            img = img.resize((int(img.width * scale), int(img.height * scale)), resample=resample)
            if shape == img.size:
                break
        if img.size != (dest_w, dest_h):
            img = img.resize((dest_w, dest_h), resample=lanczos)
    return img if img.size == (w, h) else img.resize((w, h), resample=lanczos)


def a1111_fill(image, mask):
    """A1111's "Masked content: fill" (modules/masking.py), from its description: the picture with alpha = 255 - mask
    (premultiplied), Gaussian-blurred at radii 256, 64, 16, 4, 2 and 0, each blur (un-premultiplied) alpha-composited
    over the last as many times as A1111 repeats it (1, 1, 2, 4, 2, 1), the alpha dropped at the end."""
    from PIL import ImageFilter, ImageOps
    result = Image.new("RGBA", image.size)
    kept = Image.new("RGBa", image.size)
    kept.paste(image.convert("RGBA").convert("RGBa"), mask=ImageOps.invert(mask.convert("L")))
    for radius, repeats in [(256, 1), (64, 1), (16, 2), (4, 4), (2, 2), (0, 1)]:
        blurred = kept.filter(ImageFilter.GaussianBlur(radius)).convert("RGBA")
        for _ in range(repeats):
            result.alpha_composite(blurred)
    return result.convert("RGB")
