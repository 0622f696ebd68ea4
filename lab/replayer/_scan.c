/* The mention tokenizer's token set, and Lookup's check of each match, in C (lab/replayer/mentions.py).

   token_set: what mentions._words_py computes in Python.

   A token is a run of token characters (Unicode word characters, as the re module's \w, and ~ . @ + / -)
   stripped of the joins (. @ + / -) it starts or ends with; a token holding . or / also yields the pieces
   between them. This is TOKEN = [\w~](?:[\w.~@+/-]*[\w~])? of lab/core/names_index.py, found in one pass
   over the text, each token created once: the Python version splits, strips and splits again, creating
   every token several times, and a recall index tokenizes every response of a transcript.

   mentions.py uses this module when it was built and falls back to the Python rule otherwise; the tests
   check the two give the same set on any text.

   normalise, items_table and items_in: content recall's text scans (lab/replayer/content.py), which falls back
   to its Python rules the same way; its tests hold the two to the same results.

   IdMap: recall's index of raw messages by identity (lab/replayer/recall.py), without an int object per key;
   recall.IdentityMap is the same table in Python, and the tests hold the two to the same answers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

/* --- Content recall (lab/replayer/content.py): normalise, and which items a text holds ----------------------- */

/* content.normalise: " ".join(text.split()), in one pass per kind of text into a buffer of the same kind.
   str.split() splits on Py_UNICODE_ISSPACE runs; PyUnicode_FromKindAndData finds the result's widest character
   itself, so it compares equal to the Python rule's (a text whose only wide characters were spaces comes out
   narrower). A text with nothing to change comes back as itself. */
#define NORMALISE_KIND(NAME, TYPE, KIND)                                                                     \
    static PyObject *NAME(PyObject *text, const TYPE *in, Py_ssize_t n)                                      \
    {                                                                                                         \
        TYPE *buf = PyMem_Malloc((n ? n : 1) * sizeof(TYPE));                                                 \
        if (buf == NULL) {                                                                                    \
            return PyErr_NoMemory();                                                                          \
        }                                                                                                     \
        /* Without a branch per character: a space is written as ' ' where a run starts and overwritten by   \
           the next character where it does not (after a space, or at the text's start); a last one is cut. */ \
        Py_ssize_t size = 0;                                                                                  \
        int after = 1;                                                                                        \
        for (Py_ssize_t i = 0; i < n; i++) {                                                                  \
            TYPE c = in[i];                                                                                   \
            int space = IS_SPACE_##TYPE(c);                                                                   \
            buf[size] = space ? (TYPE)' ' : c;                                                                \
            size += !(space & after);                                                                         \
            after = space;                                                                                    \
        }                                                                                                     \
        size -= size > 0 && after;                                                                            \
        PyObject *out;                                                                                        \
        if (size == n && memcmp(buf, in, n * sizeof(TYPE)) == 0) {                                            \
            out = Py_NewRef(text);                                                                            \
        }                                                                                                     \
        else {                                                                                                \
            out = PyUnicode_FromKindAndData(KIND, buf, size);                                                 \
        }                                                                                                     \
        PyMem_Free(buf);                                                                                      \
        return out;                                                                                           \
    }

/* Whether a character is whitespace as str.split() reads it: a table for one-byte characters. */
static unsigned char space_ucs1[256];
#define IS_SPACE_Py_UCS1(c) (space_ucs1[(c)])
#define IS_SPACE_Py_UCS2(c) (Py_UNICODE_ISSPACE(c) != 0)
#define IS_SPACE_Py_UCS4(c) (Py_UNICODE_ISSPACE(c) != 0)

NORMALISE_KIND(normalise_1, Py_UCS1, PyUnicode_1BYTE_KIND)
NORMALISE_KIND(normalise_2, Py_UCS2, PyUnicode_2BYTE_KIND)
NORMALISE_KIND(normalise_4, Py_UCS4, PyUnicode_4BYTE_KIND)

static PyObject *
normalise(PyObject *module, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "normalise() takes a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return normalise_1(text, data, n);
    case PyUnicode_2BYTE_KIND:
        return normalise_2(text, data, n);
    default:
        return normalise_4(text, data, n);
    }
}

/* content.ContentHistory's items, found in a text: the set of indices x with items[x] in text. Each item is
   looked up by its first `width` characters (the shortest item's length, at most 8), each folded to a byte and
   packed into a 64-bit word, rolled over the text, and checked whole where that word matches: one pass over the
   text, as the Aho-Corasick automaton of the Python rule makes, without a Python object per match. A one-byte
   text's word is its window exactly.

   A table lives as long as its history (recall keeps ten of them over every string of a transcript), so it is
   built small: about 20-28 bytes per item beyond the strings. The pass asks a filter first, one bit per slot
   and at least 32 slots per item, so a text's word lands on a set bit by chance at most 1 time in 32 (a bitmap
   of 4-8 bytes per item, small enough to stay in cache where a byte or a pointer per slot would not). Only
   there does it look at the items themselves: they are kept sorted by bucket, a bucket being 32 consecutive
   slots, with each bucket's words side by side (one cache line, mostly) and where each bucket starts (int32). */

