#!/usr/bin/env python3
"""Tokenizer parity fixtures: ids from the pinned transformers CLIPTokenizer for a few hundred
prompts, padded both ways (49407 as SD1/SDXL `tokenizer`, 0 as SD2/SDXL `tokenizer_2`).

Usage: fixtures_tokenizer.py <outdir>   (writes <outdir>/tokenizer/ and <outdir>/tokenizer_2/, each
                                          vocab.json + merges.txt + tokenizer_config.json, and
                                          <outdir>/tokenizer_cases.json)

The tokenizer folder is built here from OpenAI's bpe_simple_vocab_16e6.txt.gz the way
clip/simple_tokenizer.py defines the vocabulary; nothing is downloaded.
"""
import gzip
import json
import os
import random
import sys

from transformers import CLIPTokenizer
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
BPE_GZ = os.path.join(HERE, "..", "..", "resources", "clip", "bpe_simple_vocab_16e6.txt.gz")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def write_tokenizer_folder(folder, pad_token):
    os.makedirs(folder, exist_ok=True)
    lines = gzip.open(BPE_GZ).read().decode("utf-8").split("\n")
    merges = [tuple(line.split()) for line in lines[1:49152 - 256 - 2 + 1]]
    vocab = list(bytes_to_unicode().values())
    vocab = vocab + [v + "</w>" for v in vocab] + ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(dict(zip(vocab, range(len(vocab)))), f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"model_max_length": 77, "tokenizer_class": "CLIPTokenizer", "pad_token": pad_token}, f)


def prompts():
    p = [
        "", " ", "a photo of a cat", "a photo of an astronaut riding a horse on mars", "hello,world!!",
        "A PHOTO OF A CAT", "MiXeD CaSe PrOmPt", "don't won't I'm you're we've they'll she'd it's",
        "DON'T I'M YOU'RE", "rock'n'roll", "o'clock", "'s 't 're", "''s", "!'s", "it''s",
        "café crème brûlée", "naïve résumé façade", "Ærøskøbing Øresund", "straße STRASSE", "İstanbul ıi",
        "ΣΟΦΊΑ σοφία ς", "Москва, Россия", "東京の夜景、ネオン", "한국어 프롬프트", "中文提示词：一只猫",
        "ﾊﾝｶｸ ｶﾀｶﾅ", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "emoji 😀🎉🐱‍👤 👨‍👩‍👧 🇯🇵", "❤️ ♥ ★☆",
        "e\u0301 a\u0300 o\u0308\u0304 q\u0307\u0323", "\u1100\u1161\u11a8 decomposed hangul",
        "\u212b angstrom \u2126 ohm \ufb01 ligature", "\u00c5\u030a", "a\u0316\u0301 a\u0301\u0316",
        "8k uhd 4k 1080p 3.14159 2024-01-01", "١٢٣ arabic digits ٤", "Ⅻ roman ½ ¾ ² ³", "१२३ devanagari",
        "!!!???...", "-----", "((((masterpiece))))", "[[[[low quality]]]]", "(word:1.3), [word], {word}",
        "a, b, c,, d ,e", "#hashtag @mention $100 %50 ^caret &amp *star", "&amp; &lt;tag&gt; &quot;q&quot; &#39;",
        "https://example.com/path?q=1&x=2#frag", "user@example.com", "C:\\path\\to\\file.png", "snake_case_words",
        "  leading and trailing  ", "multiple     spaces", "tabs\tand\nnewlines\r\nhere", "\u3000ideographic\u3000space",
        "nbsp\u00a0here", "zero\u200bwidth", "soft\u00adhyphen", "\u0085nel\u2028line\u2029para", "\x1c\x1d\x1e\x1f",
        "ctrl\x00\x01\x07chars", "replacement \ufffd char", "<|startoftext|>", "<|endoftext|>", "a <|endoftext|> b",
        "a<|startoftext|>b", "<|ENDOFTEXT|>", "<|Startoftext|> x", "<|endoftext|<|endoftext|>", "<<|endoftext|>>",
        "!<|endoftext|>", "\u00ab quotes \u00bb \u201c \u201d \u2018 \u2019", "en\u2013dash em\u2014dash",
        "math ∑∫√∞≈≠ ±×÷", "arrows → ← ↑ ↓", "©®™", "עברית", "ไทย", "ελληνικά", "हिन्दी", "áéíóú ÁÉÍÓÚ",
        "Ǆ ǅ ǆ titlecase", "ﬀ ﬃ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝓈𝒸𝓇𝒾𝓅𝓉", "\U0001F600\U0001F3FD", "a" * 200, "ab" * 90,
        "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis",
        "BREAK", "cat BREAK dog", "\\(escaped\\)", "1girl, solo, long hair, looking at viewer",
        "masterpiece, best quality, ultra-detailed, 8k wallpaper, (extremely detailed CG unity 8k wallpaper)",
    ]
    words = ("portrait landscape beautiful woman man old young city night rain neon cinematic lighting "
             "highly detailed octane render trending artstation oil painting watercolor sketch anime "
             "photorealistic bokeh golden hour castle dragon forest river mountain sunset ocean").split()
    rng = random.Random(1234)
    for n in (76, 77, 80, 150, 300):
        p.append(" ".join(rng.choice(words) for _ in range(n)))
    p.append(", ".join(["tag"] * 100))
    p.append("1 2 3 4 5 6 7 8 9 0 " * 10)
    pools = [words, ["café", "東京", "😀", "İ", "ß", "Ω", "ﬁ", "e\u0301", "٣", "½", "𝔘", "한"],
             list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), ["\t", "\n", "  ", "\u3000", "\u00a0"],
             ["'s", "'T", "'re", "'LL", "'d", "'m", "'ve"], [str(i) for i in range(100)]]
    while len(p) < 360:
        k = rng.randint(1, 25)
        parts = []
        for _ in range(k):
            pool = pools[rng.choice([0, 0, 0, 1, 2, 3, 4, 5])]
            w = rng.choice(pool)
            parts.append(w.upper() if rng.random() < 0.15 else w)
        sep = rng.choice([" ", "", ", "])
        p.append(sep.join(parts))
    return p


