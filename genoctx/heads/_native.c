/* The gene decoders' per-item loops, compiled: what numpy cannot vectorise.
 *
 * chain: the dynamic programme of genoctx.heads.decoder.select_genes, the loop of
 *   decoder._chain_py written out: the same genes in the same order, the same comparisons and
 *   the same floating-point operations in the same order, so the same predecessors bit for bit.
 * tree_sum: the ORF scorer's tree ensemble (genoctx.heads.orf_scorer.TreeEnsemble): each row
 *   down each tree, the leaf values added from the baseline in the trees' order, as the numpy
 *   version adds them, so the same sums bit for bit.
 * translation: the ORF scorer's translation features (orf_scorer.translation_features): each
 *   ORF's amino-acid counts and G+C sums codon by codon, in the order numpy's bincount adds
 *   them, so the same values bit for bit.
 * site_score: the splice-site models' window scores (genoctx.heads.splice_sites.SiteModel.score):
 *   per position the bias, then each base's weight, then each neighbour pair's, added in the
 *   order numpy adds them, so the same scores bit for bit.
 * viterbi: the position loop of eukaryote mode's spliced decoder
 *   (genoctx.heads.spliced_decoder._viterbi_batch): per position, state and predecessor the
 *   same float64 sums, the first best predecessor (numpy's argmax), so the same path.
 *
 * All take and fill plain buffers (int32/int64/float64, C-contiguous), so they need no numpy
 * headers to build; where this module is not built the Python/numpy versions run instead
 * (tests/heads compare the two).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *ends, *starts, *ids, *best_i;
    double *vals, *best_v;
    Py_ssize_t n;
} Side;

static int side_alloc(Side *s, Py_ssize_t cap) {
    size_t c = cap > 0 ? (size_t)cap : 1;
    s->n = 0;
    s->ends = malloc(c * sizeof(int64_t));
    s->starts = malloc(c * sizeof(int64_t));
    s->ids = malloc(c * sizeof(int64_t));
    s->best_i = malloc(c * sizeof(int64_t));
    s->vals = malloc(c * sizeof(double));
    s->best_v = malloc(c * sizeof(double));
    return s->ends && s->starts && s->ids && s->best_i && s->vals && s->best_v;
}

static void side_free(Side *s) {
    free(s->ends); free(s->starts); free(s->ids); free(s->best_i); free(s->vals); free(s->best_v);
}

/* first index in e[0:n] whose value is >= x (bisect.bisect_left) */
static Py_ssize_t lower(const int64_t *e, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (e[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* first index in e[0:n] whose value is > x (bisect.bisect_right) */
static Py_ssize_t upper(const int64_t *e, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (x < e[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}

/* a C-contiguous buffer of ndim dimensions of kind 'q' (int64), 'i' (int32), 'd' (float64),
 * 'f' (float32), 'B' (uint8), 'b' (int8) or 'h' (int16) */
static int get(PyObject *o, Py_buffer *b, char kind, int ndim, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, b, flags) < 0) return 0;
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int ok;
    if (kind == 'd')
        ok = b->itemsize == 8 && strcmp(f, "d") == 0;
    else if (kind == 'f')
        ok = b->itemsize == 4 && strcmp(f, "f") == 0;
    else if (kind == 'B')
        ok = b->itemsize == 1 && strcmp(f, "B") == 0;
    else if (kind == 'b')
        ok = b->itemsize == 1 && strcmp(f, "b") == 0;
    else if (kind == 'h')
        ok = b->itemsize == 2 && strcmp(f, "h") == 0;
    else if (kind == 'i')
        ok = b->itemsize == 4 && (strcmp(f, "i") == 0 || (sizeof(long) == 4 && strcmp(f, "l") == 0));
    else
        ok = b->itemsize == 8 && (strcmp(f, "q") == 0 || (sizeof(long) == 8 && strcmp(f, "l") == 0));
    if (!ok || b->ndim != ndim) {
        PyErr_Format(PyExc_TypeError, "%s must be a %d-d C-contiguous %s array", name, ndim,
                     kind == 'd' ? "float64" : kind == 'f' ? "float32" : kind == 'i' ? "int32"
                     : kind == 'B' ? "uint8" : kind == 'b' ? "int8" : kind == 'h' ? "int16"
                     : "int64");
        PyBuffer_Release(b);
        return 0;
    }
    return 1;
}

/* get() each of objs[0..n) into b (dims NULL: all 1-d; bit q of writable: objs[q] is written);
 * returns how many were got, n when all were (the others' buffers are then not held) */
static int get_all(PyObject **objs, Py_buffer *b, int n, const char *kinds, const int *dims,
                   unsigned writable, const char **names) {
    int got = 0;
    for (; got < n; got++)
        if (!get(objs[got], &b[got], kinds[got], dims ? dims[got] : 1, (writable >> got) & 1,
                 names[got]))
            break;
    return got;
}

static void release_all(Py_buffer *b, int got) {
    for (int q = 0; q < got; q++) PyBuffer_Release(&b[q]);
}

/* chain(order, lo, hi, strand, score, credit, prev, ovl, linked, w, near_bp, far_bp)
 *   -> ((best value, its index) or None for plus, the same for minus predecessors)
 * ovl: (same, tail, head, same) overlaps as decoder._chain_py's ovl, flattened. */
static PyObject *chain(PyObject *self, PyObject *args) {
    PyObject *o_order, *o_lo, *o_hi, *o_st, *o_score, *o_credit, *o_prev;
    long long ovl[4];
    int linked;
    double w;
    long long near_bp, far_bp;
    if (!PyArg_ParseTuple(args, "OOOOOOO(LLLL)pdLL", &o_order, &o_lo, &o_hi, &o_st, &o_score,
                          &o_credit, &o_prev, &ovl[0], &ovl[1], &ovl[2], &ovl[3], &linked, &w,
                          &near_bp, &far_bp))
        return NULL;
    Py_buffer b[7];
    PyObject *objs[7] = {o_order, o_lo, o_hi, o_st, o_score, o_credit, o_prev};
    const char kinds[7] = {'q', 'q', 'q', 'q', 'd', 'd', 'q'};
    const char *names[7] = {"order", "lo", "hi", "strand", "score", "credit", "prev"};
    int got = get_all(objs, b, 7, kinds, NULL, 1u << 6, names);
    PyObject *result = NULL;
    Side side[2] = {{0}, {0}};
    if (got < 7) goto done;
    Py_ssize_t m = b[0].shape[0], n = b[1].shape[0];
    if (b[2].shape[0] != n || b[3].shape[0] != n || b[4].shape[0] != n || b[5].shape[0] != n ||
        b[6].shape[0] != n) {
        PyErr_SetString(PyExc_ValueError, "lo, hi, strand, score, credit and prev must have one length");
        goto done;
    }
    const int64_t *order = b[0].buf, *lo_a = b[1].buf, *hi_a = b[2].buf, *st_a = b[3].buf;
    const double *score = b[4].buf, *credit = b[5].buf;
    int64_t *prev = b[6].buf;
    for (Py_ssize_t k = 0; k < m; k++)
        if (order[k] < 0 || order[k] >= n) {
            PyErr_SetString(PyExc_IndexError, "order holds an index out of range");
            goto done;
        }
    if (!side_alloc(&side[0], m) || !side_alloc(&side[1], m)) {
        PyErr_NoMemory();
        goto done;
    }
    const double far = -w;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t i = order[k], lo = lo_a[i], hi = hi_a[i];
        int me = st_a[i] == 1 ? 0 : 1;
        double b_val = 0.0;
        int64_t b_arg = -1;
        for (int ps = 0; ps < 2; ps++) {
            Side *s = &side[ps];
            int same = ps == me;
            int64_t near = same && linked ? lo - (far_bp - 3) : lo + 1;
            Py_ssize_t c = lower(s->ends, s->n, near);
            if (c && s->best_v[c - 1] + far > b_val) {
                b_val = s->best_v[c - 1] + far;
                b_arg = s->best_i[c - 1];
            }
            int64_t reach = lo + ovl[2 * ps + me];
            if (hi - 1 < reach) reach = hi - 1;
            Py_ssize_t stop = upper(s->ends, s->n, reach);
            for (Py_ssize_t t = c; t < stop; t++) {
                int64_t et = s->ends[t], st = s->starts[t];
                if (et > lo) {
                    if (st >= lo) continue;
                    if (!same) {  /* opposite strands: each keeps more outside than inside */
                        int64_t o = et - lo;
                        if (!(o < lo - st && o < hi - et)) continue;
                    }
                }
                double v = s->vals[t];
                if (linked) {
                    if (!same) {
                        v += far;
                    } else {
                        int64_t gap = lo - et;
                        int64_t dist = gap + 3 < 0 ? -(gap + 3) : gap + 3;
                        if (dist > far_bp)
                            v += far;
                        else if ((dist <= near_bp && gap >= 0) || (double)dist < (double)near_bp / 4)
                            v += (2.0 - (double)dist / (double)near_bp) * w;
                        if (gap == -1 || gap == -4)
                            v += me == 0 ? credit[i] : credit[s->ids[t]];
                    }
                }
                if (v > b_val) {
                    b_val = v;
                    b_arg = s->ids[t];
                }
            }
        }
        double value = score[i] + b_val;
        prev[i] = b_arg;
        Side *s = &side[me];
        Py_ssize_t j = s->n++;
        s->ends[j] = hi;
        s->starts[j] = lo;
        s->vals[j] = value;
        s->ids[j] = i;
        if (j && s->best_v[j - 1] >= value) {
            s->best_v[j] = s->best_v[j - 1];
            s->best_i[j] = s->best_i[j - 1];
        } else {
            s->best_v[j] = value;
            s->best_i[j] = i;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_New(2);
    if (!result) goto done;
    for (int ps = 0; ps < 2; ps++) {
        Side *s = &side[ps];
        PyObject *tail = s->n ? Py_BuildValue("(dL)", s->best_v[s->n - 1], (long long)s->best_i[s->n - 1])
                              : (Py_INCREF(Py_None), Py_None);
        if (!tail) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, ps, tail);
    }
done:
    side_free(&side[0]);
    side_free(&side[1]);
    release_all(b, got);
    return result;
}


/* tree_sum(x, feature, threshold, left, right, value, baseline, out): out[r] = baseline plus,
 * tree by tree, the value of the leaf row r of x [N, F] reaches; trees padded to M nodes as
 * [T, M] arrays (feature -1 at leaves; go left when x <= threshold; child indices). */
static PyObject *tree_sum(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    double baseline;
    if (!PyArg_ParseTuple(args, "OOOOOOdO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &baseline, &objs[6]))
        return NULL;
    Py_buffer b[7];
    const char kinds[7] = {'d', 'i', 'd', 'i', 'i', 'd', 'd'};
    const int dims[7] = {2, 2, 2, 2, 2, 2, 1};
    const char *names[7] = {"x", "feature", "threshold", "left", "right", "value", "out"};
    int got = get_all(objs, b, 7, kinds, dims, 1u << 6, names);
    PyObject *result = NULL;
    if (got < 7) goto done;
    Py_ssize_t n = b[0].shape[0], nf = b[0].shape[1], t = b[1].shape[0], m = b[1].shape[1];
    for (int k = 2; k < 6; k++)
        if (b[k].shape[0] != t || b[k].shape[1] != m) {
            PyErr_SetString(PyExc_ValueError, "the tree arrays must have one shape");
            goto done;
        }
    if (b[6].shape[0] != n) {
        PyErr_SetString(PyExc_ValueError, "out must have a row of x's length");
        goto done;
    }
    const double *x = b[0].buf, *thr = b[2].buf, *val = b[5].buf;
    const int32_t *feat = b[1].buf, *left = b[3].buf, *right = b[4].buf;
    double *out = b[6].buf;
    /* check every tree once, so the descent below cannot leave its arrays */
    for (Py_ssize_t k = 0; k < t * m; k++)
        if (feat[k] >= nf || (feat[k] >= 0 && (left[k] < 0 || left[k] >= m || right[k] < 0 ||
                                               right[k] >= m || left[k] <= k % m || right[k] <= k % m))) {
            PyErr_SetString(PyExc_ValueError, "a tree node points outside its tree or the features");
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        const double *row = x + r * nf;
        double s = baseline;
        for (Py_ssize_t k = 0; k < t; k++) {
            Py_ssize_t base = k * m, node = 0;
            int32_t f;
            while ((f = feat[base + node]) >= 0)
                node = row[f] <= thr[base + node] ? left[base + node] : right[base + node];
            s += val[base + node];
        }
        out[r] = s;
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release_all(b, got);
    return result;
}

/* translation(x, frame, j, k, table, gc, out): out [N, 22] (zeros on entry) gets, for each ORF
 * whose frame f is 0-2 and holds a codon of x, the shares of the 20 amino acids among codons
 * j+1 .. k-1 of frame f (codon c: bases f+3c .. f+3c+2; table maps 25 a + 5 b + c of the base
 * codes 0-4 to an amino acid 0-19, 20 stop, 21 a codon with N), then their G+C share and their
 * third positions' G+C share, each minus gc. */
static PyObject *translation(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    double gc;
    if (!PyArg_ParseTuple(args, "OOOOOdO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &gc,
                          &objs[5]))
        return NULL;
    Py_buffer b[6];
    const char kinds[6] = {'B', 'q', 'q', 'q', 'q', 'd'};
    const int dims[6] = {1, 1, 1, 1, 1, 2};
    const char *names[6] = {"x", "frame", "j", "k", "table", "out"};
    int got = get_all(objs, b, 6, kinds, dims, 1u << 5, names);
    PyObject *result = NULL;
    if (got < 6) goto done;
    Py_ssize_t len = b[0].shape[0], n_orf = b[1].shape[0];
    if (b[2].shape[0] != n_orf || b[3].shape[0] != n_orf || b[5].shape[0] != n_orf ||
        b[5].shape[1] != 22 || b[4].shape[0] != 125) {
        PyErr_SetString(PyExc_ValueError, "frame, j, k and out must have one length, out 22 "
                        "columns and table 125 entries");
        goto done;
    }
    const uint8_t *x = b[0].buf;
    const int64_t *frame = b[1].buf, *j = b[2].buf, *k = b[3].buf, *table = b[4].buf;
    double *out = b[5].buf;
    for (Py_ssize_t p = 0; p < len; p++)
        if (x[p] > 4) {
            PyErr_SetString(PyExc_ValueError, "x holds a base code above 4");
            goto done;
        }
    for (Py_ssize_t c = 0; c < 125; c++)
        if (table[c] < 0 || table[c] > 21) {
            PyErr_SetString(PyExc_ValueError, "table holds an amino acid outside 0-21");
            goto done;
        }
    for (Py_ssize_t r = 0; r < n_orf; r++) {
        int64_t f = frame[r];
        if (f < 0 || f > 2 || len - f < 3) continue;
        int64_t n = (len - f) / 3;
        int64_t lo = j[r] + 1 < n ? j[r] + 1 : n;
        if (lo < 0) {
            PyErr_SetString(PyExc_ValueError, "j holds a codon index below -1");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n_orf; r++) {
        int64_t f = frame[r];
        if (f < 0 || f > 2 || len - f < 3) continue;
        int64_t n = (len - f) / 3;
        int64_t lo = j[r] + 1 < n ? j[r] + 1 : n;
        int64_t hi = k[r] < lo ? lo : (k[r] > n ? n : k[r]);
        double *row = out + r * 22, all = 0.0, third = 0.0, aa = 0.0;
        for (int64_t c = lo; c < hi; c++) {
            const uint8_t *q = x + f + 3 * c;
            int64_t a = table[25 * q[0] + 5 * q[1] + q[2]];
            if (a < 20) row[a] += 1.0;
            double g0 = q[0] == 1 || q[0] == 2, g1 = q[1] == 1 || q[1] == 2,
                   g2 = q[2] == 1 || q[2] == 2;
            all += (g0 + g1 + g2) / 3.0;
            third += g2;
        }
        int64_t size = hi - lo > 1 ? hi - lo : 1;
        row[20] = all / (double)size - gc;
        row[21] = third / (double)size - gc;
        for (int a = 0; a < 20; a++) aa += row[a];
        if (aa > 1.0)
            for (int a = 0; a < 20; a++) row[a] /= aa;
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release_all(b, got);
    return result;
}

/* site_score(xp, first, mono, di, bias, out): out[t] = bias + sum over p of mono[p, xp[first +
 * t + p]] + sum over p of di[p, 5 xp[first + t + p] + xp[first + t + p + 1]], added in that
 * order, for t in 0 .. len(out) - 1; mono [P, 5], di [P - 1, 25] or None, base codes 0-4. */
static PyObject *site_score(PyObject *self, PyObject *args) {
    PyObject *o_xp, *o_mono, *o_di, *o_out;
    long long first;
    double bias;
    if (!PyArg_ParseTuple(args, "OLOOdO", &o_xp, &first, &o_mono, &o_di, &bias, &o_out))
        return NULL;
    int has_di = o_di != Py_None;
    Py_buffer b[4];
    PyObject *objs[4] = {o_xp, o_mono, has_di ? o_di : o_mono, o_out};
    const char kinds[4] = {'B', 'd', 'd', 'd'};
    const int dims[4] = {1, 2, 2, 1};
    const char *names[4] = {"xp", "mono", "di", "out"};
    int got = get_all(objs, b, 4, kinds, dims, 1u << 3, names);
    PyObject *result = NULL;
    if (got < 4) goto done;
    Py_ssize_t n = b[3].shape[0], P = b[1].shape[0], len = b[0].shape[0];
    if (b[1].shape[1] != 5 || (has_di && (b[2].shape[0] != P - 1 || b[2].shape[1] != 25)) ||
        P < 1 || first < 0 || (n > 0 && first + n - 1 + P - 1 >= len)) {
        PyErr_SetString(PyExc_ValueError, "site_score: mono must be [P, 5], di [P - 1, 25], and "
                        "every window inside xp");
        goto done;
    }
    const uint8_t *xp = b[0].buf;
    const double *mono = b[1].buf, *di = has_di ? b[2].buf : NULL;
    double *out = b[3].buf;
    for (Py_ssize_t q = 0; q < len; q++)
        if (xp[q] > 4) {
            PyErr_SetString(PyExc_ValueError, "xp holds a base code above 4");
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < n; t++) {
        const uint8_t *w = xp + first + t;
        double v = bias;
        for (Py_ssize_t p = 0; p < P; p++) v += mono[p * 5 + w[p]];
        if (di)
            for (Py_ssize_t p = 0; p < P - 1; p++) v += di[p * 25 + 5 * w[p] + w[p + 1]];
        out[t] = v;
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release_all(b, got);
    return result;
}

/* viterbi(hist, pred, tr, em, bp, first): positions first .. first+T-1 of the batch.
 * hist [B, M, S+1] float64: the scores of the last M positions, row t % M (column S a constant
 * that is never written); pred [M, S*K] int64: for row r, where in hist[b] (flattened) each
 * state's k-th predecessor score sits; tr [T, B, S*K] float32: the transition scores; em [T, B,
 * S] float64: the emissions. For each position i: cand = hist[b][pred[r]] + tr[i, b] (float64),
 * bp[i, b, s] = the first k of the largest cand[s, k], hist[b, r, s] = that cand + em[i, b, s],
 * with r = (first + i) % M; every read of a position comes before its writes. */
static PyObject *viterbi(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    long long first;
    if (!PyArg_ParseTuple(args, "OOOOOL", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &first))
        return NULL;
    Py_buffer b[5];
    const char kinds[5] = {'d', 'q', 'f', 'd', 'b'};
    const int dims[5] = {3, 2, 3, 3, 3};
    const char *names[5] = {"hist", "pred", "tr", "em", "bp"};
    int got = get_all(objs, b, 5, kinds, dims, 1u | 1u << 4, names);
    PyObject *result = NULL;
    double *cand = NULL;
    if (got < 5) goto done;
    Py_ssize_t B = b[0].shape[0], M = b[0].shape[1], S1 = b[0].shape[2], S = S1 - 1;
    Py_ssize_t T = b[2].shape[0], SK = b[1].shape[1];
    if (S < 1 || M < 1 || b[1].shape[0] != M || SK % S || SK / S > 127 || b[2].shape[1] != B ||
        b[2].shape[2] != SK || b[3].shape[0] != T || b[3].shape[1] != B || b[3].shape[2] != S ||
        b[4].shape[0] != T || b[4].shape[1] != B || b[4].shape[2] != S || first < 0) {
        PyErr_SetString(PyExc_ValueError, "viterbi: the arrays' shapes do not agree");
        goto done;
    }
    Py_ssize_t K = SK / S;
    double *hist = b[0].buf;
    const int64_t *pred = b[1].buf;
    const float *tr = b[2].buf;
    const double *em = b[3].buf;
    int8_t *bp = b[4].buf;
    for (Py_ssize_t q = 0; q < M * SK; q++)
        if (pred[q] < 0 || pred[q] >= M * S1) {
            PyErr_SetString(PyExc_ValueError, "viterbi: a predecessor outside the history");
            goto done;
        }
    cand = malloc((size_t)S * sizeof(double));
    if (!cand) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < T; i++) {
        Py_ssize_t r = (Py_ssize_t)((first + i) % M);
        const int64_t *pr = pred + r * SK;
        for (Py_ssize_t bb = 0; bb < B; bb++) {
            double *h = hist + bb * M * S1;
            const float *t = tr + (i * B + bb) * SK;
            const double *e = em + (i * B + bb) * S;
            int8_t *arg = bp + (i * B + bb) * S;
            for (Py_ssize_t s = 0; s < S; s++) {
                const int64_t *ps = pr + s * K;
                const float *ts = t + s * K;
                double best = h[ps[0]] + (double)ts[0];
                int kbest = 0;
                for (Py_ssize_t k = 1; k < K; k++) {
                    double c = h[ps[k]] + (double)ts[k];
                    if (c > best || (c != c && best == best)) {  /* argmax: first max, NaN wins */
                        best = c;
                        kbest = (int)k;
                    }
                }
                arg[s] = (int8_t)kbest;
                cand[s] = best + e[s];
            }
            memcpy(h + r * S1, cand, (size_t)S * sizeof(double));
        }
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    free(cand);
    release_all(b, got);
    return result;
}

/* traceback(bp, b, step, fill, m, me, t, s, path) -> the state before the path's first base.
 * bp [L, B, S] int8: the Viterbi's back-pointers (the first k of the best predecessor); b: the
 * sequence of the batch; step [S*K, 2] int64: for state s's k-th predecessor, (how it is
 * reached: 0 the position before, 1 the first base of a minimum-length intron, 2 the base before
 * a minimum-length exon, 3 never; the state there); fill [S*K, W] int16: the exon's states
 * t0 .. t-1 for kind 2 (W >= me - 1). Walks from state s at position t down to position 0,
 * writing path[0..t] [>= t+1] int16, as spliced_decoder._traceback_py does. */
static PyObject *traceback(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    long long bidx, m, me, t, s;
    if (!PyArg_ParseTuple(args, "OLOOLLLLO", &objs[0], &bidx, &objs[1], &objs[2], &m, &me, &t, &s,
                          &objs[3]))
        return NULL;
    Py_buffer b[4];
    const char kinds[4] = {'b', 'q', 'h', 'h'};
    const int dims[4] = {3, 2, 2, 1};
    const char *names[4] = {"bp", "step", "fill", "path"};
    int got = get_all(objs, b, 4, kinds, dims, 1u << 3, names);
    PyObject *result = NULL;
    if (got < 4) goto done;
    Py_ssize_t L = b[0].shape[0], B = b[0].shape[1], S = b[0].shape[2];
    Py_ssize_t SK = b[1].shape[0], W = b[2].shape[1];
    if (S < 1 || SK % S || b[1].shape[1] != 2 || b[2].shape[0] != SK || bidx < 0 || bidx >= B ||
        t >= L || t >= b[3].shape[0] || s < 0 || s >= S || m < 1 || me < 0 || me - 1 > W) {
        PyErr_SetString(PyExc_ValueError, "traceback: the arrays' shapes do not agree");
        goto done;
    }
    Py_ssize_t K = SK / S;
    const int8_t *bp = b[0].buf;
    const int64_t *step = b[1].buf;
    const int16_t *fill = b[2].buf;
    int16_t *path = b[3].buf;
    const char *err = NULL;
    while (t >= 0) {
        path[t] = (int16_t)s;
        int k = bp[((Py_ssize_t)t * B + bidx) * S + s];
        if (k < 0 || k >= K) { err = "traceback: a back-pointer outside the predecessors"; break; }
        const int64_t *st = step + (s * K + k) * 2;
        long long kind = st[0], src = st[1];
        if (src < 0 || src >= S || kind < 0 || kind > 2) {
            err = "traceback reached an impossible state";
            break;
        }
        if (kind == 2) {  /* the forced stretch after an acceptor, back to the intron */
            long long t0 = t - me + 1;
            if (t0 < 0) { err = "traceback: an exon before the sequence"; break; }
            const int16_t *f = fill + (s * K + k) * W;
            for (long long u = t0; u < t; u++) path[u] = f[u - t0];
            t = t0 - 1;
        } else if (kind == 1) {  /* the forced minimum-length intron, back to its first base */
            long long t0 = t - m + 1;
            if (t0 < 0) { err = "traceback: an intron before the sequence"; break; }
            for (long long u = t0 + 1; u < t; u++) path[u] = (int16_t)s;
            t = t0;
        } else {
            t -= 1;
        }
        s = src;
    }
    if (err) {
        PyErr_SetString(PyExc_ValueError, err);
        goto done;
    }
    result = PyLong_FromLongLong(s);
done:
    release_all(b, got);
    return result;
}

static PyMethodDef methods[] = {
    {"chain", chain, METH_VARARGS,
     "The decoder's DP over genes in order: fills prev, returns each strand's best (value, index)."},
    {"tree_sum", tree_sum, METH_VARARGS,
     "The tree ensemble's sum over its trees for every row: fills out."},
    {"translation", translation, METH_VARARGS,
     "The ORF scorer's translation features of every ORF: fills out [N, 22]."},
    {"site_score", site_score, METH_VARARGS,
     "The splice-site model's score of the window at every position: fills out."},
    {"viterbi", viterbi, METH_VARARGS,
     "The spliced decoder's Viterbi over a block of positions: fills hist and bp."},
    {"traceback", traceback, METH_VARARGS,
     "The spliced decoder's walk back along the back-pointers: fills path, returns the first state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "The gene decoders' per-item loops, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