#define ITEMS_CAPSULE "lab.replayer._scan.items"
#define FOLD(c) ((uint64_t)(((c) ^ ((c) >> 8) ^ ((c) >> 16)) & 0xFF))
/* A bucket is 2**BUCKET_SHIFT slots of the filter: with 32 slots per item, about one item per bucket. */
#define BUCKET_SHIFT 5

typedef struct {
    PyObject *items;        /* the tuple of str, kept alive */
    Py_ssize_t count;
    Py_ssize_t width;       /* characters hashed: 1..8 */
    uint64_t mask;          /* the low 8 * width bits: the window's bytes */
    int bits;               /* the filter has 2**bits slots, at least 32 per item */
    uint64_t *filter;       /* one bit per slot: whether any item's word falls there; the pass reads this alone */
    int32_t *starts;        /* per bucket, where its items start in order and words; one more entry: the end */
    int32_t *order;         /* the non-empty items' indices, by bucket, in item order within one */
    uint64_t *words;        /* the word of each item of order, at the same place */
    uint64_t *seen;         /* one bit per item for items_in, all clear between calls: no allocation per call */
    int busy;               /* seen is in use: a call made meanwhile (none is expected) takes its own */
    int empty;              /* an item is the empty string: every text holds it */
} Items;

static void
items_release(Items *t)
{
    Py_XDECREF(t->items);
    PyMem_Free(t->filter);
    PyMem_Free(t->starts);
    PyMem_Free(t->order);
    PyMem_Free(t->words);
    PyMem_Free(t->seen);
    PyMem_Free(t);
}

static void
items_free(PyObject *capsule)
{
    Items *t = PyCapsule_GetPointer(capsule, ITEMS_CAPSULE);
    if (t != NULL) {
        items_release(t);
    }
}

/* The filter slot of a word; its bucket is slot >> BUCKET_SHIFT. */
static uint64_t
slot_of(uint64_t h, int bits)
{
    return (h * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
}

static uint64_t
word_of(PyObject *s, Py_ssize_t width)
{
    const int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    uint64_t h = 0;
    for (Py_ssize_t k = 0; k < width; k++) {
        h = (h << 8) | FOLD(PyUnicode_READ(kind, data, k));
    }
    return h;
}

static PyObject *
items_table(PyObject *module, PyObject *items)
{
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "items_table() takes a tuple of str");
        return NULL;
    }
    const Py_ssize_t count = PyTuple_GET_SIZE(items);
    /* Item indices are kept as int32 (half the memory of a Py_ssize_t). */
    if (count >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "items_table(): too many items");
        return NULL;
    }
    Py_ssize_t width = 8;
    for (Py_ssize_t x = 0; x < count; x++) {
        PyObject *s = PyTuple_GET_ITEM(items, x);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "items_table() takes a tuple of str");
            return NULL;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(s);
        if (len > 0 && len < width) {
            width = len;
        }
    }
    Items *t = PyMem_Calloc(1, sizeof(Items));
    if (t == NULL) {
        return PyErr_NoMemory();
    }
    t->items = Py_NewRef(items);
    t->count = count;
    t->width = width;
    t->mask = width >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * width)) - 1);
    /* Slots enough that a text's word seldom lands on a set bit by chance (at most 1 in 32); 2**36 slots hold
       32 for each of the most items an int32 counts. */
    int bits = 10;
    while (((Py_ssize_t)1 << bits) < 32 * count && bits < 36) {
        bits++;
    }
    t->bits = bits;
    const Py_ssize_t slots = (Py_ssize_t)1 << bits;
    const Py_ssize_t buckets = slots >> BUCKET_SHIFT;
    t->filter = PyMem_Calloc(slots / 64, sizeof(uint64_t));
    t->starts = PyMem_Calloc(buckets + 1, sizeof(int32_t));
    t->order = PyMem_Malloc((count ? count : 1) * sizeof(int32_t));
    t->words = PyMem_Malloc((count ? count : 1) * sizeof(uint64_t));
    t->seen = PyMem_Calloc(count / 64 + 1, sizeof(uint64_t));
    if (t->filter == NULL || t->starts == NULL || t->order == NULL || t->words == NULL || t->seen == NULL) {
        items_release(t);
        return PyErr_NoMemory();
    }
    /* A counting sort by bucket, the words worked out twice rather than held in a second array meanwhile:
       first each bucket's size, summed into where each one ends; then the items placed last first, each at its
       bucket's end moved down by one, which leaves every entry of starts at its bucket's start and each
       bucket's items in item order. */
    int32_t *starts = t->starts;
    for (Py_ssize_t x = 0; x < count; x++) {
        PyObject *s = PyTuple_GET_ITEM(items, x);
        if (PyUnicode_GET_LENGTH(s) == 0) {
            t->empty = 1;
            continue;
        }
        uint64_t p = slot_of(word_of(s, width), bits);
        t->filter[p >> 6] |= (uint64_t)1 << (p & 63);
        starts[p >> BUCKET_SHIFT]++;
    }
    int32_t total = 0;
    for (Py_ssize_t b = 0; b < buckets; b++) {
        total += starts[b];
        starts[b] = total;
    }
    starts[buckets] = total;
    for (Py_ssize_t x = count - 1; x >= 0; x--) {
        PyObject *s = PyTuple_GET_ITEM(items, x);
        if (PyUnicode_GET_LENGTH(s) == 0) {
            continue;
        }
        uint64_t h = word_of(s, width);
        int32_t at = --starts[slot_of(h, bits) >> BUCKET_SHIFT];
        t->order[at] = (int32_t)x;
        t->words[at] = h;
    }
    PyObject *capsule = PyCapsule_New(t, ITEMS_CAPSULE, items_free);
    if (capsule == NULL) {
        items_release(t);
    }
    return capsule;
}

