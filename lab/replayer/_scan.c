/* The mention tokenizer's token set, in C: what lab/replayer/mentions.py's _words_py computes in Python.

   A token is a run of token characters (Unicode word characters, as the re module's \w, and ~ . @ + / -)
   stripped of the joins (. @ + / -) it starts or ends with; a token holding . or / also yields the pieces
   between them. This is TOKEN = [\w~](?:[\w.~@+/-]*[\w~])? of lab/core/names_index.py, found in one pass
   over the text, each token created once: the Python version splits, strips and splits again, creating
   every token several times, and a recall index tokenizes every response of a transcript.

   mentions.py uses this module when it was built and falls back to the Python rule otherwise; the tests
   check the two give the same set on any text. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

static int
is_join(Py_UCS4 c)
{
    return c == '.' || c == '@' || c == '+' || c == '/' || c == '-';
}

static int
is_word(Py_UCS4 c)
{
    if (c < 128) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }
    /* The re module's \w for str patterns: str.isalnum() or the underscore. */
    return Py_UNICODE_ISALNUM(c);
}

static int
in_run(Py_UCS4 c)
{
    return is_word(c) || c == '~' || is_join(c);
}

static int
add_slice(PyObject *out, PyObject *text, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *piece = PyUnicode_Substring(text, start, end);
    if (piece == NULL) {
        return -1;
    }
    int failed = PySet_Add(out, piece);
    Py_DECREF(piece);
    return failed;
}

static PyObject *
token_set(PyObject *module, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "token_set() takes a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PySet_New(NULL);
    if (out == NULL) {
        return NULL;
    }
    Py_ssize_t i = 0;
    while (i < n) {
        if (!in_run(PyUnicode_READ(kind, data, i))) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        int joined = 0;
        while (i < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (!in_run(c)) {
                break;
            }
            joined |= (c == '.' || c == '/');
            i++;
        }
        Py_ssize_t end = i;
        while (start < end && is_join(PyUnicode_READ(kind, data, start))) {
            start++;
        }
        while (end > start && is_join(PyUnicode_READ(kind, data, end - 1))) {
            end--;
        }
        if (start == end) {
            continue;
        }
        if (add_slice(out, text, start, end) < 0) {
            goto fail;
        }
        if (!joined) {
            continue;
        }
        /* The pieces between . and /, unstripped (a.-b holds -b), as the Python rule's split gives them. */
        Py_ssize_t piece = start;
        int split = 0;
        for (Py_ssize_t j = start; j <= end; j++) {
            Py_UCS4 c = j < end ? PyUnicode_READ(kind, data, j) : ' ';
            if (j < end && c != '.' && c != '/') {
                continue;
            }
            if (j < end) {
                split = 1;
            }
            if (j > piece && split && add_slice(out, text, piece, j) < 0) {
                goto fail;
            }
            piece = j + 1;
        }
    }
    return out;

fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"token_set", token_set, METH_O, "The set of tokens and their parts a text holds (the mention tokenizer's rule)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "The mention tokenizer's token set, in C (see mentions.py).", -1, methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}
