/* The calibrated token counter's feature counts in one pass over the str (lab/core/tokens/calibrated.py).

   features(text): the counts of calibrated.FEATURES, the same numbers the Python rule gets from
   text.encode("utf-8", "surrogatepass").translate(_MAP) and one bytes.count per feature.
   estimate(text, weights): the clamped, rounded weighted sum calibrated.estimate returns.

   Why C: the Python rule makes one pass per feature (an encode, a translate and a dozen counts), and
   each pass is a call; here every count comes out of one loop over the code points, with no bytes
   object built. The loop walks the UTF-8 byte classes the Python rule sees: an ASCII character is one
   byte of its class, any other character is a lead byte then continuation bytes, so a pair count never
   matches across a non-ASCII character. bytes.count counts without overlap, so a pair of one class
   repeated ("aa", "  ", "..") counts half of each run, rounded down, and "aaaa" a quarter.

   calibrated.py uses this module when it was built and falls back to the Python rule otherwise; the
   tests check the two agree on any text. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* In calibrated.FEATURES order. */
enum {
    F_ASCII, F_DIGIT, F_PUNCT_WORD, F_SPACE_DIGIT, F_SPACE_PAIRS, F_LETTER_PAIRS, F_TWO, F_CJK, F_HANGUL, F_THREE, F_FOUR,
    F_PUNCT_PAIRS, F_UPPER_DIGIT, F_LETTER_QUADS, F_QUOTE, F_ESCAPED_QUOTE, N_FEATURES
};

/* Byte classes of the Python rule; C_OTHER stands for every byte of a non-ASCII character. */
enum { C_PUNCT, C_LOWER, C_UPPER, C_DIGIT, C_SPACE, C_TAB, C_NEWLINE, C_OTHER };

static unsigned char ascii_class[128];

static void
init_classes(void)
{
    for (int c = 0; c < 128; c++) {
        unsigned char k = C_PUNCT;
        if (c >= 'a' && c <= 'z') k = C_LOWER;
        else if (c >= 'A' && c <= 'Z') k = C_UPPER;
        else if (c >= '0' && c <= '9') k = C_DIGIT;
        else if (c == ' ') k = C_SPACE;
        else if (c == '\t') k = C_TAB;
        else if (c == '\n' || c == '\r') k = C_NEWLINE;
        ascii_class[c] = k;
    }
}

/* Runs of one class close when the class changes; each adds its length / 2 (or / 4) to its pair count. */
#define CLOSE_RUN(counts, cls, run)                                   \
    do {                                                              \
        if ((cls) == C_LOWER) {                                       \
            (counts)[F_LETTER_PAIRS] += (run) / 2;                    \
            (counts)[F_LETTER_QUADS] += (run) / 4;                    \
        } else if ((cls) == C_SPACE) {                                \
            (counts)[F_SPACE_PAIRS] += (run) / 2;                     \
        } else if ((cls) == C_PUNCT) {                                \
            (counts)[F_PUNCT_PAIRS] += (run) / 2;                     \
        }                                                             \
    } while (0)

