#!/usr/bin/python3
"""math_fit.py — minimax (Remez exchange) coefficients for codegen/math.c, with mpmath.

Each fit approximates f(t) by sum_k c_k t^(e_k) on [a, b], minimising max |w(t) (f(t) - p(t))|, where the
weight w turns the target into the error that matters (usually relative error of the final function).
For f32 the coefficients are then rounded one at a time, lowest order first, refitting the rest after
each rounding so later terms absorb the rounding of earlier ones (the best fully rounded set is kept);
f64 coefficients are rounded once. Prints C initialisers (hex floats, exact) and the achieved weighted
error; codegen/math.c and math_trig.c hold this output verbatim (the array name maps to the upper-case
one there: exp_p_f32 -> EXP_P_F32, log_r_* -> LOG_Q_*, erfc_g<i>_f64 -> piece i of ERFC_G_F64, ...).
explore() prints the unrounded error for several degrees, which is how the degrees were chosen.

Usage: /usr/bin/python3 bench/math_fit.py [NAME ...]   (NAME: a registered fit such as exp_p or trig;
none: all, several minutes)
"""
import struct
import sys

from mpmath import mp, mpf

mp.dps = 34


def to_f32(v):
    return struct.unpack('<f', struct.pack('<f', float(v)))[0]


def round_to(v, prec):
    return mpf(to_f32(v)) if prec == 24 else mpf(float(v))


def solve_ref(f, w, powers, ref, fixed):
    """Solves the levelled-error system on the reference points, with some coefficients fixed."""
    free = [k for k in range(len(powers)) if k not in fixed]
    n = len(free)
    A = mp.matrix(n + 1, n + 1)
    rhs = mp.matrix(n + 1, 1)
    for i, t in enumerate(ref):
        for j, k in enumerate(free):
            A[i, j] = t ** powers[k]
        A[i, n] = (-1) ** i / w(t)
        rhs[i] = f(t) - sum(fixed[k] * t ** powers[k] for k in fixed)
    sol = mp.lu_solve(A, rhs)
    c = [mpf(0)] * len(powers)
    for k in fixed:
        c[k] = fixed[k]
    for j, k in enumerate(free):
        c[k] = sol[j]
    return c, sol[n]


def err_fn(f, w, powers, c):
    return lambda t: w(t) * (f(t) - sum(ck * t ** pk for ck, pk in zip(c, powers)))


def extrema(e, a, b, npts):
    """Local extrema of e on [a, b], one per run of constant sign, refined by golden section."""
    ts = [a + (b - a) * i / npts for i in range(npts + 1)]
    vs = [e(t) for t in ts]
    runs = []
    start = 0
    for i in range(1, len(ts) + 1):
        if i == len(ts) or (vs[i] > 0) != (vs[start] > 0):
            j = max(range(start, i), key=lambda q: abs(vs[q]))
            runs.append(j)
            start = i
    out = []
    g = (mp.sqrt(5) - 1) / 2
    for j in runs:
        lo, hi = ts[max(j - 1, 0)], ts[min(j + 1, len(ts) - 1)]
        if j == 0 or j == len(ts) - 1:
            out.append((ts[j], vs[j]))
            continue
        s = 1 if vs[j] > 0 else -1
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        f1, f2 = s * e(x1), s * e(x2)
        for _ in range(40):
            if f1 > f2:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - g * (hi - lo)
                f1 = s * e(x1)
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + g * (hi - lo)
                f2 = s * e(x2)
        t = x1 if f1 > f2 else x2
        v = e(t)
        out.append((t, v) if abs(v) > abs(vs[j]) else (ts[j], vs[j]))
    return out


def remez(f, w, powers, a, b, fixed=None, npts=600, iters=30):
    fixed = dict(fixed or {})
    n = len(powers) - len(fixed)
    a, b = mpf(a), mpf(b)
    # Chebyshev nodes of the first kind: they avoid the middle, where fixed terms often force a zero.
    ref = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * (i + mpf(1) / 2) / (n + 1)) for i in range(n + 1)]
    ref = [t + (b - a) / 1000 if abs(t) < (b - a) / 10 ** 9 else t for t in ref]
    c, E = solve_ref(f, w, powers, ref, fixed)
    for _ in range(iters):
        ex = extrema(err_fn(f, w, powers, c), a, b, npts)
        while len(ex) > n + 1:
            if abs(ex[0][1]) < abs(ex[-1][1]):
                ex.pop(0)
            else:
                ex.pop()
        if len(ex) < n + 1:
            break
        ref = [t for t, _ in ex]
        mx = max(abs(v) for _, v in ex)
        c, E = solve_ref(f, w, powers, ref, fixed)
        if mx <= abs(E) * (1 + mpf('1e-6')):
            break
    return c


