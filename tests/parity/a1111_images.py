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
