/* The critical-path walk of one phase run in C (traces/analysis/critical.py's PhaseGraph and
 * walk() are the same in Python and the reference; tests/test_traces_critical_c.py holds them
 * equal on the real captures and on made-up runs).
 *
 * walk(intervals, sync_thread, up, upfront, down_upfront, ancestry) -> [(k, j, link)] or None
 *
 * builds, from the run's Interval objects, the columns PhaseGraph builds (start, end, thread,
 * device, parent with the ancestry's hops, own parent, children, the previous callback of
 * each thread, the synchronous and async callbacks by end) and walks back from the last end
 * as walk() does for a graph without device links: the same steps, last first. None when a
 * start or an end is not a number (NaN: Python's max and sorted give orders C would not
 * reproduce), or when a device or parent name is not a str: the caller walks in Python then.
 * Given PathTally's `on` and `seen` dicts, it adds the path to them as PathTally.add_steps
 * does (the same sums in the same order); given summarize_paths' `watched` and `on_path` sets,
 * it adds the id() of each interval on the path that is watched to on_path. With `keep`
 * false (summarize_paths keeps the steps of its median runs only) it returns [] instead of
 * the steps.
 * Built by `make`
 * (server/tools/build_ftrace_tokens.py); optional. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <structmember.h>

#define EPS 2e-6  /* critical.EPS */
#define IDLE 20e-6 /* critical.IDLE */

enum { L_PARENT, L_CHILD, L_SYNC, L_THREAD, L_DISPATCHED, L_ASYNC, L_START, L_N };
static const char *link_names[L_N] = {"parent", "child", "sync thread", "thread",
                                      "dispatched", "async wait", "phase start"};
static const int link_rank[L_N] = {0, 0, 1, 2, 3, 4, -1}; /* critical._RANK */
static PyObject *links[L_N];

enum { A_START, A_THREAD, A_GROUP, A_INDEX, A_KEY, A_DURATIONS, A_N };
static const char *attr_names[A_N] = {"start", "thread", "group", "index", "key", "durations"};
static PyObject *attrs[A_N];

typedef struct {
    Py_ssize_t n;
    double *starts, *ends;
    long *threads;
    Py_ssize_t *dev, *par;     /* device ids (first seen order), parent ids or -1 */
    Py_ssize_t *last_of;       /* device id -> its last interval (PhaseGraph.by_device) */
    char *own;                 /* the parent has a callback here (before the ancestry) */
    Py_ssize_t *prev;          /* the previous interval of the thread or -1 */
    Py_ssize_t *child_at, *children; /* CSR by device id: the intervals whose parent it is */
    Py_ssize_t *sync_idx, *async_idx;
    double *sync_ends, *async_ends;
    Py_ssize_t n_sync, n_async;
    char *seen;
    double *durs;      /* the duration (us) of each interval */
    PyObject **groups; /* each interval's Group (borrowed: the intervals hold them) */
} Graph;

static void graph_free(Graph *g) {
    PyMem_Free(g->starts);
    PyMem_Free(g->ends);
    PyMem_Free(g->threads);
    PyMem_Free(g->dev);
    PyMem_Free(g->par);
    PyMem_Free(g->last_of);
    PyMem_Free(g->own);
    PyMem_Free(g->prev);
    PyMem_Free(g->child_at);
    PyMem_Free(g->children);
    PyMem_Free(g->sync_idx);
    PyMem_Free(g->async_idx);
    PyMem_Free(g->sync_ends);
    PyMem_Free(g->async_ends);
    PyMem_Free(g->seen);
    PyMem_Free(g->durs);
    PyMem_Free(g->groups);
}

static int seq_double(PyObject *seq, PyObject *i, double *out);

/* getattr(obj, attrs[a]), reading a slot through its descriptor when obj's type has the
 * generic getattr and the name is a data descriptor on it (Interval's and Group's __slots__):
 * what getattr finds first then, without the lookup per call. The (type, descriptor) pair is
 * kept per name while the type's version tag (changed by any change to the class) stays. */
typedef struct {
    PyTypeObject *type;
    PyObject *descr;
    unsigned int tag;
} AttrCache;
static AttrCache attr_cache[A_N];

