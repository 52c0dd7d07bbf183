#!/usr/bin/python3
"""Golden 20-step training curves of tiny fc_mnist, gpt2, gptj, llama, bert, linformer, t5, transformer
and unet (2D and 3D) models, computed by PyTorch.

Cases marked "autocast" run the forward pass under torch.autocast("cpu", dtype=torch.bfloat16)
(master weights, gradients and optimizer in float32); csrun's CSX bfloat16 curves are compared
with them within a documented tolerance rather than 1e-4.

Each model is written out with plain tensor operations and parameters named as csrun names them
(the Model Zoo's PyTorch module names). Both sides start from the same weights and read the same
batches: golden_common.initial_weight() and value() are reproduced bit for bit by csrun's
test/support/golden.hpp. test/unit/models/golden_curves_test.cpp traces the same params with
csrun and compares the losses (relative error <= 1e-4). Run with Debian's python3-torch:
    /usr/bin/python3 scripts/golden/curves.py
It also writes relative_buckets.json: the T5 relative position buckets PyTorch computes.
"""
import math

import torch
import torch.nn.functional as F

from golden_common import initial_weight, values, write

STEPS = 20
torch.set_default_dtype(torch.float32)


class Parameters:
    def __init__(self):
        self.tensors = {}
        self.buffers = {}  # running statistics (BatchNorm's), which the forward pass updates
        self.training = True
        self.norm_modules = set()  # the names of LayerNorm, BatchNorm and GroupNorm modules

    def takes_weight_decay(self, name):
        """The Model Zoo's configure_param_groups: no weight decay for a name containing "bias"
        or the name of a normalization module."""
        return "bias" not in name and not any(module in name for module in self.norm_modules)

    def get(self, name, shape):
        if name not in self.tensors:
            count = math.prod(shape)
            data = torch.tensor(initial_weight(name, count), dtype=torch.float32).reshape(shape)
            self.tensors[name] = data.requires_grad_()
        return self.tensors[name]

    def listing(self):
        return [{"name": n, "shape": list(t.shape)} for n, t in self.tensors.items()]


def uniform(stream, shape):
    return torch.tensor(values(stream, math.prod(shape)), dtype=torch.float64).reshape(shape)


def integers(stream, shape, limit):
    return torch.floor(uniform(stream, shape) * limit).long()


def linear(params, prefix, x, out_features, bias=True):
    weight = params.get(prefix + ".weight", (out_features, x.shape[-1]))
    y = x @ weight.t()
    return y + params.get(prefix + ".bias", (out_features,)) if bias else y


def layer_norm(params, prefix, x, eps):
    width = x.shape[-1]
    params.norm_modules.add(prefix)
    return F.layer_norm(x, (width,), params.get(prefix + ".weight", (width,)), params.get(prefix + ".bias", (width,)), eps)


def attention(params, prefix, x, heads, allowed, scale=None):
    batch, length, width = x.shape
    head = width // heads

    def split(t):
        return t.reshape(batch, length, heads, head).permute(0, 2, 1, 3)

    q = split(linear(params, prefix + ".proj_q_dense_layer", x, width))
    k = split(linear(params, prefix + ".proj_k_dense_layer", x, width))
    v = split(linear(params, prefix + ".proj_v_dense_layer", x, width))
    scores = q @ k.transpose(-1, -2)
    scores = scores / math.sqrt(head) if scale is None else scores * scale
    scores = torch.where(allowed, scores, torch.tensor(-1e9))
    context = (torch.softmax(scores, -1) @ v).permute(0, 2, 1, 3).reshape(batch, length, width)
    return linear(params, prefix + ".proj_output_dense_layer", context, width)


def feed_forward(params, prefix, x, hidden):
    h = F.gelu(linear(params, prefix + ".ffn.ffn.0.linear_layer", x, hidden))
    return linear(params, prefix + ".ffn.ffn.1.linear_layer", h, x.shape[-1])


def per_row_cross_entropy(logits, labels):
    return F.cross_entropy(logits, labels, reduction="none")


# ---------------------------------------------------------------- models ---

def fc_mnist_loss(params, batch, cfg):
    x = batch["input"].float()
    for i, size in enumerate(cfg["hidden_sizes"]):
        x = torch.relu(linear(params, f"model.fc_layers.{i}", x, size))
    logits = linear(params, "model.last_layer", x, 10)
    return F.nll_loss(torch.log_softmax(logits, -1), batch["labels"])


def mnist_pixels(stream, shape):
    """Grey levels 0..255 as an MNIST IDX file stores them, normalized as csrun's MNIST reader and
    torchvision's ToTensor + Normalize(0.1307, 0.3081) do, in float32."""
    pixels = integers(stream, shape, 256).float()
    return (pixels / 255.0 - torch.tensor(0.1307)) / torch.tensor(0.3081)


def fc_mnist_batch(step, cfg, size):
    return {"input": mnist_pixels(f"data.input.{step}", (size, 784)), "labels": integers(f"data.labels.{step}", (size,), 10)}


def mup_widths(cfg):
    """muP's width multipliers (hidden, filter), 1 without mup_base_hidden_size."""
    if "mup_base_hidden_size" not in cfg:
        return 1.0, 1.0
    return cfg["hidden_size"] / cfg["mup_base_hidden_size"], cfg["filter_size"] / cfg["mup_base_filter_size"]


def gpt2_loss(params, batch, cfg):
    """GPT2LMHeadModel; with muP (Model Zoo 2.3 on) embeddings times embeddings_scale, attention
    scores alpha * q.k / head, logits times output_logits_alpha / width."""
    ids = batch["input_ids"]
    batch_size, length = ids.shape
    hidden, vocab, eps = cfg["hidden_size"], cfg["vocab_size"], cfg["layer_norm_epsilon"]
    width, _ = mup_widths(cfg)
    head = hidden // cfg["num_heads"]
    scale = cfg["attention_logits_alpha"] / head if "mup_base_hidden_size" in cfg else None
    words = params.get("model.embedding_layer.word_embeddings.weight", (vocab, hidden))
    positions = params.get("model.embedding_layer.position_embeddings.weight", (cfg["max_position_embeddings"], hidden))
    x = words[ids] + positions[torch.arange(length)]
    if "embeddings_scale" in cfg:
        x = x * cfg["embeddings_scale"]
    causal = torch.arange(length)[:, None] >= torch.arange(length)[None, :]
    for i in range(cfg["num_hidden_layers"]):
        prefix = f"model.transformer_decoder.layers.{i}"
        x = x + attention(params, prefix + ".self_attn", layer_norm(params, prefix + ".norm1", x, eps), cfg["num_heads"], causal, scale)
        x = x + feed_forward(params, prefix, layer_norm(params, prefix + ".norm3", x, eps), cfg["filter_size"])
    x = layer_norm(params, "model.transformer_decoder.norm", x, eps)
    logits = x.reshape(batch_size * length, hidden) @ words.t()
    if "mup_base_hidden_size" in cfg:
        logits = logits * (cfg["output_logits_alpha"] / width)
    mask = batch["attention_mask"].reshape(-1).float()
    losses = per_row_cross_entropy(logits, batch["labels"].reshape(-1))
    return (losses * mask).sum() / mask.sum().clamp(min=1.0)


def gpt2_batch(step, cfg, size):
    length, vocab = cfg["max_position_embeddings"], cfg["vocab_size"]
    mask = torch.ones(size, length, dtype=torch.long)
    mask[0, length - 1] = 0
    return {"input_ids": integers(f"data.input_ids.{step}", (size, length), vocab),
            "attention_mask": mask,
            "labels": integers(f"data.labels.{step}", (size, length), vocab)}