static int
found_at(int kind, const void *data, Py_ssize_t at, PyObject *item)
{
    const Py_ssize_t len = PyUnicode_GET_LENGTH(item);
    const int ikind = PyUnicode_KIND(item);
    const void *idata = PyUnicode_DATA(item);
    if (ikind == kind) {
        return memcmp((const char *)data + at * kind, idata, len * kind) == 0;
    }
    for (Py_ssize_t k = 0; k < len; k++) {
        if (PyUnicode_READ(kind, data, at + k) != PyUnicode_READ(ikind, idata, k)) {
            return 0;
        }
    }
    return 1;
}

/* An item whose word is h (in filter slot p), found at text[i:], joins found (once: seen marks it after it
   joined, so the marks are exactly found's items). */
static int
settle_items(const Items *t, uint64_t h, uint64_t p, int kind, const void *data, Py_ssize_t n, Py_ssize_t i,
             uint64_t *seen, PyObject *found)
{
    const Py_ssize_t b = (Py_ssize_t)(p >> BUCKET_SHIFT);
    const int32_t end = t->starts[b + 1];
    for (int32_t k = t->starts[b]; k < end; k++) {
        if (t->words[k] != h) {
            continue;
        }
        const int32_t x = t->order[k];
        PyObject *item = PyTuple_GET_ITEM(t->items, x);
        if (seen[x >> 6] >> (x & 63) & 1 || PyUnicode_GET_LENGTH(item) > n - i || !found_at(kind, data, i, item)) {
            continue;
        }
        PyObject *index = PyLong_FromSsize_t(x);
        if (index == NULL || PyList_Append(found, index) < 0) {
            Py_XDECREF(index);
            return -1;
        }
        Py_DECREF(index);
        seen[x >> 6] |= (uint64_t)1 << (x & 63);
    }
    return 0;
}

/* The pass over a text of one kind: its word rolled one character at a time, a filter bit looked at per
   position. */
#define SCAN_ITEMS(NAME, KIND, TYPE)                                                                          \
    static int NAME(const Items *t, const TYPE *chars, Py_ssize_t n, uint64_t *seen, PyObject *found)        \
    {                                                                                                         \
        const Py_ssize_t width = t->width;                                                                    \
        const uint64_t mask = t->mask;                                                                        \
        const int shift = 64 - t->bits;                                                                       \
        const uint64_t *filter = t->filter;                                                                   \
        uint64_t h = 0;                                                                                       \
        for (Py_ssize_t k = 0; k < width - 1; k++) {                                                          \
            h = (h << 8) | FOLD(chars[k]);                                                                    \
        }                                                                                                     \
        for (Py_ssize_t i = 0; i + width <= n; i++) {                                                         \
            h = ((h << 8) | FOLD(chars[i + width - 1])) & mask;                                               \
            const uint64_t p = (h * 0x9E3779B97F4A7C15ULL) >> shift;                                          \
            if (filter[p >> 6] >> (p & 63) & 1                                                                \
                && settle_items(t, h, p, KIND, chars, n, i, seen, found) < 0) {                               \
                return -1;                                                                                    \
            }                                                                                                 \
        }                                                                                                     \
        return 0;                                                                                             \
    }

SCAN_ITEMS(scan_items_1, PyUnicode_1BYTE_KIND, Py_UCS1)
SCAN_ITEMS(scan_items_2, PyUnicode_2BYTE_KIND, Py_UCS2)
SCAN_ITEMS(scan_items_4, PyUnicode_4BYTE_KIND, Py_UCS4)