static PyObject *get_attr(PyObject *obj, int a) {
    PyTypeObject *t = Py_TYPE(obj);
    AttrCache *c = &attr_cache[a];
    if (t != c->type || !(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || t->tp_version_tag != c->tag) {
        PyObject *d = t->tp_getattro == PyObject_GenericGetAttr ? _PyType_Lookup(t, attrs[a]) : NULL;
        if (d == NULL || Py_TYPE(d)->tp_descr_get == NULL || Py_TYPE(d)->tp_descr_set == NULL
                || !(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
            return PyObject_GetAttr(obj, attrs[a]);
        Py_INCREF(t);
        Py_INCREF(d);
        Py_XDECREF(c->type);
        Py_XDECREF(c->descr);
        c->type = t, c->descr = d, c->tag = t->tp_version_tag;
    }
    return Py_TYPE(c->descr)->tp_descr_get(c->descr, obj, (PyObject *)t);
}

/* durations[index] as a double: an array('d') read in place, anything else by indexing */
static int duration_at(PyObject *durs, PyObject *index, double *out) {
    Py_ssize_t i = PyLong_Check(index) ? PyLong_AsSsize_t(index) : -1;
    if (i == -1 && PyErr_Occurred()) PyErr_Clear();
    Py_buffer view;
    if (i >= 0 && PyObject_CheckBuffer(durs) && PyObject_GetBuffer(durs, &view, PyBUF_FORMAT) == 0) {
        /* (len / 8 as an unsigned shift: a signed 64-bit idiv here was a tenth of the walk) */
        int ok = view.ndim == 1 && view.itemsize == sizeof(double) && view.format != NULL
                 && view.format[0] == 'd' && view.format[1] == 0
                 && (size_t)i < (size_t)view.len / sizeof(double);
        if (ok) *out = ((const double *)view.buf)[i];
        PyBuffer_Release(&view);
        if (ok) return 0;
    }
    PyErr_Clear();
    return seq_double(durs, index, out);
}

/* The offsets of a type's __slots__ (member descriptors holding an object) for names of
 * attrs[]: read in place (what getattr gives: a data descriptor on the type comes before
 * anything else), NULL meaning unset (get_attr then raises the AttributeError). Resolved per
 * call for the type of the first item; items of any other type go through get_attr. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t off[A_N];
} Slots;

static void slots_of(Slots *s, PyTypeObject *t, const int *names, int n_names) {
    s->type = NULL;
    if (t->tp_getattro != PyObject_GenericGetAttr) return;
    for (int k = 0; k < n_names; k++) {
        PyObject *d = _PyType_Lookup(t, attrs[names[k]]);
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) return;
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READ_RESTRICTED)) return;
        s->off[names[k]] = m->offset;
    }
    s->type = t;
}

/* getattr(obj, attrs[a]) (a new reference) */
static PyObject *slot(const Slots *s, PyObject *obj, int a) {
    if (Py_TYPE(obj) == s->type) {
        PyObject *v = *(PyObject **)((char *)obj + s->off[a]);
        if (v != NULL) return Py_NewRef(v);
    }
    return get_attr(obj, a);
}

/* item `i` of sequence `seq` as a double / a long (-1 and an error set on failure) */
static int seq_double(PyObject *seq, PyObject *i, double *out) {
    PyObject *v = PyObject_GetItem(seq, i);
    if (v == NULL) return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* device name -> id (first seen order), an open-addressing table over 2^k >= 2n slots of
 * exact str keys (a dict's resizes, hashing calls and int values were a sixth of the walk):
 * equal names are the same key as in a dict, by identity or by hash, length, kind and bytes */
typedef struct {
    PyObject **keys; /* strong references */
    Py_hash_t *hashes;
    Py_ssize_t *vals;
    size_t mask;
    Py_ssize_t n;
} Ids;

static int ids_init(Ids *t, Py_ssize_t n) {
    size_t slots = 2;
    while (slots < 2 * (size_t)n) slots *= 2;
    t->keys = PyMem_Calloc(slots, sizeof(PyObject *));
    t->hashes = PyMem_Malloc(slots * sizeof(Py_hash_t));
    t->vals = PyMem_Malloc(slots * sizeof(Py_ssize_t));
    t->mask = slots - 1, t->n = 0;
    if (t->keys == NULL || t->hashes == NULL || t->vals == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void ids_free(Ids *t) {
    if (t->keys != NULL)
        for (size_t s = 0; s <= t->mask; s++) Py_XDECREF(t->keys[s]);
    PyMem_Free(t->keys);
    PyMem_Free(t->hashes);
    PyMem_Free(t->vals);
}

/* the id of `name`, adding it (the next id) when `add` and the table has room; -1 absent,
 * -2 an error (set), -3 `name` is not an exact str (the run is left to Python) */
static Py_ssize_t id_of(Ids *t, PyObject *name, int add) {
    if (!PyUnicode_CheckExact(name)) return -3;
    Py_hash_t h = PyObject_Hash(name); /* cached in the str */
    if (h == -1) return -2;
    Py_ssize_t len = PyUnicode_GET_LENGTH(name);
    int kind = PyUnicode_KIND(name);
    size_t s = (size_t)h & t->mask;
    for (; t->keys[s] != NULL; s = (s + 1) & t->mask) {
        PyObject *k = t->keys[s];
        if (k == name
                || (t->hashes[s] == h && PyUnicode_GET_LENGTH(k) == len
                    && PyUnicode_KIND(k) == kind
                    && memcmp(PyUnicode_DATA(k), PyUnicode_DATA(name), (size_t)(len * kind)) == 0))
            return t->vals[s];
    }
    if (!add) return -1;
    if ((size_t)t->n * 2 > t->mask) { /* sized for the run's intervals: cannot happen */
        PyErr_SetString(PyExc_RuntimeError, "walk(): device table full");
        return -2;
    }
    t->keys[s] = Py_NewRef(name), t->hashes[s] = h, t->vals[s] = t->n;
    return t->n++;
}

/* stable order of the async intervals by end (sorted(..., key=ends.__getitem__)) */
static const double *sort_ends;
static int by_end(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    double ex = sort_ends[x], ey = sort_ends[y];
    if (ex < ey) return -1;
    if (ex > ey) return 1;
    return (x > y) - (x < y); /* equal ends: index order, as a stable sort keeps them */
}

/* bisect.bisect_right(a[:n], x) */
static Py_ssize_t bisect_right(const double *a, Py_ssize_t n, double x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (x < a[mid]) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* PhaseGraph's columns; 1 built, 0 a start or end is NaN (no error), -1 an error */
static int build(Graph *g, PyObject *ivs, long sync, int up, PyObject *ancestry) {
    Py_ssize_t n = g->n = PyList_GET_SIZE(ivs);
    size_t sz = n ? (size_t)n : 1;
    g->starts = PyMem_Malloc(sz * sizeof(double));
    g->ends = PyMem_Malloc(sz * sizeof(double));
    g->threads = PyMem_Malloc(sz * sizeof(long));
    g->dev = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->par = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->last_of = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->own = PyMem_Malloc(sz);
    g->prev = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->child_at = PyMem_Calloc(sz + 1, sizeof(Py_ssize_t));
    g->children = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->sync_idx = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->async_idx = PyMem_Malloc(sz * sizeof(Py_ssize_t));
    g->sync_ends = PyMem_Malloc(sz * sizeof(double));
    g->async_ends = PyMem_Malloc(sz * sizeof(double));
    g->seen = PyMem_Calloc(sz, 1);
    g->durs = PyMem_Malloc(sz * sizeof(double));
    g->groups = PyMem_Malloc(sz * sizeof(PyObject *));
    /* thread -> its last interval: open addressing over 2^k >= 2n slots */
    size_t tslots = 2;
    while (tslots < 2 * sz) tslots *= 2;
    long *tkeys = PyMem_Malloc(tslots * sizeof(long));
    Py_ssize_t *tlast = PyMem_Malloc(tslots * sizeof(Py_ssize_t));
    if (tlast != NULL)
        for (size_t t = 0; t < tslots; t++) tlast[t] = -1;
    if (!g->durs || !g->groups || !tkeys || !tlast || !g->starts || !g->ends || !g->threads || !g->dev || !g->par || !g->last_of || !g->own
            || !g->prev || !g->child_at || !g->children || !g->sync_idx || !g->async_idx
            || !g->sync_ends || !g->async_ends || !g->seen) {
        PyMem_Free(tkeys);
        PyMem_Free(tlast);
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1, all_own = 1;
    Ids ids = {NULL, NULL, NULL, 0, 0}; /* device name -> id */
    PyObject *parents = PyList_New(n); /* the parent names, for the ancestry's hops */
    if (parents == NULL || ids_init(&ids, n) < 0) goto done;
    static const int iv_names[] = {A_START, A_THREAD, A_GROUP, A_INDEX};
    static const int group_names[] = {A_KEY, A_DURATIONS};
    Slots iv_slots = {NULL, {0}}, group_slots = {NULL, {0}};
    if (n > 0) slots_of(&iv_slots, Py_TYPE(PyList_GET_ITEM(ivs, 0)), iv_names, 4);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *iv = PyList_GET_ITEM(ivs, i);
        PyObject *start = NULL, *thread = NULL, *group = NULL, *index = NULL, *key = NULL,
                 *durs = NULL, *device = NULL, *parent = NULL;
        int ok = 0;
        double dur;
        if ((start = slot(&iv_slots, iv, A_START)) == NULL) goto item;
        g->starts[i] = PyFloat_AsDouble(start);
        if (g->starts[i] == -1.0 && PyErr_Occurred()) goto item;
        if ((thread = slot(&iv_slots, iv, A_THREAD)) == NULL) goto item;
        g->threads[i] = PyLong_AsLong(thread);
        if (g->threads[i] == -1 && PyErr_Occurred()) goto item;
        if ((group = slot(&iv_slots, iv, A_GROUP)) == NULL
                || (index = slot(&iv_slots, iv, A_INDEX)) == NULL)
            goto item;
        if (i == 0) slots_of(&group_slots, Py_TYPE(group), group_names, 2);
        if ((durs = slot(&group_slots, group, A_DURATIONS)) == NULL
                || duration_at(durs, index, &dur) < 0)
            goto item;
        g->ends[i] = g->starts[i] + dur / 1e6; /* Interval.end */
        g->durs[i] = dur;
        g->groups[i] = group;
        if ((key = slot(&group_slots, group, A_KEY)) == NULL) goto item;
        if (PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) > 2) {
            device = PyTuple_GET_ITEM(key, 1);
            parent = PyTuple_GET_ITEM(key, 2);
            Py_INCREF(device);
            Py_INCREF(parent);
        } else if ((device = PySequence_GetItem(key, 1)) == NULL
                || (parent = PySequence_GetItem(key, 2)) == NULL) {
            goto item;
        }
        if ((g->dev[i] = id_of(&ids, device, 1)) < 0) {
            if (g->dev[i] == -3) rc = 0; /* (leaves the run to Python) */
            goto item;
        }
        g->last_of[g->dev[i]] = i;
        Py_INCREF(parent);
        PyList_SET_ITEM(parents, i, parent);
        size_t t = ((size_t)g->threads[i] * 0x9E3779B97F4A7C15u >> 20) & (tslots - 1);
        while (tlast[t] >= 0 && tkeys[t] != g->threads[i]) t = (t + 1) & (tslots - 1);
        g->prev[i] = tlast[t];
        tkeys[t] = g->threads[i];
        tlast[t] = i;
        ok = 1;
    item:
        Py_XDECREF(start);
        Py_XDECREF(thread);
        Py_XDECREF(group);
        Py_XDECREF(index);
        Py_XDECREF(key);
        Py_XDECREF(durs);
        Py_XDECREF(device);
        Py_XDECREF(parent);
        if (!ok) goto done;
        if (isnan(g->starts[i]) || isnan(g->ends[i])) {
            rc = 0;
            goto done;
        }
    }
    /* own parent: by the names the run has; a parent without a callback here is looked for
     * up the capture's ancestry (up to 8 hops), as PhaseGraph does */
    for (Py_ssize_t i = 0; i < n; i++) {
        g->par[i] = id_of(&ids, PyList_GET_ITEM(parents, i), 0);
        if (g->par[i] == -3) rc = 0;
        if (g->par[i] < -1) goto done;
        g->own[i] = g->par[i] >= 0;
        all_own &= g->own[i];
    }
    int hop = ancestry != Py_None && PyObject_IsTrue(ancestry) == 1 && !all_own;
    if (PyErr_Occurred()) goto done;
    for (Py_ssize_t i = 0; hop && i < n; i++) {
        if (g->own[i]) continue;
        PyObject *p = PyList_GET_ITEM(parents, i);
        Py_INCREF(p);
        for (int hops = 0; hops < 8; hops++) {
            Py_ssize_t has = id_of(&ids, p, 0);
            if (has < -1) {
                if (has == -3) rc = 0;
                Py_DECREF(p);
                goto done;
            }
            if (has >= 0) break;
            /* ancestry.get(p): an exact dict looked up in place (the method call was a
             * fifth of the walk) */
            PyObject *q;
            if (PyDict_CheckExact(ancestry)) {
                q = PyDict_GetItemWithError(ancestry, p);
                if (q == NULL && !PyErr_Occurred()) q = Py_None;
                Py_XINCREF(q);
            } else {
                q = PyObject_CallMethod(ancestry, "get", "O", p);
            }
            if (q == NULL) {
                Py_DECREF(p);
                goto done;
            }
            if (q == Py_None) {
                Py_DECREF(q);
                break;
            }
            Py_DECREF(p);
            p = q;
        }
        g->par[i] = id_of(&ids, p, 0);
        Py_DECREF(p);
        if (g->par[i] == -3) rc = 0;
        if (g->par[i] < -1) goto done;
    }
    /* children (suspend only), in interval order per parent */
    if (!up) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (g->par[i] >= 0) g->child_at[g->par[i] + 1]++;
        for (Py_ssize_t d = 0; d < n; d++) g->child_at[d + 1] += g->child_at[d];
        Py_ssize_t *fill = PyMem_Malloc(sz * sizeof(Py_ssize_t));
        if (fill == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(fill, g->child_at, sz * sizeof(Py_ssize_t));
        for (Py_ssize_t i = 0; i < n; i++)
            if (g->par[i] >= 0) g->children[fill[g->par[i]]++] = i;
        PyMem_Free(fill);
    }
    g->n_sync = g->n_async = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (g->threads[i] == sync) {
            if (sync >= 0) g->sync_idx[g->n_sync++] = i;
        } else {
            g->async_idx[g->n_async++] = i;
        }
    }
    sort_ends = g->ends;
    qsort(g->async_idx, (size_t)g->n_async, sizeof(Py_ssize_t), by_end);
    for (Py_ssize_t m = 0; m < g->n_sync; m++) g->sync_ends[m] = g->ends[g->sync_idx[m]];
    for (Py_ssize_t m = 0; m < g->n_async; m++) g->async_ends[m] = g->ends[g->async_idx[m]];
    rc = 1;
done:
    ids_free(&ids);
    Py_XDECREF(parents);
    PyMem_Free(tkeys);
    PyMem_Free(tlast);
    return rc;
}

/* the better of the current choice and candidate j (critical.walk's test) */
#define CONSIDER(J, LINK, E)                                                                 \
    do {                                                                                     \
        if (best < 0 || (E) > best_end + 1e-9                                                \
                || (fabs((E) - best_end) <= 1e-9 && link_rank[LINK] < link_rank[best_link])) \
            best = (J), best_link = (LINK), best_end = (E);                                  \
    } while (0)

static PyObject *round_fn, *three, *one;

/* round(x, 3) as Python rounds a float (correctly: the decimal nearest to x's exact value,
 * ties to even, read back correctly rounded). When x * 1000 is computed with an error smaller
 * than its distance to the next tie (k + 0.5), the integer nearest to it is the one Python
 * finds, and m / 1000 in IEEE division is the double nearest to m / 1000, which is what
 * Python's strtod of "m e-3" gives; otherwise (near a tie, huge, not finite) Python's round. */
static PyObject *round3(double x) {
    double y = x * 1000.0;
    if (isfinite(y) && fabs(y) < 4503599627370496.0 /* 2^52 */) {
        double m = nearbyint(y), frac = fabs(y - floor(y));
        if (fabs(frac - 0.5) > fabs(y) * 1e-15 + 1e-300) return PyFloat_FromDouble(m / 1000.0);
    }
    PyObject *f = PyFloat_FromDouble(x), *r;
    if (f == NULL) return NULL;
    r = PyObject_CallFunctionObjArgs(round_fn, f, three, NULL);
    Py_DECREF(f);
    return r;
}

/* round3() for the tests: round3(x) == round(x, 3), bit for bit */
static PyObject *py_round3(PyObject *self, PyObject *arg) {
    (void)self;
    double x = PyFloat_AsDouble(arg);
    if (x == -1.0 && PyErr_Occurred()) return NULL;
    return round3(x);
}

/* [round(x, 3) for x in seq]: aggregate's durations to the ns (an array('d') read as a
 * buffer; any other sequence item by item, what is not a float through Python's round) */
static PyObject *round3_each(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *out = NULL;
    Py_buffer view;
    if (PyObject_CheckBuffer(arg) && PyObject_GetBuffer(arg, &view, PyBUF_FORMAT) == 0) {
        if (view.ndim == 1 && view.itemsize == sizeof(double) && view.format != NULL
                && strcmp(view.format, "d") == 0) {
            Py_ssize_t n = view.len / (Py_ssize_t)sizeof(double);
            const double *xs = view.buf;
            if ((out = PyList_New(n)) != NULL)
                for (Py_ssize_t i = 0; i < n; i++) {
                    PyObject *r = round3(xs[i]);
                    if (r == NULL) {
                        Py_CLEAR(out);
                        break;
                    }
                    PyList_SET_ITEM(out, i, r);
                }
            PyBuffer_Release(&view);
            return out;
        }
        PyBuffer_Release(&view);
    }
    PyErr_Clear();
    PyObject *seq = PySequence_Fast(arg, "round3_each(): not a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if ((out = PyList_New(n)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(seq, i), *r;
        r = PyFloat_CheckExact(x) ? round3(PyFloat_AS_DOUBLE(x))
                                  : PyObject_CallFunctionObjArgs(round_fn, x, three, NULL);
        if (r == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, r);
    }
done:
    Py_DECREF(seq);
    return out;
}

/* dict[key] = dict.get(key, 0) + 1 (Counter.update) */
static int count(PyObject *dict, PyObject *key) {
    PyObject *was = PyDict_GetItemWithError(dict, key), *now;
    if (was == NULL && PyErr_Occurred()) return -1;
    now = was == NULL ? PyLong_FromLong(1) : PyNumber_Add(was, one);
    if (now == NULL) return -1;
    int rc = PyDict_SetItem(dict, key, now);
    Py_DECREF(now);
    return rc;
}

/* acc[at] = acc[at] + value (a list item) */
static int add_to(PyObject *acc, Py_ssize_t at, PyObject *value) {
    PyObject *sum = PyNumber_Add(PyList_GET_ITEM(acc, at), value);
    if (sum == NULL) return -1;
    return PyList_SetItem(acc, at, sum); /* steals sum */
}

/* [0, 0.0] (Py_BuildValue("[id]", 0, 0.0)) */
static PyObject *new_acc(void) {
    PyObject *acc = PyList_New(2), *z;
    if (acc == NULL) return NULL;
    PyList_SET_ITEM(acc, 0, PyLong_FromLong(0)); /* a cached small int: no failure */
    if ((z = PyFloat_FromDouble(0.0)) == NULL) {
        Py_DECREF(acc);
        return NULL;
    }
    PyList_SET_ITEM(acc, 1, z);
    return acc;
}

/* PathTally.add_steps: the run's groups counted in `seen`; per step, first to last, its
 * group's [count, round(duration, 3) summed] in `on` */
static int tally(const Graph *g, const Py_ssize_t *path, Py_ssize_t n_path, PyObject *on,
                 PyObject *seen) {
    PyObject *groups = PySet_New(NULL), *item;
    if (groups == NULL) return -1;
    for (Py_ssize_t i = 0; i < g->n; i++)
        if (PySet_Add(groups, g->groups[i]) < 0) goto fail;
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    while (_PySet_NextEntry(groups, &pos, &item, &hash))
        if (count(seen, item) < 0) goto fail;
    Py_CLEAR(groups);
    for (Py_ssize_t m = n_path - 1; m >= 0; m--) {
        Py_ssize_t k = path[m];
        PyObject *group = g->groups[k], *acc = PyDict_GetItemWithError(on, group);
        if (acc == NULL) {
            if (PyErr_Occurred() || (acc = new_acc()) == NULL) return -1;
            int rc = PyDict_SetItem(on, group, acc);
            Py_DECREF(acc); /* the dict holds it */
            if (rc < 0) return -1;
        }
        PyObject *rounded = round3(g->durs[k]);
        if (rounded == NULL) return -1;
        int rc = add_to(acc, 0, one) < 0 ? -1 : add_to(acc, 1, rounded);
        Py_DECREF(rounded);
        if (rc < 0) return -1;
    }
    return 0;
fail:
    Py_DECREF(groups);
    return -1;
}

/* summarize_paths' `watched`: the id() of each interval on the path that is in `watched`
 * added to `on_path` */
static int mark(PyObject *ivs, const Py_ssize_t *path, Py_ssize_t n_path, PyObject *watched,
                PyObject *on_path) {
    for (Py_ssize_t m = 0; m < n_path; m++) {
        Py_ssize_t k = path[m];
        PyObject *id = PyLong_FromVoidPtr(PyList_GET_ITEM(ivs, k));
        if (id == NULL) return -1;
        int in = PySet_Contains(watched, id);
        if (in > 0) in = PySet_Add(on_path, id);
        Py_DECREF(id);
        if (in < 0) return -1;
    }
    return 0;
}

/* (k, j, link), as Py_BuildValue("nnO") makes it, without parsing a format per step */
static PyObject *step_tuple(Py_ssize_t k, Py_ssize_t j, PyObject *link) {
    PyObject *t = PyTuple_New(3), *a, *b;
    if (t == NULL) return NULL;
    if ((a = PyLong_FromSsize_t(k)) == NULL || (PyTuple_SET_ITEM(t, 0, a), 0)
            || (b = PyLong_FromSsize_t(j)) == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 1, b);
    PyTuple_SET_ITEM(t, 2, Py_NewRef(link));
    return t;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *ivs, *ancestry, *on = Py_None, *seen = Py_None, *watched = Py_None,
             *on_path = Py_None;
    long sync;
    int up, upfront, down_upfront, keep = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!lpppO|OOOOp", &PyList_Type, &ivs, &sync, &up, &upfront,
                          &down_upfront, &ancestry, &on, &seen, &watched, &on_path, &keep))
        return NULL;
    if ((on != Py_None && !PyDict_Check(on)) || (seen != Py_None && !PyDict_Check(seen))) {
        PyErr_SetString(PyExc_TypeError, "walk(): on and seen must be dicts");
        return NULL;
    }
    if ((watched != Py_None && !PyAnySet_Check(watched))
            || (on_path != Py_None && !PySet_Check(on_path))) {
        PyErr_SetString(PyExc_TypeError, "walk(): watched and on_path must be sets");
        return NULL;
    }
    Graph g;
    memset(&g, 0, sizeof g);
    PyObject *out = NULL;
    int built = build(&g, ivs, sync, up, ancestry);
    if (built <= 0) {
        graph_free(&g);
        if (built < 0) return NULL;
        Py_RETURN_NONE;
    }
    if (g.n == 0) { /* (max() of nothing: Python's walk raises) */
        graph_free(&g);
        Py_RETURN_NONE;
    }
    /* the path, last step first: each step's interval, what it waited for, the link (a
     * list of (k, j, link) tuples only when the caller keeps it) */
    Py_ssize_t *path_k = PyMem_Malloc((size_t)g.n * sizeof(Py_ssize_t)), n_path = 0;
    Py_ssize_t *path_j = PyMem_Malloc((size_t)g.n * sizeof(Py_ssize_t));
    int *path_l = PyMem_Malloc((size_t)g.n * sizeof(int));
    if (path_k == NULL || path_j == NULL || path_l == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* the last end, then the last start, the first of equals */
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 1; i < g.n; i++)
        if (g.ends[i] > g.ends[k] || (g.ends[i] == g.ends[k] && g.starts[i] > g.starts[k]))
            k = i;
    while (k >= 0 && !g.seen[k]) {
        g.seen[k] = 1;
        double s = g.starts[k] + EPS, best_end = -INFINITY;
        Py_ssize_t best = -1;
        int best_link = L_START;
        int on_sync = g.threads[k] == sync;
        Py_ssize_t p = g.prev[k];
        if (p >= 0 && g.ends[p] <= s)
            best = p, best_link = on_sync ? L_SYNC : L_THREAD, best_end = g.ends[p];
        if (up) {
            Py_ssize_t pd = g.par[k];
            if (pd >= 0) {
                Py_ssize_t j = g.last_of[pd];
                if (j < k && g.ends[j] <= s) CONSIDER(j, L_PARENT, g.ends[j]);
            }
        } else {
            Py_ssize_t d = g.dev[k];
            for (Py_ssize_t c = g.child_at[d]; c < g.child_at[d + 1]; c++) {
                Py_ssize_t j = g.children[c];
                if (j < k && g.ends[j] <= s) CONSIDER(j, L_CHILD, g.ends[j]);
            }
        }
        const Py_ssize_t *idx;
        const double *arr;
        Py_ssize_t len;
        int link;
        double after;
        if (on_sync) {
            idx = g.async_idx, arr = g.async_ends, len = g.n_async, link = L_ASYNC;
            after = p >= 0 ? g.ends[p] : -INFINITY;
            if (p >= 0 && g.starts[k] - g.ends[p] <= IDLE) len = 0;
        } else {
            idx = g.sync_idx, arr = g.sync_ends, len = g.n_sync, link = L_DISPATCHED;
            after = -INFINITY;
            if ((upfront && g.own[k]) || down_upfront) len = 0;
        }
        if (len > 0) {
            Py_ssize_t m = bisect_right(arr, len, s) - 1;
            while (m >= 0 && idx[m] >= k) m--;
            if (m >= 0 && arr[m] > after) CONSIDER(idx[m], link, g.ends[idx[m]]);
        }
        path_k[n_path] = k, path_j[n_path] = best, path_l[n_path] = best_link;
        n_path++; /* (at most n: a step's interval is not seen again) */
        k = best;
    }
    if (on != Py_None && seen != Py_None && tally(&g, path_k, n_path, on, seen) < 0) goto done;
    if (watched != Py_None && on_path != Py_None
            && mark(ivs, path_k, n_path, watched, on_path) < 0)
        goto done;
    if ((out = PyList_New(keep ? n_path : 0)) == NULL || !keep) goto done;
    for (Py_ssize_t m = 0; m < n_path; m++) {
        PyObject *step = step_tuple(path_k[m], path_j[m], links[path_l[m]]);
        if (step == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, m, step);
    }
done:
    PyMem_Free(path_k);
    PyMem_Free(path_j);
    PyMem_Free(path_l);
    graph_free(&g);
    return out;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(intervals, sync_thread, up, upfront, down_upfront, ancestry[, on, seen[, watched, "
     "on_path[, keep]]]) -> [(k, j, link)] ([] when not keep) or None; with on and seen, "
     "the path added to them (PathTally); with watched and on_path, the watched intervals on "
     "it"},
    {"round3", py_round3, METH_O, "round3(x) -> round(x, 3), for the tests"},
    {"round3_each", round3_each, METH_O, "round3_each(seq) -> [round(x, 3) for x in seq]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_critical_walk",
    .m_doc = "The critical-path walk of a phase run in C.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__critical_walk(void) {
    for (int a = 0; a < A_N; a++)
        if (attrs[a] == NULL && (attrs[a] = PyUnicode_InternFromString(attr_names[a])) == NULL)
            return NULL;
    for (int l = 0; l < L_N; l++)
        if (links[l] == NULL && (links[l] = PyUnicode_InternFromString(link_names[l])) == NULL)
            return NULL;
    if (round_fn == NULL) {
        PyObject *builtins = PyImport_ImportModule("builtins");
        if (builtins == NULL) return NULL;
        round_fn = PyObject_GetAttrString(builtins, "round");
        Py_DECREF(builtins);
        if (round_fn == NULL) return NULL;
    }
    if (three == NULL && (three = PyLong_FromLong(3)) == NULL) return NULL;
    if (one == NULL && (one = PyLong_FromLong(1)) == NULL) return NULL;
    return PyModule_Create(&module);
}
