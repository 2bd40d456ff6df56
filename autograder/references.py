"""Float64 numpy references for graded kernels.

Every function takes numpy arrays (any float dtype; computed in float64) and
scalars, and returns one array (compared to the kernel's single output) or a
dict ``{output_name: array}``.  Parameter names are what grading_rubric.yaml
binds by default (``reference_args`` can rename).

Policies stated here are what the grader expects from kernels:
* softmax fully-masked row (every element masked out): the row's output is 0.
* NaN in a row's (unmasked) input: that whole row's output is NaN.
* +inf in a row: softmax follows IEEE float64 (inf - inf = NaN -> NaN row).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np

_REGISTRY: Dict[str, Callable] = {}


def reference(fn: Callable) -> Callable:
    _REGISTRY[fn.__name__] = fn
    return fn


def exists(name: str) -> bool:
    return name in _REGISTRY


def names():
    return sorted(_REGISTRY)


def get(name: str) -> Callable:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no reference {name!r}; known: {', '.join(names())}") from None


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _rows(x):
    """View x as (rows, last-dim) and remember the shape."""
    x = _f64(x)
    return x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1), x.shape


# ----------------------------------------------------------------------------- lessons 01-03
# 01 elementwise (GELU), 02 reduction (sum / max of a vector), 03 transpose.

def _gelu_tanh64(x):
    x = _f64(x)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


@reference
def gelu_tanh(x, y=None, n=None, ox=0, oy=0):
    """GELU, tanh form (GPT-2, llm.c, torch ``approximate="tanh"``), elementwise.

    With element offsets (a kernel given the views ``y[oy:]`` and ``x[ox:]``): the output is
    ``y`` with ``y[oy:oy + n] = gelu(x[ox:ox + n])`` and every other element unchanged, so an
    output pre-filled with NaN shows writes outside the view.  Without ``y`` (in place) the
    output is ``x`` with its first ``n`` elements from ``ox`` on replaced.
    """
    x = _f64(x).reshape(-1)
    ox, oy = int(ox), int(oy)
    n = x.size - ox if n is None else int(n)
    out = x.copy() if y is None else _f64(y).reshape(-1).copy()
    at = ox if y is None else oy
    with np.errstate(over="ignore", invalid="ignore"):
        out[at:at + n] = _gelu_tanh64(x[ox:ox + n])
    return out


@reference
def vector_sum(x):
    """Sum of all elements, shape (1,), IEEE float64: an inf gives inf, inf and -inf give NaN, NaN gives NaN."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.array([np.sum(_f64(x))])


@reference
def vector_max(x):
    """Max of all elements, shape (1,); a NaN anywhere gives NaN (numpy / torch.max, not fmaxf)."""
    return np.array([np.max(_f64(x))])


@reference
def transpose(x):
    """Swap the last two axes (a batch of row-major matrices -> their transposes)."""
    return np.swapaxes(_f64(x), -1, -2).copy()


