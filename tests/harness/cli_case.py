"""The small case the CLI tests run: two requests (one without query rows), GQA, causal, fp32, quick on a CPU."""

SMALL = {
    "layout": "ragged",
    "qo_lens": [3, 0],
    "kv_lens": [9, 4],
    "num_qo_heads": 4,
    "num_kv_heads": 2,
    "head_dim_qk": 16,
    "head_dim_vo": 16,
    "causal": True,
    "q_dtype": "fp32",
    "kv_dtype": "fp32",
    "o_dtype": "fp32",
}
