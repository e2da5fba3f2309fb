"""A1111's X/Y/Z plot value syntax, re-stated from its documentation and the patterns it shows (a list split as
Python's csv module splits one line, skipinitialspace; for numbers, "a-b" every integer, "a-b (+s)" a step,
"a-b [n]" n values evenly spaced; float ranges through numpy.arange(a, b + s, s), counts through numpy.linspace,
whole numbers truncated). Writes <outdir>/xyz/ranges.json: text, kind -> values, for the C++ parser.
"""
import csv
import io
import json
import pathlib
import re
import sys

import numpy as np

INT_STEP = re.compile(r"\s*([+-]?\s*\d+)\s*-\s*([+-]?\s*\d+)(?:\s*\(([+-]\d+)\s*\))?\s*")
INT_COUNT = re.compile(r"\s*([+-]?\s*\d+)\s*-\s*([+-]?\s*\d+)(?:\s*\[(\d+)\s*\])\s*")
FLOAT_STEP = re.compile(r"\s*([+-]?\s*\d+(?:\.\d*)?)\s*-\s*([+-]?\s*\d+(?:\.\d*)?)(?:\s*\(([+-]\d+(?:\.\d*)?)\s*\))?\s*")
FLOAT_COUNT = re.compile(r"\s*([+-]?\s*\d+(?:\.\d*)?)\s*-\s*([+-]?\s*\d+(?:\.\d*)?)(?:\s*\[(\d+(?:\.\d*)?)\s*\])\s*")


def number(text):
    return float(re.sub(r"\s", "", text))


def expand(text, kind):
    items = [x.strip() for x in next(csv.reader(io.StringIO(text), skipinitialspace=True)) if x.strip()]
    if kind == "text":
        return items
    out = []
    for item in items:
        if kind == "int":
            if m := INT_STEP.fullmatch(item):
                a, b, s = int(number(m[1])), int(number(m[2])), int(m[3]) if m[3] else 1
                out += [str(v) for v in range(a, b + (1 if s > 0 else -1), s)]
            elif m := INT_COUNT.fullmatch(item):
                out += [str(int(v)) for v in np.linspace(number(m[1]), number(m[2]), int(number(m[3]))).astype(int)]
            else:
                out.append(item)
        else:
            if m := FLOAT_STEP.fullmatch(item):
                a, b, s = number(m[1]), number(m[2]), number(m[3]) if m[3] else 1.0
                out += [float(v) for v in np.arange(a, b + s, s)]
            elif m := FLOAT_COUNT.fullmatch(item):
                out += [float(v) for v in np.linspace(number(m[1]), number(m[2]), int(number(m[3])))]
            else:
                out.append(item)
    return out


CASES = [
    ("1-5", "int"), ("1-10 (+2)", "int"), ("10-1 (-3)", "int"), ("7-9 [3]", "int"), ("1-3 [5]", "int"),
    ("5, 1-3, 20", "int"), ("- 2 - +2", "int"), ("5-1", "int"), ("12345", "int"),
    ("5.0-6.0 (+0.25)", "float"), ("0.1-0.3 (+0.1)", "float"), ("1-2 [4]", "float"), ("7, 7.5, 8", "float"),
    ("3-5", "float"), ("2.5-1 (-0.5)", "float"), ("0-1 [1]", "float"),
    ("Euler, DPM++ 2M Karras,DDIM", "text"), ('red, "blue, with a comma", green ', "text"), ('a,,b', "text"),
]


def main():
    out = pathlib.Path(sys.argv[1]) / "xyz"
    out.mkdir(parents=True, exist_ok=True)
    cases = [{"text": t, "kind": k, "values": expand(t, k)} for t, k in CASES]
    (out / "ranges.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
