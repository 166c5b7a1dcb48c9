# python3 make_tiny.py OUT.gguf LLAMA_CPP_SOURCE_DIR writes a 2-layer, 64-dim llama with random weights and llama.cpp's real SentencePiece vocabulary.
# The digit tokens' output rows get a larger norm, so the first generated token is usually a digit and its
# distribution over the digits depends on the prompt.
import sys
LLAMA = sys.argv[2]  # a llama.cpp source tree
sys.path.insert(0, LLAMA + "/gguf-py")
import numpy as np
import gguf
from gguf import GGUFReader, GGUFWriter, GGUFValueType

src = GGUFReader(LLAMA + "/models/ggml-vocab-llama-spm.gguf")
w = GGUFWriter(sys.argv[1], "llama")
tokens = None
for name, f in src.fields.items():
    if not name.startswith("tokenizer."):
        continue
    t = f.types[0]
    if t == GGUFValueType.ARRAY:
        sub = f.types[-1]
        vals = f.contents()
        w.add_key_value(name, vals, t, sub_type=sub)
        if name == "tokenizer.ggml.tokens":
            tokens = vals
    else:
        w.add_key_value(name, f.contents(), t)
n_vocab, n_embd, n_ff, n_layer, n_head = len(tokens), 64, 128, 2, 4
w.add_context_length(2048)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_head)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_dimension_count(n_embd // n_head)
w.add_file_type(0)
rng = np.random.default_rng(7)
def r(*shape, s=0.2):
    return (rng.standard_normal(shape) * s).astype(np.float32)
c = rng.standard_normal(n_embd).astype(np.float32)
c /= np.sqrt((c * c).mean())
w.add_tensor("token_embd.weight", r(n_vocab, n_embd, s=1.0) + 1.0 * c)
w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
out = r(n_vocab, n_embd, s=0.05)
for i, t in enumerate(tokens):
    if t in ("1", "2", "3", "4", "5", "6", "7", "▁1", "▁2", "▁3", "▁4", "▁5", "▁6", "▁7"):
        out[i] = rng.standard_normal(n_embd).astype(np.float32) * 0.3 + 0.8 * c
w.add_tensor("output.weight", out)
for b in range(n_layer):
    p = f"blk.{b}."
    w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(p + n + ".weight", r(n_embd, n_embd))
    w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor(p + "ffn_gate.weight", r(n_ff, n_embd))
    w.add_tensor(p + "ffn_up.weight", r(n_ff, n_embd))
    w.add_tensor(p + "ffn_down.weight", r(n_embd, n_ff))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", n_vocab, "tokens")
