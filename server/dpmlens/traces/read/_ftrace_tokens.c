/* The ftrace reader's event scan in C (traces/read/ftrace_tokens.py is the same in Python and
 * the reference; tests/test_ftrace_tokens.py holds them equal on the real captures).
 *
 * tokens(buf, limit) finds what ftrace._EVENT.finditer(buf, 0, limit) finds (every name
 * after ": " that the reader reads) and, per match, the positions and the timestamp the
 * reader's loop needs: a list of (s, e, le, p, ls, ts) tuples, see ftrace_tokens.py.
 *
 * configure(plain, sched) sets the event names: `plain` the names matched as "<name>: "
 * (kprobes with their _cal/_ret, rpm_*, funcgraph_*, sched_*), the other four forms are
 * fixed here. Built by `make` (server/tools/build_ftrace_tokens.py); optional. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define SLOTS 1024 /* open addressing; a few hundred names */
#define MAXNAME 64

static char names[SLOTS][MAXNAME];
static unsigned char lens[SLOTS];
static int configured;

static unsigned hash(const char *s, Py_ssize_t n) {
    unsigned h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int known(const char *s, Py_ssize_t n) {
    if (n <= 0 || n >= MAXNAME) return 0;
    unsigned i = hash(s, n) & (SLOTS - 1);
    while (lens[i]) {
        if (lens[i] == n && memcmp(names[i], s, n) == 0) return 1;
        i = (i + 1) & (SLOTS - 1);
    }
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *it = PyObject_GetIter(arg), *item;
    int count = 0;
    if (it == NULL) return NULL;
    memset(lens, 0, sizeof lens);
    while ((item = PyIter_Next(it)) != NULL) {
        char *s;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(item, &s, &n) < 0 || n <= 0 || n >= MAXNAME
                || ++count > SLOTS / 2) {
            Py_DECREF(item);
            Py_DECREF(it);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad event name list");
            return NULL;
        }
        unsigned i = hash(s, n) & (SLOTS - 1);
        while (lens[i] && !(lens[i] == n && memcmp(names[i], s, n) == 0))
            i = (i + 1) & (SLOTS - 1);
        memcpy(names[i], s, n);
        lens[i] = (unsigned char)n;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    configured = 1;
    Py_RETURN_NONE;
}

static int is_word(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int lit(const char *b, Py_ssize_t at, Py_ssize_t limit, const char *w) {
    Py_ssize_t n = (Py_ssize_t)strlen(w);
    return at + n <= limit && memcmp(b + at, w, n) == 0;
}

/* The end of a match whose ": " is at i, or -1 (the alternatives of ftrace._EVENT). */
static Py_ssize_t match_at(const char *b, Py_ssize_t i, Py_ssize_t limit) {
    Py_ssize_t j = i + 2, k = j;
    while (k < limit && is_word((unsigned char)b[k])) k++;
    Py_ssize_t n = k - j;
    if (k + 1 > limit || b[k] != ':') return -1;
    const char *w = b + j;
    if (n == 14 && memcmp(w, "suspend_resume", 14) == 0) { /* ": +" */
        Py_ssize_t e = k + 1;
        while (e < limit && b[e] == ' ') e++;
        return e > k + 1 ? e : -1;
    }
    if (k + 2 > limit || b[k + 1] != ' ') return -1;
    if ((n == 24 && memcmp(w, "device_pm_callback_start", 24) == 0)
            || (n == 22 && memcmp(w, "device_pm_callback_end", 22) == 0)) {
        const char *nl = memchr(b + k + 2, '\n', limit - (k + 2));
        return nl ? nl - b : limit; /* [^\n]* */
    }
    if (n == 18 && memcmp(w, "tracing_mark_write", 18) == 0) {
        if (lit(b, k + 2, limit, "SUSPEND START")) return k + 15;
        if (lit(b, k + 2, limit, "RESUME COMPLETE")) return k + 17;
        return -1;
    }
    return known(w, n) ? k + 2 : -1;
}

/* float(buf[a:z]) as Python reads it, or NULL with no error set when it is not a number. */
static PyObject *number(const char *b, Py_ssize_t a, Py_ssize_t z) {
    char tmp[64];
    Py_ssize_t n = z - a;
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
            double v = PyOS_string_to_double(tmp, &end, NULL);
            if (v == -1.0 && PyErr_Occurred()) return NULL;
            if (end == tmp + n) return PyFloat_FromDouble(v);
        }
    }
    /* anything else (spaces, underscores, nan, a sign, garbage): float() itself */
    PyObject *raw = PyBytes_FromStringAndSize(b + a, n > 0 ? n : 0);
    if (raw == NULL) return NULL;
    PyObject *v = PyFloat_FromString(raw);
    Py_DECREF(raw);
    if (v == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) PyErr_Clear();
    return v;
}

static Py_ssize_t rfind_char(const char *b, Py_ssize_t end, char c) {
    for (Py_ssize_t i = end - 1; i >= 0; i--)
        if (b[i] == c) return i;
    return -1;
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
    Py_ssize_t len = view.len;
    if (limit > len) limit = len;
    if (limit < 0) limit = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    Py_ssize_t i = 0;
    while (i + 1 < limit) {
        const char *c = memchr(b + i, ':', limit - 1 - i);
        if (c == NULL) break;
        i = c - b;
        Py_ssize_t e = b[i + 1] == ' ' ? match_at(b, i, limit) : -1;
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
            if (ts == NULL && PyErr_Occurred()) goto fail;
            /* buf.rfind(b"\n", 0, p) with Python's meaning of a negative p */
            Py_ssize_t end = p >= 0 ? p : (len + p > 0 ? len + p : 0);
            ls = rfind_char(b, end, '\n') + 1;
        }
        if (ts == NULL) {
            ts = Py_None;
            Py_INCREF(ts);
        }
        PyObject *t = PyTuple_New(6);
        if (t == NULL) {
            Py_DECREF(ts);
            goto fail;
        }
        PyTuple_SET_ITEM(t, 5, ts);
        Py_ssize_t v[5] = {s, e, le, p, ls};
        for (int f = 0; f < 5; f++) {
            PyObject *x = PyLong_FromSsize_t(v[f]);
            if (x == NULL) {
                Py_DECREF(t);
                goto fail;
            }
            PyTuple_SET_ITEM(t, f, x);
        }
        if (PyList_Append(out, t) < 0) {
            Py_DECREF(t);
            goto fail;
        }
        Py_DECREF(t);
        i = e;
    }
    PyBuffer_Release(&view);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "configure(names): the event names matched as '<name>: '"},
    {"tokens", tokens, METH_VARARGS, "tokens(buf, limit) -> [(s, e, le, p, ls, ts)]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_ftrace_tokens",
    .m_doc = "The ftrace reader's event scan in C.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__ftrace_tokens(void) { return PyModule_Create(&module); }
