/* The mention tokenizer's token set, and Lookup's check of each match, in C (lab/replayer/mentions.py).

   token_set: what mentions._words_py computes in Python.

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

/* --- Lookup.held's check of each Aho-Corasick match (mentions.py, Lookup and _Run) -------------------------- */

/* An ASCII character that can never be in a token: a neighbour that ends one. */
static int
is_break(Py_UCS4 c)
{
    return c < 128 && !in_run(c);
}

/* The characters a text's shadow keeps: ASCII letters, digits, _ and ~. */
static int
is_shadow_word(Py_UCS4 c)
{
    return c < 128 && (is_word(c) || c == '~');
}

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t size;
} Text;

static Py_UCS4
at_(const Text *t, Py_ssize_t i)
{
    return PyUnicode_READ(t->kind, t->data, i);
}

static int
same(const Text *t, Py_ssize_t start, PyObject *w, Py_ssize_t n)
{
    if (start < 0 || start + n > t->size) {
        return 0;
    }
    int wkind = PyUnicode_KIND(w);
    const void *wdata = PyUnicode_DATA(w);
    for (Py_ssize_t k = 0; k < n; k++) {
        if (at_(t, start + k) != PyUnicode_READ(wkind, wdata, k)) {
            return 0;
        }
    }
    return 1;
}

/* _Run.holds: whether w, found at text[start:stop], is the token of the run around it or one of its parts. */
static int
holds(const Text *t, PyObject *w, Py_ssize_t start, Py_ssize_t stop)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(w);
    Py_ssize_t end = stop, begin = start;
    while (end < t->size && in_run(at_(t, end))) {
        end++;
    }
    while (begin > 0 && in_run(at_(t, begin - 1))) {
        begin--;
    }
    while (begin < end && is_join(at_(t, begin))) {
        begin++;
    }
    while (end > begin && is_join(at_(t, end - 1))) {
        end--;
    }
    if (end - begin == n && same(t, begin, w, n)) {
        return 1;
    }
    /* A part: any piece of the token between . and / (the Python rule splits the token and asks for w). */
    int joined = 0;
    for (Py_ssize_t j = begin; j < end; j++) {
        Py_UCS4 c = at_(t, j);
        if (c == '.' || c == '/') {
            joined = 1;
            break;
        }
    }
    if (!joined) {
        return 0;
    }
    Py_ssize_t piece = begin;
    for (Py_ssize_t j = begin; j <= end; j++) {
        if (j < end) {
            Py_UCS4 c = at_(t, j);
            if (c != '.' && c != '/') {
                continue;
            }
        }
        if (j - piece == n && same(t, piece, w, n)) {
            return 1;
        }
        piece = j + 1;
    }
    return 0;
}

/* _Run.at (with _neighbours' rules, worked out from w itself): whether the occurrence of w's shadow that
   ends at stop is w, and a token or a part. */
static int
settles(const Text *t, PyObject *w, Py_ssize_t stop)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(w);
    if (n == 0) {
        return 0;
    }
    int wkind = PyUnicode_KIND(w);
    const void *wdata = PyUnicode_DATA(w);
    int dotted = 0, plain = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_UCS4 c = PyUnicode_READ(wkind, wdata, k);
        dotted |= (c == '.' || c == '/');
        plain &= is_shadow_word(c);
    }
    int edged = is_join(PyUnicode_READ(wkind, wdata, 0)) || is_join(PyUnicode_READ(wkind, wdata, n - 1));
    Py_ssize_t start = stop - n;
    if (!plain && !same(t, start, w, n)) {
        return 0;
    }
    Py_UCS4 left = start > 0 ? at_(t, start - 1) : ' ';
    Py_UCS4 right = stop < t->size ? at_(t, stop) : ' ';
    if (!edged) {
        int l = is_break(left) || (!dotted && (left == '.' || left == '/'));
        int r = is_break(right) || (!dotted && (right == '.' || right == '/'));
        if (l && r) {
            return 1;
        }
    }
    /* Glued to more of its run: never that run's token, nor one of its parts. */
    #define GLUED(c) (dotted ? is_join(c) : ((c) == '-' || (c) == '@' || (c) == '+'))
    if ((GLUED(left) && start > 1 && is_shadow_word(at_(t, start - 2)))
        || (GLUED(right) && stop + 1 < t->size && is_shadow_word(at_(t, stop + 1)))) {
        return 0;
    }
    #undef GLUED
    return holds(t, w, start, stop);
}

static PyObject *
settle(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "settle(text: str, matches: iterable of (end, str or tuple of str))");
        return NULL;
    }
    PyObject *text = args[0];
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    PyObject *found = PySet_New(NULL);
    PyObject *it = PyObject_GetIter(args[1]);
    if (found == NULL || it == NULL) {
        goto fail;
    }
    PyObject *item;
    while ((item = PyIter_Next(it)) != NULL) {
        Py_ssize_t end;
        PyObject *value;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            Py_DECREF(item);
            PyErr_SetString(PyExc_TypeError, "a match is (end, value)");
            goto fail;
        }
        end = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        value = PyTuple_GET_ITEM(item, 1);
        if (end == -1 && PyErr_Occurred()) {
            Py_DECREF(item);
            goto fail;
        }
        /* The padded shadow puts the match's closing space at end: w ends before text[end - 1]. */
        Py_ssize_t stop = end - 1;
        Py_ssize_t count = PyTuple_Check(value) ? PyTuple_GET_SIZE(value) : 1;
        for (Py_ssize_t k = 0; k < count; k++) {
            PyObject *w = PyTuple_Check(value) ? PyTuple_GET_ITEM(value, k) : value;
            if (!PyUnicode_Check(w)) {
                continue;
            }
            int seen = PySet_Contains(found, w);
            if (seen < 0 || (!seen && settles(&t, w, stop) && PySet_Add(found, w) < 0)) {
                Py_DECREF(item);
                goto fail;
            }
        }
        Py_DECREF(item);
    }
    if (PyErr_Occurred()) {
        goto fail;
    }
    Py_DECREF(it);
    return found;

fail:
    Py_XDECREF(it);
    Py_XDECREF(found);
    return NULL;
}

static PyMethodDef methods[] = {
    {"token_set", token_set, METH_O, "The set of tokens and their parts a text holds (the mention tokenizer's rule)."},
    {"settle", (PyCFunction)(void (*)(void))settle, METH_FASTCALL,
     "The wanted strings an Aho-Corasick pass over a text's padded shadow found that are tokens or parts of it."},
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