static PyObject *
items_in(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "items_in(table, text: str)");
        return NULL;
    }
    Items *t = PyCapsule_GetPointer(args[0], ITEMS_CAPSULE);
    if (t == NULL) {
        return NULL;
    }
    PyObject *text = args[1];
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *found = PyList_New(0);
    if (found == NULL) {
        return NULL;
    }
    /* The table's own marks, cleared again from found below, so a call costs what its text holds rather than
       a fresh zeroed map of every item. Nothing in the pass runs Python code, but should a call come while
       these are in use, it takes marks of its own. */
    uint64_t *seen = t->seen;
    const int own = t->busy;
    if (own) {
        seen = PyMem_Calloc(t->count / 64 + 1, sizeof(uint64_t));
        if (seen == NULL) {
            Py_DECREF(found);
            return PyErr_NoMemory();
        }
    }
    t->busy = 1;
    int failed = 0;
    if (t->count && n >= t->width) {
        switch (kind) {
        case PyUnicode_1BYTE_KIND:
            failed = scan_items_1(t, (const Py_UCS1 *)data, n, seen, found);
            break;
        case PyUnicode_2BYTE_KIND:
            failed = scan_items_2(t, (const Py_UCS2 *)data, n, seen, found);
            break;
        default:
            failed = scan_items_4(t, (const Py_UCS4 *)data, n, seen, found);
            break;
        }
    }
    if (own) {
        PyMem_Free(seen);
    }
    else {
        const Py_ssize_t size = PyList_GET_SIZE(found);
        for (Py_ssize_t j = 0; j < size; j++) {
            const Py_ssize_t x = PyLong_AsSsize_t(PyList_GET_ITEM(found, j));
            seen[x >> 6] &= ~((uint64_t)1 << (x & 63));
        }
        t->busy = 0;
    }
    if (failed) {
        goto fail;
    }
    if (t->empty) {
        for (Py_ssize_t x = 0; x < t->count; x++) {
            PyObject *index;
            if (PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(t->items, x)) != 0) {
                continue;
            }
            index = PyLong_FromSsize_t(x);
            if (index == NULL || PyList_Append(found, index) < 0) {
                Py_XDECREF(index);
                goto fail;
            }
            Py_DECREF(index);
        }
    }
    PyObject *out = PyFrozenSet_New(found);
    Py_DECREF(found);
    return out;

fail:
    Py_DECREF(found);
    return NULL;
}

/* content._windows: every MIN_SPAN-character window of each text that starts a word (0, or after a space or
   \0; anywhere: after any ASCII character but a letter, a digit, _ and DEL) and lies inside its text, as three
   buffers of the same length: the text's index (int64), the window's position in it (int64), and its hash
   sum(code * BASE**k for the window's k-th code point) modulo 2**64 (uint64), rolled along the text. The same
   windows and hashes as the numpy rule, in one pass and without its copies of the text. */

#define SPAN 40
#define SPAN_BASE 0x9E3779B97F4A7C15ULL

typedef struct {
    int64_t *which;
    int64_t *where;
    uint64_t *hashes;
    Py_ssize_t size, room;
} Windows;

static int
windows_add(Windows *w, int64_t which, int64_t where, uint64_t hash)
{
    if (w->size == w->room) {
        Py_ssize_t room = w->room ? 2 * w->room : 4096;
        int64_t *a = PyMem_Realloc(w->which, room * sizeof(int64_t));
        if (a == NULL) {
            return -1;
        }
        w->which = a;
        int64_t *b = PyMem_Realloc(w->where, room * sizeof(int64_t));
        if (b == NULL) {
            return -1;
        }
        w->where = b;
        uint64_t *c = PyMem_Realloc(w->hashes, room * sizeof(uint64_t));
        if (c == NULL) {
            return -1;
        }
        w->hashes = c;
        w->room = room;
    }
    w->which[w->size] = which;
    w->where[w->size] = where;
    w->hashes[w->size] = hash;
    w->size++;
    return 0;
}

static int
window_break(Py_UCS4 c, int anywhere)
{
    if (c == ' ' || c == 0) {
        return 1;
    }
    return anywhere && c < 127 && !is_word(c);
}

/* Calls on(w, text index, position, hash) for every window of a sequence of str (a PySequence_Fast) that may
   start there; -1 with an exception set when a text is no str or on returns -1. */
typedef int (*window_fn)(void *state, int64_t which, int64_t where, uint64_t hash);

