/*
 * receval._native: the join of ordered lists with the truth, in one pass.
 *
 * An optional accelerator of receval.engines.numpy_engine.prepare. It does
 * no metric arithmetic: for every recommended row it looks up the grade of
 * the item in the user's truth, and it reports whether a list or a user's
 * truth holds an item twice. The NumPy path computes the same arrays (by
 * sorting (user, item) keys); tests check both bit for bit, and the NumPy
 * path is used whenever this module is not built, when RECEVAL_NATIVE=0,
 * and for every input in which this function finds a duplicate (so that
 * errors and duplicates="keep" have one implementation).
 *
 * Arrays are passed through the buffer protocol (C-contiguous, checked item
 * sizes), so building needs a C compiler and Python's headers, not NumPy's.
 * The GIL is released during the pass: chunks run on several threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, DUP_RECS = 1, DUP_TRUTH = 2, NOT_SORTED = 3, OUT_OF_RANGE = 4, NO_MEMORY = 5 };

static int
take(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->itemsize != itemsize || view->ndim > 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected a 1-d array of %zd-byte items", name,
                     itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static inline uint64_t
slot_of(int64_t x, unsigned bits)
{
    return ((uint64_t)x * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
}

/* One slot of a user's open-addressing table: an item, its grade, the user
 * it belongs to (a stamp, so the table is never cleared between users) and
 * its state: 0 a truth item not (yet) in the list, 1 a truth item in the
 * list, 2 an item of the list only. */
typedef struct {
    int64_t key;
    double grade;
    uint32_t stamp;
    uint32_t state;
} slot_t;

typedef struct {
    slot_t *slot;
    size_t cap;
    uint32_t gen;
} table_t;

static int
table_reserve(table_t *t, size_t cap)
{
    if (cap <= t->cap)
        return 0;
    free(t->slot);
    t->slot = calloc(cap, sizeof(slot_t));
    t->cap = cap;
    t->gen = 0;
    return t->slot ? 0 : -1;
}

/*
 * The pass. ru: user code of each list row, ascending (rows in list order);
 * ri: item code; tu, ti, tg: the truth's user codes, item codes and grades
 * (any order). Writes, per list row, the item's grade in the user's truth
 * (0 when absent), its gain (the grade when grade >= threshold and > 0, else
 * 0) and its 0-based position in the list; and the list offsets per user.
 */
