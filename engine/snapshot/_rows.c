/* C helpers of the snapshot diff (engine/snapshot/_lines.py), an optional build.

   Telling which rows of a 1.3-million-row snapshot changed costs, in Python, one bytes
   object per row (bytes.split) and one hash call per row: ~0.45 s per 241 MB, more than
   half of what inflating the body costs, which leaves no room under the 2x-inflate target
   of issue 20. Here each line is hashed where it lies in the inflated piece: one memchr
   and one hash of its bytes, no object per row. The hash is CPython's hash of bytes (the
   same function and per-process key as hash(b"...")), so hashes made here and by the
   pure-Python path, which the engine uses when this module is not built, are equal. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static Py_hash_t
hash_bytes(const char *data, Py_ssize_t len)
{
#if PY_VERSION_HEX >= 0x030E0000
    return Py_HashBuffer(data, len);
#else
    return _Py_HashBytes(data, len);
#endif
}

PyDoc_STRVAR(line_hashes_doc,
"line_hashes(text, /) -> (hashes, ends, blanks)\n\n"
"For each line of text that ends with a line break: hash(line) and the index of its\n"
"line break, packed as native int64 (array('q').frombytes), and how many lines were\n"
"empty (hashed as hash(b'')).");

static PyObject *
line_hashes(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const char *buf = view.buf;
    const char *stop = buf + view.len;
    Py_ssize_t lines = 0;
    for (const char *p = buf; (p = memchr(p, '\n', stop - p)) != NULL; p++) {
        lines++;
    }
    PyObject *hashes = PyBytes_FromStringAndSize(NULL, lines * 8);
    PyObject *ends = PyBytes_FromStringAndSize(NULL, lines * 8);
    if (hashes == NULL || ends == NULL) {
        Py_XDECREF(hashes);
        Py_XDECREF(ends);
        PyBuffer_Release(&view);
        return NULL;
    }
    int64_t *h = (int64_t *)PyBytes_AS_STRING(hashes);
    int64_t *e = (int64_t *)PyBytes_AS_STRING(ends);
    Py_ssize_t blanks = 0;
    const char *p = buf;
    for (Py_ssize_t i = 0; i < lines; i++) {
        const char *end = memchr(p, '\n', stop - p);
        Py_ssize_t len = end - p;
        blanks += len == 0;
        h[i] = (int64_t)hash_bytes(p, len);
        e[i] = (int64_t)(end - buf);
        p = end + 1;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NNn)", hashes, ends, blanks);
}

PyDoc_STRVAR(common_run_doc,
"common_run(old, at, new, j, /) -> int\n\n"
"How many int64 items are equal from old[at] and new[j] on (two array('q')).");

static PyObject *
common_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "common_run takes 4 arguments");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[1]);
    Py_ssize_t j = PyLong_AsSsize_t(args[3]);
    if ((at == -1 || j == -1) && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer old, new;
    if (PyObject_GetBuffer(args[0], &old, PyBUF_FORMAT) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &new, PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&old);
        return NULL;
    }
    Py_ssize_t same = 0;
    if (old.itemsize != 8 || new.itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "common_run compares arrays of int64");
        same = -1;
    }
    else if (at >= 0 && j >= 0) {
        const int64_t *a = (const int64_t *)old.buf + at;
        const int64_t *b = (const int64_t *)new.buf + j;
        Py_ssize_t limit = Py_MIN(old.len / 8 - at, new.len / 8 - j);
        while (same < limit && a[same] == b[same]) {
            same++;
        }
    }
    PyBuffer_Release(&old);
    PyBuffer_Release(&new);
    return same < 0 ? NULL : PyLong_FromSsize_t(same);
}

static PyMethodDef methods[] = {
    {"line_hashes", (PyCFunction)line_hashes, METH_O, line_hashes_doc},
    {"common_run", (PyCFunction)(void (*)(void))common_run, METH_FASTCALL, common_run_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.snapshot._rows", "C helpers of the snapshot diff.", 0,
    methods,
};

PyMODINIT_FUNC
PyInit__rows(void)
{
    return PyModule_Create(&module);
}