/* The windows of one text of one kind: the hash rolled one character at a time, on() called where one may start. */
#define EACH_WINDOW_KIND(NAME, TYPE)                                                                          \
    static int NAME(const TYPE *chars, Py_ssize_t n, int64_t t, int anywhere, uint64_t inverse, uint64_t top,  \
                    window_fn on, void *state)                                                                \
    {                                                                                                         \
        uint64_t h = 0, power = 1;                                                                            \
        for (Py_ssize_t k = 0; k < SPAN; k++) {                                                               \
            h += (uint64_t)chars[k] * power;                                                                  \
            power *= SPAN_BASE;                                                                               \
        }                                                                                                     \
        /* Position j may start a window when j is 0 or chars[j - 1] is a break. */                          \
        int allowed = 1;                                                                                      \
        for (Py_ssize_t j = 0;; j++) {                                                                        \
            Py_UCS4 first = chars[j];                                                                         \
            if (allowed && on(state, t, j, h) < 0) {                                                          \
                return -1;                                                                                    \
            }                                                                                                 \
            if (j + SPAN >= n) {                                                                              \
                return 0;                                                                                     \
            }                                                                                                 \
            allowed = window_break(first, anywhere);                                                          \
            h = (h - first) * inverse + (uint64_t)chars[j + SPAN] * top;                                      \
        }                                                                                                     \
    }

EACH_WINDOW_KIND(each_window_1, Py_UCS1)
EACH_WINDOW_KIND(each_window_2, Py_UCS2)
EACH_WINDOW_KIND(each_window_4, Py_UCS4)

static int
each_window(PyObject *texts, int anywhere, window_fn on, void *state)
{
    uint64_t inverse, top = 1;
    /* BASE is odd: its inverse modulo 2**64 by Newton's iteration (each step doubles the correct low bits). */
    inverse = SPAN_BASE;
    for (int k = 0; k < 6; k++) {
        inverse *= 2 - SPAN_BASE * inverse;
    }
    for (int k = 0; k < SPAN - 1; k++) {
        top *= SPAN_BASE;
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(texts);
    for (Py_ssize_t t = 0; t < count; t++) {
        PyObject *text = PySequence_Fast_GET_ITEM(texts, t);
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "windows of a sequence of str");
            return -1;
        }
        const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        if (n < SPAN) {
            continue;
        }
        const void *data = PyUnicode_DATA(text);
        int failed;
        switch (PyUnicode_KIND(text)) {
        case PyUnicode_1BYTE_KIND:
            failed = each_window_1(data, n, t, anywhere, inverse, top, on, state);
            break;
        case PyUnicode_2BYTE_KIND:
            failed = each_window_2(data, n, t, anywhere, inverse, top, on, state);
            break;
        default:
            failed = each_window_4(data, n, t, anywhere, inverse, top, on, state);
            break;
        }
        if (failed) {
            return -1;
        }
    }
    return 0;
}

static int
add_window(void *state, int64_t which, int64_t where, uint64_t hash)
{
    if (windows_add((Windows *)state, which, where, hash) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int
collect_windows(PyObject *texts, int anywhere, Windows *w)
{
    return each_window(texts, anywhere, add_window, w);
}

static void
windows_free(Windows *w)
{
    PyMem_Free(w->which);
    PyMem_Free(w->where);
    PyMem_Free(w->hashes);
}

static PyObject *
windows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "windows(texts: sequence of str, anywhere: bool)");
        return NULL;
    }
    int anywhere = PyObject_IsTrue(args[1]);
    if (anywhere < 0) {
        return NULL;
    }
    PyObject *texts = PySequence_Fast(args[0], "windows() takes a sequence of str");
    if (texts == NULL) {
        return NULL;
    }
    Windows w = {NULL, NULL, NULL, 0, 0};
    PyObject *out = NULL;
    if (collect_windows(texts, anywhere, &w) == 0) {
        /* y# makes None of a NULL buffer: no window at all is three empty buffers. */
        out = Py_BuildValue("(y#y#y#)", w.size ? (const char *)w.which : "", w.size * (Py_ssize_t)sizeof(int64_t),
                            w.size ? (const char *)w.where : "", w.size * (Py_ssize_t)sizeof(int64_t),
                            w.size ? (const char *)w.hashes : "", w.size * (Py_ssize_t)sizeof(uint64_t));
    }
    windows_free(&w);
    Py_DECREF(texts);
    return out;
}

/* content._Copies' matching: each candidate window (anywhere) whose hash some source window (at a word start)
   has, with the first source holding it, kept when that source comes before the candidate's limit. As the numpy
   rule finds them (windows, sort, unique, lookups). Here the sources' windows, rolled and never stored, pass a bit
   map of the candidates' hashes (16 bits per window: few that are in no candidate get through); those that pass
   go to a small hash table with the first source showing each, which every candidate window then looks up. */

typedef struct {
    uint64_t *keys;
    int64_t *holders;       /* -1: an empty slot; else the first source showing the key */
    Py_ssize_t used;
    int bits;
    uint64_t *bloom;
    int bloom_bits;
} Held;

static Py_ssize_t
held_slot(const Held *t, uint64_t h)
{
    const uint64_t mask = ((uint64_t)1 << t->bits) - 1;
    Py_ssize_t at = (Py_ssize_t)((h * 0x9E3779B97F4A7C15ULL) >> (64 - t->bits));
    while (t->holders[at] != -1 && t->keys[at] != h) {
        at = (Py_ssize_t)((at + 1) & mask);
    }
    return at;
}