static int
join_pass(const int64_t *ru, const int64_t *ri, Py_ssize_t n, const int64_t *tu,
          const int64_t *ti, const double *tg, Py_ssize_t m, int64_t users, double threshold,
          double *out_grade, double *out_gain, int64_t *out_pos, int64_t *out_off)
{
    int status = OK;
    int64_t *toff = calloc((size_t)users + 1, sizeof(int64_t));
    int64_t *fill = malloc(((size_t)users + 1) * sizeof(int64_t));
    int64_t *perm = malloc(((size_t)m + 1) * sizeof(int64_t));
    table_t t = {0};
    if (!toff || !fill || !perm) {
        status = NO_MEMORY;
        goto done;
    }
    /* list offsets: rows of user u are out_off[u] .. out_off[u + 1] - 1 */
    {
        int64_t u = 0;
        out_off[0] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t x = ru[i];
            if (x < 0 || x >= users) {
                status = OUT_OF_RANGE;
                goto done;
            }
            if (x < u) {
                status = NOT_SORTED;
                goto done;
            }
            while (u < x)
                out_off[++u] = i;
        }
        while (u < users)
            out_off[++u] = n;
    }
    /* the truth grouped by user, rows kept in their order (a counting sort) */
    for (Py_ssize_t j = 0; j < m; j++) {
        int64_t x = tu[j];
        if (x < 0 || x >= users) {
            status = OUT_OF_RANGE;
            goto done;
        }
        toff[x + 1]++;
    }
    for (int64_t u = 0; u < users; u++)
        toff[u + 1] += toff[u];
    memcpy(fill, toff, ((size_t)users + 1) * sizeof(int64_t));
    for (Py_ssize_t j = 0; j < m; j++)
        perm[fill[tu[j]]++] = j;

    for (int64_t u = 0; u < users; u++) {
        int64_t r0 = out_off[u], r1 = out_off[u + 1], t0 = toff[u], t1 = toff[u + 1];
        size_t need = (size_t)(r1 - r0) + (size_t)(t1 - t0);
        if (need == 0)
            continue;
        if (r1 == r0 && t1 - t0 == 1)
            continue; /* one truth row, no list: nothing to look up or repeat */
        unsigned bits = 3;
        while (((size_t)1 << bits) < 2 * need)
            bits++;
        size_t cap = (size_t)1 << bits, mask = cap - 1;
        if (table_reserve(&t, cap) < 0) {
            status = NO_MEMORY;
            goto done;
        }
        if (++t.gen == 0) { /* wrapped: forget every stamp */
            for (size_t i = 0; i < t.cap; i++)
                t.slot[i].stamp = 0;
            t.gen = 1;
        }
        const uint32_t gen = t.gen;
        for (int64_t j = t0; j < t1; j++) {
            int64_t row = perm[j], x = ti[row];
            slot_t *s = &t.slot[slot_of(x, bits)];
            while (s->stamp == gen) {
                if (s->key == x) {
                    status = DUP_TRUTH;
                    goto done;
                }
                s = &t.slot[(size_t)(s - t.slot + 1) & mask];
            }
            s->stamp = gen;
            s->key = x;
            s->grade = tg[row];
            s->state = 0;
        }
        for (int64_t r = r0; r < r1; r++) {
            int64_t x = ri[r];
            slot_t *s = &t.slot[slot_of(x, bits)];
            double g = 0.0;
            for (;;) {
                if (s->stamp != gen) { /* not in the truth: remember it was listed */
                    s->stamp = gen;
                    s->key = x;
                    s->state = 2;
                    break;
                }
                if (s->key == x) {
                    if (s->state != 0) {
                        status = DUP_RECS;
                        goto done;
                    }
                    s->state = 1;
                    g = s->grade;
                    break;
                }
                s = &t.slot[(size_t)(s - t.slot + 1) & mask];
            }
            out_grade[r] = g;
            out_gain[r] = (g >= threshold && g > 0.0) ? g : 0.0;
            out_pos[r] = r - r0;
        }
    }
done:
    free(toff);
    free(fill);
    free(perm);
    free(t.slot);
    return status;
}

static PyObject *
join(PyObject *self, PyObject *args)
{
    PyObject *o[10];
    long long users;
    double threshold;
    Py_buffer b[10];
    static const char *names[10] = {"ru", "ri", "tu", "ti", "tg",
                                    "out_grade", "out_gain", "out_pos", "out_off", ""};
    int got = 0, status = OK;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOLdOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &users,
                          &threshold, &o[5], &o[6], &o[7], &o[8]))
        return NULL;
    for (; got < 9; got++) {
        Py_ssize_t size = (got == 4 || got == 5 || got == 6) ? sizeof(double) : sizeof(int64_t);
        if (take(o[got], &b[got], size, got >= 5, names[got]) < 0)
            goto fail;
    }
    Py_ssize_t n = b[0].len / 8, m = b[2].len / 8;
    if (users < 0 || b[1].len / 8 != n || b[3].len / 8 != m || b[4].len / 8 != m ||
        b[5].len / 8 != n || b[6].len / 8 != n || b[7].len / 8 != n ||
        b[8].len / 8 != users + 1) {
        PyErr_SetString(PyExc_ValueError, "join: array lengths do not match");
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    status = join_pass(b[0].buf, b[1].buf, n, b[2].buf, b[3].buf, b[4].buf, m, (int64_t)users,
                       threshold, b[5].buf, b[6].buf, b[7].buf, b[8].buf);
    Py_END_ALLOW_THREADS
    if (status == NO_MEMORY)
        PyErr_NoMemory();
    else
        result = PyLong_FromLong(status);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"join", join, METH_VARARGS,
     "join(ru, ri, tu, ti, tg, users, threshold, out_grade, out_gain, out_pos, out_off) -> status\n\n"
     "Grades, gains and list positions of ordered list rows (user codes ascending), and the\n"
     "list offsets per user. Status: 0 done, 1 an item twice in a list, 2 an item twice in a\n"
     "user's truth, 3 user codes not ascending, 4 a user code out of range."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "receval's optional compiled join (see numpy_engine).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&module);
}
