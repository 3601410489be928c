/* The report's JSON text in C: json_text._encode (the Python code, the reference) writes
 * `json.dumps(obj, indent=2, allow_nan=False)` with non-finite floats as null; this writes
 * the same bytes in one call, without a Python string per value.
 *
 * dumps(obj) -> str, or None when obj holds anything else than exact str, int, float, bool,
 * None, list, tuple and dict with str keys (the caller then leaves it to jsonsafe.dumps, as
 * the Python code does). Strings are escaped as json.encoder.encode_basestring_ascii does,
 * floats written as float.__repr__, ints as int.__repr__ (its digit limit's ValueError
 * propagates, as in Python). Nesting past the interpreter's recursion limit raises
 * RecursionError (the caller falls back then too).
 * Built by `make` (server/tools/build_ftrace_tokens.py); optional. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

static int grow(Out *o, Py_ssize_t more) {
    if (o->len + more <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = b, o->cap = cap;
    return 0;
}

static int put(Out *o, const char *s, Py_ssize_t n) {
    if (grow(o, n) < 0) return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

/* a newline and `depth` levels of two spaces */
static int newline(Out *o, int depth) {
    Py_ssize_t n = 1 + 2 * (Py_ssize_t)depth;
    if (grow(o, n) < 0) return -1;
    o->buf[o->len] = '\n';
    memset(o->buf + o->len + 1, ' ', (size_t)(n - 1));
    o->len += n;
    return 0;
}

static const char hexdigits[] = "0123456789abcdef";

static void escape_unit(Out *o, Py_UCS4 c) { /* room for 6 bytes reserved by the caller */
    char *p = o->buf + o->len;
    *p++ = '\\';
    switch (c) {
    case '\\': *p++ = '\\'; break;
    case '"': *p++ = '"'; break;
    case '\b': *p++ = 'b'; break;
    case '\f': *p++ = 'f'; break;
    case '\n': *p++ = 'n'; break;
    case '\r': *p++ = 'r'; break;
    case '\t': *p++ = 't'; break;
    default:
        *p++ = 'u';
        *p++ = hexdigits[(c >> 12) & 0xf];
        *p++ = hexdigits[(c >> 8) & 0xf];
        *p++ = hexdigits[(c >> 4) & 0xf];
        *p++ = hexdigits[c & 0xf];
    }
    o->len = p - o->buf;
}

/* encode_basestring_ascii(s): printable ASCII but '"' and '\\' as they are, the rest
 * escaped (\uXXXX, a surrogate pair above the BMP) */
static int put_str(Out *o, PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    /* at most 12 bytes a character, and the quotes */
    if (n > (PY_SSIZE_T_MAX - 2) / 12 || grow(o, 12 * n + 2) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    o->buf[o->len++] = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= ' ' && c <= '~' && c != '\\' && c != '"') {
            o->buf[o->len++] = (char)c;
        } else if (c >= 0x10000) {
            escape_unit(o, 0xD800 | ((c - 0x10000) >> 10));
            escape_unit(o, 0xDC00 | ((c - 0x10000) & 0x3ff));
        } else {
            escape_unit(o, c);
        }
    }
    o->buf[o->len++] = '"';
    return 0;
}

static int put_float(Out *o, double v) {
    if (!isfinite(v)) return put(o, "null", 4);
    char *r = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL); /* float.__repr__ */
    if (r == NULL) return -1;
    int rc = put(o, r, (Py_ssize_t)strlen(r));
    PyMem_Free(r);
    return rc;
}

static int put_int(Out *o, PyObject *v) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (!overflow) {
        char tmp[32];
        int n = snprintf(tmp, sizeof tmp, "%lld", x);
        return put(o, tmp, n);
    }
    PyObject *r = PyObject_Repr(v); /* int.__repr__: exact ints only come here */
    if (r == NULL) return -1;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(r, &n);
    int rc = s == NULL ? -1 : put(o, s, n);
    Py_DECREF(r);
    return rc;
}

/* 1 written, 0 not a scalar this writes, -1 an error */
static int put_scalar(Out *o, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type) return put_str(o, v) < 0 ? -1 : 1;
    if (t == &PyFloat_Type) return put_float(o, PyFloat_AS_DOUBLE(v)) < 0 ? -1 : 1;
    if (t == &PyLong_Type) return put_int(o, v) < 0 ? -1 : 1;
    if (v == Py_None) return put(o, "null", 4) < 0 ? -1 : 1;
    if (v == Py_True) return put(o, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False) return put(o, "false", 5) < 0 ? -1 : 1;
    return 0;
}

/* 1 written, 0 something it does not write (the output is then dropped), -1 an error */
static int encode(Out *o, PyObject *v, int depth) {
    int rc = put_scalar(o, v);
    if (rc != 0) return rc;
    PyTypeObject *t = Py_TYPE(v);
    if (t != &PyDict_Type && t != &PyList_Type && t != &PyTuple_Type) return 0;
    if (Py_EnterRecursiveCall(" while encoding a JSON object")) return -1;
    rc = 1;
    if (t == &PyDict_Type) {
        if (PyDict_GET_SIZE(v) == 0) {
            rc = put(o, "{}", 2) < 0 ? -1 : 1;
            goto out;
        }
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *val;
        while (PyDict_Next(v, &pos, &key, &val)) {
            if (Py_TYPE(key) != &PyUnicode_Type) {
                rc = 0;
                goto out;
            }
            int r = (put(o, i++ ? "," : "{", 1) < 0 || newline(o, depth + 1) < 0
                     || put_str(o, key) < 0 || put(o, ": ", 2) < 0) ? -1 : encode(o, val, depth + 1);
            if (r <= 0) {
                rc = r;
                goto out;
            }
        }
        rc = (newline(o, depth) < 0 || put(o, "}", 1) < 0) ? -1 : 1;
    } else {
        /* only exact builtin types are written: no Python code runs to change them */
        Py_ssize_t n = t == &PyList_Type ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
        PyObject **items = t == &PyList_Type ? ((PyListObject *)v)->ob_item
                                             : ((PyTupleObject *)v)->ob_item;
        if (n == 0) {
            rc = put(o, "[]", 2) < 0 ? -1 : 1;
            goto out;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = (put(o, i ? "," : "[", 1) < 0 || newline(o, depth + 1) < 0)
                        ? -1 : encode(o, items[i], depth + 1);
            if (r <= 0) {
                rc = r;
                goto out;
            }
        }
        rc = (newline(o, depth) < 0 || put(o, "]", 1) < 0) ? -1 : 1;
    }
out:
    Py_LeaveRecursiveCall();
    return rc;
}

static PyObject *dumps(PyObject *self, PyObject *obj) {
    (void)self;
    Out o = {NULL, 0, 0};
    int rc = encode(&o, obj, 0);
    PyObject *res = NULL;
    if (rc > 0) {
        /* every byte is ASCII: a compact ASCII str copied in one piece */
        res = PyUnicode_New(o.len, 127);
        if (res != NULL) memcpy(PyUnicode_DATA(res), o.buf, (size_t)o.len);
    } else if (rc == 0) {
        res = Py_NewRef(Py_None);
    }
    PyMem_Free(o.buf);
    return res;
}

static PyMethodDef methods[] = {
    {"dumps", dumps, METH_O,
     "dumps(obj) -> the indent=2 JSON text (json_text.dumps), or None for values it leaves "
     "to the standard library"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_json_text", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__json_text(void) { return PyModule_Create(&module); }
