"""Model-hash reference: a file spanning A1111's legacy hash window, hashed the way A1111 does with hashlib
(modules/hashes.py: sha256 of the whole file, first 10 hex; modules/sd_models.py::model_hash: sha256 of
64 KiB at offset 1 MiB, first 8 hex)."""
import hashlib
import json
import pathlib
import random
import sys

out = pathlib.Path(sys.argv[1])
rng = random.Random(1234)
data = bytes(rng.getrandbits(8) for _ in range(0x100000 + 0x10000 + 12345))
(out / "hash_input.bin").write_bytes(data)
full = hashlib.sha256(data).hexdigest()
legacy = hashlib.sha256(data[0x100000:0x110000]).hexdigest()[:8]
(out / "hashes.json").write_text(json.dumps({"sha256": full, "short": full[:10], "legacy": legacy}, indent=1))