#define SCAN(TYPE)                                                                      \
    static void scan_##TYPE(const TYPE *s, Py_ssize_t n, Py_ssize_t *counts)            \
    {                                                                                   \
        int prev = C_OTHER;                                                             \
        Py_UCS4 prev_char = 0;                                                          \
        Py_ssize_t run = 0;                                                             \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            Py_UCS4 c = s[i];                                                           \
            int cls;                                                                    \
            if (c < 128) {                                                              \
                cls = ascii_class[c];                                                   \
                counts[F_ASCII]++;                                                      \
                if (cls == C_DIGIT) {                                                   \
                    counts[F_DIGIT]++;                                                  \
                    if (prev == C_SPACE) counts[F_SPACE_DIGIT]++;                       \
                    else if (prev == C_UPPER) counts[F_UPPER_DIGIT]++;                  \
                } else if (cls == C_LOWER) {                                            \
                    if (prev == C_PUNCT) counts[F_PUNCT_WORD]++;                        \
                } else if (c == '"') {                                                  \
                    counts[F_QUOTE]++;                                                  \
                    if (prev_char == '\\') counts[F_ESCAPED_QUOTE]++;                   \
                }                                                                       \
            } else {                                                                    \
                cls = C_OTHER;                                                          \
                if (c < 0x800) counts[F_TWO]++;                                         \
                else if (c >= 0x3000 && c < 0xA000) counts[F_CJK]++;                    \
                else if (c >= 0xA000 && c < 0xE000) counts[F_HANGUL]++;                 \
                else if (c < 0x10000) counts[F_THREE]++;                                \
                else counts[F_FOUR]++;                                                  \
            }                                                                           \
            if (cls == prev && cls != C_OTHER) {                                        \
                run++;                                                                  \
            } else {                                                                    \
                CLOSE_RUN(counts, prev, run);                                           \
                run = 1;                                                                \
            }                                                                           \
            prev = cls;                                                                 \
            prev_char = c;                                                              \
        }                                                                               \
        CLOSE_RUN(counts, prev, run);                                                   \
    }

SCAN(Py_UCS1)
SCAN(Py_UCS2)
SCAN(Py_UCS4)

static int
count_all(PyObject *text, Py_ssize_t *counts)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "expected a str, not %.100s", Py_TYPE(text)->tp_name);
        return -1;
    }
    memset(counts, 0, N_FEATURES * sizeof(Py_ssize_t));
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        scan_Py_UCS1((const Py_UCS1 *)data, n, counts);
        break;
    case PyUnicode_2BYTE_KIND:
        scan_Py_UCS2((const Py_UCS2 *)data, n, counts);
        break;
    default:
        scan_Py_UCS4((const Py_UCS4 *)data, n, counts);
        break;
    }
    return 0;
}

static PyObject *
features(PyObject *module, PyObject *text)
{
    Py_ssize_t counts[N_FEATURES];
    if (count_all(text, counts) < 0) {
        return NULL;
    }
    PyObject *out = PyTuple_New(N_FEATURES);
    if (out == NULL) {
        return NULL;
    }
    for (int i = 0; i < N_FEATURES; i++) {
        PyObject *v = PyLong_FromSsize_t(counts[i]);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *
estimate(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "estimate() takes a str and a tuple of weights");
        return NULL;
    }
    PyObject *weights = args[1];
    if (!PyTuple_Check(weights) || PyTuple_GET_SIZE(weights) != N_FEATURES) {
        PyErr_Format(PyExc_TypeError, "estimate() needs a tuple of %d weights", N_FEATURES);
        return NULL;
    }
    Py_ssize_t counts[N_FEATURES];
    if (count_all(args[0], counts) < 0) {
        return NULL;
    }
    const Py_ssize_t nbytes = counts[F_ASCII] + 2 * counts[F_TWO] + 3 * (counts[F_CJK] + counts[F_HANGUL] + counts[F_THREE]) + 4 * counts[F_FOUR];
    if (nbytes == 0) {
        return PyLong_FromLong(0);
    }
    /* Summed in FEATURES order, as the Python rule does, so both round the same way. */
    double raw = 0.0;
    for (int i = 0; i < N_FEATURES; i++) {
        double w = PyFloat_AsDouble(PyTuple_GET_ITEM(weights, i));
        if (w == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        raw += w * (double)counts[i];
    }
    /* nearbyint rounds half to even, as Python's round() does. */
    double r = nearbyint(raw);
    Py_ssize_t tokens = r < 1.0 ? 1 : (r > (double)nbytes ? nbytes : (Py_ssize_t)r);
    return PyLong_FromSsize_t(tokens);
}

static PyMethodDef methods[] = {
    {"features", (PyCFunction)features, METH_O, "The calibrated counter's feature counts of a str."},
    {"estimate", (PyCFunction)(void (*)(void))estimate, METH_FASTCALL, "The calibrated estimate of a str under a tuple of weights."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_features", NULL, 0, methods};

PyMODINIT_FUNC
PyInit__features(void)
{
    init_classes();
    return PyModule_Create(&module);
}
