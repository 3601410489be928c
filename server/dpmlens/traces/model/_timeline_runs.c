/* The timeline's callback intervals grouped by (cycle, phase) in C (traces/model/timeline.py's
 * _buckets is the same in Python and the reference; tests/test_traces_timeline_c.py holds
 * them equal on the real captures and on made-up groups).
 *
 * buckets(groups, Interval) -> [(cycle, phase, intervals, last end)] or None
 *
 * walks the samples of each Group in order (its starts, threads, cycles and durations
 * arrays), leaves out those without a timestamp (NaN), makes an Interval(start, thread, group,
 * index) of each other one and gives every (cycle, phase) its intervals ordered by (start,
 * end) (equal ones in the order read), the buckets in the order first seen, each with the
 * latest of its ends. The Interval objects are made as Interval.__init__ makes them (its
 * four slots set through their descriptors; tests compare every attribute). None when a
 * group's columns are not the arrays Group makes, differ in length, or an end is NaN (Python's
 * sort and max give orders C would not reproduce): the caller groups them in Python then.
 * Built by `make` (server/tools/build_ftrace_tokens.py); optional. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <structmember.h>

enum { A_KEY, A_STARTS, A_THREADS, A_CYCLES, A_DURATIONS, A_START, A_THREAD, A_GROUP, A_INDEX,
       A_N };
static const char *attr_names[A_N] = {"key", "starts", "threads", "cycles", "durations",
                                      "start", "thread", "group", "index"};
static PyObject *attrs[A_N];

typedef struct {
    double start, end;
    long thread;
    Py_ssize_t bucket, seq, index;
    PyObject *group; /* borrowed: `groups` holds it */
} Sample;

typedef struct {
    long cycle;
    PyObject *phase; /* borrowed: its group's key holds it */
    Py_ssize_t count;
    double last;
} Bucket;

/* the order of two samples of one bucket: by start, end, then as read (sorted() is stable);
 * the sort is of indices into `sort_samples` (the GIL holds: one sort at a time) */