def max_err(f, w, powers, c, a, b, npts=1500):
    ex = extrema(err_fn(f, w, powers, c), mpf(a), mpf(b), npts)
    return max(abs(v) for _, v in ex)


def fit(name, f, w, powers, a, b, prec, fixed=None):
    fixed = dict(fixed or {})
    c = remez(f, w, powers, a, b, fixed)
    best = [round_to(ck, prec) if k not in fixed else ck for k, ck in enumerate(c)]
    best_err = max_err(f, w, powers, best, a, b, 400)
    # f32: round lowest order first and refit the remaining free coefficients after each; keep whichever
    # fully rounded set turns out best (late refits with few free terms can be worse). f64 coefficients
    # are rounded once: their rounding is far below the fit error.
    for k in range(len(powers) if prec == 24 else 0):
        if k in fixed:
            continue
        fixed[k] = round_to(c[k], prec)
        if len(powers) - len(fixed) < 2:
            break
        c = remez(f, w, powers, a, b, fixed)
        cand = [round_to(ck, prec) if i not in fixed else ck for i, ck in enumerate(c)]
        e = max_err(f, w, powers, cand, a, b, 400)
        if e < best_err:
            best, best_err = cand, e
    c = best
    mx = max_err(f, w, powers, c, a, b)
    bits = float(-mp.log(mx, 2))
    ctype = 'float' if prec == 24 else 'double'
    print(f'/* {name}: degree {powers[-1]} on [{float(a):.6g}, {float(b):.6g}], weighted error 2^-{bits:.1f} */')
    vals = ', '.join(float(ck).hex() for ck in c)
    print(f'static const double {name}[{len(c)}] = {{{vals}}}; /* {ctype} values */')
    return c


def series_guard(f, lim):
    """Wraps a quotient that cancels near t = 0: the analytic limit close to 0, extra digits elsewhere."""
    def g(t):
        if abs(t) < mpf('1e-12'):
            return lim
        with mp.workdps(mp.dps * 2):
            v = f(t)
        return +v
    return g


FITS = {}


def register(fn):
    FITS[fn.__name__] = fn
    return fn


LN2 = mp.log(2)


@register
def exp_p():
    # e^r = 1 + r + r^2 P(r); weighted to the relative error of e^r - 1 (serves exp and expm1).
    a, b = -LN2 / 2 * mpf('1.0001'), LN2 / 2 * mpf('1.0001')
    f = series_guard(lambda t: (mp.exp(t) - 1 - t) / t ** 2, mpf(1) / 2)
    w = lambda t: abs(t) if t == 0 else t ** 2 / abs(mp.expm1(t))
    w0 = lambda t: 1 if t == 0 else w(t)
    for deg, prec, name in ((5, 24, 'exp_p_f32'), (10, 53, 'exp_p_f64')):
        fit(name, f, w0, list(range(deg + 1)), a, b, prec, fixed={0: mpf(1) / 2})


@register
def log_r():
    # log(1+f) = 2s + s R(z), z = s^2, s = f/(2+f), |s| <= 3 - 2 sqrt 2. R(z) = z Q(z); absolute error of R.
    smax = (3 - 2 * mp.sqrt(2)) * mpf('1.0001')
    f = series_guard(lambda z: (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2) / z, mpf(2) / 3)
    w = lambda z: z / 2 if z else mpf(1e-30)
    for deg, prec, name in ((3, 24, 'log_r_f32'), (6, 53, 'log_r_f64')):
        fit(name, f, w, list(range(deg + 1)), 0, smax ** 2, prec)


@register
def tanh_p():
    T = mpf('0.625')
    f = series_guard(lambda u: (mp.tanh(mp.sqrt(u)) - mp.sqrt(u)) / u ** mpf(1.5), mpf(-1) / 3)
    w = lambda u: u / (mp.tanh(mp.sqrt(u)) / mp.sqrt(u)) if u else mpf(1e-30)
    for deg, prec, name in ((5, 24, 'tanh_p_f32'), (10, 53, 'tanh_p_f64')):
        fit(name, f, w, list(range(deg + 1)), 0, T * T, prec)


def explore(f, w, a, b, degs, fixed=None, powers0=0):
    """Unrounded minimax error for several degrees, to choose one."""
    for d in degs:
        powers = list(range(powers0, powers0 + d + 1))
        c = remez(f, w, powers, a, b, fixed)
        print(d, f'2^-{float(-mp.log(max_err(f, w, powers, c, a, b, 400), 2)):.1f}')


def odd_fit(name, F, lim, umax, deg, prec):
    """F(x) = x + x^3 P(x^2): fits P in u = x^2 on [0, umax] for the relative error of F."""
    f = series_guard(lambda u: (F(mp.sqrt(u)) - mp.sqrt(u)) / u ** mpf(1.5), lim)
    w = lambda u: u ** mpf(1.5) / abs(F(mp.sqrt(u))) if u else mpf(1e-30)
    fit(name, f, w, list(range(deg + 1)), 0, umax, prec)