def rms_norm(params, prefix, x, eps):
    weight = params.get(prefix + ".weight", (x.shape[-1],))
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def norm(params, prefix, x, cfg):
    if cfg.get("norm_type", "layernorm") == "rmsnorm":
        return rms_norm(params, prefix, x, cfg["layer_norm_epsilon"])
    return layer_norm(params, prefix, x, cfg["layer_norm_epsilon"])


def rotary_frequencies(cfg):
    """The Model Zoo's RotaryPositionEmbeddingHelper: inverse frequencies of the rotated pairs and
    the divisor of the positions, with linear or llama3 scaling."""
    dim, theta = cfg["rotary_dim"], cfg.get("rope_theta", 10000.0)
    inverse = [theta ** (-2.0 * i / dim) for i in range(dim // 2)]
    kind, factor = cfg.get("pos_scaling_type", "linear"), cfg.get("pos_scaling_factor", 1.0)
    if kind == "linear":
        return inverse, factor
    extra = cfg["pos_scaling_extra_args"]
    original, low, high = extra["original_max_position_embeddings"], extra["low_freq_factor"], extra["high_freq_factor"]
    scaled = []
    for f in inverse:
        wavelength = 2 * math.pi / f
        if wavelength < original / high:
            scaled.append(f)
        elif wavelength > original / low:
            scaled.append(f / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            scaled.append((1 - smooth) * f / factor + smooth * f)
    return scaled, 1.0


def rotary(x, cfg):
    """x [B, H, T, D]: the first rotary_dim features rotate in interleaved pairs (GPT-J's
    rotate_every_two), as the Model Zoo does for GPT-J and Llama."""
    dim = cfg["rotary_dim"]
    inverse, divisor = rotary_frequencies(cfg)
    per_feature = torch.tensor([f for f in inverse for _ in (0, 1)], dtype=torch.float32)
    angles = (torch.arange(x.shape[2], dtype=torch.float32) / divisor)[:, None] * per_feature[None, :]
    rotating, passing = x[..., :dim], x[..., dim:]
    pairs = rotating.reshape(*rotating.shape[:-1], dim // 2, 2)
    turned = torch.stack([-pairs[..., 1], pairs[..., 0]], -1).reshape(rotating.shape)
    return torch.cat([rotating * torch.cos(angles) + turned * torch.sin(angles), passing], -1)


def decoder_attention(params, prefix, x, cfg):
    """Causal self-attention with rotary positions, grouped key/value heads and an optional
    sliding window with sink tokens."""
    batch, length, width = x.shape
    heads = cfg["num_heads"]
    head = width // heads
    groups = cfg.get("extra_attention_params", {}).get("num_kv_groups", heads)
    bias = cfg.get("use_projection_bias_in_attention", True)

    def split(t, count):
        return t.reshape(batch, length, count, head).permute(0, 2, 1, 3)

    q = split(linear(params, prefix + ".proj_q_dense_layer", x, width, bias), heads)
    k = split(linear(params, prefix + ".proj_k_dense_layer", x, groups * head, bias), groups)
    v = split(linear(params, prefix + ".proj_v_dense_layer", x, groups * head, bias), groups)
    q, k = rotary(q, cfg), rotary(k, cfg)
    k = k.repeat_interleave(heads // groups, dim=1)
    v = v.repeat_interleave(heads // groups, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(head)
    query, key = torch.arange(length)[:, None], torch.arange(length)[None, :]
    allowed = query >= key
    if "attention_sliding_window_length" in cfg:
        near = query - key <= cfg["attention_sliding_window_length"] - 1
        near = near | (key < cfg.get("attention_sink_tokens", 0))
        allowed = allowed & near
    scores = torch.where(allowed, scores, torch.tensor(-1e9))
    context = (torch.softmax(scores, -1) @ v).permute(0, 2, 1, 3).reshape(batch, length, width)
    return linear(params, prefix + ".proj_output_dense_layer", context, width, cfg.get("use_ffn_bias_in_attention", True))


def decoder_feed_forward(params, prefix, x, cfg):
    bias = cfg.get("use_ffn_bias", True)
    hidden = cfg["filter_size"]
    h = linear(params, prefix + ".ffn.ffn.0.linear_layer", x, hidden, bias)
    if cfg["nonlinearity"] == "swiglu":
        gate = linear(params, prefix + ".ffn.ffn.0.linear_layer_for_glu", x, hidden, bias)
        h = h * F.silu(gate)
    else:
        h = F.gelu(h)
    return linear(params, prefix + ".ffn.ffn.1.linear_layer", h, x.shape[-1], bias)


def rotary_decoder_loss(params, batch, cfg):
    """GPT-J (parallel attention and feed-forward over one norm) or Llama (sequential pre-norm
    blocks): rotary positions, an untied language-model head."""
    ids = batch["input_ids"]
    batch_size, length = ids.shape
    hidden, vocab = cfg["hidden_size"], cfg["vocab_size"]
    x = params.get("model.embedding_layer.word_embeddings.weight", (vocab, hidden))[ids]
    for i in range(cfg["num_hidden_layers"]):
        prefix = f"model.transformer_decoder.layers.{i}"
        h = norm(params, prefix + ".norm1", x, cfg)
        attended = decoder_attention(params, prefix + ".self_attn", h, cfg)
        if cfg["name"] == "gptj":
            x = x + attended + decoder_feed_forward(params, prefix, h, cfg)
        else:
            x = x + attended
            x = x + decoder_feed_forward(params, prefix, norm(params, prefix + ".norm3", x, cfg), cfg)
    x = norm(params, "model.transformer_decoder.norm", x, cfg)
    logits = linear(params, "model.lm_head", x.reshape(batch_size * length, hidden), vocab, cfg.get("use_bias_in_output", False))
    mask = batch["attention_mask"].reshape(-1).float()
    losses = per_row_cross_entropy(logits, batch["labels"].reshape(-1))
    return (losses * mask).sum() / mask.sum().clamp(min=1.0)


def bert_positions(ids, cfg):
    """The position ids and the position table's rows: 0..T-1, or, with
    mask_padding_in_positional_embed, 1 + the index for a token and 0 for padding, plus the pad
    id, in a table with a row for the padding (the Model Zoo's LearnedPositionEmbeddingLayer)."""
    length, rows = ids.shape[1], cfg["max_position_embeddings"]
    if not cfg.get("mask_padding_in_positional_embed", False):
        return torch.arange(length), rows
    pad = cfg.get("pad_token_id", 0)
    index = torch.arange(1, length + 1).expand(ids.shape)
    return torch.where(ids != pad, index, torch.zeros_like(index)) + pad, rows + pad + 1


def bert_encoder(params, encoder, batch, cfg):
    """The BERT encoder under `encoder` (model.bert_encoder, or model.bert for the fine-tuning
    heads): embeddings (times embeddings_scale, before their norm) and their norm, post-LayerNorm
    layers (muP's attention scores alpha * q.k / head); the output and the word table."""
    ids = batch["input_ids"]
    batch_size, length = ids.shape
    hidden, vocab, eps = cfg["hidden_size"], cfg["vocab_size"], cfg["layer_norm_epsilon"]
    head = hidden // cfg["num_heads"]
    scale = cfg["attention_logits_alpha"] / head if "mup_base_hidden_size" in cfg else None
    prefix = encoder + ".embedding_layer"
    words = params.get(prefix + ".word_embeddings.weight", (vocab, hidden))
    positions, rows = bert_positions(ids, cfg)
    x = (words[ids] + params.get(prefix + ".position_embeddings.weight", (rows, hidden))[positions]
         + params.get(prefix + ".segment_embeddings.weight", (2, hidden))[batch["token_type_ids"]])
    x = layer_norm(params, encoder + ".embed_ln_f", x * cfg.get("embeddings_scale", 1.0), eps)
    allowed = (batch["attention_mask"] != 0).reshape(batch_size, 1, 1, length)
    for i in range(cfg["num_hidden_layers"]):
        layer = f"{encoder}.transformer_encoder.layers.{i}"
        if "projected_dims" in cfg:
            attended = linformer_attention(params, layer + ".self_attn", x, cfg)
        else:
            attended = attention(params, layer + ".self_attn", x, cfg["num_heads"], allowed, scale)
        x = layer_norm(params, layer + ".norm1", x + attended, eps)
        x = layer_norm(params, layer + ".norm2", x + feed_forward(params, layer, x, cfg["filter_size"]), eps)
    return x, words


def linformer_attention(params, prefix, x, cfg):
    """The Model Zoo's TensorFlow LinformerAttentionLayer: keys and values projected along the
    sequence (a weight [P, T] and a bias; one for both with linformer-shared-kv), no mask."""
    batch, length, width = x.shape
    heads, projected = cfg["num_heads"], cfg["projected_dims"]
    head = width // heads

    def project(t, name):
        weight = params.get(f"{prefix}.{name}.weight", (projected, length))
        return (t.transpose(1, 2) @ weight.t() + params.get(f"{prefix}.{name}.bias", (projected,))).transpose(1, 2)

    def split(t, count):
        return t.reshape(batch, count, heads, head).permute(0, 2, 1, 3)

    q = split(linear(params, prefix + ".proj_q_dense_layer", x, width), length)
    k = linear(params, prefix + ".proj_k_dense_layer", x, width)
    v = linear(params, prefix + ".proj_v_dense_layer", x, width)
    shared = cfg["attention_style"] == "linformer-shared-kv"
    k = split(project(k, "E_projection"), projected)
    v = split(project(v, "E_projection" if shared else "F_projection"), projected)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(head)
    context = (torch.softmax(scores, -1) @ v).permute(0, 2, 1, 3).reshape(batch, length, width)
    return linear(params, prefix + ".proj_output_dense_layer", context, width)


def bert_pooler(params, encoder, x):
    return torch.tanh(linear(params, encoder + ".pooler.pooler.ffn.0.linear_layer", x[:, 0], x.shape[-1]))


def bert_classifier_loss(params, batch, cfg):
    """BertForSequenceClassification: the pooled first position through model.classifier; the
    mean cross entropy."""
    x, _ = bert_encoder(params, "model.bert", batch, cfg)
    logits = linear(params, "model.classifier", bert_pooler(params, "model.bert", x), cfg["num_labels"])
    return per_row_cross_entropy(logits, batch["labels"]).mean()


def bert_token_classifier_loss(params, batch, cfg):
    """BertForTokenClassification: model.classifier at every position; cross entropy where
    loss_mask is set, summed, over the batch, times loss_weight."""
    x, _ = bert_encoder(params, "model.bert", batch, cfg)
    batch_size, length, hidden = x.shape
    logits = linear(params, "model.classifier", x.reshape(batch_size * length, hidden), cfg["num_classes"])
    losses = per_row_cross_entropy(logits, batch["labels"].reshape(-1)) * batch["loss_mask"].reshape(-1).float()
    return losses.sum() / batch_size * cfg["loss_weight"]


def bert_summarization_loss(params, batch, cfg):
    """BertSum: the encoder's outputs at the sentences' [CLS] positions through model.classifier;
    cross entropy weighted by cls_weights, over the batch."""
    x, _ = bert_encoder(params, "model.bert", batch, cfg)
    batch_size, length, hidden = x.shape
    at = F.one_hot(batch["cls_indices"], length).float() @ x
    logits = linear(params, "model.classifier", at.reshape(-1, hidden), 2)
    losses = per_row_cross_entropy(logits, batch["labels"].reshape(-1)) * batch["cls_weights"].reshape(-1)
    return losses.sum() / batch_size


def bert_loss(params, batch, cfg):
    ids = batch["input_ids"]
    batch_size, length = ids.shape
    hidden, vocab, eps = cfg["hidden_size"], cfg["vocab_size"], cfg["layer_norm_epsilon"]
    x, words = bert_encoder(params, "model.bert_encoder", batch, cfg)
    positions = batch["masked_lm_positions"]
    at_masks = F.one_hot(positions, length).float() @ x
    h = linear(params, "model.bert_mlm_head.mlm_transform.ffn.ffn.0.linear_layer", at_masks, hidden)
    h = layer_norm(params, "model.bert_mlm_head.mlm_transform.layer_norm", F.gelu(h), eps)
    width, _ = mup_widths(cfg)
    logits_scale = cfg["output_logits_alpha"] / width if "mup_base_hidden_size" in cfg else 1.0
    logits = h.reshape(-1, hidden) @ words.t() + params.get("model.bert_mlm_head.classifier.ffn.0.linear_layer.bias", (vocab,))
    weights = batch["masked_lm_weights"].reshape(-1).float()
    mlm = (per_row_cross_entropy(logits * logits_scale, batch["masked_lm_labels"].reshape(-1)) * weights).sum() / batch_size
    if cfg.get("disable_nsp", cfg["name"] in ("roberta", "linformer")):
        return mlm
    pooled = torch.tanh(linear(params, "model.bert_encoder.pooler.pooler.ffn.0.linear_layer", x[:, 0], hidden))
    nsp_logits = linear(params, "model.bert_cls_head.classifier.ffn.0.linear_layer", pooled, 2) * logits_scale
    return mlm + per_row_cross_entropy(nsp_logits, batch["next_sentence_label"]).mean()


def bert_tokens(step, cfg, size):
    """The encoder's inputs, as bert_batch makes them."""
    length, vocab = cfg["max_position_embeddings"], cfg["vocab_size"]
    mask = torch.ones(size, length, dtype=torch.long)
    mask[1, length - 2:] = 0
    return {"input_ids": integers(f"data.input_ids.{step}", (size, length), vocab),
            "attention_mask": mask,
            "token_type_ids": (torch.arange(length)[None, :] >= length // 2).long().expand(size, length).contiguous()}


def bert_classifier_batch(step, cfg, size):
    return dict(bert_tokens(step, cfg, size), labels=integers(f"data.labels.{step}", (size,), cfg["num_labels"]))


def bert_token_classifier_batch(step, cfg, size):
    length = cfg["max_position_embeddings"]
    loss_mask = torch.ones(size, length, dtype=torch.long)
    loss_mask[0, length - 1] = 0
    return dict(bert_tokens(step, cfg, size), labels=integers(f"data.labels.{step}", (size, length), cfg["num_classes"]),
                loss_mask=loss_mask)


def bert_summarization_batch(step, cfg, size):
    sentences = cfg["max_cls_tokens"]
    weights = torch.ones(size, sentences)
    weights[0, sentences - 1] = 0.0
    return dict(bert_tokens(step, cfg, size), labels=integers(f"data.labels.{step}", (size, sentences), 2),
                cls_indices=integers(f"data.cls_indices.{step}", (size, sentences), cfg["max_position_embeddings"]),
                cls_weights=weights)


def bert_batch(step, cfg, size):
    length, vocab, predictions = cfg["max_position_embeddings"], cfg["vocab_size"], cfg["max_predictions_per_seq"]
    mask = torch.ones(size, length, dtype=torch.long)
    mask[1, length - 2:] = 0
    weights = torch.ones(size, predictions)
    weights[0, predictions - 1] = 0.0
    return {"input_ids": integers(f"data.input_ids.{step}", (size, length), vocab),
            "attention_mask": mask,
            "token_type_ids": (torch.arange(length)[None, :] >= length // 2).long().expand(size, length).contiguous(),
            "masked_lm_positions": integers(f"data.masked_lm_positions.{step}", (size, predictions), length),
            "masked_lm_labels": integers(f"data.masked_lm_labels.{step}", (size, predictions), vocab),
            "masked_lm_weights": weights,
            "next_sentence_label": integers(f"data.next_sentence_label.{step}", (size,), 2)}


# ------------------------------------------------------- encoder-decoder ---

def relative_bucket(relative, bidirectional, num_buckets, max_distance=128):
    """The Model Zoo's RelativePositionEmbeddingLayer._relative_position_bucket, on an int tensor."""
    bucket = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        bucket += (relative > 0).long() * num_buckets
        relative = torch.abs(relative)
    else:
        relative = -torch.min(relative, torch.zeros_like(relative))
    max_exact = num_buckets // 2
    is_small = relative < max_exact
    large = max_exact + (torch.log(relative.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return bucket + torch.where(is_small, relative, large)


def relative_bias(params, name, length, heads, buckets, bidirectional):
    table = params.get(name, (buckets, heads))
    relative = torch.arange(length)[None, :] - torch.arange(length)[:, None]
    return table[relative_bucket(relative, bidirectional, buckets)].permute(2, 0, 1)[None]


def sinusoid(length, width):
    """The Model Zoo's FixedPositionEmbeddingLayer: sine and cosine interleaved (in float64)."""
    timescales = width // 2
    step = math.log(1e4) / (timescales - 1)
    table = torch.zeros(length, width, dtype=torch.float64)
    angles = torch.arange(length, dtype=torch.float64)[:, None] * torch.exp(-torch.arange(timescales, dtype=torch.float64) * step)[None, :]
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table.float()


def seq2seq_attention(params, prefix, x, memory, cfg, keep, bias=None, causal=False):
    batch, length, _ = x.shape
    keys = memory.shape[1]
    heads, d_kv = cfg["num_heads"], cfg["d_kv"]
    inner = heads * d_kv

    def split(t, count):
        return t.reshape(batch, count, heads, d_kv).permute(0, 2, 1, 3)

    q = split(linear(params, prefix + ".proj_q_dense_layer", x, inner, bias=False), length)
    k = split(linear(params, prefix + ".proj_k_dense_layer", memory, inner, bias=False), keys)
    v = split(linear(params, prefix + ".proj_v_dense_layer", memory, inner, bias=False), keys)
    scores = q @ k.transpose(-1, -2)
    if cfg["name"] == "transformer":
        scores = scores * (1.0 / math.sqrt(d_kv))
    if "mup_base_d_model" in cfg:
        # queries and keys times width^-1/2 each, then 1/sqrt(d_kv) on queries (and keys with
        # scale_<side>_qk_dot_by_d), alpha on the scores; values and outputs cancel
        side = "decoder" if causal or memory is not x else "encoder"
        width = cfg["d_model"] / cfg["mup_base_d_model"]
        by_d = cfg.get("scale_%s_qk_dot_by_d" % side, True)
        alpha = cfg.get("%s_attention_logits_alpha" % side, 1.0)
        scores = scores * (alpha / width / (d_kv if by_d else math.sqrt(d_kv)))
    if bias is not None:
        scores = scores + bias
    allowed = torch.ones(batch, 1, length, keys, dtype=torch.bool)
    if keep is not None:
        allowed = allowed & (keep != 0)[:, None, None, :]
    if causal:
        allowed = allowed & (torch.arange(length)[:, None] >= torch.arange(keys)[None, :])
    scores = torch.where(allowed, scores, torch.tensor(-1e9))
    context = (torch.softmax(scores, -1) @ v).permute(0, 2, 1, 3).reshape(batch, length, inner)
    return linear(params, prefix + ".proj_output_dense_layer", context, x.shape[-1], bias=False)


def seq2seq_feed_forward(params, prefix, x, cfg):
    bias = cfg.get("use_ffn_bias", cfg["name"] == "transformer")
    hidden = cfg["d_ff"]
    h = linear(params, prefix + ".ffn.ffn.0.linear_layer", x, hidden, bias=bias)
    if cfg["encoder_nonlinearity"] in ("gated-gelu", "geglu"):
        h = h * F.gelu(linear(params, prefix + ".ffn.ffn.0.linear_layer_for_glu", x, hidden, bias=bias))
    else:
        h = torch.relu(h)
    return linear(params, prefix + ".ffn.ffn.1.linear_layer", h, x.shape[-1], bias=bias)


def seq2seq_loss(params, batch, cfg):
    """The Model Zoo's T5ForConditionalGeneration (T5: pre-norm, relative position bias, no
    score scaling; Transformer: post-norm, fixed sinusoid, scaled scores, label smoothing)."""
    transformer = cfg["name"] == "transformer"
    d_model, heads = cfg["d_model"], cfg["num_heads"]
    vocab = cfg["src_vocab_size"] + cfg.get("extra_ids", 0)
    shared = cfg.get("share_encoder_decoder_embedding", True)
    tied = cfg.get("share_embedding_weights", True)
    pre_norm = not transformer
    buckets = cfg.get("relative_attention_num_buckets", 32)
    source_words = params.get("model.encoder_embeddings.word_embeddings.weight", (vocab, d_model))
    encoder_bias = decoder_bias = None
    source, target = batch["input_ids"], batch["decoder_input_ids"]
    if not transformer:
        encoder_bias = relative_bias(params, "model.encoder_embeddings.position_embed_helper.relative_attention_bias.weight",
                                     source.shape[1], heads, buckets, True)
    target_words = source_words if shared else params.get("model.decoder_embeddings.word_embeddings.weight", (vocab, d_model))
    if not transformer:
        decoder_bias = relative_bias(params, "model.decoder_embeddings.position_embed_helper.relative_attention_bias.weight",
                                     target.shape[1], heads, buckets, False)

    def sublayer(prefix, x, branch):
        if pre_norm:
            return x + branch(norm(params, prefix, x, cfg))
        return norm(params, prefix, x + branch(x), cfg)

    keep = batch["attention_mask"]
    mup = "mup_base_d_model" in cfg
    embeddings_scale = cfg.get("embeddings_alpha", 1.0) * math.sqrt(d_model) if mup else 1.0
    x = source_words[source]
    if transformer:
        x = x + sinusoid(source.shape[1], d_model)
    x = x * embeddings_scale
    for i in range(cfg["encoder_num_hidden_layers"]):
        p = f"model.encoder.layers.{i}"
        x = sublayer(p + ".norm1", x, lambda h: seq2seq_attention(params, p + ".self_attn", h, h, cfg, keep, encoder_bias))
        x = sublayer(p + ".norm2", x, lambda h: seq2seq_feed_forward(params, p, h, cfg))
    memory = norm(params, "model.encoder.norm", x, cfg)

    y = target_words[target]
    if transformer:
        y = y + sinusoid(target.shape[1], d_model)
    y = y * embeddings_scale
    for i in range(cfg.get("decoder_num_hidden_layers", cfg["encoder_num_hidden_layers"])):
        p = f"model.decoder.layers.{i}"
        y = sublayer(p + ".norm1", y, lambda h: seq2seq_attention(params, p + ".self_attn", h, h, cfg, None, decoder_bias, causal=True))
        y = sublayer(p + ".norm2", y, lambda h: seq2seq_attention(params, p + ".multihead_attn", h, memory, cfg, keep))
        y = sublayer(p + ".norm3", y, lambda h: seq2seq_feed_forward(params, p, h, cfg))
    y = norm(params, "model.decoder.norm", y, cfg)

    rows = y.shape[0] * y.shape[1]
    flat = y.reshape(rows, d_model)
    if tied:
        logits = (flat if mup else flat * d_model ** -0.5) @ target_words.t()
    else:
        logits = flat @ params.get("model.lm_head.weight", (vocab, d_model)).t()
    if mup:
        width = d_model / cfg["mup_base_d_model"]
        logits = logits * cfg.get("output_logits_alpha", 1.0) / (width if cfg.get("scale_output_logits_by_d", False) else math.sqrt(width))
    labels = batch["labels"].reshape(-1)
    mask = batch["decoder_attention_mask"].reshape(-1).float()
    losses = per_row_cross_entropy(logits, labels)
    smoothing = cfg.get("label_smoothing", 0.0)
    if smoothing > 0:
        losses = (1 - smoothing) * losses + smoothing * (-torch.log_softmax(logits, -1)).mean(-1)
    total = (losses * mask).sum()
    if cfg.get("mlm_loss_scaling", "batch_size") == "batch_size":
        return total / source.shape[0] * cfg.get("lm_loss_weight", 1.0)
    return total / mask.sum().clamp(min=1.0)


def seq2seq_batch(step, cfg, size):
    vocab = cfg["src_vocab_size"] + cfg.get("extra_ids", 0)
    source, target = cfg["source_length"], cfg["target_length"]
    keep = torch.ones(size, source, dtype=torch.long)
    keep[1, source - 2:] = 0
    decoder_keep = torch.ones(size, target, dtype=torch.long)
    decoder_keep[0, target - 1] = 0
    return {"input_ids": integers(f"data.input_ids.{step}", (size, source), vocab),
            "attention_mask": keep,
            "decoder_input_ids": integers(f"data.decoder_input_ids.{step}", (size, target), vocab),
            "decoder_attention_mask": decoder_keep,
            "labels": integers(f"data.labels.{step}", (size, target), vocab)}


# ------------------------------------------------------------------ unet ---

def unet_loss(params, batch, cfg):
    """The Model Zoo's UNet (ConvNormActBlock = conv, norm, activation; UNetBlock; max pooling or
    strided convolutions; transposed-convolution upsampling; skip connections), in 2D or 3D."""
    three = cfg.get("use_conv3d", False)
    axes = 3 if three else 2
    conv, conv_t = (F.conv3d, F.conv_transpose3d) if three else (F.conv2d, F.conv_transpose2d)
    bias = cfg.get("enable_bias", "norm_layer" not in cfg)
    strided = cfg.get("downscale_method", "max_pool") == "strided_conv"
    kernels = [1 if c == "1x1_conv" else 3 for c in cfg.get("convs_per_block", ["3x3_conv", "3x3_conv"])]

    def norm(prefix, y):
        kind = cfg.get("norm_layer")
        if kind is None:
            return y
        c = y.shape[1]
        params.norm_modules.add(prefix)
        weight, shift = params.get(prefix + ".weight", (c,)), params.get(prefix + ".bias", (c,))
        if kind.startswith("batchnorm"):
            mean = params.buffers.setdefault(prefix + ".running_mean", torch.zeros(c))
            variance = params.buffers.setdefault(prefix + ".running_var", torch.ones(c))
            return F.batch_norm(y, mean, variance, weight, shift, training=params.training,
                                momentum=0.1, eps=1e-5)
        groups = cfg["norm_kwargs"]["num_groups"] if kind == "group" else c
        return F.group_norm(y, groups, weight, shift, eps=1e-5)

    def conv_norm_act(prefix, x, out, k, stride, act):
        w = params.get(prefix + ".0.weight", (out, x.shape[1]) + (k,) * axes)
        b = params.get(prefix + ".0.bias", (out,)) if bias else None
        y = norm(prefix + ".1", conv(x, w, b, stride=stride, padding=((stride - 1) + (k - 1)) // 2))
        return torch.relu(y) if act == "relu" else y

    def block(prefix, x, out, downscale, act="relu"):
        strided_layer = 0 if cfg.get("downscale_first_conv", False) else len(kernels) - 1
        skip, first = x, None
        for i, k in enumerate(kernels):
            stride = 2 if downscale and strided and i == strided_layer else 1
            x = conv_norm_act(f"{prefix}.layers.{i}", x, out, k, stride, act)
            if cfg.get("residual_blocks", False) and i == 0:
                first = x
            if cfg.get("residual_blocks", False) and i == len(kernels) - 1 and i > 0:
                x = x + first
            if strided and i == len(kernels) - 2:
                skip = x
        return x, (skip if strided else x)

    encoder, decoder = cfg["encoder_filters"], cfg["decoder_filters"]
    downscales = cfg.get("downscale_encoder_blocks", strided)
    if isinstance(downscales, bool):
        downscales = [downscales] * len(encoder)
    x, skips = batch["input"], []
    for i in range(len(encoder) - 1):
        out, skip = block(f"model.encoder.unet_blocks.{i}", x, encoder[i], downscales[i])
        skips.append(skip)
        x = out if strided else (F.max_pool3d(out, 2) if three else F.max_pool2d(out, 2))
    x, _ = block("model.bottleneck", x, encoder[-1], cfg.get("downscale_bottleneck", False))
    for j, filters in enumerate(decoder):
        prefix = f"model.decoder.transpose_layers.{j}"
        w = params.get(prefix + ".weight", (x.shape[1], filters) + (2,) * axes)
        x = conv_t(x, w, params.get(prefix + ".bias", (filters,)) if bias else None, stride=2)
        x = torch.cat([x, skips[-1 - j]], dim=1)
        x, _ = block(f"model.decoder.unet_blocks.{j}", x, filters, False)
    classes = cfg["num_classes"]
    outputs = 1 if cfg["loss"] == "bce" else classes
    logits = conv(x, params.get("model.final_conv.0.weight", (outputs, x.shape[1]) + (1,) * axes),
                  params.get("model.final_conv.0.bias", (outputs,)))
    labels = batch["labels"]
    if cfg["loss"] == "bce":
        m = torch.relu(-logits)
        return ((1 - labels) * logits + m + torch.log(torch.exp(-m) + torch.exp(-logits - m))).mean()
    cross_entropy = F.cross_entropy(logits, labels)
    if cfg["loss"] == "ssce":
        return cross_entropy
    probabilities = torch.softmax(logits, 1)
    targets = F.one_hot(labels, classes).movedim(-1, 1).float()
    keep = torch.ones(classes)
    keep[0] = 0.0  # ignore_background_class
    shape = (1, classes) + (1,) * axes
    probabilities, targets = probabilities * keep.reshape(shape), targets * keep.reshape(shape)
    dims = tuple(range(2, 2 + axes))
    score = 2 * (probabilities * targets).sum(dims) / (targets.sum(dims) + probabilities.sum(dims) + 1e-6)
    dice = score.mean() * classes / (classes - 1)
    return 0.5 * cross_entropy + 0.5 * (1 - dice)


def unet_batch(step, cfg, size):
    spatial = tuple(cfg["image_shape"]) if cfg.get("use_conv3d") else tuple(cfg["image_shape"][:2])
    channels = cfg.get("input_channels", 1) if cfg.get("use_conv3d") else cfg["image_shape"][2]
    # Grey levels normalized zero_centered, as csrun's Hdf5DataProcessor reads them, in float32.
    image = integers(f"data.input.{step}", (size, channels) + spatial, 256).float() / 127.5 - 1
    if cfg["loss"] == "bce":
        labels = integers(f"data.labels.{step}", (size, 1) + spatial, 2).float()
    else:
        labels = integers(f"data.labels.{step}", (size,) + spatial, cfg["num_classes"])
    return {"input": image, "labels": labels}


# ------------------------------------------------------------ optimizers ---

def sgd(params, state, lr, step, options):
    momentum = options.get("momentum", 0.0)
    for name, p in params.tensors.items():
        buffer = state.get(name)
        buffer = p.grad.clone() if buffer is None else momentum * buffer + p.grad
        state[name] = buffer
        p.data -= lr * buffer


def adam(params, state, lr, step, options):
    """The Model Zoo's Adam (AdamBase: the bias corrections scale the step, eps added to sqrt(v);
    weight decay as L2 on the gradient, none for biases and normalization weights)."""
    beta1, beta2 = options.get("betas", [0.9, 0.999])
    eps, decay = options.get("eps", 1e-6), options.get("weight_decay", 0.0)
    for name, p in params.tensors.items():
        g = p.grad + decay * p.data if decay and params.takes_weight_decay(name) else p.grad
        m, v, t = state.get(name, (torch.zeros_like(p), torch.zeros_like(p), 0))
        t += 1
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        state[name] = (m, v, t)
        p.data -= lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (v.sqrt() + eps)


def adamw(params, state, base_lr, step, options):
    """The Model Zoo's AdamW (AdamBase: correct_bias, decoupled weight decay of the weight before
    the step, none for biases and normalization weights); a parameter's learning rate is the
    schedule's times its group's scale (options["lr_scale"](name))."""
    beta1, beta2 = options.get("betas", [0.9, 0.999])
    eps, decay = options.get("eps", 1e-6), options.get("weight_decay", 0.0)
    for name, p in params.tensors.items():
        lr = base_lr * options.get("lr_scale", lambda n: 1.0)(name)
        m, v, t = state.get(name, (torch.zeros_like(p), torch.zeros_like(p), 0))
        t += 1
        m = beta1 * m + (1 - beta1) * p.grad
        v = beta2 * v + (1 - beta2) * p.grad * p.grad
        state[name] = (m, v, t)
        update = math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (v.sqrt() + eps)
        if decay > 0 and params.takes_weight_decay(name):
            update = update + decay * p.data
        p.data -= lr * update


def lamb(params, state, lr, step, options):
    """Lamb as in cybertronai's pytorch-lamb (no bias correction; trust ratio with ||w|| <= 10)."""
    beta1, beta2 = options.get("betas", [0.9, 0.999])
    eps, decay = options.get("eps", 1e-6), options.get("weight_decay", 0.0)
    for name, p in params.tensors.items():
        m, v = state.get(name, (torch.zeros_like(p), torch.zeros_like(p)))
        m = beta1 * m + (1 - beta1) * p.grad
        v = beta2 * v + (1 - beta2) * p.grad * p.grad
        state[name] = (m, v)
        update = m / (v.sqrt() + eps)
        if params.takes_weight_decay(name):
            update = update + decay * p.data
        weight_norm = p.data.norm().clamp(0, 10)
        update_norm = update.norm()
        trust = weight_norm / update_norm if weight_norm > 0 and update_norm > 0 else torch.tensor(1.0)
        p.data -= lr * trust * update


def adafactor(params, state, lr, step, options):
    """cerebras.pytorch's Adafactor (relative_step, warmup_init and beta1 off; clip_threshold 1)."""
    eps1, eps2 = options.get("eps", (1e-30, 1e-3))
    decay_rate, weight_decay = options.get("decay_rate", -0.8), options.get("weight_decay", 0.0)
    for name, p in params.tensors.items():
        s = state.setdefault(name, {"step": 0})
        s["step"] += 1
        t = float(s["step"])
        g = p.grad
        rate = lr * max(eps2, p.pow(2).mean().sqrt().item())
        beta2 = 1.0 - t ** decay_rate
        update = g * g + eps1
        if p.dim() >= 2:
            row = s.get("row", torch.zeros(p.shape[:-1]))
            col = s.get("col", torch.zeros(p.shape[:-2] + p.shape[-1:]))
            row = row * beta2 + update.mean(-1) * (1 - beta2)
            col = col * beta2 + update.mean(-2) * (1 - beta2)
            s["row"], s["col"] = row, col
            update = torch.rsqrt(row / row.mean(-1, keepdim=True)).unsqueeze(-1) * torch.rsqrt(col).unsqueeze(-2)
        else:
            v = s.get("v", torch.zeros_like(p))
            v = v * beta2 + update * (1 - beta2)
            s["v"] = v
            update = torch.rsqrt(v)
        update = update * g
        update = update / max(update.pow(2).mean().sqrt().item(), 1.0)
        update = update * rate
        if params.takes_weight_decay(name):
            p.data -= p.data * (weight_decay * rate)
        p.data -= update


# ------------------------------------------------------------- training ---

def train(name, params_yaml, model_cfg, loss_fn, batch_fn, batch_size, optimizer, options, schedule,
          clip_norm=None, scaler=None, autocast=False):
    params = Parameters()
    state = {}
    losses, scales = [], []
    scale = scaler["initial"] if scaler else 1.0
    clean = 0
    for step in range(STEPS):
        batch = batch_fn(step, model_cfg, batch_size)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(params, batch, model_cfg)
        loss = loss.float()
        for p in params.tensors.values():
            p.grad = None
        (loss * scale).backward()
        for p in params.tensors.values():
            p.grad /= scale
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params.tensors.values(), clip_norm)
        losses.append(loss.item())
        if step == 0:
            first_statistics = {n: b.reshape(-1).tolist() for n, b in params.buffers.items()}
        scales.append(scale)
        with torch.no_grad():
            optimizer(params, state, schedule(step), step, options)
        if scaler:
            clean += 1
            if clean > scaler["steps_per_increase"]:
                scale, clean = scale * 2, 0
    case = {"name": name, "params": params_yaml, "batch_size": batch_size, "parameters": params.listing(), "losses": losses}
    if params.buffers:
        # The running statistics after the first step (later steps' near-zero means drift apart
        # by float32 rounding of the weights' trajectory), and the loss of the first batch
        # evaluated with the last step's statistics (eval mode) and the trained weights.
        case["statistics"] = first_statistics
        params.training = False
        with torch.no_grad():
            case["eval_loss"] = loss_fn(params, batch_fn(0, model_cfg, batch_size), model_cfg).item()
    if scaler:
        case["loss_scales"] = scales
    if autocast:
        case["autocast"] = "bfloat16"
    return case


def cosine_decay(initial, end, total, step):
    return end + 0.5 * (initial - end) * (1 + math.cos(math.pi * min(step, total) / total))


def main():
    fc = {"name": "fc_mnist", "hidden_sizes": [8, 8], "activation_fn": "relu"}
    gpt = {"name": "gpt2", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_heads": 2,
           "filter_size": 32, "max_position_embeddings": 8, "dropout_rate": 0.0, "layer_norm_epsilon": 1e-5}
    bert = {"name": "bert", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_heads": 2,
            "filter_size": 32, "max_position_embeddings": 8, "dropout_rate": 0.0, "layer_norm_epsilon": 1e-5}
    bert_data = dict(bert, max_predictions_per_seq=3)
    gptj = {"name": "gptj", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_heads": 2,
            "filter_size": 32, "max_position_embeddings": 8, "position_embedding_type": "rotary", "rotary_dim": 4,
            "dropout_rate": 0.0, "attention_dropout_rate": 0.0, "embedding_dropout_rate": 0.0, "layer_norm_epsilon": 1e-5,
            "nonlinearity": "gelu", "share_embedding_weights": False, "use_bias_in_output": True,
            "use_projection_bias_in_attention": False, "use_ffn_bias_in_attention": False, "use_ffn_bias": True}
    llama = {"name": "llama", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_heads": 4,
             "filter_size": 24, "max_position_embeddings": 8, "position_embedding_type": "rotary", "rotary_dim": 4,
             "rope_theta": 10000.0, "pos_scaling_type": "llama3", "pos_scaling_factor": 8.0,
             "pos_scaling_extra_args": {"original_max_position_embeddings": 8, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
             "attention_module": "multiquery_attention", "extra_attention_params": {"num_kv_groups": 2},
             "norm_type": "rmsnorm", "nonlinearity": "swiglu", "dropout_rate": 0.0, "attention_dropout_rate": 0.0,
             "layer_norm_epsilon": 1e-5, "share_embedding_weights": False, "use_bias_in_output": False,
             "use_projection_bias_in_attention": False, "use_ffn_bias_in_attention": False, "use_ffn_bias": False}
    mup = dict(gpt, mup_base_hidden_size=8, mup_base_filter_size=16, output_logits_alpha=2.0,
               embeddings_scale=3.0, attention_logits_alpha=0.5)
    mup_width, mup_filter = mup_widths(mup)

    def mup_lr_scale(name):
        if "self_attn" in name and name.endswith("weight"):
            return 1 / mup_width
        if ".ffn.ffn.0." in name and name.endswith("weight"):
            return 1 / mup_width
        if ".ffn.ffn.1." in name and name.endswith("weight"):
            return 1 / mup_filter
        return 1.0

    bert_mup_keys = {"mup_base_hidden_size": 8, "mup_base_filter_size": 16, "output_logits_alpha": 2.0,
                     "embeddings_scale": 3.0, "attention_logits_alpha": 0.5}

    def bert_mup_lr_scale(name):
        if "transformer_encoder" in name and "self_attn" in name and name.endswith("weight"):
            return 1 / mup_width
        if "transformer_encoder" in name and ".ffn.ffn.0." in name and name.endswith("weight"):
            return 1 / mup_width
        if "transformer_encoder" in name and ".ffn.ffn.1." in name and name.endswith("weight"):
            return 1 / mup_filter
        if "pooler" in name and name.endswith("weight"):
            return 1 / mup_width
        return 1.0

    roberta_keys = {"name": "roberta", "mask_padding_in_positional_embed": True}
    heads = dict(bert, dropout_rate=0.0, attention_dropout_rate=0.0)
    classifier = dict(heads, name="bert/classifier", num_labels=3, task_dropout=0.0, problem_type="single_label_classification")
    token_classifier = dict(heads, name="bert/token_classifier", num_classes=5, encoder_output_dropout_rate=0.0, loss_weight=0.5)
    summarization = dict(heads, name="bert/extractive_summarization")
    mistral = dict(llama, rotary_dim=2, pos_scaling_type="linear", pos_scaling_factor=2.0,
                   extra_attention_params={"num_kv_groups": 1}, attention_sliding_window_length=3, attention_sink_tokens=1)
    del mistral["pos_scaling_extra_args"]
    adamw_options = {"betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}
    fp32 = {"enabled": False}
    bf16 = {"enabled": True, "fp16_type": "bfloat16"}
    t5 = {"name": "t5", "src_vocab_size": 30, "extra_ids": 2, "d_model": 16, "d_kv": 4, "num_heads": 2, "d_ff": 24,
          "encoder_num_hidden_layers": 2, "decoder_num_hidden_layers": 1, "dropout_rate": 0.0,
          "relative_attention_num_buckets": 8, "norm_type": "rmsnorm", "encoder_nonlinearity": "gated-gelu",
          "layer_norm_epsilon": 1e-6, "lm_loss_weight": 0.5}
    transformer = {"name": "transformer", "src_vocab_size": 30, "tgt_vocab_size": 30, "d_model": 16, "d_kv": 8,
                   "num_heads": 2, "d_ff": 32, "encoder_num_hidden_layers": 1, "decoder_num_hidden_layers": 2,
                   "dropout_rate": 0.0, "relu_dropout_rate": 0.0, "position_embedding_type": "fixed",
                   "src_max_position_embeddings": 8, "tgt_max_position_embeddings": 8, "norm_type": "layernorm",
                   "encoder_nonlinearity": "relu", "use_ffn_bias": True, "layer_norm_epsilon": 1e-5,
                   "label_smoothing": 0.1, "mlm_loss_scaling": "num_masked", "share_embedding_weights": False,
                   "share_encoder_decoder_embedding": False}
    lengths = {"source_length": 8, "target_length": 6}
    unet = {"name": "unet", "encoder_filters": [4, 8, 8], "decoder_filters": [8, 4], "nonlinearity": "ReLU",
            "norm_layer": "group", "norm_kwargs": {"num_groups": 2}, "enable_bias": True, "residual_blocks": True,
            "loss": "bce", "num_classes": 2}
    unet3d = {"name": "unet", "use_conv3d": True, "input_channels": 1, "encoder_filters": [4, 4, 8],
              "decoder_filters": [4, 4], "nonlinearity": "relu", "norm_layer": "batchnorm3d", "enable_bias": False,
              "downscale_method": "strided_conv", "downscale_first_conv": True,
              "downscale_encoder_blocks": [False, True], "downscale_bottleneck": True, "loss": "ssce_dice",
              "num_classes": 3}
    t5_mup = dict(t5, mup_base_d_model=8, mup_base_d_ff=12, encoder_attention_logits_alpha=4.0,
                  decoder_attention_logits_alpha=2.0, scale_decoder_qk_dot_by_d=False,
                  output_logits_alpha=2.22, embeddings_alpha=1.5)

    def t5_mup_lr_scale(name):
        width, filter_width = 16 / 8, 24 / 12
        if name.endswith("weight") and ("embedding" in name or "lm_head" in name):
            return width ** -0.5
        if name.endswith("weight") and "attn.proj_" in name:
            return width ** -0.5
        if name.endswith("weight") and ".ffn.ffn.1." in name:
            return 1 / filter_width
        if name.endswith("weight") and ".ffn.ffn.0." in name:
            return 1 / width
        return 1.0
    linformer = dict(bert, name="linformer", projected_dims=4, attention_style="linformer-shared-heads")
    cases = [
        train("fc_mnist SGD", {"device": "CPU", "model": fc, "optimizer": {"SGD": {"lr": 0.05, "momentum": 0.9}},
                               "precision": fp32},
              fc, fc_mnist_loss, fc_mnist_batch, 4, sgd, {"momentum": 0.9}, lambda s: 0.05),
        train("fc_mnist Lamb dynamic loss scaling",
              {"device": "CSX", "model": fc, "optimizer": {"Lamb": {"lr": 0.01, "weight_decay": 0.01}},
               "precision": {"fp16_type": "cbfloat16", "loss_scaling_factor": "dynamic", "initial_loss_scale": 256.0,
                             "steps_per_increase": 5}},
              fc, fc_mnist_loss, fc_mnist_batch, 4, lamb, {"weight_decay": 0.01}, lambda s: 0.01,
              scaler={"initial": 256.0, "steps_per_increase": 5}),
        train("gpt2 AdamW warm-up, cosine decay, clipping",
              {"device": "CPU", "model": gpt, "precision": dict(fp32, max_gradient_norm=1.0),
               "optimizer": {"AdamW": {"betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}},
               "schedulers": [{"SequentialLR": {"schedulers": [
                   {"LinearLR": {"initial_learning_rate": 0.0, "end_learning_rate": 0.01, "total_iters": 5}},
                   {"CosineDecayLR": {"initial_learning_rate": 0.01, "end_learning_rate": 0.001, "total_iters": 15}}]}}]},
              gpt, gpt2_loss, gpt2_batch, 2, adamw, {"betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01},
              lambda s: 0.01 * s / 5 if s < 5 else cosine_decay(0.01, 0.001, 15, s - 5), clip_norm=1.0),
        train("bert AdamW", {"device": "CPU", "model": bert, "precision": fp32,
                             "optimizer": {"AdamW": {"lr": 0.005, "weight_decay": 0.01}}},
              bert_data, bert_loss, bert_batch, 2, adamw, {"weight_decay": 0.01}, lambda s: 0.005),
        train("gpt2 muP AdamW (per-group learning rates)",
              {"device": "CPU", "model": mup, "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              mup, gpt2_loss, gpt2_batch, 2, adamw, dict(adamw_options, lr_scale=mup_lr_scale), lambda s: 0.005),
        train("bert muP AdamW (per-group learning rates)",
              {"device": "CPU", "model": dict(bert, **bert_mup_keys), "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              dict(bert_data, **bert_mup_keys), bert_loss, bert_batch, 2, adamw, dict(adamw_options, lr_scale=bert_mup_lr_scale),
              lambda s: 0.005),
        train("roberta AdamW, padding-masked positions",
              {"device": "CPU", "model": dict(bert, **roberta_keys), "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              dict(bert_data, **roberta_keys), bert_loss, bert_batch, 2, adamw, adamw_options, lambda s: 0.005),
        train("gptj AdamW", {"device": "CPU", "model": gptj, "precision": fp32,
                             "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              gptj, rotary_decoder_loss, gpt2_batch, 2, adamw, adamw_options, lambda s: 0.005),
        train("llama AdamW, grouped KV heads, llama3 rotary scaling",
              {"device": "CPU", "model": llama, "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              llama, rotary_decoder_loss, gpt2_batch, 2, adamw, adamw_options, lambda s: 0.005),
        train("llama AdamW, one KV head, linear rotary scaling, sliding window with a sink",
              {"device": "CPU", "model": mistral, "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              mistral, rotary_decoder_loss, gpt2_batch, 2, adamw, adamw_options, lambda s: 0.005),
        train("bert/classifier AdamW", {"device": "CPU", "model": classifier, "precision": fp32,
                                        "optimizer": {"AdamW": {"lr": 0.005, "weight_decay": 0.01}}},
              classifier, bert_classifier_loss, bert_classifier_batch, 2, adamw, {"weight_decay": 0.01}, lambda s: 0.005),
        train("bert/token_classifier AdamW", {"device": "CPU", "model": token_classifier, "precision": fp32,
                                              "optimizer": {"AdamW": {"lr": 0.005, "weight_decay": 0.01}}},
              token_classifier, bert_token_classifier_loss, bert_token_classifier_batch, 2, adamw, {"weight_decay": 0.01},
              lambda s: 0.005),
        train("bert/extractive_summarization AdamW", {"device": "CPU", "model": summarization, "precision": fp32,
                                                      "optimizer": {"AdamW": {"lr": 0.005, "weight_decay": 0.01}}},
              dict(summarization, max_cls_tokens=3), bert_summarization_loss, bert_summarization_batch, 2, adamw,
              {"weight_decay": 0.01}, lambda s: 0.005),
        train("linformer AdamW, keys and values projected apart (shared heads)",
              {"device": "CPU", "model": linformer, "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              dict(linformer, max_predictions_per_seq=3), bert_loss, bert_batch, 2, adamw, adamw_options,
              lambda s: 0.005),
        train("linformer AdamW, one projection for keys and values",
              {"device": "CPU", "model": dict(linformer, attention_style="linformer-shared-kv"), "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              dict(linformer, attention_style="linformer-shared-kv", max_predictions_per_seq=3), bert_loss,
              bert_batch, 2, adamw, adamw_options, lambda s: 0.005),
        train("t5 muP AdamW (per-group learning rates)",
              {"device": "CPU", "model": t5_mup, "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              dict(t5_mup, **lengths), seq2seq_loss, seq2seq_batch, 2, adamw,
              dict(adamw_options, lr_scale=t5_mup_lr_scale), lambda s: 0.005),
        train("t5 Adafactor, relative position buckets, gated GELU",
              {"device": "CPU", "model": t5, "precision": fp32, "optimizer": {"AdaFactor": {"learning_rate": 0.5}}},
              dict(t5, **lengths), seq2seq_loss, seq2seq_batch, 2, adafactor, {}, lambda s: 0.5),
        train("transformer Adam, fixed positions, post-norm, label smoothing",
              {"device": "CPU", "model": transformer, "precision": fp32,
               "optimizer": {"Adam": {"lr": 0.05, "betas": [0.9, 0.98], "eps": 1e-6}}},
              dict(transformer, **lengths), seq2seq_loss, seq2seq_batch, 2, adam, {"betas": [0.9, 0.98], "eps": 1e-6},
              lambda s: 0.05),
        train("unet Adam, group norm, residual blocks, max pooling, bce",
              {"device": "CPU", "model": unet, "precision": fp32, "optimizer": {"Adam": {"lr": 0.01, "eps": 1e-8}}},
              dict(unet, image_shape=[8, 8, 1]), unet_loss, unet_batch, 2, adam, {"eps": 1e-8}, lambda s: 0.01),
        train("unet 3D AdamW, batch norm, strided convolutions, ssce + dice",
              {"device": "CPU", "model": unet3d, "precision": fp32,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.01)}},
              dict(unet3d, image_shape=[4, 4, 4]), unet_loss, unet_batch, 2, adamw, adamw_options, lambda s: 0.01),
        # Mixed precision: PyTorch's CPU autocast to bfloat16 against csrun's CSX bfloat16.
        train("fc_mnist SGD bfloat16", {"device": "CSX", "model": fc, "optimizer": {"SGD": {"lr": 0.05, "momentum": 0.9}},
                                        "precision": bf16},
              fc, fc_mnist_loss, fc_mnist_batch, 4, sgd, {"momentum": 0.9}, lambda s: 0.05, autocast=True),
        train("gpt2 AdamW bfloat16",
              {"device": "CSX", "model": gpt, "precision": bf16,
               "optimizer": {"AdamW": {"lr": 0.005, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}}},
              gpt, gpt2_loss, gpt2_batch, 2, adamw, {"betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01},
              lambda s: 0.005, autocast=True),
        train("llama AdamW bfloat16",
              {"device": "CSX", "model": llama, "precision": bf16,
               "optimizer": {"AdamW": dict(adamw_options, lr=0.005)}},
              llama, rotary_decoder_loss, gpt2_batch, 2, adamw, adamw_options, lambda s: 0.005, autocast=True),
    ]
    write("curves.json", {"torch": torch.__version__, "steps": STEPS, "cases": cases})
    # The relative position buckets far beyond the curves' lengths (their edges are float32 logs).
    relative = torch.arange(-1200, 1201)
    buckets = [{"num_buckets": n, "bidirectional": d, "first": -1200,
                "buckets": relative_bucket(relative, d, n).tolist()}
               for n in (8, 32, 64) for d in (True, False)]
    write("relative_buckets.json", {"torch": torch.__version__, "cases": buckets})


if __name__ == "__main__":
    main()
