/* The ftrace reader's event scan in C (traces/read/ftrace_tokens.py is the same in Python and
 * the reference; tests/test_ftrace_tokens.py holds them equal on the real captures).
 *
 * tokens(buf, limit) finds what ftrace._EVENT.finditer(buf, 0, limit) finds (every name
 * after ": " that the reader reads) and, per match, the positions and the timestamp the
 * reader's loop needs: a list of (s, e, le, p, ls, ts) tuples, see ftrace_tokens.py.
 *
 * pairing(buf, limit, stamps, state) gives the same tuples one at a time, as an iterator, but
 * keeps back the delay kprobe lines (the names given as `delays` to configure) and the
 * callback starts and ends that it can pair itself: it does for them what ftrace._scan's
 * kprobe branch and its inlined callback start and end do, in the same order, on the same
 * Python objects (see pairing_step, callback_start, callback_end). Every line it cannot take
 * (an unknown task column or payload, a bad timestamp, a lost call, a callback off the common
 * path, a sleepgraph stamp passed) it hands on as a token, for the Python loop.
 *
 * configure(plain[, delays[, others]]) sets the event names: `plain` the names matched as
 * "<name>: " (kprobes with their _cal/_ret, rpm_*, funcgraph_*, sched_*), `delays` those of
 * them that pairing() pairs, `others` the returns of other -dev probes whose calls it finds
 * (other_return); the other four forms are fixed here. Built by `make`
 * (server/tools/build_ftrace_tokens.py); optional. */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* memrchr */
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SLOTS 1024 /* open addressing; a few hundred names */
#define MAXNAME 64
#define KIND_PLAIN 1
#define KIND_DELAY 2
#define KIND_START 3 /* device_pm_callback_start (pairing() takes its common case) */
#define KIND_END 4   /* device_pm_callback_end */
#define KIND_OTHER 5 /* the return of another -dev probe (ftrace.OTHER_PROBES): its call found */
#define TS_BOUND 1e15 /* ftrace._TS_BOUND */

static char names[SLOTS][MAXNAME];
static unsigned char lens[SLOTS];
static unsigned char kinds[SLOTS];
static int configured;

/* A hash of s[:n], 8 bytes at a time (a byte at a time was most of the per-block caches'
 * cost: task columns and kprobe payloads are 30-70 bytes). */
static unsigned hash(const char *s, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15u ^ (uint64_t)n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDu;
        h ^= h >> 32;
    }
    if (n > 0) { /* the last bytes, read one by one (a memcpy of a variable size is a call) */
        w = 0;
        for (Py_ssize_t i = 0; i < n; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
        h = (h ^ w) * 0xFF51AFD7ED558CCDu;
    }
    h ^= h >> 29;
    h *= 0xC4CEB9FE1A85EC53u;
    return (unsigned)(h ^ (h >> 32));
}

/* KIND_* of a configured name, 0 for any other */
static int kind_of(const char *s, Py_ssize_t n) {
    if (n <= 0 || n >= MAXNAME) return 0;
    unsigned i = hash(s, n) & (SLOTS - 1);
    while (lens[i]) {
        if (lens[i] == n && memcmp(names[i], s, n) == 0) return kinds[i];
        i = (i + 1) & (SLOTS - 1);
    }
    return 0;
}

static unsigned char word_byte[256]; /* [A-Za-z0-9_], set at import */

static void init_word_bytes(void) {
    for (int c = 0; c < 256; c++)
        word_byte[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                       || c == '_';
}

/* Add the names of iterable `arg` with `kind` (a name already there takes the new kind). */
static int add_names(PyObject *arg, int kind, int *count) {
    PyObject *it = PyObject_GetIter(arg), *item;
    if (it == NULL) return -1;
    while ((item = PyIter_Next(it)) != NULL) {
        char *s;
        Py_ssize_t n;
        int words = 1;
        if (PyBytes_AsStringAndSize(item, &s, &n) == 0)
            for (Py_ssize_t c = 0; c < n; c++) words &= word_byte[(unsigned char)s[c]];
        if (PyErr_Occurred() || !words || n <= 0 || n >= MAXNAME) {
            Py_DECREF(item);
            Py_DECREF(it);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad event name list");
            return -1;
        }
        unsigned i = hash(s, n) & (SLOTS - 1);
        while (lens[i] && !(lens[i] == n && memcmp(names[i], s, n) == 0))
            i = (i + 1) & (SLOTS - 1);
        if (!lens[i] && ++*count > SLOTS / 2) {
            Py_DECREF(item);
            Py_DECREF(it);
            PyErr_SetString(PyExc_ValueError, "bad event name list");
            return -1;
        }
        memcpy(names[i], s, n);
        lens[i] = (unsigned char)n;
        kinds[i] = (unsigned char)kind;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *plain, *delays = NULL, *others = NULL;
    int count = 0;
    if (!PyArg_ParseTuple(args, "O|OO", &plain, &delays, &others)) return NULL;
    configured = 0;
    memset(lens, 0, sizeof lens);
    memset(kinds, 0, sizeof kinds);
    if (add_names(plain, KIND_PLAIN, &count) < 0) return NULL;
    if ((delays != NULL && add_names(delays, KIND_DELAY, &count) < 0)
            || (others != NULL && add_names(others, KIND_OTHER, &count) < 0)) {
        memset(lens, 0, sizeof lens);
        return NULL;
    }
    configured = 1;
    Py_RETURN_NONE;
}


static int lit(const char *b, Py_ssize_t at, Py_ssize_t limit, const char *w) {
    Py_ssize_t n = (Py_ssize_t)strlen(w);
    return at + n <= limit && memcmp(b + at, w, n) == 0;
}

/* The end of a match whose ": " is at i, or -1 (the alternatives of ftrace._EVENT); *kind is
 * KIND_DELAY for a name pairing() takes, else KIND_PLAIN. */
static Py_ssize_t match_at(const char *b, Py_ssize_t i, Py_ssize_t limit, int *kind) {
    /* the name: up to the next ':' (every name matched is word bytes, checked at configure,
     * so a ':' after anything else gives a name no table holds, as a word scan stopping short
     * of the ':' would; memchr is a tenth of the cost of that scan) */
    Py_ssize_t j = i + 2, room = limit - j < MAXNAME ? limit - j : MAXNAME;
    const char *colon = room > 0 ? memchr(b + j, ':', (size_t)room) : NULL;
    *kind = KIND_PLAIN;
    if (colon == NULL) return -1;
    Py_ssize_t k = colon - b, n = k - j;
    const char *w = b + j;
    if (n == 14 && memcmp(w, "suspend_resume", 14) == 0) { /* ": +" */
        Py_ssize_t e = k + 1;
        while (e < limit && b[e] == ' ') e++;
        return e > k + 1 ? e : -1;
    }
    if (k + 2 > limit || b[k + 1] != ' ') return -1;
    int start = n == 24 && memcmp(w, "device_pm_callback_start", 24) == 0;
    if (start || (n == 22 && memcmp(w, "device_pm_callback_end", 22) == 0)) {
        const char *nl = memchr(b + k + 2, '\n', limit - (k + 2));
        *kind = start ? KIND_START : KIND_END;
        return nl ? nl - b : limit; /* [^\n]* */
    }
    if (n == 18 && memcmp(w, "tracing_mark_write", 18) == 0) {
        if (lit(b, k + 2, limit, "SUSPEND START")) return k + 15;
        if (lit(b, k + 2, limit, "RESUME COMPLETE")) return k + 17;
        return -1;
    }
    *kind = kind_of(w, n);
    return *kind ? k + 2 : -1;
}

/* 10**k, exact in a double for k <= 22 */
static const double pow10_exact[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                                       1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                                       1e20, 1e21, 1e22};

/* A timestamp ("1234.567890": digits, at most one dot, at least one digit) whose digits make
 * an integer M <= 2**53 with k <= 22 of them after the dot: *v = M / 10**k, 1. Both are exact
 * doubles, so the one rounding of the division gives the correctly rounded value, which is
 * what float() (David Gay's strtod) gives too; strtod was 3% of the reader. Else 0. */
static int exact_decimal(const char *s, Py_ssize_t n, double *v) {
    uint64_t m = 0;
    Py_ssize_t dot = -1, digits = 0;
    if (n <= 0 || n > 40) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d <= 9) {
            if (m > (UINT64_C(1) << 53) / 10) return 0; /* (m * 10 + d could pass 2**53) */
            m = m * 10 + d;
            digits++;
        } else if (s[i] == '.' && dot < 0) {
            dot = i;
        } else {
            return 0;
        }
    }
    Py_ssize_t k = dot < 0 ? 0 : n - 1 - dot;
    if (digits == 0 || k > 22 || m > (UINT64_C(1) << 53)) return 0;
    *v = (double)m / pow10_exact[k];
    return 1;
}

/* float(buf[a:z]) as Python reads it, or NULL with no error set when it is not a number. */
static PyObject *number(const char *b, Py_ssize_t a, Py_ssize_t z) {
    char tmp[64];
    Py_ssize_t n = z - a;
    double v;
    if (exact_decimal(b + a, n, &v)) return PyFloat_FromDouble(v);
    if (n > 0 && n < (Py_ssize_t)sizeof tmp) {
        int plain = 1;
        for (Py_ssize_t i = a; i < z; i++) {
            char c = b[i];
            if (!((c >= '0' && c <= '9') || c == '.')) { plain = 0; break; }
        }
        if (plain) { /* the common case: digits and a dot, as float() parses them */
            char *end;
            memcpy(tmp, b + a, n);
            tmp[n] = 0;
            v = PyOS_string_to_double(tmp, &end, NULL);
            if (v == -1.0 && PyErr_Occurred()) { /* "." or "..": no number (float() below) */
                if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL;
                PyErr_Clear();
            } else if (end == tmp + n) {
                return PyFloat_FromDouble(v);
            }
        }
    }
    /* anything else (spaces, underscores, nan, a sign, garbage): float() itself */
    PyObject *raw = PyBytes_FromStringAndSize(b + a, n > 0 ? n : 0);
    if (raw == NULL) return NULL;
    PyObject *out = PyFloat_FromString(raw);
    Py_DECREF(raw);
    if (out == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) PyErr_Clear();
    return out;
}

