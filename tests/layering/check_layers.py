#!/usr/bin/env python3
"""Checks the include layering that docs/architecture.md's layer table states.

Each row of the table (between the "layers:begin" and "layers:end" markers) names a layer, the paths it holds and
the outside libraries it never includes. A file may include files of its own layer and of the layers above its
row (the table lists the bottom layer first); a header of a layer that never includes torch must not reach torch
through any chain of project headers either. Exits 1 and prints every violation, naming the file and the line.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
LIBRARIES = {  # what "never" names, as the include prefixes that mean it
    "torch": ("torch/", "ATen/", "c10/"),
    "Qt": ("Q",),
    "OpenCV": ("opencv2/",),
    "Exiv2": ("exiv2/",),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_table():
    text = DOC.read_text(encoding="utf-8")
    try:
        body = text.split("<!-- layers:begin -->", 1)[1].split("<!-- layers:end -->", 1)[0]
    except IndexError:
        sys.exit(f"{DOC}: no layer table between <!-- layers:begin --> and <!-- layers:end -->")
    layers = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("layer", "") or set(cells[0]) <= set("-: "):
            continue
        name, paths, never, _why = cells
        paths = [p.strip("` ") for p in paths.split(",") if p.strip("` ")]
        never = {n.strip() for n in never.split(",") if n.strip() and n.strip() != "—"}
        unknown = never - LIBRARIES.keys()
        if unknown:
            sys.exit(f"{DOC}: layer {name}: unknown library {', '.join(sorted(unknown))} (known: {', '.join(LIBRARIES)})")
        layers.append((name, paths, never))
    if not layers:
        sys.exit(f"{DOC}: the layer table has no rows")
    return layers


def layer_of(path, layers):
    """The index of the layer that holds `path` (the longest matching prefix), or None."""
    best = None
    for i, (_, prefixes, _) in enumerate(layers):
        for p in prefixes:
            if (path == p or path.startswith(p.rstrip("/") + "/") or path.startswith(p + ".")) and (
                    best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def includes(path):
    out = []
    for n, line in enumerate((ROOT / path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            out.append((n, m.group(1) == '"', m.group(2)))
    return out


def main():
    layers = read_table()
    sources = sorted(str(p.relative_to(ROOT)) for folder in ("core", "imaging", "ui", "app")
                     for p in (ROOT / folder).rglob("*") if p.suffix in (".h", ".cpp"))
    errors = []
    reaches_torch = {}

    def torch_chain(header, seen=()):
        """A chain of project headers from `header` to a torch header, or None."""
        if header in reaches_torch:
            return reaches_torch[header]
        reaches_torch[header] = None  # cycles end here
        chain = None
        if (ROOT / header).is_file():
            for _, quoted, target in includes(header):
                if not quoted and target.startswith(LIBRARIES["torch"]):
                    chain = [header, target]
                    break
                if quoted and target not in seen:
                    sub = torch_chain(target, seen + (header,))
                    if sub:
                        chain = [header] + sub
                        break
        reaches_torch[header] = chain
        return chain

    for src in sources:
        own = layer_of(src, layers)
        if own is None:
            errors.append(f"{src}: in no layer of {DOC.name}'s table")
            continue
        name, _, never = layers[own]
        for line, quoted, target in includes(src):
            where = f"{src}:{line}"
            if quoted:
                if not (ROOT / target).is_file():
                    continue  # generated (moc) or a test-only path
                other = layer_of(target, layers)
                if other is not None and other > own:
                    errors.append(f"{where}: layer {name} includes {target} of the higher layer {layers[other][0]}")
                if "torch" in never and src.endswith(".h"):
                    chain = torch_chain(target)
                    if chain:
                        errors.append(f"{where}: layer {name} never includes torch, but {' -> '.join(chain)}")
            else:
                for lib in never:
                    if target.startswith(LIBRARIES[lib]) and not (lib == "Qt" and not re.match(r"Q[A-Z]|Qt", target)):
                        errors.append(f"{where}: layer {name} never includes {lib} ({target})")
    for e in errors:
        print(e)
    print(f"{len(sources)} files, {len(layers)} layers: " + (f"{len(errors)} violation(s)" if errors else "layering holds"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
