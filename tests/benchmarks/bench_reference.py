"""Pure-Python (no NumPy) reference implementations of the benchmark kernels' primal
values, written from the kernels' definitions, on the inputs the C kernels dump."""

from __future__ import annotations

import math


def gmm(s, a):
    d, k, n = s["d"], s["k"], s["n"]
    x, X = a["x"], a["data"]
    gamma, m = a["wishart"]
    icf_sz = d * (d + 1) // 2
    alphas = x[:k]
    means = [x[k + i * d:k + (i + 1) * d] for i in range(k)]
    icf = [x[k + k * d + i * icf_sz:k + k * d + (i + 1) * icf_sz] for i in range(k)]

    def lse(v):
        mx = max(v)
        return math.log(sum(math.exp(t - mx) for t in v)) + mx

    sum_qs = [sum(c[:d]) for c in icf]
    slse = 0.0
    for ix in range(n):
        pt = X[ix * d:(ix + 1) * d]
        terms = []
        for ik in range(k):
            xc = [pt[j] - means[ik][j] for j in range(d)]
            q = [math.exp(icf[ik][j]) * xc[j] for j in range(d)]
            li = d
            for i in range(d):
                for j in range(i + 1, d):
                    q[j] += icf[ik][li] * xc[i]
                    li += 1
            terms.append(alphas[ik] + sum_qs[ik] - 0.5 * sum(t * t for t in q))
        slse += lse(terms)
    wn = d + m + 1
    lgd = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(0.5 * wn + 0.5 * (1 - j)) for j in range(1, d + 1))
    C = wn * d * (math.log(gamma) - 0.5 * math.log(2)) - lgd
    prior = sum(0.5 * gamma * gamma * (sum(math.exp(2 * t) for t in c[:d]) +
                                       sum(t * t for t in c[d:])) - m * sq
                for c, sq in zip(icf, sum_qs, strict=True)) - k * C
    return -n * d * 0.5 * math.log(2 * math.pi) + slse - n * lse(alphas) + prior


def lstm(s, a, lse_offset=0.0):
    """lse_offset: ADBench's logsumexp adds 2 to the sum of exponentials"""
    l, c, b = s["l"], s["c"], s["b"]
    x, seq, state = list(a["x"]), list(a["sequence"]), list(a["state"])
    w2 = x[8 * l * b:]

    def sig(v):
        return 1.0 / (1.0 + math.exp(-v))

    inp = seq[0:b]
    total = 0.0
    for t in range(c - 1):
        xp = [inp[i] * w2[i] for i in range(b)]
        for layer in range(l):
            w = x[layer * 8 * b:]
            bias = x[layer * 8 * b + 4 * b:]
            hi, ci = layer * 2 * b, layer * 2 * b + b
            for i in range(b):
                f = sig(xp[i] * w[i] + bias[i])
                ig = sig(state[hi + i] * w[b + i] + bias[b + i])
                og = sig(xp[i] * w[2 * b + i] + bias[2 * b + i])
                ch = math.tanh(state[hi + i] * w[3 * b + i] + bias[3 * b + i])
                state[ci + i] = state[ci + i] * f + ig * ch
                state[hi + i] = og * math.tanh(state[ci + i])
            xp = state[hi:hi + b]
        y = [xp[i] * w2[b + i] + w2[2 * b + i] for i in range(b)]
        ly = math.log(sum(math.exp(v) for v in y) + lse_offset)
        goal = seq[(t + 1) * b:(t + 2) * b]
        total += sum(goal[i] * (y[i] - ly) for i in range(b))
        inp = goal
    return -total / ((c - 1) * b)


def lstm_adbench(s, a):
    return lstm(s, a, lse_offset=2.0)


def _reproj(cam, X, w, feat):
    rot = cam[0:3]
    Xo = [X[i] - cam[3 + i] for i in range(3)]
    sq = sum(r * r for r in rot)
    if sq != 0:
        th = math.sqrt(sq)
        wv = [r / th for r in rot]
        co, si = math.cos(th), math.sin(th)
        cr = [wv[1] * Xo[2] - wv[2] * Xo[1], wv[2] * Xo[0] - wv[0] * Xo[2],
              wv[0] * Xo[1] - wv[1] * Xo[0]]
        tmp = sum(wv[i] * Xo[i] for i in range(3)) * (1 - co)
        Xc = [Xo[i] * co + cr[i] * si + wv[i] * tmp for i in range(3)]
    else:
        Xc = [Xo[0] + rot[1] * Xo[2] - rot[2] * Xo[1], Xo[1] + rot[2] * Xo[0] - rot[0] * Xo[2],
              Xo[2] + rot[0] * Xo[1] - rot[1] * Xo[0]]
    p = [Xc[0] / Xc[2], Xc[1] / Xc[2]]
    rsq = p[0] ** 2 + p[1] ** 2
    L = 1 + cam[9] * rsq + cam[10] * rsq * rsq
    return [w * (p[i] * L * cam[6] + cam[7 + i] - feat[i]) for i in range(2)]


def ba(s, a):
    """the kernel's primal checksum: first reprojection error + last weight error"""
    obs, cams, pts = a["obs"], a["cams"], a["points"]
    c, p = obs[0], obs[1]
    e = _reproj(cams[11 * c:11 * c + 11], pts[3 * p:3 * p + 3], a["weights"][0], a["features"][0:2])
    return e[0] + (1 - a["weights"][-1] ** 2)


def heat1d(s, a):
    n, steps = s["n"], s["steps"]
    r, dt = 0.25, 0.01
    u = list(a["x"])
    for _ in range(steps):
        u = [u[0]] + [u[i] + r * (u[i - 1] - 2 * u[i] + u[i + 1]) + dt * u[i] * (1 - u[i])
                      for i in range(1, n - 1)] + [u[n - 1]]
    return sum(v * v for v in u)


def heat2d(s, a):
    n, steps = s["n"], s["steps"]
    r, dt = 0.2, 0.01
    u = list(a["x"])
    for _ in range(steps):
        v = u[:]
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                c = u[i * n + j]
                v[i * n + j] = c + r * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1]
                                        + u[i * n + j + 1] - 4 * c) + dt * c * (1 - c)
        u = v
    return sum(t * t for t in u)


def rk4(s, a):
    n, steps = s["n"], s["steps"]
    h, F = 0.001, 8.0

    def rhs(y):
        return [(y[(i + 1) % n] - y[(i - 2) % n]) * y[(i - 1) % n] - y[i] + F for i in range(n)]

    y = list(a["x"])
    for _ in range(steps):
        k1 = rhs(y)
        k2 = rhs([y[i] + 0.5 * h * k1[i] for i in range(n)])
        k3 = rhs([y[i] + 0.5 * h * k2[i] for i in range(n)])
        k4 = rhs([y[i] + h * k3[i] for i in range(n)])
        y = [y[i] + h / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(n)]
    return sum(v * v for v in y)


def scan(s, a):
    p, total = 1.0, 0.0
    for v in a["x"]:
        p *= v
        total += p
    return total


def spmv(s, a):
    n, iters = s["n"], s["iters"]
    rowptr, cols, vals = a["rowptr"], a["cols"], a["vals"]
    v = list(a["x"])
    for _ in range(iters):
        v = [math.tanh(sum(vals[p] * v[cols[p]] for p in range(rowptr[i], rowptr[i + 1])))
             for i in range(n)]
    return sum(t * t for t in v)


# the ADBench-as-written C computes the same values as gmm.c and ba.c
gmm_adbench = gmm
ba_adbench = ba