static Py_ssize_t rfind_char(const char *b, Py_ssize_t end, char c) {
    const char *m = end > 0 ? memrchr(b, c, (size_t)end) : NULL;
    return m ? m - b : -1;
}

typedef struct {
    Py_ssize_t s, e, le, p, ls;
    PyObject *ts; /* a new reference: a float, or Py_None */
    int kind;
} Tok;

/* The next match at or after *at in b[:limit] (len: the whole buffer): 1 and *t filled (and
 * *at moved past it), 0 when there is none, -1 on an error. */
static int next_tok(const char *b, Py_ssize_t len, Py_ssize_t limit, Py_ssize_t *at, Tok *t) {
    Py_ssize_t i = *at;
    while (i + 1 < limit) {
        const char *c = memchr(b + i, ':', limit - 1 - i);
        if (c == NULL) break;
        i = c - b;
        int kind;
        Py_ssize_t e = b[i + 1] == ' ' ? match_at(b, i, limit, &kind) : -1;
        if (e < 0) {
            i++;
            continue;
        }
        Py_ssize_t s = i, le = 0, p = 0, ls = 0;
        PyObject *ts = NULL;
        if (!(b[s + 2] == 'r' && b[s + 3] == 'p')) { /* rpm_*: read elsewhere */
            if (b[s + 2] == 'd') {
                le = e;
            } else {
                const char *nl = memchr(b + e, '\n', len - e);
                le = nl ? nl - b : -1;
            }
            if (b[(le - 1 + len) % len] == '\r') le--;
            p = rfind_char(b, s, ' ');
            ts = number(b, p + 1, s);
            if (ts == NULL && PyErr_Occurred()) return -1;
            /* buf.rfind(b"\n", 0, p) with Python's meaning of a negative p */
            Py_ssize_t end = p >= 0 ? p : (len + p > 0 ? len + p : 0);
            ls = rfind_char(b, end, '\n') + 1;
        }
        if (ts == NULL) {
            ts = Py_None;
            Py_INCREF(ts);
        }
        t->s = s, t->e = e, t->le = le, t->p = p, t->ls = ls, t->ts = ts, t->kind = kind;
        *at = e;
        return 1;
    }
    *at = i;
    return 0;
}

/* The token tuple (s, e, le, p, ls, ts); takes over t->ts. */
static PyObject *tok_tuple(Tok *t) {
    PyObject *out = PyTuple_New(6);
    if (out == NULL) {
        Py_DECREF(t->ts);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 5, t->ts);
    Py_ssize_t v[5] = {t->s, t->e, t->le, t->p, t->ls};
    for (int f = 0; f < 5; f++) {
        PyObject *x = PyLong_FromSsize_t(v[f]);
        if (x == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, f, x);
    }
    return out;
}

static PyObject *tokens(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t limit;
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*n", &view, &limit)) return NULL;
    const char *b = view.buf;
    Py_ssize_t len = view.len, at = 0;
    if (limit > len) limit = len;
    if (limit < 0) limit = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    Tok t;
    int r;
    while ((r = next_tok(b, len, limit, &at, &t)) > 0) {
        PyObject *x = tok_tuple(&t);
        if (x == NULL) goto fail;
        if (PyList_Append(out, x) < 0) {
            Py_DECREF(x);
            goto fail;
        }
        Py_DECREF(x);
    }
    if (r < 0) goto fail;
    PyBuffer_Release(&view);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

/* ---- OpenDelays: the open delay calls, (thread, func) -> (t0, requested, nested) -------- */

/* What Assembler.open_delays is (a dict) when pairing() runs: the same entries in a C table
 * keyed by the two ints, so that a delay's call and return make no key tuple, value tuple or
 * dict entry (their dict work was a tenth of the reader, BENCHMARKS.md "Session 7"). The
 * Python loop, which takes the lines pairing() hands on, uses it as it uses the dict: pop(key,
 * default) and d[key] = value. Nothing iterates it. */
typedef struct {
    long tid, func;
    PyObject *t0, *req; /* references; t0 NULL: the slot is empty */
    int nested;
} DSlot;

typedef struct {
    PyObject_HEAD
    DSlot *slots;
    Py_ssize_t cap, n; /* cap a power of two, n <= cap / 2 */
} OpenDelays;

static PyTypeObject OpenDelaysType;

static size_t dslot_of(const OpenDelays *o, long tid, long func) {
    uint64_t h = ((uint64_t)tid * 0x9E3779B97F4A7C15u) ^ ((uint64_t)func * 0xC2B2AE3D27D4EB4Fu);
    return (size_t)((h ^ (h >> 31)) & (uint64_t)(o->cap - 1));
}

/* the slot holding (tid, func), or the empty slot where it would go */
static DSlot *od_find(OpenDelays *o, long tid, long func) {
    size_t i = dslot_of(o, tid, func);
    while (o->slots[i].t0 != NULL && !(o->slots[i].tid == tid && o->slots[i].func == func))
        i = (i + 1) & (size_t)(o->cap - 1);
    return &o->slots[i];
}

static int od_grow(OpenDelays *o) {
    DSlot *old = o->slots;
    Py_ssize_t cap = o->cap;
    DSlot *fresh = PyMem_Calloc((size_t)cap * 2, sizeof(DSlot));
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->slots = fresh;
    o->cap = cap * 2;
    for (Py_ssize_t i = 0; i < cap; i++)
        if (old[i].t0 != NULL) *od_find(o, old[i].tid, old[i].func) = old[i];
    PyMem_Free(old);
    return 0;
}

/* The entry (tid, func) set to (t0, req, nested); the table holds its own references. */
static int od_put(OpenDelays *o, long tid, long func, PyObject *t0, PyObject *req, int nested) {
    DSlot *d = od_find(o, tid, func);
    if (d->t0 == NULL) {
        if ((o->n + 1) * 2 > o->cap) {
            if (od_grow(o) < 0) return -1;
            d = od_find(o, tid, func);
        }
        o->n++;
        d->tid = tid, d->func = func;
    } else {
        Py_DECREF(d->t0);
        Py_DECREF(d->req);
    }
    Py_INCREF(t0);
    Py_INCREF(req);
    d->t0 = t0, d->req = req, d->nested = nested;
    return 0;
}

/* Remove slot d (found by od_find): its references go to *t0 and *req; the entries after it
 * in its run are moved back (linear probing without tombstones). */
static void od_take(OpenDelays *o, DSlot *d, PyObject **t0, PyObject **req, int *nested) {
    *t0 = d->t0, *req = d->req, *nested = d->nested;
    size_t mask = (size_t)(o->cap - 1), i = (size_t)(d - o->slots), j = i;
    o->slots[i].t0 = NULL;
    o->n--;
    for (;;) {
        j = (j + 1) & mask;
        if (o->slots[j].t0 == NULL) return;
        size_t home = dslot_of(o, o->slots[j].tid, o->slots[j].func);
        /* move j back to i when its home is not in (i, j] (cyclically) */
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            o->slots[i] = o->slots[j];
            o->slots[j].t0 = NULL;
            i = j;
        }
    }
}

/* (tid, func) of a Python key (a tuple of two ints), 0, or -1 with an error */
static int od_key(PyObject *key, long *tid, long *func) {
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2
            || !PyLong_Check(PyTuple_GET_ITEM(key, 0)) || !PyLong_Check(PyTuple_GET_ITEM(key, 1))) {
        PyErr_SetString(PyExc_TypeError, "OpenDelays key: (thread, func), two ints");
        return -1;
    }
    *tid = PyLong_AsLong(PyTuple_GET_ITEM(key, 0));
    if (*tid == -1 && PyErr_Occurred()) return -1;
    *func = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
    return *func == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *od_pop(OpenDelays *o, PyObject *const *args, Py_ssize_t nargs) {
    long tid, func;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "pop(key, default)");
        return NULL;
    }
    if (od_key(args[0], &tid, &func) < 0) return NULL;
    DSlot *d = od_find(o, tid, func);
    if (d->t0 == NULL) {
        Py_INCREF(args[1]);
        return args[1];
    }
    PyObject *t0, *req;
    int nested;
    od_take(o, d, &t0, &req, &nested);
    PyObject *out = PyTuple_Pack(3, t0, req, nested ? Py_True : Py_False);
    Py_DECREF(t0);
    Py_DECREF(req);
    return out;
}

static int od_ass(OpenDelays *o, PyObject *key, PyObject *v) {
    long tid, func;
    if (v == NULL) {
        PyErr_SetString(PyExc_TypeError, "OpenDelays: use pop()");
        return -1;
    }
    if (od_key(key, &tid, &func) < 0) return -1;
    if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 3) {
        PyErr_SetString(PyExc_TypeError, "OpenDelays value: (t0, requested, nested)");
        return -1;
    }
    int nested = PyObject_IsTrue(PyTuple_GET_ITEM(v, 2));
    if (nested < 0) return -1;
    return od_put(o, tid, func, PyTuple_GET_ITEM(v, 0), PyTuple_GET_ITEM(v, 1), nested);
}