@reference
def layernorm_stats(x, eps=1e-5):
    """Per-row mean and rstd = 1/sqrt(var + eps) with the population variance (two-pass)."""
    r, shape = _rows(x)
    mean = r.mean(axis=1)
    var = ((r - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1.0 / np.sqrt(var + float(eps))
    return {"mean": mean.reshape(shape[:-1]), "rstd": rstd.reshape(shape[:-1])}


@reference
def layernorm(x, gamma=None, beta=None, eps=1e-5):
    """y = (x - mean) * rstd * gamma + beta along the last axis."""
    r, shape = _rows(x)
    st = layernorm_stats(r, eps)
    y = (r - st["mean"][:, None]) * st["rstd"][:, None]
    if gamma is not None:
        y = y * _f64(gamma).reshape(1, -1)
    if beta is not None:
        y = y + _f64(beta).reshape(1, -1)
    return y.reshape(shape)


@reference
def layernorm_fwd(x, gamma=None, beta=None, eps=1e-5):
    """llm.c style forward: ``{y, mean, rstd}``."""
    st = layernorm_stats(x, eps)
    return {"y": layernorm(x, gamma, beta, eps), "mean": st["mean"], "rstd": st["rstd"]}


@reference
def rmsnorm(x, gamma=None, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * gamma along the last axis."""
    r, shape = _rows(x)
    rms = np.sqrt((r * r).mean(axis=1) + float(eps))
    y = r / rms[:, None]
    if gamma is not None:
        y = y * _f64(gamma).reshape(1, -1)
    return y.reshape(shape)


def _mask_bool(mask, shape):
    """Mask (nonzero/True = keep) broadcast to ``shape``; a per-row mask of shape (N,) is allowed."""
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        m = m != 0
    return np.broadcast_to(m, shape)


@reference
def softmax(x, mask=None, scale=1.0):
    """Row softmax of ``x * scale`` along the last axis, stable (subtract row max).

    ``mask``: nonzero/True = keep.  Masked elements output 0; a fully masked row
    outputs all zeros; a NaN among a row's kept inputs makes the row NaN.
    """
    r, shape = _rows(x)
    r = r * float(scale)
    keep = np.ones_like(r, dtype=bool) if mask is None else _mask_bool(mask, shape).reshape(r.shape)
    out = np.zeros_like(r)
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(r.shape[0]):
            k = keep[i]
            if not k.any():
                continue
            v = r[i, k]
            if np.isnan(v).any():
                out[i, :] = np.nan
                continue
            e = np.exp(v - v.max())
            out[i, k] = e / e.sum()
    return out.reshape(shape)


@reference
def log_softmax(x, mask=None, scale=1.0):
    """log(softmax(x)); masked elements and fully masked rows output -inf."""
    s = softmax(x, mask, scale)
    with np.errstate(divide="ignore"):
        return np.log(s)


@reference
def softmax_stats(x, mask=None, scale=1.0):
    """Online-softmax statistics per row: ``{row_max, row_sum}`` with row_sum = sum exp(x - row_max).

    A fully masked row has row_max = -inf and row_sum = 0.
    """
    r, shape = _rows(x)
    r = r * float(scale)
    keep = np.ones_like(r, dtype=bool) if mask is None else _mask_bool(mask, shape).reshape(r.shape)
    mx = np.full(r.shape[0], -np.inf)
    sm = np.zeros(r.shape[0])
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(r.shape[0]):
            v = r[i, keep[i]]
            if v.size:
                mx[i] = v.max()
                sm[i] = np.exp(v - mx[i]).sum()
    return {"row_max": mx.reshape(shape[:-1]), "row_sum": sm.reshape(shape[:-1])}


@reference
def online_softmax(x, mask=None, scale=1.0, chunk=32):
    """Softmax computed the online way (running max and rescaled sum over chunks).

    Mathematically equal to ``softmax``; exists so lessons can grade the
    online formulation and compare the statistics, ``{y, row_max, row_sum}``.
    """
    r, shape = _rows(x)
    r = r * float(scale)
    keep = np.ones_like(r, dtype=bool) if mask is None else _mask_bool(mask, shape).reshape(r.shape)
    mx = np.full(r.shape[0], -np.inf)
    sm = np.zeros(r.shape[0])
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, r.shape[1], int(chunk)):
            v = np.where(keep[:, start:start + chunk], r[:, start:start + chunk], -np.inf)
            new_max = np.maximum(mx, v.max(axis=1))
            safe = np.where(np.isneginf(new_max), 0.0, new_max)
            sm = sm * np.exp(np.where(np.isneginf(mx), -np.inf, mx - safe)) + \
                np.exp(v - safe[:, None]).sum(axis=1)
            mx = new_max
    y = softmax(r, keep, 1.0)
    return {"y": y.reshape(shape), "row_max": mx.reshape(shape[:-1]), "row_sum": sm.reshape(shape[:-1])}


@reference
def row_sum(x):
    r, shape = _rows(x)
    return r.sum(axis=1).reshape(shape[:-1])


@reference
def row_max(x):
    r, shape = _rows(x)
    return r.max(axis=1).reshape(shape[:-1])


@reference
def identity(x):
    """Copy kernels (bandwidth lessons)."""
    return _f64(x)


def call(name: str, bound: Dict[str, object]):
    """Call reference ``name`` with the arguments it accepts out of ``bound``."""
    import inspect
    fn = get(name)
    sig = inspect.signature(fn)
    kwargs = {}
    for p in sig.parameters.values():
        if p.name in bound:
            kwargs[p.name] = bound[p.name]
        elif p.default is inspect.Parameter.empty:
            raise KeyError(f"reference {name}: nothing bound to parameter {p.name!r}")
    return fn(**kwargs)


def as_outputs(result, outputs) -> Dict[str, np.ndarray]:
    """Map a reference's return value onto the compared output names."""
    outputs = list(outputs)
    if isinstance(result, dict):
        missing = [o for o in outputs if o not in result]
        if missing and len(outputs) == 1 and len(result) >= 1 and "y" in result:
            return {outputs[0]: _f64(result["y"])}
        if missing:
            raise KeyError(f"reference returned {sorted(result)}, outputs need {missing}")
        return {o: _f64(result[o]) for o in outputs}
    if isinstance(result, (tuple, list)):
        return {o: _f64(r) for o, r in zip(outputs, result)}
    if len(outputs) != 1:
        raise ValueError(f"reference returned one array but the case compares {outputs}")
    return {outputs[0]: _f64(result)}


# ----------------------------------------------------------------------------- lessons 09-12
# GEMM, causal attention, RoPE and fused cross-entropy (LESSONS, issue 20).

@reference
def matmul(A, B):
    """C = A @ B (row-major 2-D arrays)."""
    return _f64(A) @ _f64(B)


@reference
def causal_attention(Q, K, V, scale=None):
    """Single-head causal attention: ``{O, lse}``; row i attends to keys j <= i.

    ``lse[i]`` = log sum_j exp(scale * q_i . k_j) over the visible keys (what a
    FlashAttention forward keeps for the backward pass).  ``scale`` defaults to
    1 / sqrt(head dim).
    """
    q, k, v = _f64(Q), _f64(K), _f64(V)
    T, D = q.shape
    s = (q @ k.T) * (1.0 / np.sqrt(D) if scale is None else float(scale))
    s[np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=1, keepdims=True)
    return {"O": (p @ v) / l, "lse": (m + np.log(l))[:, 0]}


@reference
def rope(x, pos, base=10000.0, interleaved=1):
    """Rotary position embedding of ``x[T, H, D]`` (or ``[T, D]``) at positions ``pos[T]``.

    Pair p of a head vector, angle pos * base^(-2p/D), is rotated (x0, x1) ->
    (x0 cos - x1 sin, x0 sin + x1 cos).  ``interleaved`` nonzero: pairs (2p, 2p+1)
    (GPT-J / Meta LLaMA); zero: pairs (p, p + D/2) (GPT-NeoX / Hugging Face rotate_half).
    Angles are computed in float64 from the integer positions.
    """
    a = _f64(x)
    shape = a.shape
    a = a.reshape(shape[0], -1, shape[-1])
    D = shape[-1]
    half = D // 2
    theta = float(base) ** (-2.0 * np.arange(half) / D)
    ang = np.asarray(pos, dtype=np.float64).reshape(-1)[:, None] * theta[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if int(interleaved):
        i0, i1 = 2 * np.arange(half), 2 * np.arange(half) + 1
    else:
        i0, i1 = np.arange(half), np.arange(half) + half
    y = a.copy()
    y[..., i0] = a[..., i0] * c - a[..., i1] * s
    y[..., i1] = a[..., i0] * s + a[..., i1] * c
    return y.reshape(shape)


@reference
def cross_entropy(logits, targets, grad_scale=1.0, ignore_index=-100):
    """Fused softmax + cross-entropy forward and backward per row of ``logits[N, V]``.

    ``{losses, dlogits}``: losses[n] = logsumexp(logits[n]) - logits[n, t];
    dlogits[n] = (softmax(logits[n]) - onehot(t)) * grad_scale.  Rows whose target
    is ``ignore_index`` have loss 0 and gradient 0.
    """
    x = _f64(logits)
    t = np.asarray(targets).astype(np.int64).reshape(-1)
    N, V = x.shape
    losses = np.zeros(N)
    grad = np.zeros_like(x)
    for n in range(N):
        if t[n] == int(ignore_index):
            continue
        m = x[n].max()
        e = np.exp(x[n] - m)
        lse = m + np.log(e.sum())
        losses[n] = lse - x[n, t[n]]
        grad[n] = np.exp(x[n] - lse)
        grad[n, t[n]] -= 1.0
        grad[n] *= float(grad_scale)
    return {"losses": losses, "dlogits": grad}


@reference
def cross_entropy_inplace(logits, targets, grad_scale=1.0, ignore_index=-100):
    """``cross_entropy`` for a kernel that writes the gradient over its logits: ``{logits, losses}``."""
    r = cross_entropy(logits, targets, grad_scale, ignore_index)
    return {"logits": r["dlogits"], "losses": r["losses"]}