def main(out_dir):
    # Like SD1 / SDXL `tokenizer` (pad "<|endoftext|>") and SD2 / SDXL `tokenizer_2` (pad "!"). A "!"
    # pad token is also a special token: transformers splits every "!" of a prompt out as id 0.
    write_tokenizer_folder(os.path.join(out_dir, "tokenizer"), "<|endoftext|>")
    write_tokenizer_folder(os.path.join(out_dir, "tokenizer_2"), "!")
    tok_eos = CLIPTokenizer.from_pretrained(os.path.join(out_dir, "tokenizer"))
    tok_zero = CLIPTokenizer.from_pretrained(os.path.join(out_dir, "tokenizer_2"))
    assert tok_eos.pad_token_id == 49407 and tok_zero.pad_token_id == 0
    cases = []
    for text in prompts():
        kw = dict(padding="max_length", max_length=77, truncation=True)
        cases.append({
            "text": text,
            "ids": tok_eos(text, add_special_tokens=False)["input_ids"],
            "ids_zero": tok_zero(text, add_special_tokens=False)["input_ids"],
            "padded_eos": tok_eos(text, **kw)["input_ids"],
            "padded_zero": tok_zero(text, **kw)["input_ids"],
        })
    meta = {"transformers": transformers.__version__, "class": type(tok_eos).__module__ + "." + type(tok_eos).__name__}
    with open(os.path.join(out_dir, "tokenizer_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "cases": cases}, f, ensure_ascii=False, indent=0)
    print("tokenizer: %d cases -> %s" % (len(cases), out_dir))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fixtures_tokenizer.py <outdir>")
    main(sys.argv[1])