static Py_ssize_t od_len(OpenDelays *o) { return o->n; }

static void od_dealloc(OpenDelays *o) {
    for (Py_ssize_t i = 0; o->slots != NULL && i < o->cap; i++)
        if (o->slots[i].t0 != NULL) {
            Py_DECREF(o->slots[i].t0);
            Py_DECREF(o->slots[i].req);
        }
    PyMem_Free(o->slots);
    PyObject_Free(o);
}

static PyObject *od_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    if (PyTuple_GET_SIZE(args) != 0 || (kw != NULL && PyDict_GET_SIZE(kw) != 0)) {
        PyErr_SetString(PyExc_TypeError, "OpenDelays() takes no arguments");
        return NULL;
    }
    OpenDelays *o = PyObject_New(OpenDelays, type);
    if (o == NULL) return NULL;
    o->cap = 16, o->n = 0;
    if ((o->slots = PyMem_Calloc(16, sizeof(DSlot))) == NULL) {
        PyObject_Free(o);
        return PyErr_NoMemory();
    }
    return (PyObject *)o;
}

static PyMethodDef od_methods[] = {
    {"pop", (PyCFunction)(void (*)(void))od_pop, METH_FASTCALL,
     "pop(key, default): the open call (t0, requested, nested) of key (thread, func), removed"},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods od_mapping = {
    .mp_length = (lenfunc)od_len,
    .mp_ass_subscript = (objobjargproc)od_ass,
};

static PyTypeObject OpenDelaysType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_ftrace_tokens.OpenDelays",
    .tp_basicsize = sizeof(OpenDelays),
    .tp_dealloc = (destructor)od_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the open delay calls: (thread, func) -> (t0, requested, nested); pop() and d[k] = v",
    .tp_methods = od_methods,
    .tp_as_mapping = &od_mapping,
    .tp_new = od_new,
};

/* ---- ThreadSet: the threads inside a delay (Assembler.in_delay's set) -------------------- */

/* An OpenDelays table used as a set of thread ids (func 0, None for both objects): what
 * Assembler.in_delay is while pairing() runs; the Python loop uses it as it uses the set
 * (`tid in s`, s.add(tid), s.discard(tid)). */
static PyTypeObject ThreadSetType;

static int ts_has(OpenDelays *o, long tid) { return od_find(o, tid, 0)->t0 != NULL; }

static int ts_add(OpenDelays *o, long tid) {
    return ts_has(o, tid) ? 0 : od_put(o, tid, 0, Py_None, Py_None, 0);
}

static void ts_discard(OpenDelays *o, long tid) {
    DSlot *d = od_find(o, tid, 0);
    if (d->t0 != NULL) {
        PyObject *a, *b;
        int nested;
        od_take(o, d, &a, &b, &nested);
        Py_DECREF(a);
        Py_DECREF(b);
    }
}