static uint64_t
bloom_bit(const Held *t, uint64_t h)
{
    return (h * 0xC2B2AE3D27D4EB4FULL) >> (64 - t->bloom_bits);
}

/* The table at 2**bits slots, its keys placed again; -1 on no memory. */
static int
held_resize(Held *t, int bits)
{
    Held grown = *t;
    const Py_ssize_t slots = (Py_ssize_t)1 << bits;
    grown.bits = bits;
    grown.keys = PyMem_Malloc(slots * sizeof(uint64_t));
    grown.holders = PyMem_Malloc(slots * sizeof(int64_t));
    if (grown.keys == NULL || grown.holders == NULL) {
        PyMem_Free(grown.keys);
        PyMem_Free(grown.holders);
        return -1;
    }
    for (Py_ssize_t j = 0; j < slots; j++) {
        grown.holders[j] = -1;
    }
    const Py_ssize_t old = t->keys ? (Py_ssize_t)1 << t->bits : 0;
    for (Py_ssize_t j = 0; j < old; j++) {
        if (t->holders[j] >= 0) {
            Py_ssize_t at = held_slot(&grown, t->keys[j]);
            grown.keys[at] = t->keys[j];
            grown.holders[at] = t->holders[j];
        }
    }
    PyMem_Free(t->keys);
    PyMem_Free(t->holders);
    *t = grown;
    return 0;
}

static int
hold_source(void *state, int64_t which, int64_t where, uint64_t hash)
{
    Held *t = state;
    uint64_t bit = bloom_bit(t, hash);
    if (!(t->bloom[bit >> 6] >> (bit & 63) & 1)) {
        return 0;
    }
    Py_ssize_t at = held_slot(t, hash);
    if (t->holders[at] >= 0) {
        return 0;
    }
    t->keys[at] = hash;
    t->holders[at] = which;
    /* At most half full. */
    if (++t->used * 2 > ((Py_ssize_t)1 << t->bits) && held_resize(t, t->bits + 1) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyObject *
copies(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "copies(candidates: sequence of str, limits: sequence of int, sources: sequence of str)");
        return NULL;
    }
    PyObject *out = NULL, *cands = NULL, *limits = NULL, *sources = NULL;
    Windows cw = {NULL, NULL, NULL, 0, 0};
    Held t = {NULL, NULL, 0, 0, NULL, 0};
    int64_t *limit = NULL;
    cands = PySequence_Fast(args[0], "copies() takes a sequence of str");
    limits = cands ? PySequence_Fast(args[1], "copies() takes a sequence of int") : NULL;
    sources = limits ? PySequence_Fast(args[2], "copies() takes a sequence of str") : NULL;
    if (sources == NULL) {
        goto done;
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(cands);
    if (PySequence_Fast_GET_SIZE(limits) != count) {
        PyErr_SetString(PyExc_ValueError, "copies(): one limit per candidate");
        goto done;
    }
    limit = PyMem_Malloc((count ? count : 1) * sizeof(int64_t));
    if (limit == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < count; c++) {
        limit[c] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(limits, c));
        if (limit[c] == -1 && PyErr_Occurred()) {
            goto done;
        }
    }
    if (collect_windows(cands, 1, &cw) < 0) {
        goto done;
    }
    t.bloom_bits = 10;
    while (((Py_ssize_t)1 << t.bloom_bits) < 16 * cw.size && t.bloom_bits < 40) {
        t.bloom_bits++;
    }
    t.bloom = PyMem_Calloc(((Py_ssize_t)1 << t.bloom_bits) / 64 + 1, sizeof(uint64_t));
    if (t.bloom == NULL || held_resize(&t, 10) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < cw.size; k++) {
        uint64_t bit = bloom_bit(&t, cw.hashes[k]);
        t.bloom[bit >> 6] |= (uint64_t)1 << (bit & 63);
    }
    if (each_window(sources, 0, hold_source, &t) < 0) {
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL) {
        goto done;
    }
    for (Py_ssize_t k = 0; k < cw.size; k++) {
        int64_t m = t.holders[held_slot(&t, cw.hashes[k])];
        if (m < 0 || m >= limit[cw.which[k]]) {
            continue;
        }
        PyObject *hit = Py_BuildValue("(LLL)", (long long)cw.which[k], (long long)cw.where[k], (long long)m);
        if (hit == NULL || PyList_Append(out, hit) < 0) {
            Py_XDECREF(hit);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(hit);
    }
done:
    windows_free(&cw);
    PyMem_Free(t.keys);
    PyMem_Free(t.holders);
    PyMem_Free(t.bloom);
    PyMem_Free(limit);
    Py_XDECREF(cands);
    Py_XDECREF(limits);
    Py_XDECREF(sources);
    return out;
}

/* content._Copies.spans' search: the longest run text[s:e] shares with src around text[j:j+n], grown both ways
   from each of the first `tries` places src holds that window (the first longest wins), as (s, e); (j, j) when
   src does not hold it. The Python rule's find and _grow, without a Python step per character. */
static PyObject *
longest_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t j, n, tries;
    if (nargs != 5 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "longest_run(text: str, j: int, src: str, n: int, tries: int)");
        return NULL;
    }
    j = PyLong_AsSsize_t(args[1]);
    n = PyLong_AsSsize_t(args[3]);
    tries = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *text = args[0], *src = args[2];
    const Py_ssize_t rn = PyUnicode_GET_LENGTH(text), tn = PyUnicode_GET_LENGTH(src);
    if (j < 0 || n < 0 || j + n > rn) {
        PyErr_SetString(PyExc_ValueError, "longest_run(): the window is not inside the text");
        return NULL;
    }
    const int rk = PyUnicode_KIND(text), tk = PyUnicode_KIND(src);
    const void *rd = PyUnicode_DATA(text), *td = PyUnicode_DATA(src);
    PyObject *w = PyUnicode_Substring(text, j, j + n);
    if (w == NULL) {
        return NULL;
    }
    Py_ssize_t best_s = j, best_e = j;
    Py_ssize_t at = PyUnicode_Find(src, w, 0, tn, 1);
    for (Py_ssize_t k = 0; k < tries && at >= 0; k++) {
        Py_ssize_t e = j + n, f = at + n;
        while (e < rn && f < tn && PyUnicode_READ(rk, rd, e) == PyUnicode_READ(tk, td, f)) {
            e++;
            f++;
        }
        Py_ssize_t s = j, g = at;
        while (s > 0 && g > 0 && PyUnicode_READ(rk, rd, s - 1) == PyUnicode_READ(tk, td, g - 1)) {
            s--;
            g--;
        }
        if (e - s > best_e - best_s) {
            best_s = s;
            best_e = e;
        }
        at = PyUnicode_Find(src, w, at + 1, tn, 1);
    }
    Py_DECREF(w);
    if (at == -2) {
        return NULL;
    }
    return Py_BuildValue("(nn)", best_s, best_e);
}