static const Sample *sort_samples;
static int by_start_end(const void *a, const void *b) {
    const Sample *x = &sort_samples[*(const Py_ssize_t *)a], *y = &sort_samples[*(const Py_ssize_t *)b];
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* a 1-d array of `fmt` items from `obj`'s attribute `name`; 0 and no error when it is not one */
static int column(PyObject *obj, int name, char fmt, Py_ssize_t itemsize, Py_buffer *view) {
    PyObject *col = PyObject_GetAttr(obj, attrs[name]);
    if (col == NULL) return -1;
    int rc = PyObject_GetBuffer(col, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS);
    Py_DECREF(col); /* the view holds the object */
    if (rc < 0) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_BufferError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (view->ndim != 1 || view->itemsize != itemsize || view->format == NULL
            || view->format[0] != fmt || view->format[1] != '\0') {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* bucket id of (phase id, cycle) in an open-addressed table of `mask + 1` slots */
typedef struct {
    Py_ssize_t phase;
    long cycle;
    Py_ssize_t bucket; /* -1 empty */
} Slot;

static Slot *find_slot(Slot *table, size_t mask, Py_ssize_t pid, long cycle) {
    size_t h = ((size_t)cycle * 0x9E3779B97F4A7C15u ^ (size_t)pid * 0xC2B2AE3D27D4EB4Fu) >> 17;
    Slot *slot = &table[h & mask];
    while (slot->bucket >= 0 && (slot->phase != pid || slot->cycle != cycle)) {
        h++;
        slot = &table[h & mask];
    }
    return slot;
}

/* the table twice as large (a capture has hundreds of buckets: it starts small) */
static int grow(Slot **table, size_t *mask) {
    size_t slots = (*mask + 1) * 2;
    Slot *t = PyMem_Malloc(slots * sizeof(Slot));
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < slots; k++) t[k].bucket = -1;
    for (size_t k = 0; k <= *mask; k++)
        if ((*table)[k].bucket >= 0)
            *find_slot(t, slots - 1, (*table)[k].phase, (*table)[k].cycle) = (*table)[k];
    PyMem_Free(*table);
    *table = t;
    *mask = slots - 1;
    return 0;
}

static PyObject *buckets(PyObject *self, PyObject *args) {
    PyObject *groups, *interval;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &groups, &PyType_Type, &interval))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)interval;
    /* the class's slot descriptors: start, thread, group, index */
    PyObject *descr[4] = {NULL, NULL, NULL, NULL};
    Py_ssize_t n_groups = PyList_GET_SIZE(groups), total = 0, n = 0, n_buckets = 0;
    PyObject *result = NULL, *phases = PyDict_New(); /* phase -> id */
    Sample *samples = NULL;
    Py_ssize_t *order = NULL, *fill = NULL;
    Bucket *bs = NULL;
    Slot *table = NULL;
    size_t mask = 0;
    int fallback = 0;
    if (phases == NULL) return NULL;
    for (int d = 0; d < 4; d++) {
        descr[d] = PyObject_GetAttr(interval, attrs[A_START + d]);
        if (descr[d] == NULL) goto done;
        if (Py_TYPE(descr[d])->tp_descr_set == NULL) {
            PyErr_SetString(PyExc_TypeError, "buckets(): Interval without its four slots");
            goto done;
        }
    }
    /* a slot that is a member descriptor holding an object is stored in place (what its
     * __set__ does on a new object: its slot is NULL), others through their __set__ */
    Py_ssize_t off[4] = {-1, -1, -1, -1};
    for (int d = 0; d < 4; d++)
        if (Py_IS_TYPE(descr[d], &PyMemberDescr_Type)
                && PyType_IsSubtype(type, PyDescr_TYPE(descr[d]))) {
            PyMemberDef *m = ((PyMemberDescrObject *)descr[d])->d_member;
            if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) off[d] = m->offset;
        }
    /* the samples' count, for one allocation */
    for (Py_ssize_t gi = 0; gi < n_groups; gi++) {
        PyObject *starts = PyObject_GetAttr(PyList_GET_ITEM(groups, gi), attrs[A_STARTS]);
        if (starts == NULL) goto done;
        Py_ssize_t len = PyObject_Length(starts);
        Py_DECREF(starts);
        if (len < 0) goto done;
        total += len;
    }
    size_t slots = 64, bs_cap = 32;
    mask = slots - 1;
    samples = PyMem_Malloc(((size_t)total + 1) * sizeof(Sample));
    bs = PyMem_Malloc(bs_cap * sizeof(Bucket));
    table = PyMem_Malloc(slots * sizeof(Slot));
    if (samples == NULL || bs == NULL || table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t t = 0; t < slots; t++) table[t].bucket = -1;
    for (Py_ssize_t gi = 0; gi < n_groups && !fallback; gi++) {
        PyObject *g = PyList_GET_ITEM(groups, gi), *key, *phase;
        Py_buffer cols[4]; /* starts, threads, cycles, durations */
        static const char fmts[4] = {'d', 'l', 'l', 'd'};
        static const Py_ssize_t sizes[4] = {sizeof(double), sizeof(long), sizeof(long),
                                            sizeof(double)};
        int got = 0, ok = 1;
        for (; got < 4; got++) {
            int rc = column(g, A_STARTS + got, fmts[got], sizes[got], &cols[got]);
            if (rc <= 0) {
                ok = rc;
                break;
            }
        }
        if (ok == 1) {
            Py_ssize_t len = cols[0].len / (Py_ssize_t)sizeof(double);
            /* zip(strict=True) raises on columns of other lengths; the durations may be
             * longer only as Python would index them (it reads durations[i] for i < len) */
            if (cols[1].len / (Py_ssize_t)sizeof(long) != len
                    || cols[2].len / (Py_ssize_t)sizeof(long) != len
                    || cols[3].len / (Py_ssize_t)sizeof(double) < len) {
                ok = 0;
            } else if ((key = PyObject_GetAttr(g, attrs[A_KEY])) == NULL) {
                ok = -1;
            } else {
                /* borrowed past the DECREF: the group holds its key, the key its phase */
                phase = PyTuple_Check(key) && PyTuple_GET_SIZE(key) > 3
                        ? PyTuple_GET_ITEM(key, 3) : NULL;
                Py_DECREF(key);
                Py_ssize_t pid = -1;
                if (phase == NULL) {
                    ok = 0; /* not a GroupKey: Python's */
                } else {
                    PyObject *known = PyDict_GetItemWithError(phases, phase);
                    if (known != NULL) {
                        pid = PyLong_AsSsize_t(known);
                    } else if (!PyErr_Occurred()) {
                        PyObject *id = PyLong_FromSsize_t(PyDict_GET_SIZE(phases));
                        if (id != NULL && PyDict_SetItem(phases, phase, id) == 0)
                            pid = PyDict_GET_SIZE(phases) - 1;
                        Py_XDECREF(id);
                    }
                    if (pid < 0) ok = -1;
                }
                const double *st = cols[0].buf, *du = cols[3].buf;
                const long *th = cols[1].buf, *cy = cols[2].buf;
                for (Py_ssize_t i = 0; ok == 1 && i < len; i++) {
                    double s = st[i];
                    if (s != s) continue; /* no timestamp (some dmesg forms) */
                    double e = s + du[i] / 1e6; /* Interval.end */
                    if (e != e) {
                        ok = 0;
                        break;
                    }
                    Slot *slot = find_slot(table, mask, pid, cy[i]);
                    if (slot->bucket < 0) {
                        if ((size_t)(n_buckets + 1) * 2 > mask + 1) { /* at most half full */
                            if (grow(&table, &mask) < 0) {
                                ok = -1;
                                break;
                            }
                            slot = find_slot(table, mask, pid, cy[i]);
                        }
                        if ((size_t)n_buckets == bs_cap) {
                            Bucket *more = PyMem_Realloc(bs, 2 * bs_cap * sizeof(Bucket));
                            if (more == NULL) {
                                PyErr_NoMemory();
                                ok = -1;
                                break;
                            }
                            bs = more, bs_cap *= 2;
                        }
                        slot->phase = pid, slot->cycle = cy[i], slot->bucket = n_buckets;
                        bs[n_buckets].cycle = cy[i];
                        bs[n_buckets].phase = phase;
                        bs[n_buckets].count = 0;
                        bs[n_buckets].last = e;
                        n_buckets++;
                    }
                    Bucket *b = &bs[slot->bucket];
                    b->count++;
                    if (e > b->last) b->last = e; /* max(ends): the first of equals */
                    Sample *x = &samples[n];
                    x->start = s, x->end = e, x->thread = th[i], x->bucket = slot->bucket;
                    x->seq = n, x->index = i, x->group = g;
                    n++;
                }
            }
        }
        for (int c = 0; c < got; c++) PyBuffer_Release(&cols[c]);
        if (ok < 0) goto done;
        if (ok == 0) fallback = 1;
    }
    if (fallback) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    /* by (bucket, start, end, read order): the indices placed bucket by bucket in read order
     * (a counting sort), then each bucket's sorted (one qsort of all the 56-byte samples
     * was half of this function) */
    order = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    fill = PyMem_Malloc(((size_t)n_buckets + 1) * sizeof(Py_ssize_t));
    if (order == NULL || fill == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    fill[0] = 0;
    for (Py_ssize_t bi = 0; bi < n_buckets; bi++) fill[bi + 1] = fill[bi] + bs[bi].count;
    for (Py_ssize_t i = 0; i < n; i++) order[fill[samples[i].bucket]++] = i;
    sort_samples = samples;
    for (Py_ssize_t bi = 0, from = 0; bi < n_buckets; from += bs[bi].count, bi++)
        qsort(order + from, (size_t)bs[bi].count, sizeof(Py_ssize_t), by_start_end);
    if ((result = PyList_New(n_buckets)) == NULL) goto done;
    Py_ssize_t at = 0;
    for (Py_ssize_t bi = 0; bi < n_buckets; bi++) {
        Bucket *b = &bs[bi];
        PyObject *ivs = PyList_New(b->count);
        if (ivs == NULL) goto fail;
        PyObject *item = Py_BuildValue("lONd", b->cycle, b->phase, ivs, b->last);
        if (item == NULL) goto fail;
        PyList_SET_ITEM(result, bi, item);
        for (Py_ssize_t k = 0; k < b->count; k++, at++) {
            Sample *x = &samples[order[at]];
            PyObject *iv = type->tp_alloc(type, 0), *vals[4];
            if (iv == NULL) goto fail;
            PyList_SET_ITEM(ivs, k, iv);
            vals[0] = PyFloat_FromDouble(x->start);
            vals[1] = PyLong_FromLong(x->thread);
            vals[2] = x->group;
            Py_INCREF(vals[2]);
            vals[3] = PyLong_FromSsize_t(x->index);
            int bad = 0;
            for (int d = 0; d < 4; d++) {
                if (vals[d] != NULL && off[d] >= 0 && Py_TYPE(iv) == type) {
                    *(PyObject **)((char *)iv + off[d]) = vals[d]; /* the reference moves */
                    continue;
                }
                if (vals[d] == NULL
                        || Py_TYPE(descr[d])->tp_descr_set(descr[d], iv, vals[d]) < 0)
                    bad = 1;
                Py_XDECREF(vals[d]);
            }
            if (bad) goto fail;
        }
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    PyMem_Free(samples);
    PyMem_Free(order);
    PyMem_Free(fill);
    PyMem_Free(bs);
    PyMem_Free(table);
    Py_DECREF(phases);
    for (int d = 0; d < 4; d++) Py_XDECREF(descr[d]);
    return result;
}

static PyMethodDef methods[] = {
    {"buckets", buckets, METH_VARARGS,
     "buckets(groups, Interval) -> [(cycle, phase, intervals, last end)] or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_timeline_runs",
    .m_doc = "The timeline's intervals by (cycle, phase) in C.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__timeline_runs(void) {
    for (int a = 0; a < A_N; a++)
        if (attrs[a] == NULL && (attrs[a] = PyUnicode_InternFromString(attr_names[a])) == NULL)
            return NULL;
    return PyModule_Create(&module);
}