static int ts_tid(PyObject *x, long *tid) {
    if (!PyLong_Check(x)) {
        PyErr_SetString(PyExc_TypeError, "ThreadSet: thread ids are ints");
        return -1;
    }
    *tid = PyLong_AsLong(x);
    return *tid == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *ts_add_m(OpenDelays *o, PyObject *x) {
    long tid;
    if (ts_tid(x, &tid) < 0 || ts_add(o, tid) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *ts_discard_m(OpenDelays *o, PyObject *x) {
    long tid;
    if (ts_tid(x, &tid) < 0) return NULL;
    ts_discard(o, tid);
    Py_RETURN_NONE;
}

static int ts_contains(OpenDelays *o, PyObject *x) {
    long tid;
    return ts_tid(x, &tid) < 0 ? -1 : ts_has(o, tid);
}

static PyMethodDef ts_methods[] = {
    {"add", (PyCFunction)ts_add_m, METH_O, "add(thread)"},
    {"discard", (PyCFunction)ts_discard_m, METH_O, "discard(thread)"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods ts_sequence = {
    .sq_length = (lenfunc)od_len,
    .sq_contains = (objobjproc)ts_contains,
};

static PyTypeObject ThreadSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_ftrace_tokens.ThreadSet",
    .tp_basicsize = sizeof(OpenDelays),
    .tp_dealloc = (destructor)od_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "thread ids: `t in s`, s.add(t), s.discard(t)",
    .tp_methods = ts_methods,
    .tp_as_sequence = &ts_sequence,
    .tp_new = od_new,
};

/* ---- pairing(): the delay kprobes paired in C ------------------------------------------ */

/* The reader's state the pairing shares with ftrace._scan (Python objects, the same ones):
 * the task column -> thread id cache, the kprobe payload -> probe cache, the func ids that
 * are not delays, (thread, func) -> the open call, the threads inside a delay,
 * Assembler.delay, the Assembler's thread -> its open callback, open callbacks, delays per
 * open callback and Assembler.activity_outside (the common case of Assembler.delay and all of
 * Assembler.activity are done here, see in_callback). */
enum { ST_TCACHE, ST_PCACHE, ST_NOT_DELAY, ST_OPEN, ST_IN_DELAY, ST_DELAY, ST_ON_THREAD, ST_PENDING, ST_DELAY_ACC, ST_OUTSIDE,
       /* the callbacks' common path: the Assembler (its stage_cache, _last_phase and
        * _last_cycle, read per line: markers change them), its open phases, the Collector's
        * cycle_base and file_id, and a list [samples, max cycle] the ends done here are
        * written into when the block is done */
       ST_ASM, ST_OPEN_MEMBERS, ST_CYCLE_BASE, ST_FILE_ID, ST_COUNTED,
       /* the -dev probes' returns: the func ids of ftrace.OTHER_PROBES; delays and activity
        * outside callbacks: the Assembler's CycleTracker and outside_acc, the store's
        * ThreadActivity.spans */
       ST_OTHER_IDS, ST_CYCLES, ST_OUTSIDE_ACC, ST_SPANS,
       /* Collector.skip_many, for the delay calls whose previous call never returned */
       ST_SKIP, ST_N };

/* attribute names, interned at import */
enum { A_STAGE_CACHE, A_LAST_PHASE, A_LAST_CYCLE, A_THREADS, A_DURATIONS, A_STARTS, A_CYCLES,
       A_FILES, A_APPEND, A_CALL_MARKS, A_BLOCK_SERIAL, A_CALL_FIRSTS, A_PREV_BLOCK, A_WINDOW,
       A_CYCLE, A_N };
static const char *attr_names[A_N] = {"stage_cache", "_last_phase", "_last_cycle", "threads",
                                      "durations", "starts", "cycles", "files", "append",
                                      "call_marks", "block_serial", "call_firsts", "prev_block",
                                      "window", "cycle"};
static PyObject *attrs[A_N];
static PyObject *lost_call; /* the reason ftrace._scan gives Collector.skip for a lost call */
static PyObject *get_attr(PyObject *obj, int a);  /* a slot, through its descriptor */
static PyObject *inst_attr(PyObject *obj, int a); /* an attribute in the instance's __dict__ */

/* A cache hit kept per block: the key's text is view[a:a+n], v a reference to the value. The
 * thread and probe caches only ever gain entries (a task column or payload is resolved once),
 * so a value found once is the value for the rest of the block: the next lines of a task or a
 * payload are looked up without making a bytes key (a third of the pairing's lookups). */
#define CSLOTS 512
#define NOT_DELAY_BITS 4096
typedef struct {
    Py_ssize_t a, n;
    PyObject *v;
} CSlot;

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
    Py_ssize_t limit, at;
    PyObject *stamps;   /* the block's sleepgraph header positions, ascending (a list) */
    Py_ssize_t stamp;   /* the first of them no token handed on has passed yet */
    PyObject *state[ST_N];
    Py_ssize_t samples; /* callback ends done here (ftrace._scan's n_samples) */
    Py_ssize_t lost;    /* lost delay calls not yet given to Collector.skip_many */
    long max_cycle;     /* and their largest cycle (its max_cycle), -1: none */
    /* the thread and probe caches' hits of this block by the key's text (see cached) */
    CSlot threads[CSLOTS], probes[CSLOTS];
    /* the not-delay func ids (state[ST_NOT_DELAY]) below NOT_DELAY_BITS as bits, when all of
     * them are such ints (else not_delay_set: the set is asked) */
    unsigned char not_delay[NOT_DELAY_BITS / 8];
    int not_delay_set;
} Pairing;

static void pairing_dealloc(Pairing *self) {
    for (int k = 0; k < CSLOTS; k++) {
        Py_XDECREF(self->threads[k].v);
        Py_XDECREF(self->probes[k].v);
    }
    if (self->has_view) PyBuffer_Release(&self->view);
    Py_XDECREF(self->stamps);
    for (int k = 0; k < ST_N; k++) Py_XDECREF(self->state[k]);
    PyObject_Free(self);
}

/* A borrowed value of dict `d` at the bytes b[a:z], or NULL (*err set on an error). */
static PyObject *lookup(PyObject *d, const char *b, Py_ssize_t a, Py_ssize_t z, int *err) {
    PyObject *key = PyBytes_FromStringAndSize(b + a, z - a);
    if (key == NULL) {
        *err = 1;
        return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(d, key);
    Py_DECREF(key);
    if (v == NULL && PyErr_Occurred()) *err = 1;
    return v;
}

/* lookup() of the block's own text b[a:z] through a per-block cache of hits (CSlot). */
static PyObject *cached(CSlot *tab, PyObject *d, const char *b, Py_ssize_t a, Py_ssize_t z,
                        int *err) {
    Py_ssize_t n = z - a;
    CSlot *slot = &tab[hash(b + a, n) & (CSLOTS - 1)];
    if (slot->v != NULL && slot->n == n && memcmp(b + slot->a, b + a, n) == 0) return slot->v;
    PyObject *v = lookup(d, b, a, z, err);
    if (v != NULL) {
        Py_INCREF(v);
        Py_XSETREF(slot->v, v);
        slot->a = a;
        slot->n = n;
    }
    return v;
}

static int call4or6(PyObject *fn, PyObject **argv, size_t n) {
    PyObject *r = PyObject_Vectorcall(fn, argv, n, NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* Whether `tid` is inside its open callback that started at or before t0 (Assembler.delay:
 * "p is not None and p[4] == thread and p[0] <= t0"; Assembler.activity, op Py_GT: "not (p
 * is None or p[4] != thread or p[0] > t0)"): 1, 0, or -1 on an error; *head (borrowed) the
 * callback's key. */
static int in_callback(PyObject **st, PyObject *tid, PyObject *t0, int op, PyObject **head) {
    *head = PyDict_GetItemWithError(st[ST_ON_THREAD], tid);
    if (*head == NULL) return PyErr_Occurred() ? -1 : 0;
    PyObject *p = PyDict_GetItemWithError(st[ST_PENDING], *head);
    if (p == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 5) {
        PyErr_SetString(PyExc_TypeError, "open callback: not a 5-tuple");
        return -1;
    }
    Py_INCREF(p);
    int r = PyObject_RichCompareBool(PyTuple_GET_ITEM(p, 4), tid, Py_EQ);
    if (r > 0) {
        r = PyObject_RichCompareBool(PyTuple_GET_ITEM(p, 0), t0, op);
        if (op == Py_GT && r >= 0) r = !r;
    }
    Py_DECREF(p);
    return r;
}

/* A delay summed per site (Assembler.delay): acc[key] = [count, us, first, last], a new row
 * or row[0] += 1; row[1] += dur; row[3] = ts. */
static int add_row(PyObject *acc, PyObject *key, PyObject *t0, PyObject *ts) {
    double dur = (PyFloat_AS_DOUBLE(ts) - PyFloat_AS_DOUBLE(t0)) * 1e6;
    PyObject *x, *row = PyDict_GetItemWithError(acc, key);
    if (row == NULL) {
        if (PyErr_Occurred()) return -1;
        PyObject *n = PyLong_FromLong(1), *us = PyFloat_FromDouble(dur);
        row = n == NULL || us == NULL ? NULL : PyList_New(4);
        if (row == NULL) {
            Py_XDECREF(n);
            Py_XDECREF(us);
            return -1;
        }
        Py_INCREF(t0);
        Py_INCREF(ts);
        PyList_SET_ITEM(row, 0, n);
        PyList_SET_ITEM(row, 1, us);
        PyList_SET_ITEM(row, 2, t0);
        PyList_SET_ITEM(row, 3, ts);
        int r = PyDict_SetItem(acc, key, row);
        Py_DECREF(row);
        return r;
    }
    if (!PyList_Check(row) || PyList_GET_SIZE(row) != 4 || !PyLong_Check(PyList_GET_ITEM(row, 0))
            || !PyFloat_Check(PyList_GET_ITEM(row, 1))) {
        PyErr_SetString(PyExc_TypeError, "delay row: not [count, us, first, last]");
        return -1;
    }
    long count = PyLong_AsLong(PyList_GET_ITEM(row, 0));
    if (count == -1 && PyErr_Occurred()) return -1;
    if ((x = count < LONG_MAX ? PyLong_FromLong(count + 1) : NULL) == NULL) {
        if (PyErr_Occurred()) return -1;
        PyErr_SetString(PyExc_OverflowError, "delay row: count");
        return -1;
    }
    PyList_SetItem(row, 0, x);
    if ((x = PyFloat_FromDouble(PyFloat_AS_DOUBLE(PyList_GET_ITEM(row, 1)) + dur)) == NULL)
        return -1;
    PyList_SetItem(row, 1, x);
    Py_INCREF(ts);
    PyList_SetItem(row, 3, ts);
    return 0;
}

/* Assembler.delay's common case: the delay summed into the open callback `head` of its
 * thread, per (func, caller, requested): delay_acc[head][key] = [count, us, first, last]. */
static int add_to_callback(PyObject **st, PyObject *head, PyObject *func, PyObject *caller,
                           PyObject *req, PyObject *t0, PyObject *ts) {
    PyObject *acc = PyDict_GetItemWithError(st[ST_DELAY_ACC], head), *key = NULL;
    int r = -1;
    Py_INCREF(head); /* held while the dicts change */
    if (acc == NULL) {
        if (PyErr_Occurred() || (acc = PyDict_New()) == NULL) goto out;
        if (PyDict_SetItem(st[ST_DELAY_ACC], head, acc) < 0) {
            Py_DECREF(acc);
            goto out;
        }
    } else {
        Py_INCREF(acc);
    }
    if (PyDict_Check(acc) && (key = PyTuple_Pack(3, func, caller, req)) != NULL)
        r = add_row(acc, key, t0, ts);
    Py_XDECREF(key);
    Py_DECREF(acc);
out:
    Py_DECREF(head);
    return r;
}

/* Assembler.activity_outside: a -dev probe call of `tid` from t0 to ts kept as sleepgraph
 * keeps it (at least 1 us, inside its test: asm.window) in ThreadActivity.add's spans:
 * spans[(cycle_base + cycle, tid, func)] = [first start, last end, calls]. */
static int outside(PyObject **st, PyObject *t0, PyObject *ts, PyObject *tid, PyObject *func) {
    double a = PyFloat_AS_DOUBLE(t0), z = PyFloat_AS_DOUBLE(ts);
    if (z - a < 0.000001) return 0;
    PyObject *w = inst_attr(st[ST_ASM], A_WINDOW);
    if (w == NULL) return -1;
    if (!PyTuple_Check(w) || PyTuple_GET_SIZE(w) != 2 || !PyFloat_Check(PyTuple_GET_ITEM(w, 0))) {
        Py_DECREF(w); /* not as the Assembler keeps it: its own method decides */
        PyObject *argv[4] = {t0, ts, tid, func};
        return call4or6(st[ST_OUTSIDE], argv, 4);
    }
    int open = PyObject_IsTrue(PyTuple_GET_ITEM(w, 1));
    int before = a < PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(w, 0));
    Py_DECREF(w);
    if (open < 0) return -1;
    if (before || !open) return 0;
    PyObject *cycle = get_attr(st[ST_CYCLES], A_CYCLE), *c = NULL, *key = NULL;
    int r = -1;
    if (cycle == NULL || (c = PyNumber_Add(st[ST_CYCLE_BASE], cycle)) == NULL
            || (key = PyTuple_Pack(3, c, tid, func)) == NULL)
        goto out;
    PyObject *row = PyDict_GetItemWithError(st[ST_SPANS], key);
    if (row == NULL) {
        if (PyErr_Occurred() || (row = Py_BuildValue("[OOi]", t0, ts, 1)) == NULL) goto out;
        r = PyDict_SetItem(st[ST_SPANS], key, row);
        Py_DECREF(row);
        goto out;
    }
    if (!PyList_Check(row) || PyList_GET_SIZE(row) != 3 || !PyFloat_Check(PyList_GET_ITEM(row, 0))
            || !PyFloat_Check(PyList_GET_ITEM(row, 1))) {
        PyErr_SetString(PyExc_TypeError, "activity span: not [first, last, calls]");
        goto out;
    }
    if (a < PyFloat_AS_DOUBLE(PyList_GET_ITEM(row, 0))) {
        Py_INCREF(t0);
        PyList_SetItem(row, 0, t0);
    }
    if (z > PyFloat_AS_DOUBLE(PyList_GET_ITEM(row, 1))) {
        Py_INCREF(ts);
        PyList_SetItem(row, 1, ts);
    }
    PyObject *one = PyLong_FromLong(1), *n = NULL;
    if (one == NULL) goto out;
    n = PyNumber_Add(PyList_GET_ITEM(row, 2), one);
    Py_DECREF(one);
    if (n == NULL) goto out;
    PyList_SetItem(row, 2, n);
    r = 0;
out:
    Py_XDECREF(key);
    Py_XDECREF(c);
    Py_XDECREF(cycle);
    return r;
}

/* Assembler.delay outside callbacks: thread activity, and the delay summed per (cycle,
 * thread, func, caller, requested) in its outside_acc. */
static int delay_outside(PyObject **st, PyObject *t0, PyObject *ts, PyObject *tid,
                         PyObject *func, PyObject *caller, PyObject *req) {
    PyObject *cycle = get_attr(st[ST_CYCLES], A_CYCLE), *key = NULL;
    int r = -1;
    if (cycle != NULL && (key = PyTuple_Pack(5, cycle, tid, func, caller, req)) != NULL
            && outside(st, t0, ts, tid, func) == 0)
        r = add_row(st[ST_OUTSIDE_ACC], key, t0, ts);
    Py_XDECREF(key);
    Py_XDECREF(cycle);
    return r;
}

/* ftrace._scan's branch for a delay kprobe line, on its common path: 1 when done here, 0
 * when the line is to be handed on (the Python loop does it, with the same state), -1 on an
 * error. The Python loop's order is kept: a line is done here only once every line before
 * it is done, and a line is handed on as soon as anything differs from the common case. */
/* Whether a line may be done here as far as the stamps and its timestamp go: 1, 0 when it is
 * the Python loop's (a stamp before it the loop has not passed, no or an impossible
 * timestamp, an odd task column), -1 on an error. */
static int line_ok(Pairing *self, Tok *t) {
    Py_ssize_t ns = PyList_GET_SIZE(self->stamps);
    if (self->stamp < ns) {
        Py_ssize_t next = PyLong_AsSsize_t(PyList_GET_ITEM(self->stamps, self->stamp));
        if (next == -1 && PyErr_Occurred()) return -1;
        if (t->s > next) { /* the loop handles the stamps before this line, then the line */
            while (self->stamp < ns) {
                next = PyLong_AsSsize_t(PyList_GET_ITEM(self->stamps, self->stamp));
                if (next == -1 && PyErr_Occurred()) return -1;
                if (t->s <= next) break;
                self->stamp++;
            }
            return 0;
        }
    }
    if (t->ts == Py_None) return 0;
    double ts = PyFloat_AS_DOUBLE(t->ts);
    if (!(-TS_BOUND < ts && ts < TS_BOUND)) return 0;
    return !(t->p < 0 || t->ls > t->p || t->le < t->e);
}

static int pairing_step(Pairing *self, const char *b, Tok *t) {
    PyObject **st = self->state;
    double ts = PyFloat_AS_DOUBLE(t->ts);
    int err = 0;
    PyObject *tid = cached(self->threads, st[ST_TCACHE], b, t->ls, t->p, &err);
    if (tid == NULL) return err ? -1 : 0;
    int ret = b[t->e - 3] == 't';
    Py_ssize_t end = t->le;
    if (ret) { /* a return's key ends at the ")" after its caller (ftrace._scan) */
        const char *q = memchr(b + t->e, ')', t->le - t->e);
        if (q != NULL) end = q - b + 1;
    }
    Py_INCREF(tid);
    PyObject *probe = cached(self->probes, st[ST_PCACHE], b, t->s + 2, end, &err);
    if (probe == NULL || !PyTuple_Check(probe) || PyTuple_GET_SIZE(probe) != 3) {
        Py_DECREF(tid);
        return err ? -1 : 0;
    }
    Py_INCREF(probe);
    PyObject *func = PyTuple_GET_ITEM(probe, 1), *t0 = NULL, *req = NULL; /* an open call's */
    long ltid = PyLong_AsLong(tid), lfunc = PyLong_AsLong(func);
    int r = 0;
    if ((ltid == -1 || lfunc == -1) && PyErr_Occurred()) goto error;
    r = self->not_delay_set || lfunc < 0 || lfunc >= NOT_DELAY_BITS
        ? PySet_Contains(st[ST_NOT_DELAY], func)
        : (self->not_delay[lfunc >> 3] >> (lfunc & 7)) & 1;
    if (r != 0) { /* a kernel function or another probe: the loop's (or an error) */
        r = r < 0 ? -1 : 0;
        goto done;
    }
    OpenDelays *open = (OpenDelays *)st[ST_OPEN], *in_delay = (OpenDelays *)st[ST_IN_DELAY];
    DSlot *slot = od_find(open, ltid, lfunc);
    int nested;
    if (PyTuple_GET_ITEM(probe, 0) == Py_True) { /* the call */
        if (slot->t0 != NULL) { /* the previous call's return is not in the capture: dropped */
            od_take(open, slot, &t0, &req, &nested);
            Py_CLEAR(t0);
            Py_CLEAR(req);
            self->lost++; /* Collector.skip, once the stretch is done (flush_lost) */
            if (!nested) ts_discard(in_delay, ltid);
        }
        nested = ts_has(in_delay, ltid);
        if (od_put(open, ltid, lfunc, t->ts, PyTuple_GET_ITEM(probe, 2), nested) < 0
                || (!nested && ts_add(in_delay, ltid) < 0))
            goto error;
        r = 1;
        goto done;
    }
    /* the return: open.pop((thread, func)) */
    if (slot->t0 == NULL) {
        r = 1;
        goto done;
    }
    od_take(open, slot, &t0, &req, &nested);
    if (!PyFloat_Check(t0)) {
        PyErr_SetString(PyExc_TypeError, "open delay: t0 not a float");
        goto error;
    }
    int later = ts >= PyFloat_AS_DOUBLE(t0);
    PyObject *head;
    if (nested) { /* not a delay of its own, but thread activity all the same */
        /* Assembler.activity: inside the thread's callback it is the callback's */
        int inside = later ? in_callback(st, tid, t0, Py_GT, &head) : 1;
        if (inside < 0 || (!inside && outside(st, t0, t->ts, tid, func) < 0)) goto error;
    } else {
        ts_discard(in_delay, ltid);
        int inside = later ? in_callback(st, tid, t0, Py_LE, &head) : 0;
        if (inside < 0) goto error;
        if (inside) { /* Assembler.delay's common case */
            if (add_to_callback(st, head, func, PyTuple_GET_ITEM(probe, 2), req, t0, t->ts) < 0)
                goto error;
        } else if (later) { /* Assembler.delay, outside callbacks */
            if (delay_outside(st, t0, t->ts, tid, func, PyTuple_GET_ITEM(probe, 2), req) < 0)
                goto error;
        }
    }
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(t0);
    Py_XDECREF(req);
    Py_DECREF(probe);
    Py_DECREF(tid);
    return r;
}

/* The printable bytes by how often they occur in ftrace text (pm-graph's multitest, one
 * test: rarest first). A needle is looked for by its rarest byte (memchr/memrchr), then
 * compared whole: a probe's call line ": mutex_lock_slowpath_cal: " by its "w", not by the
 * ":" every line has two of (the -dev returns' searches were a tenth of the reader). */
static const char by_rarity[] = "@*!#|ZKJ\\QGVHMY\"UFOWEjRAXTICSzqBDPLN>f,wv<()+=b9/y6g8k7h[]n"
                                "-im4x5oups3:drc2l1ta_.e0 ";

static unsigned char rarity[256]; /* 255 - the place in by_rarity; 255: not there, rarest */

static void init_rarity(void) {
    memset(rarity, 255, sizeof rarity);
    for (size_t i = 0; by_rarity[i]; i++) rarity[(unsigned char)by_rarity[i]] = (unsigned char)(254 - i);
}

/* the index in needle[:n] of its rarest byte (the first of the rarest) */
static Py_ssize_t rarest(const char *needle, Py_ssize_t n) {
    Py_ssize_t best = 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (rarity[(unsigned char)needle[i]] > rarity[(unsigned char)needle[best]]) best = i;
    return best;
}

/* The largest j in [low, hi - n] where b[j:j+n] is the needle, or -1 (bytes.rfind); k is
 * rarest(needle, n). */
static Py_ssize_t rfind_mem(const char *b, Py_ssize_t low, Py_ssize_t hi, const char *needle,
                            Py_ssize_t n, Py_ssize_t k) {
    if (low < 0) low = 0;
    for (Py_ssize_t top = hi - n + k; top >= low + k;) { /* where needle[k] may be */
        const char *c = memrchr(b + low + k, needle[k], (size_t)(top - (low + k) + 1));
        if (c == NULL) return -1;
        Py_ssize_t j = c - b - k; /* (its ends first: most candidates fail there) */
        if (b[j] == needle[0] && b[j + n - 1] == needle[n - 1]
                && memcmp(b + j, needle, (size_t)n) == 0)
            return j;
        top = c - b - 1;
    }
    return -1;
}

/* The smallest j where b[j:j+n] is the needle in b[:len], or -1 (bytes.find); k as above. */
static Py_ssize_t find_mem(const char *b, Py_ssize_t len, const char *needle, Py_ssize_t n,
                           Py_ssize_t k) {
    for (Py_ssize_t at = k; at <= len - n + k;) {
        const char *c = memchr(b + at, needle[k], (size_t)(len - n + k - at + 1));
        if (c == NULL) return -1;
        Py_ssize_t j = c - b - k;
        if (b[j] == needle[0] && b[j + n - 1] == needle[n - 1]
                && memcmp(b + j, needle, (size_t)n) == 0)
            return j;
        at = c - b + 1;
    }
    return -1;
}

/* firsts[needle], the position of the block's first call line of the probe (b.find(needle),
 * found once and kept in `firsts`, a pure cache): 0 and *first, or -1 on an error. */
static int first_of(PyObject *firsts, PyObject *needle, const char *b, Py_ssize_t len,
                    Py_ssize_t *first) {
    PyObject *f = PyDict_GetItemWithError(firsts, needle);
    if (f != NULL) {
        *first = PyLong_AsSsize_t(f);
        return *first == -1 && PyErr_Occurred() ? -1 : 0;
    }
    if (PyErr_Occurred()) return -1;
    const char *nd = PyBytes_AS_STRING(needle);
    Py_ssize_t n = PyBytes_GET_SIZE(needle);
    *first = n > 0 ? find_mem(b, len, nd, n, rarest(nd, n)) : 0;
    PyObject *v = PyLong_FromSsize_t(*first);
    if (v == NULL) return -1;
    int r = PyDict_SetItem(firsts, needle, v);
    Py_DECREF(v);
    return r;
}

/* ftrace._call_before's search in one block (b[:lim], the block's first call lines of the
 * probes in `firsts`, a dict): 1 and *t0 (a new reference, or NULL: the line's time is no
 * number) when a call line of thread `tid` is found, 0 when there is none, 2 when a line it
 * looks at is not for this function (a task column not in the thread cache: the loop gives it
 * a thread id), -1 on an error. Nothing but `firsts` (a pure cache) is changed. As there, the
 * call is looked for in growing windows before `lim` until the first call line is known. */
static int call_in(PyObject **st, const char *b, Py_ssize_t len, Py_ssize_t lim,
                   PyObject *firsts, PyObject *needle, Py_ssize_t low, PyObject *tid,
                   PyObject **t0) {
    const char *nd = PyBytes_AS_STRING(needle);
    Py_ssize_t n = PyBytes_GET_SIZE(needle), first = -2, j = -1; /* -2: not looked for */
    Py_ssize_t rk = rarest(nd, n);
    PyObject *f = PyDict_GetItemWithError(firsts, needle);
    if (f == NULL && PyErr_Occurred()) return -1;
    if (f == NULL) { /* ftrace._CALL_NEAR, _CALL_FAR */
        for (Py_ssize_t w = 4 << 10; j < 0 && w < (4 << 20) && lim - w > low; w <<= 4)
            j = rfind_mem(b, lim - w, lim, nd, n, rk);
    }
    if (j < 0) {
        if (first_of(firsts, needle, b, len, &first) < 0) return -1;
        if (low < first) low = first;
        if (first < 0 || low >= lim) return 0;
        j = rfind_mem(b, low, lim, nd, n, rk);
    }
    for (int k = 0; k < 64 && j >= 0; k++) { /* ftrace._CALL_LOOKBACK */
        Py_ssize_t ls = rfind_char(b, j, '\n') + 1, p = j - 1;
        while (p >= ls && b[p] != ' ') p--;
        if (p < ls) return 2; /* no space: the loop's odd case */
        int err = 0;
        PyObject *t = lookup(st[ST_TCACHE], b, ls, p, &err);
        if (t == NULL) return err ? -1 : 2;
        int same = PyObject_RichCompareBool(t, tid, Py_EQ);
        if (same < 0) return -1;
        if (same) {
            *t0 = number(b, p + 1, j);
            return *t0 == NULL && PyErr_Occurred() ? -1 : 1;
        }
        if (first == -2) {
            if (first_of(firsts, needle, b, len, &first) < 0) return -1;
            if (low < first) low = first;
        }
        j = rfind_mem(b, low, ls, nd, n, rk);
    }
    return 0;
}

/* ftrace._scan's branch for the return of another -dev probe (ftrace.OTHER_PROBES), all of
 * it: its call is the latest call line of its thread before it, in this block or (for the
 * thread's first return of the probe here) the block before, searched no further back than
 * the thread's previous return of the probe (ftrace._call_before); then Assembler.activity.
 * 1 when done, 0 when the line is the loop's (nothing changed), -1 on an error. */
static int other_return(Pairing *self, const char *b, Tok *t) {
    PyObject **st = self->state;
    int err = 0, r = 0;
    PyObject *tid = cached(self->threads, st[ST_TCACHE], b, t->ls, t->p, &err);
    if (tid == NULL) return err ? -1 : 0;
    Py_INCREF(tid);
    PyObject *probe = NULL, *needle = NULL, *key = NULL, *marks = NULL, *serial_o = NULL;
    PyObject *firsts = NULL, *prev = NULL, *t0 = NULL;
    const char *q = memchr(b + t->e, ')', t->le - t->e);
    probe = cached(self->probes, st[ST_PCACHE], b, t->s + 2,
                   q != NULL ? q - b + 1 : t->le, &err);
    if (probe == NULL || !PyTuple_Check(probe) || PyTuple_GET_SIZE(probe) != 3) {
        probe = NULL;
        r = err ? -1 : 0;
        goto done;
    }
    Py_INCREF(probe);
    PyObject *func = PyTuple_GET_ITEM(probe, 1);
    r = PySet_Contains(st[ST_OTHER_IDS], func);
    if (r <= 0) goto done; /* (a name the loop reads otherwise, or an error) */
    r = 0;
    /* ": <name>_cal: " from the event name "<name>_ret" */
    Py_ssize_t nlen = t->e - 6 - (t->s + 2);
    if (nlen <= 0 || nlen > MAXNAME) goto done;
    char buf[MAXNAME + 16];
    memcpy(buf, ": ", 2);
    memcpy(buf + 2, b + t->s + 2, nlen);
    memcpy(buf + 2 + nlen, "_cal: ", 6);
    if ((needle = PyBytes_FromStringAndSize(buf, nlen + 8)) == NULL) goto error;
    if ((key = PyTuple_Pack(2, func, tid)) == NULL) goto error;
    if ((marks = inst_attr(st[ST_ASM], A_CALL_MARKS)) == NULL
            || (serial_o = inst_attr(st[ST_ASM], A_BLOCK_SERIAL)) == NULL
            || (firsts = inst_attr(st[ST_ASM], A_CALL_FIRSTS)) == NULL
            || (prev = inst_attr(st[ST_ASM], A_PREV_BLOCK)) == NULL)
        goto error;
    if (!PyDict_Check(marks) || !PyDict_Check(firsts) || !PyTuple_Check(prev)
            || PyTuple_GET_SIZE(prev) != 3 || !PyBytes_Check(PyTuple_GET_ITEM(prev, 0))
            || !PyDict_Check(PyTuple_GET_ITEM(prev, 2)))
        goto done;
    long serial = PyLong_AsLong(serial_o);
    if (serial == -1 && PyErr_Occurred()) goto error;
    PyObject *mark = PyDict_GetItemWithError(marks, key);
    long mserial = 0;
    Py_ssize_t mpos = 0;
    if (mark != NULL) {
        if (!PyTuple_Check(mark) || PyTuple_GET_SIZE(mark) != 2) goto done;
        mserial = PyLong_AsLong(PyTuple_GET_ITEM(mark, 0));
        mpos = PyLong_AsSsize_t(PyTuple_GET_ITEM(mark, 1));
        if ((mserial == -1 || mpos == -1) && PyErr_Occurred()) goto error;
    } else if (PyErr_Occurred()) {
        goto error;
    }
    int found = call_in(st, b, self->view.len, t->s, firsts, needle,
                        mark != NULL && mserial == serial ? mpos : 0, tid, &t0);
    if (found == 0 && (mark == NULL || mserial < serial)) { /* the block before */
        PyObject *pb = PyTuple_GET_ITEM(prev, 0);
        Py_ssize_t plim = PyLong_AsSsize_t(PyTuple_GET_ITEM(prev, 1));
        if (plim == -1 && PyErr_Occurred()) goto error;
        if (plim > PyBytes_GET_SIZE(pb)) plim = PyBytes_GET_SIZE(pb);
        found = call_in(st, PyBytes_AS_STRING(pb), PyBytes_GET_SIZE(pb), plim,
                        PyTuple_GET_ITEM(prev, 2), needle,
                        mark != NULL && mserial == serial - 1 ? mpos : 0, tid, &t0);
    }
    if (found < 0) goto error;
    if (found == 2) goto done;
    /* asm.call_marks[(func, tid)] = (block serial, the return's position) */
    PyObject *pos = PyLong_FromSsize_t(t->s);
    if (pos == NULL) goto error;
    PyObject *v = PyTuple_Pack(2, serial_o, pos);
    Py_DECREF(pos);
    if (v == NULL) goto error;
    r = PyDict_SetItem(marks, key, v);
    Py_DECREF(v);
    if (r < 0) goto error;
    if (t0 != NULL && PyFloat_AS_DOUBLE(t->ts) >= PyFloat_AS_DOUBLE(t0)) {
        PyObject *head; /* Assembler.activity */
        int inside = in_callback(st, tid, t0, Py_GT, &head);
        if (inside < 0 || (!inside && outside(st, t0, t->ts, tid, func) < 0)) goto error;
    }
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(t0);
    Py_XDECREF(prev);
    Py_XDECREF(firsts);
    Py_XDECREF(serial_o);
    Py_XDECREF(marks);
    Py_XDECREF(key);
    Py_XDECREF(needle);
    Py_XDECREF(probe);
    Py_DECREF(tid);
    return r;
}

/* getattr(obj, attrs[a]); a slot (a data descriptor on obj's type, Group's __slots__) read
 * through its descriptor, kept per name while the type and its version tag (changed by any
 * change to the class) stay: what getattr finds first then, without a lookup per call. */
typedef struct {
    PyTypeObject *type;
    PyObject *descr;
    unsigned int tag;
} AttrCache;
static AttrCache attr_cache[A_N];

static int same_type(const AttrCache *c, PyTypeObject *t) {
    return t == c->type && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
           && t->tp_version_tag == c->tag;
}

static void keep(AttrCache *c, PyTypeObject *t, PyObject *d) {
    Py_INCREF(t);
    Py_INCREF(d);
    Py_XDECREF(c->type);
    Py_XDECREF(c->descr);
    c->type = t, c->descr = d, c->tag = t->tp_version_tag;
}

static PyObject *get_attr(PyObject *obj, int a) {
    PyTypeObject *t = Py_TYPE(obj);
    AttrCache *c = &attr_cache[a];
    if (!same_type(c, t)) {
        PyObject *d = t->tp_getattro == PyObject_GenericGetAttr ? _PyType_Lookup(t, attrs[a]) : NULL;
        if (d == NULL || Py_TYPE(d)->tp_descr_get == NULL || Py_TYPE(d)->tp_descr_set == NULL
                || !(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
            return PyObject_GetAttr(obj, attrs[a]);
        keep(c, t, d);
    }
    return Py_TYPE(c->descr)->tp_descr_get(c->descr, obj, (PyObject *)t);
}

/* getattr(obj, attrs[a]) for an attribute that lives in obj's __dict__ (the Assembler's, set
 * in its methods): read from the dict when obj's type has no attribute of that name (so
 * nothing on the type could take precedence: checked again when the type changes), else
 * getattr. A generic getattr was a tenth of a callback start's cost. */
typedef struct {
    PyTypeObject *type; /* not a reference: compared with its version tag */
    unsigned int tag;
} DictAttr;
static DictAttr dict_attr[A_N];

static PyObject *inst_attr(PyObject *obj, int a) {
    PyTypeObject *t = Py_TYPE(obj);
    DictAttr *c = &dict_attr[a];
    if (!(t == c->type && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && t->tp_version_tag == c->tag)) {
        c->type = NULL;
        if (t->tp_getattro != PyObject_GenericGetAttr || t->tp_dictoffset == 0
                || !(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || _PyType_Lookup(t, attrs[a]) != NULL)
            return PyObject_GetAttr(obj, attrs[a]);
        c->type = t, c->tag = t->tp_version_tag;
    }
    PyObject *d = PyObject_GenericGetDict(obj, NULL), *v;
    if (d == NULL) return NULL;
    v = PyDict_Check(d) ? PyDict_GetItemWithError(d, attrs[a]) : NULL;
    Py_XINCREF(v);
    Py_DECREF(d);
    if (v != NULL || PyErr_Occurred()) return v;
    return PyObject_GetAttr(obj, attrs[a]); /* not set: getattr's own error */
}

/* `col.append(x)`: a method of col's type called with col (array.array's, the type kept as
 * get_attr keeps it: no lookup per call) when instances have no __dict__ to shadow it */
static AttrCache append_cache;

static int append_to(PyObject *obj, int a, PyObject *x) {
    PyObject *col = get_attr(obj, a), *r;
    if (col == NULL) return -1;
    PyTypeObject *t = Py_TYPE(col);
    if (!same_type(&append_cache, t)) {
        PyObject *d = t->tp_getattro == PyObject_GenericGetAttr && t->tp_dictoffset == 0
                      ? _PyType_Lookup(t, attrs[A_APPEND]) : NULL;
        if (d != NULL && Py_IS_TYPE(d, &PyMethodDescr_Type)
                && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
            keep(&append_cache, t, d);
        } else {
            r = PyObject_CallMethodOneArg(col, attrs[A_APPEND], x);
            goto out;
        }
    }
    PyObject *argv[2] = {col, x};
    r = PyObject_Vectorcall(append_cache.descr, argv, 2, NULL);
out:
    Py_DECREF(col);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* `col += one` for a column that is an array.array: one a 1-item array of the same type code
 * ('d' or 'l') holding the value (array.append parses its argument with PyArg_Parse's format
 * strings, and frombytes its buffer: those were most of a callback end's cost, BENCHMARKS.md
 * "Session 7"); the array's own in-place concatenation checks that the two arrays' type
 * codes are the same (else TypeError, and the caller appends the object). The same item as
 * col.append(the value). 1 done, 0 when col is something else, -1 on an error. */
static PyObject *one_d, *one_l;   /* array('d', [0.0]), array('l', [0]), made at import */
static Py_buffer one_d_view, one_l_view; /* their items, kept for the module's life */

static int append_bytes(PyObject *col, const void *v, char code) {
    PyObject *one = code == 'd' ? one_d : one_l;
    if (!Py_IS_TYPE(col, Py_TYPE(one))) return 0;
    memcpy((code == 'd' ? one_d_view : one_l_view).buf, v, 8);
    PyObject *r = Py_TYPE(col)->tp_as_sequence->sq_inplace_concat(col, one);
    if (r == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear(); /* another type code */
        return 0;
    }
    Py_DECREF(r);
    return 1;
}

/* one_d and one_l, and their buffers (0, or -1 with an error) */
static int make_ones(void) {
    if (one_d != NULL) return 0;
    PyObject *mod = PyImport_ImportModule("array"), *d = NULL, *l = NULL;
    if (mod == NULL) return -1;
    d = PyObject_CallMethod(mod, "array", "s[d]", "d", 0.0);
    l = d == NULL ? NULL : PyObject_CallMethod(mod, "array", "s[i]", "l", 0);
    Py_DECREF(mod);
    if (l == NULL || Py_TYPE(d)->tp_as_sequence == NULL
            || Py_TYPE(d)->tp_as_sequence->sq_inplace_concat == NULL
            || PyObject_GetBuffer(d, &one_d_view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        Py_XDECREF(d);
        Py_XDECREF(l);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "array.array: no +=");
        return -1;
    }
    if (PyObject_GetBuffer(l, &one_l_view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&one_d_view);
        Py_DECREF(d);
        Py_DECREF(l);
        return -1;
    }
    if (one_d_view.len != 8 || one_l_view.len != 8) { /* a C long of 4 bytes: no fast path */
        PyBuffer_Release(&one_d_view);
        PyBuffer_Release(&one_l_view);
        Py_DECREF(d);
        Py_DECREF(l);
        one_d = one_l = NULL;
        return 1;
    }
    one_d = d, one_l = l;
    return 0;
}

/* group.<column a>.append(x): *v is x's value as a C double (code 'd') or long ('l'), or
 * `fits` is 0 (x is no such value: x itself is appended); x NULL: made from *v if needed */
static int put(PyObject *group, int a, PyObject *x, const void *v, char code, int fits) {
    if (fits && one_d != NULL) {
        PyObject *col = get_attr(group, a);
        if (col == NULL) return -1;
        int r = append_bytes(col, v, code);
        Py_DECREF(col);
        if (r != 0) return r < 0 ? -1 : 0;
    }
    if (x != NULL) return append_to(group, a, x);
    x = code == 'd' ? PyFloat_FromDouble(*(const double *)v) : PyLong_FromLong(*(const long *)v);
    if (x == NULL) return -1;
    int r = append_to(group, a, x);
    Py_DECREF(x);
    return r;
}

/* a C long of int x: 1, or 0 (not an int, or too large; no error left set) */
static int as_long(PyObject *x, long *v) {
    if (!PyLong_Check(x)) return 0;
    *v = PyLong_AsLong(x);
    if (*v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* ftrace._scan's callback start, its inlined common case: the payload's (key, group, phase)
 * in the Assembler's stage cache, the task column's thread in the thread cache, the phase
 * going on and no start of the key left open: pending[key] = (ts, group, phase, cycle,
 * thread), open_on_thread[thread] = key. 1 when done, 0 when the line is the loop's. */
static int callback_start(Pairing *self, const char *b, Tok *t) {
    PyObject **st = self->state;
    Py_ssize_t a = t->s + 28; /* after ": device_pm_callback_start: " */
    if (t->le < a) return 0;
    PyObject *cache = inst_attr(st[ST_ASM], A_STAGE_CACHE);
    if (cache == NULL) return -1;
    int err = 0, r = 0;
    PyObject *hit = PyDict_Check(cache) ? lookup(cache, b, a, t->le, &err) : NULL;
    Py_XINCREF(hit);
    Py_DECREF(cache);
    if (hit == NULL) return err ? -1 : 0;
    PyObject *tid = NULL, *last = NULL, *cycle = NULL;
    if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 3) goto done; /* False: skipped */
    tid = cached(self->threads, st[ST_TCACHE], b, t->ls, t->p, &err);
    if (tid == NULL) {
        r = err ? -1 : 0;
        goto done;
    }
    Py_INCREF(tid);
    PyObject *key = PyTuple_GET_ITEM(hit, 0), *phase = PyTuple_GET_ITEM(hit, 2);
    if ((last = inst_attr(st[ST_ASM], A_LAST_PHASE)) == NULL) goto error;
    if (last != phase) goto done; /* "phase is not asm._last_phase": Assembler.begin */
    r = PyDict_Contains(st[ST_PENDING], key);
    if (r != 0) { /* a start left open: Assembler.begin counts it (or an error) */
        r = r < 0 ? -1 : 0;
        goto done;
    }
    if ((cycle = inst_attr(st[ST_ASM], A_LAST_CYCLE)) == NULL) goto error;
    PyObject *v = PyTuple_Pack(5, t->ts, PyTuple_GET_ITEM(hit, 1), phase, cycle, tid);
    if (v == NULL) goto error;
    r = PyDict_SetItem(st[ST_PENDING], key, v);
    Py_DECREF(v);
    if (r < 0 || PyDict_SetItem(st[ST_ON_THREAD], tid, key) < 0) goto error;
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(cycle);
    Py_XDECREF(last);
    Py_XDECREF(tid);
    Py_DECREF(hit);
    return r;
}

/* ftrace._scan's callback end, its inlined common case: the start open under the end's own
 * payload ("<driver> <device>, err=0"), its phase inside its dpm_* marker, not ending before
 * it started, no delays summed into it: popped, and the sample appended to its group's
 * columns. 1 when done, 0 when the line is the loop's (which pops it itself). */
static int callback_end(Pairing *self, const char *b, Tok *t) {
    PyObject **st = self->state;
    Py_ssize_t a = t->s + 26; /* after ": device_pm_callback_end: " */
    if (t->le < a) return 0;
    PyObject *pl = PyBytes_FromStringAndSize(b + a, t->le - a);
    if (pl == NULL) return -1;
    int r = 0;
    PyObject *x = NULL, *p = PyDict_GetItemWithError(st[ST_PENDING], pl);
    if (p == NULL) {
        Py_DECREF(pl);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(p);
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 5 || !PyFloat_Check(PyTuple_GET_ITEM(p, 0))
            || !PyLong_Check(PyTuple_GET_ITEM(p, 3)))
        goto done;
    r = PySet_Contains(st[ST_OPEN_MEMBERS], PyTuple_GET_ITEM(p, 2));
    if (r <= 0) /* outside its marker: Assembler.end_popped (or an error) */
        goto done;
    r = 0;
    double ts = PyFloat_AS_DOUBLE(t->ts), t0 = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(p, 0));
    if (ts < t0) goto done;
    if (PyDict_GET_SIZE(st[ST_DELAY_ACC]) > 0) { /* delays measured in it */
        r = PyDict_Contains(st[ST_DELAY_ACC], pl);
        if (r != 0) {
            r = r < 0 ? -1 : 0;
            goto done;
        }
    }
    if (PyDict_DelItem(st[ST_PENDING], pl) < 0) goto error;
    PyObject *group = PyTuple_GET_ITEM(p, 1), *cycle = PyTuple_GET_ITEM(p, 3);
    long c = PyLong_AsLong(cycle);
    if (c == -1 && PyErr_Occurred()) goto error;
    /* the five columns: group.threads.append(thread), durations, starts, cycles, files */
    long thread, base, file, cyc = 0;
    PyObject *tid = PyTuple_GET_ITEM(p, 4);
    double dur = (ts - t0) * 1e6;
    if (put(group, A_THREADS, tid, &thread, 'l', as_long(tid, &thread)) < 0) goto error;
    if (put(group, A_DURATIONS, NULL, &dur, 'd', 1) < 0) goto error;
    if (put(group, A_STARTS, PyTuple_GET_ITEM(p, 0), &t0, 'd', 1) < 0) goto error;
    int fits = as_long(st[ST_CYCLE_BASE], &base) && !__builtin_add_overflow(base, c, &cyc);
    if (!fits && (x = PyNumber_Add(st[ST_CYCLE_BASE], cycle)) == NULL) goto error;
    if (put(group, A_CYCLES, x, &cyc, 'l', fits) < 0) goto error;
    Py_CLEAR(x);
    if (put(group, A_FILES, st[ST_FILE_ID], &file, 'l', as_long(st[ST_FILE_ID], &file)) < 0)
        goto error;
    self->samples++;
    if (c > self->max_cycle) self->max_cycle = c;
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(x);
    Py_DECREF(p);
    Py_DECREF(pl);
    return r;
}

/* [samples, max cycle] of the ends done here, into the state's list (once the block is done) */
static int write_counts(Pairing *self) {
    PyObject *n = PyLong_FromSsize_t(self->samples), *m = PyLong_FromLong(self->max_cycle);
    int r = n == NULL || m == NULL ? -1 : 0;
    if (r == 0) {
        r = PyList_SetItem(self->state[ST_COUNTED], 0, n);
        n = NULL;
        if (r == 0) r = PyList_SetItem(self->state[ST_COUNTED], 1, m);
        m = NULL;
    }
    Py_XDECREF(n);
    Py_XDECREF(m);
    return r;
}

/* Collector.skip_many(lost_call, n) for the lost calls since the last token handed on: before
 * the next one is (the loop's own skips then come after them, as line by line) */
static int flush_lost(Pairing *self) {
    if (self->lost == 0) return 0;
    PyObject *n = PyLong_FromSsize_t(self->lost), *r;
    if (n == NULL) return -1;
    self->lost = 0;
    PyObject *argv[2] = {lost_call, n};
    r = PyObject_Vectorcall(self->state[ST_SKIP], argv, 2, NULL);
    Py_DECREF(n);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *pairing_next(Pairing *self) {
    if (!self->has_view) return NULL;
    const char *b = self->view.buf;
    Tok t;
    int r;
    while ((r = next_tok(b, self->view.len, self->limit, &self->at, &t)) > 0) {
        if (t.kind >= KIND_DELAY) {
            int done = line_ok(self, &t);
            if (done > 0)
                done = t.kind == KIND_DELAY ? pairing_step(self, b, &t)
                       : t.kind == KIND_START ? callback_start(self, b, &t)
                       : t.kind == KIND_END ? callback_end(self, b, &t)
                       : other_return(self, b, &t);
            if (done != 0) {
                Py_DECREF(t.ts);
                if (done < 0) return NULL;
                continue;
            }
        }
        if (flush_lost(self) < 0) {
            Py_DECREF(t.ts);
            return NULL;
        }
        return tok_tuple(&t);
    }
    if (r == 0 && flush_lost(self) < 0) return NULL;
    if (r == 0) { /* the end: the counts written, the block let go at once */
        PyBuffer_Release(&self->view);
        self->has_view = 0;
        write_counts(self);
    }
    return NULL;
}

static PyTypeObject PairingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_ftrace_tokens.Pairing",
    .tp_basicsize = sizeof(Pairing),
    .tp_dealloc = (destructor)pairing_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "pairing(buf, limit, stamps, state): the tokens left once the delays are paired",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)pairing_next,
};

static PyObject *pairing(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *stamps, *state;
    Py_ssize_t limit;
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    Pairing *it = PyObject_New(Pairing, &PairingType);
    if (it == NULL) return NULL;
    it->has_view = 0;
    it->stamps = NULL;
    memset(it->threads, 0, sizeof it->threads); /* before anything can fail: dealloc reads them */
    memset(it->probes, 0, sizeof it->probes);
    for (int k = 0; k < ST_N; k++) it->state[k] = NULL;
    if (!PyArg_ParseTuple(args, "y*nO!O!", &it->view, &limit, &PyList_Type, &stamps,
                          &PyTuple_Type, &state)) {
        Py_DECREF(it);
        return NULL;
    }
    it->has_view = 1;
    if (PyTuple_GET_SIZE(state) != ST_N) {
        PyErr_SetString(PyExc_ValueError, "state: (thread cache, probe cache, not-delay ids, "
                        "open delays, threads in a delay, delay, open callback per thread, "
                        "open callbacks, delays per callback, activity_outside, assembler, "
                        "open phases, cycle base, file id, [samples, max cycle], "
                        "other probes' ids, cycle tracker, delays outside callbacks, "
                        "activity spans, skip)");
        Py_DECREF(it);
        return NULL;
    }
    for (int k = 0; k < ST_N; k++) {
        PyObject *x = PyTuple_GET_ITEM(state, k);
        int ok = k == ST_OPEN ? Py_IS_TYPE(x, &OpenDelaysType)
                 : k <= ST_PCACHE || k == ST_ON_THREAD || k == ST_PENDING
                 || k == ST_DELAY_ACC || k == ST_OUTSIDE_ACC || k == ST_SPANS ? PyDict_Check(x)
                 : k == ST_NOT_DELAY || k == ST_OPEN_MEMBERS || k == ST_OTHER_IDS
                   ? PyAnySet_Check(x)
                 : k == ST_IN_DELAY ? Py_IS_TYPE(x, &ThreadSetType)
                 : k == ST_ASM || k == ST_CYCLES ? 1
                 : k == ST_CYCLE_BASE || k == ST_FILE_ID ? PyLong_Check(x)
                 : k == ST_COUNTED ? PyList_Check(x) && PyList_GET_SIZE(x) == 2
                 : PyCallable_Check(x);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "state[%d] has the wrong type", k);
            Py_DECREF(it);
            return NULL;
        }
        Py_INCREF(x);
        it->state[k] = x;
    }
    /* the not-delay ids as bits */
    memset(it->not_delay, 0, sizeof it->not_delay);
    it->not_delay_set = 0;
    PyObject *ids = PyObject_GetIter(it->state[ST_NOT_DELAY]), *id;
    if (ids == NULL) {
        Py_DECREF(it);
        return NULL;
    }
    while ((id = PyIter_Next(ids)) != NULL) {
        long v = PyLong_Check(id) ? PyLong_AsLong(id) : -1;
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
        if (v < 0 || v >= NOT_DELAY_BITS) it->not_delay_set = 1;
        else it->not_delay[v >> 3] |= (unsigned char)(1u << (v & 7));
        Py_DECREF(id);
    }
    Py_DECREF(ids);
    if (PyErr_Occurred()) {
        Py_DECREF(it);
        return NULL;
    }
    Py_INCREF(stamps);
    it->stamps = stamps;
    it->stamp = 0;
    it->at = 0;
    it->samples = 0;
    it->lost = 0;
    it->max_cycle = -1;
    if (limit > it->view.len) limit = it->view.len;
    it->limit = limit < 0 ? 0 : limit;
    return (PyObject *)it;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(names[, delays]): the event names matched as '<name>: ', and which of them "
     "pairing() pairs"},
    {"tokens", tokens, METH_VARARGS, "tokens(buf, limit) -> [(s, e, le, p, ls, ts)]"},
    {"pairing", pairing, METH_VARARGS,
     "pairing(buf, limit, stamps, state) -> iterator of the tokens the pairing leaves"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_ftrace_tokens",
    .m_doc = "The ftrace reader's event scan in C.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__ftrace_tokens(void) {
    for (int a = 0; a < A_N; a++)
        if (attrs[a] == NULL && (attrs[a] = PyUnicode_InternFromString(attr_names[a])) == NULL)
            return NULL;
    if (lost_call == NULL
            && (lost_call = PyUnicode_InternFromString("delay kprobe call without its return"))
               == NULL)
        return NULL;
    init_rarity();
    init_word_bytes();
    if (make_ones() < 0) return NULL;
    if (PyType_Ready(&PairingType) < 0 || PyType_Ready(&OpenDelaysType) < 0
            || PyType_Ready(&ThreadSetType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&OpenDelaysType);
    if (PyModule_AddObject(m, "OpenDelays", (PyObject *)&OpenDelaysType) < 0) {
        Py_DECREF(&OpenDelaysType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ThreadSetType);
    if (PyModule_AddObject(m, "ThreadSet", (PyObject *)&ThreadSetType) < 0) {
        Py_DECREF(&ThreadSetType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