/* --- IdMap: values by the identity of their keys (recall.py's History, one entry per raw message) ------------ */

/* A dict keyed by id(message) costs an int object per key (32 bytes) beside its entry and hash slot, and a
   recall index holds one entry per raw message of a transcript. This table keeps each key's address (never
   dereferenced, never owned: whoever fills it keeps the keys alive, as a History keeps its raw messages) and
   a reference to its value: 16 bytes a slot, open addressing (linear probing), at most 2/3 full. No entry is
   ever removed. recall.IdentityMap is the same table as a dict by id(), used when this module is not built. */

typedef struct {
    PyObject_HEAD
    Py_ssize_t used;
    int bits;
    const void **keys;
    PyObject **values;
} IdMapObject;

static Py_ssize_t
idmap_find(const void *const *keys, int bits, const void *key)
{
    const Py_ssize_t mask = ((Py_ssize_t)1 << bits) - 1;
    Py_ssize_t i = (Py_ssize_t)((((uint64_t)(uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
    while (keys[i] != NULL && keys[i] != key) {
        i = (i + 1) & mask;
    }
    return i;
}

static int
idmap_alloc(IdMapObject *m, int bits)
{
    const Py_ssize_t slots = (Py_ssize_t)1 << bits;
    const void **keys = PyMem_Calloc(slots, sizeof(void *));
    PyObject **values = PyMem_Calloc(slots, sizeof(PyObject *));
    if (keys == NULL || values == NULL) {
        PyMem_Free(keys);
        PyMem_Free(values);
        PyErr_NoMemory();
        return -1;
    }
    const void **old_keys = m->keys;
    PyObject **old_values = m->values;
    const Py_ssize_t old_slots = old_keys == NULL ? 0 : (Py_ssize_t)1 << m->bits;
    for (Py_ssize_t j = 0; j < old_slots; j++) {
        if (old_keys[j] != NULL) {
            Py_ssize_t i = idmap_find(keys, bits, old_keys[j]);
            keys[i] = old_keys[j];
            values[i] = old_values[j];
        }
    }
    PyMem_Free(old_keys);
    PyMem_Free(old_values);
    m->keys = keys;
    m->values = values;
    m->bits = bits;
    return 0;
}

static PyObject *
idmap_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "IdMap() takes no arguments");
        return NULL;
    }
    IdMapObject *m = (IdMapObject *)type->tp_alloc(type, 0);
    if (m == NULL) {
        return NULL;
    }
    m->used = 0;
    m->keys = NULL;
    m->values = NULL;
    if (idmap_alloc(m, 3) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}

static void
idmap_dealloc(IdMapObject *m)
{
    if (m->values != NULL) {
        const Py_ssize_t slots = (Py_ssize_t)1 << m->bits;
        for (Py_ssize_t j = 0; j < slots; j++) {
            Py_XDECREF(m->values[j]);
        }
    }
    PyMem_Free(m->keys);
    PyMem_Free(m->values);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* The value stored for key, else NULL (no exception set). */
static PyObject *
idmap_lookup(const IdMapObject *m, PyObject *key)
{
    const Py_ssize_t i = idmap_find(m->keys, m->bits, key);
    return m->keys[i] == NULL ? NULL : m->values[i];
}

static PyObject *
idmap_get(IdMapObject *m, PyObject *key)
{
    PyObject *value = idmap_lookup(m, key);
    return Py_NewRef(value == NULL ? Py_None : value);
}

/* key's value becomes value (replace: 1) or stays when it has one (0); the value stored, a new reference. */
static PyObject *
idmap_store(IdMapObject *m, PyObject *const *args, Py_ssize_t nargs, int replace)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "takes (key, value)");
        return NULL;
    }
    PyObject *key = args[0], *value = args[1];
    Py_ssize_t i = idmap_find(m->keys, m->bits, key);
    if (m->keys[i] != NULL) {
        if (replace) {
            Py_SETREF(m->values[i], Py_NewRef(value));
        }
        return Py_NewRef(m->values[i]);
    }
    /* Grown before the entry that would pass 2/3 full. */
    if (3 * (m->used + 1) > 2 * ((Py_ssize_t)1 << m->bits)) {
        if (idmap_alloc(m, m->bits + 1) < 0) {
            return NULL;
        }
        i = idmap_find(m->keys, m->bits, key);
    }
    m->keys[i] = key;
    m->values[i] = Py_NewRef(value);
    m->used++;
    return Py_NewRef(value);
}