@register
def erf_small():
    # erf(x) = x + x Q(x^2) on [0, 1]; relative error of erf.
    f = series_guard(lambda u: mp.erf(mp.sqrt(u)) / mp.sqrt(u) - 1, 2 / mp.sqrt(mp.pi) - 1)
    w = lambda u: mp.sqrt(u) / mp.erf(mp.sqrt(u)) if u else mp.sqrt(mp.pi) / 2
    for deg, prec, name in ((6, 24, 'erf_q_f32'), (11, 53, 'erf_q_f64')):
        fit(name, f, w, list(range(deg + 1)), 0, 1, prec)


@register
def erfc_pieces():
    # erfc(x) = exp(-x^2) g(x), g a polynomial in t = x - c on each piece; weighted by exp(-x^2), i.e.
    # the absolute error of erfc, which is what 1 - erfc needs.
    g = lambda x: mp.erfc(x) * mp.exp(x * x)
    for prec, deg, segs in ((24, 9, [(1, 3.93)]), (53, 13, [(1, 1.7), (1.7, 2.75), (2.75, 5.95)])):
        for i, (a, b) in enumerate(segs):
            a, b = mpf(a), mpf(b)
            c = (a + b) / 2
            print(f'/* piece {i}: x in [{float(a)}, {float(b)}], t = x - {float(c)} */')
            fit(f'erfc_g{i}_f{32 if prec == 24 else 64}', lambda t: g(t + c), lambda t: mp.exp(-(t + c) ** 2),
                list(range(deg + 1)), a - c, b - c, prec)


@register
def erfc_fast():
    # math_fast.c: erfc(x) = 1 - (x + x Q(x^2)) below S (relative error of erf), exp(P(|x|)) on
    # [S, 4] (P against log erfc: absolute error of P, the relative error of erfc), and e^r as a full
    # polynomial with c0 = 1 on |r| <= ln2/2 (relative error; also the short exp of x <= 0).
    S = mpf('0.921875')
    f = series_guard(lambda u: mp.erf(mp.sqrt(u)) / mp.sqrt(u) - 1, 2 / mp.sqrt(mp.pi) - 1)
    w = lambda u: mp.sqrt(u) / mp.erf(mp.sqrt(u)) if u else mp.sqrt(mp.pi) / 2
    fit('erfc_fast_q', f, w, list(range(6)), 0, S * S, 24)
    fit('erfc_fast_p', lambda a: mp.log(mp.erfc(a)), lambda a: 1, list(range(9)), S, 4, 24)
    a, b = -LN2 / 2 * mpf('1.0001'), LN2 / 2 * mpf('1.0001')
    fit('erfc_fast_e', mp.exp, lambda t: 1 / mp.exp(t), list(range(7)), a, b, 24, fixed={0: mpf(1)})


@register
def trig():
    u = (mp.pi / 4) ** 2 * mpf('1.001')
    odd_fit('sin_s_f64', mp.sin, mpf(-1) / 6, u, 5, 53)
    f = series_guard(lambda u: (mp.cos(mp.sqrt(u)) - 1 + u / 2) / u ** 2, mpf(1) / 24)
    w = lambda u: u ** 2 / mp.cos(mp.sqrt(u))
    fit('cos_c_f64', f, w, list(range(6)), 0, u, 53)


@register
def atrig():
    odd_fit('asin_p_f64', mp.asin, mpf(1) / 6, mpf('0.25'), 12, 53)
    odd_fit('atan_p_f64', mp.atan, mpf(-1) / 3, mp.tan(mp.pi / 8) ** 2 * mpf('1.001'), 10, 53)


@register
def sinh_p():
    odd_fit('sinh_p_f64', mp.sinh, mpf(1) / 6, mpf(1), 6, 53)


@register
def log_dd():
    # pow's log: log(1+f) = 2s + (2/3)s^3 + s^5 R2(s^2); relative error of the whole log.
    smax = (3 - 2 * mp.sqrt(2)) * mpf('1.0001')
    f = series_guard(lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z) - mpf(2) / 3 * z ** mpf(1.5))
                     / z ** mpf(2.5), mpf(2) / 5)
    w = lambda z: z ** 2 * mp.sqrt(z) / (2 * mp.atanh(mp.sqrt(z))) if z else mpf(1e-30)
    fit('log_r2_f64', f, w, list(range(9)), 0, smax ** 2, 53)


if __name__ == '__main__':
    names = sys.argv[1:] or list(FITS)
    for nm in names:
        FITS[nm]()