static PyObject *
idmap_put(IdMapObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *stored = idmap_store(m, args, nargs, 1);
    if (stored == NULL) {
        return NULL;
    }
    Py_DECREF(stored);
    Py_RETURN_NONE;
}

static PyObject *
idmap_setdefault(IdMapObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return idmap_store(m, args, nargs, 0);
}

static Py_ssize_t
idmap_len(IdMapObject *m)
{
    return m->used;
}

static int
idmap_contains(IdMapObject *m, PyObject *key)
{
    return idmap_lookup(m, key) != NULL;
}

static PyMethodDef idmap_methods[] = {
    {"get", (PyCFunction)idmap_get, METH_O, "The value stored for this very object, or None."},
    {"put", (PyCFunction)(void (*)(void))idmap_put, METH_FASTCALL, "Store a value for this very object (replacing any)."},
    {"setdefault", (PyCFunction)(void (*)(void))idmap_setdefault, METH_FASTCALL,
     "The value stored for this very object, storing the one given first when there is none."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods idmap_as_sequence = {
    .sq_length = (lenfunc)idmap_len,
    .sq_contains = (objobjproc)idmap_contains,
};

static PyTypeObject IdMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lab.replayer._scan.IdMap",
    .tp_basicsize = sizeof(IdMapObject),
    .tp_dealloc = (destructor)idmap_dealloc,
    .tp_as_sequence = &idmap_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Values by the identity of their keys, which the caller keeps alive; no entry is ever removed.",
    .tp_methods = idmap_methods,
    .tp_new = idmap_new,
};

static PyMethodDef methods[] = {
    {"token_set", token_set, METH_O, "The set of tokens and their parts a text holds (the mention tokenizer's rule)."},
    {"settle", (PyCFunction)(void (*)(void))settle, METH_FASTCALL,
     "The wanted strings an Aho-Corasick pass over a text's padded shadow found that are tokens or parts of it."},
    {"normalise", normalise, METH_O, "A text with every run of whitespace one space, and none at either end (content recall's rule)."},
    {"items_table", items_table, METH_O, "A lookup table of content recall's items (a tuple of str), for items_in."},
    {"items_in", (PyCFunction)(void (*)(void))items_in, METH_FASTCALL,
     "The frozenset of the indices of the table's items that occur in a text."},
    {"windows", (PyCFunction)(void (*)(void))windows, METH_FASTCALL,
     "Content recall's windows of texts: (text indices, positions, hashes) as int64, int64 and uint64 bytes."},
    {"longest_run", (PyCFunction)(void (*)(void))longest_run, METH_FASTCALL,
     "The longest run a text shares with a source around one of its windows, as (start, end) in the text."},
    {"copies", (PyCFunction)(void (*)(void))copies, METH_FASTCALL,
     "Content recall's copied windows: (candidate, position, first source) for each candidate window a source before its limit holds."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "The mention tokenizer's token set, and content recall's text scans, in C (see mentions.py, content.py).", -1, methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    for (int c = 0; c < 256; c++) {
        space_ucs1[c] = Py_UNICODE_ISSPACE(c) != 0;
    }
    if (PyType_Ready(&IdMapType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "IdMap", (PyObject *)&IdMapType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
