/*
 * receval._native: the plumbing of receval.engines.numpy_engine in single
 * passes — encoding sorted user ids, checking list order, joining ordered
 * lists with the truth, sorting each user's ideal grades, collecting the
 * relevant cells and filling the (users x positions) blocks the kernels read;
 * the propensity weights of the relevant pairs (grouped, sorted and summed per
 * user: relevant_weights, sort_runs, user_sums); the rows of an off-policy
 * log in an order of their own (group_order: by context, then by value);
 * the per-exponent buckets of receval.exact's exact sums; the bootstrap's counts
 * of resampled users (receval.analysis.stats); item-kNN's
 * neighbour lists and top-k lists (receval.workflow.baselines); and the
 * item-group tallies of list rows (receval.engines.driver).
 *
 * An optional accelerator: it does no metric arithmetic (every metric is
 * defined once, in receval.kernels). The NumPy path computes the same arrays
 * (by sorting); tests check both bit for bit, and the NumPy path is used
 * whenever this module is not built, when RECEVAL_NATIVE=0, and for every
 * input in which join() finds a duplicate (so that errors and
 * duplicates="keep" have one implementation).
 *
 * Arrays are passed through the buffer protocol (C-contiguous, checked item
 * sizes), so building needs a C compiler and Python's headers, not NumPy's.
 * The GIL is released during the pass: chunks run on several threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, DUP_RECS = 1, DUP_TRUTH = 2, NOT_SORTED = 3, OUT_OF_RANGE = 4, NO_MEMORY = 5 };

/* Hot loops built twice, for any x86-64 and for AVX2, the better one chosen
 * when the module loads (GCC's and Clang's function multiversioning, on
 * Linux's ifunc); elsewhere built once. Same arithmetic either way: the
 * clones differ in instructions, not in results (integer work only). */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    (!defined(__clang__) || __clang_major__ >= 14)
#define CLONED __attribute__((target_clones("avx2", "default")))
#else
#define CLONED
#endif

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

/* One slot of a user's open-addressing table: an item, the user it belongs
 * to (a stamp, so the table is never cleared between users) and its state:
 * for a truth item, twice its place among the user's truth rows, plus 1 once
 * it is in the list; LISTED_ONLY for an item of the list only (odd: a second
 * row of it is a repeat, like a truth item listed twice). 16 bytes, so a slot
 * is found by a shift; a truth item's grade is in the table's grade array, at
 * the slot's index (read only on a hit). */
typedef struct {
    int64_t key;
    uint32_t stamp;
    uint32_t state;
} slot_t;

#define LISTED_ONLY UINT32_MAX

typedef struct {
    slot_t *slot;
    double *grade, *gain; /* a truth item's, at its slot's index */
    size_t cap;
    uint32_t gen;
} table_t;

static int
table_reserve(table_t *t, size_t cap)
{
    if (cap <= t->cap)
        return 0;
    free(t->slot);
    free(t->grade);
    t->slot = calloc(cap, sizeof(slot_t));
    t->grade = malloc(2 * cap * sizeof(double));
    t->gain = t->grade ? t->grade + cap : NULL;
    t->cap = cap;
    t->gen = 0;
    return t->slot && t->grade ? 0 : -1;
}

/* What every user's part of the join reads and writes (join_pass). */
typedef struct {
    const int64_t *ri, *ti, *perm;
    const double *tg;
    double threshold;
    double *out_grade, *out_gain;
    int64_t *hit_row, *hit_truth, *hit_pos;
    Py_ssize_t hit_cap, hits;
    table_t t;
} join_t;

/* A new stamp for the table's slots (a user's table starts empty). */
static int
table_open(table_t *t, size_t cap)
{
    if (table_reserve(t, cap) < 0)
        return NO_MEMORY;
    if (++t->gen == 0) { /* wrapped: forget every stamp */
        for (size_t i = 0; i < t->cap; i++)
            t->slot[i].stamp = 0;
        t->gen = 1;
    }
    return OK;
}

/* The truth rows t0..t1-1 (places in perm) of one user into the table (of
 * 2**bits slots, opened): each item's state twice its place, its grade and
 * its gain (the grade when >= threshold and > 0, else 0) beside. DUP_TRUTH
 * for an item twice. */
static int
truth_in(join_t *J, int64_t t0, int64_t t1, unsigned bits)
{
    slot_t *restrict slot = J->t.slot;
    const size_t mask = ((size_t)1 << bits) - 1;
    const uint32_t gen = J->t.gen;
    for (int64_t j = t0; j < t1; j++) {
        int64_t row = J->perm[j], x = J->ti[row];
        size_t h = slot_of(x, bits);
        while (slot[h].stamp == gen) {
            if (slot[h].key == x)
                return DUP_TRUTH;
            h = (h + 1) & mask;
        }
        double g = J->tg[row];
        slot[h].stamp = gen;
        slot[h].key = x;
        slot[h].state = (uint32_t)(j - t0) << 1;
        J->t.grade[h] = g;
        J->t.gain[h] = (g >= J->threshold && g > 0.0) ? g : 0.0;
    }
    return OK;
}

/* One user's list rows r0..r1-1 against its truth rows t0..t1-1 in one table
 * (8 slots a row at least): a list item is found (a truth item, marked
 * listed) or inserted (listed only), so a repeat is met in the table. Writes
 * each row's grade (out_grade given), its gain and (hits wanted) the pairs of
 * the rows of gain > 0. */
static int
join_user(join_t *J, int64_t r0, int64_t r1, int64_t t0, int64_t t1)
{
    size_t need = (size_t)(r1 - r0) + (size_t)(t1 - t0);
    unsigned bits = 3;
    while (((size_t)1 << bits) < 8 * need)
        bits++;
    int status = table_open(&J->t, (size_t)1 << bits);
    if (status == OK)
        status = truth_in(J, t0, t1, bits);
    if (status != OK)
        return status;
    slot_t *restrict slot = J->t.slot;
    const double *restrict sgrade = J->t.grade, *restrict sgain = J->t.gain;
    const int64_t *restrict ri = J->ri;
    double *restrict out_grade = J->out_grade, *restrict out_gain = J->out_gain;
    const size_t mask = ((size_t)1 << bits) - 1;
    const uint32_t gen = J->t.gen;
    const int pairs = J->hit_row != NULL;
    for (int64_t r = r0; r < r1; r++) {
        int64_t x = ri[r];
        size_t h = slot_of(x, bits);
        double g = 0.0, gain = 0.0;
        uint32_t state = LISTED_ONLY;
        for (;;) {
            slot_t *sl = &slot[h];
            if (sl->stamp != gen) { /* not in the truth: remember it was listed */
                sl->stamp = gen;
                sl->key = x;
                sl->state = LISTED_ONLY;
                break;
            }
            if (sl->key == x) {
                if (sl->state & 1)
                    return DUP_RECS;
                state = sl->state;
                sl->state = state | 1;
                g = sgrade[h];
                gain = sgain[h];
                break;
            }
            h = (h + 1) & mask;
        }
        if (out_grade)
            out_grade[r] = g;
        out_gain[r] = gain;
        if (pairs && gain > 0.0) {
            if (J->hits >= J->hit_cap)
                return NO_MEMORY;
            J->hit_row[J->hits] = r;
            J->hit_truth[J->hits] = J->perm[t0 + (state >> 1)];
            if (J->hit_pos)
                J->hit_pos[J->hits] = r - r0;
            J->hits++;
        }
    }
    return OK;
}

/*
 * The pass. ru: user code of each list row, ascending (rows in list order);
 * ri: item code; tu, ti, tg: the truth's user codes, item codes and grades
 * (any order). Writes, per list row, the item's grade in the user's truth
 * (0 when absent), its gain (the grade when grade >= threshold and > 0, else
 * 0) and its 0-based position in the list; and the list offsets per user.
 * With hit_row (and hit_truth), also the pairs of the rows whose gain is > 0:
 * hit_row[c] the list row, hit_truth[c] its truth row and (when hit_pos is
 * not NULL) hit_pos[c] its 0-based position, in list order, c < *hits <=
 * hit_cap (the propensity weights of receval.engines.numpy_engine: one join
 * gives the grade and the weight of a row).
 */
static int
join_pass(const int64_t *ru, const int64_t *ri, Py_ssize_t n, const int64_t *tu,
          const int64_t *ti, const double *tg, Py_ssize_t m, int64_t users, double threshold,
          double *out_grade, double *out_gain, int64_t *out_off, int64_t *hit_row,
          int64_t *hit_truth, int64_t *hit_pos, Py_ssize_t hit_cap, Py_ssize_t *hits,
          int given)
{
    int status = OK;
    int64_t *toff = calloc((size_t)users + 1, sizeof(int64_t));
    int64_t *fill = malloc(((size_t)users + 1) * sizeof(int64_t));
    int64_t *perm = malloc(((size_t)m + 1) * sizeof(int64_t));
    join_t J = {ri,      ti,        perm,    tg,      threshold, out_grade, out_gain,
                hit_row, hit_truth, hit_pos, hit_cap, 0,         {0}};
    if (!toff || !fill || !perm) {
        status = NO_MEMORY;
        goto done;
    }
    /* list offsets: rows of user u are out_off[u] .. out_off[u + 1] - 1 (given:
     * already there, from the runs of the users' ids; only checked) */
    if (given) {
        if (out_off[0] != 0 || out_off[users] != n) {
            status = OUT_OF_RANGE;
            goto done;
        }
        for (int64_t u = 0; u < users; u++)
            if (out_off[u + 1] < out_off[u]) {
                status = NOT_SORTED;
                goto done;
            }
    } else {
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
        if (t1 - t0 > INT32_MAX) { /* a truth row's place must fit the state */
            status = NO_MEMORY;
            goto done;
        }
        if ((status = join_user(&J, r0, r1, t0, t1)) != OK)
            goto done;
    }
done:
    if (hits)
        *hits = J.hits;
    free(toff);
    free(fill);
    free(perm);
    free(J.t.slot);
    free(J.t.grade);
    return status;
}

static PyObject *
join(PyObject *self, PyObject *args)
{
    PyObject *o[11] = {NULL}, *given = NULL;
    long long users;
    double threshold;
    Py_buffer b[11];
    static const char *names[11] = {"ru",       "ri",      "tu",      "ti",
                                    "tg",       "out_grade", "out_gain", "out_off",
                                    "hit_row",  "hit_truth", "hit_pos"};
    int got = 0, status = OK;
    Py_ssize_t hits = 0;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOLdOOO|OOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &users,
                          &threshold, &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &given))
        return NULL;
    int offsets_given = given != NULL && PyObject_IsTrue(given) == 1;
    int pairs = o[8] != NULL && o[8] != Py_None; /* the hits' (list row, truth row) pairs */
    int with_pos = pairs && o[10] != NULL && o[10] != Py_None;
    int wanted = with_pos ? 11 : pairs ? 10 : 8;
    for (; got < wanted; got++) {
        Py_ssize_t size = (got == 4 || got == 5 || got == 6) ? sizeof(double) : sizeof(int64_t);
        int optional = got == 5; /* out_grade: None to skip */
        if (optional && o[got] == Py_None) {
            b[got].obj = NULL;
            b[got].buf = NULL;
            b[got].len = -1;
            continue;
        }
        if (take(o[got], &b[got], size, got >= 5, names[got]) < 0)
            goto fail;
    }
    Py_ssize_t n = b[0].len / 8, m = b[2].len / 8;
    if (users < 0 || b[1].len / 8 != n || b[3].len / 8 != m || b[4].len / 8 != m ||
        (b[5].obj && b[5].len / 8 != n) || b[6].len / 8 != n || b[7].len / 8 != users + 1 ||
        (pairs && b[9].len != b[8].len) || (with_pos && b[10].len != b[8].len)) {
        PyErr_SetString(PyExc_ValueError, "join: array lengths do not match");
        goto fail;
    }
    Py_ssize_t cap = pairs ? b[8].len / 8 : 0;
    Py_BEGIN_ALLOW_THREADS
    status = join_pass(b[0].buf, b[1].buf, n, b[2].buf, b[3].buf, b[4].buf, m, (int64_t)users,
                       threshold, b[5].buf, b[6].buf, b[7].buf, pairs ? b[8].buf : NULL,
                       pairs ? b[9].buf : NULL, with_pos ? b[10].buf : NULL, cap, &hits,
                       offsets_given);
    Py_END_ALLOW_THREADS
    /* NO_MEMORY too: the caller takes the NumPy path */
    result = pairs ? Py_BuildValue("(ln)", (long)status, hits) : PyLong_FromLong(status);
fail:
    for (int i = 0; i < got; i++)
        if (b[i].obj != NULL)
            PyBuffer_Release(&b[i]);
    return result;
}


/* Optional buffers: None gives NULL. */
static int
take_opt(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *name)
{
    if (obj == Py_None) {
        view->obj = NULL;
        view->buf = NULL;
        view->len = 0;
        return 0;
    }
    return take(obj, view, itemsize, 0, name);
}

static void
release(Py_buffer *view)
{
    if (view->obj != NULL)
        PyBuffer_Release(view);
}

/* in_order(ru, rank, score, key) -> bool: are the rows in list order — users
 * ascending, then rank strictly ascending (rank given: 4- or 8-byte signed
 * integers, so that an int32 column is read as it is, without a cast), or
 * score descending with equal scores in ascending key (score and key given)? */
static PyObject *
in_order(PyObject *self, PyObject *args)
{
    PyObject *o[4];
    Py_buffer b[4] = {{0}};
    PyObject *result = NULL;
    int ok = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3]))
        return NULL;
    if (take(o[0], &b[0], 8, 0, "ru") < 0)
        return NULL;
    Py_ssize_t rank_size = 8;
    if (o[1] != Py_None) {
        if (PyObject_GetBuffer(o[1], &b[1], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            goto fail;
        rank_size = b[1].itemsize;
        if ((rank_size != 4 && rank_size != 8) || b[1].ndim > 1 || b[1].format == NULL ||
            strchr("ilq", b[1].format[strlen(b[1].format) - 1]) == NULL) {
            PyErr_SetString(PyExc_ValueError,
                            "rank: expected a 1-d array of 4- or 8-byte signed integers");
            goto fail;
        }
    }
    if (take_opt(o[2], &b[2], 8, "score") < 0 || take_opt(o[3], &b[3], 8, "key") < 0)
        goto fail;
    Py_ssize_t n = b[0].len / 8;
    const int64_t *ru = b[0].buf, *rank = b[1].buf, *key = b[3].buf;
    const int32_t *rank32 = rank_size == 4 ? (const int32_t *)b[1].buf : NULL;
    const double *score = b[2].buf;
    if ((rank && b[1].len / rank_size != n) || (!rank && (!score || !key)) ||
        (score && (b[2].len / 8 != n || !key || b[3].len / 8 != n))) {
        PyErr_SetString(PyExc_ValueError, "in_order: give rank, or score and key, of every row");
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 1; i < n && ok; i++) {
        if (ru[i] != ru[i - 1])
            ok = ru[i] > ru[i - 1];
        else if (rank32)
            ok = rank32[i] > rank32[i - 1];
        else if (rank)
            ok = rank[i] > rank[i - 1];
        else
            ok = score[i] < score[i - 1] || (score[i] == score[i - 1] && key[i] > key[i - 1]);
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ok);
fail:
    for (int i = 0; i < 4; i++)
        release(&b[i]);
    return result;
}

/* runs(a, out_values) -> count: the distinct values of a sorted array, in
 * order, written to out_values; -1 when a is not sorted ascending. */
static PyObject *
runs(PyObject *self, PyObject *args)
{
    PyObject *o[2];
    Py_buffer b[2];
    Py_ssize_t count = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &o[0], &o[1]))
        return NULL;
    if (take(o[0], &b[0], 8, 0, "a") < 0)
        return NULL;
    if (take(o[1], &b[1], 8, 1, "out_values") < 0) {
        PyBuffer_Release(&b[0]);
        return NULL;
    }
    Py_ssize_t n = b[0].len / 8;
    if (b[1].len / 8 < n) {
        PyBuffer_Release(&b[0]);
        PyBuffer_Release(&b[1]);
        PyErr_SetString(PyExc_ValueError, "runs: out_values is shorter than a");
        return NULL;
    }
    const int64_t *a = b[0].buf;
    int64_t *out = b[1].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || a[i] > a[i - 1]) {
            out[count++] = a[i];
        } else if (a[i] < a[i - 1]) {
            count = -1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b[0]);
    PyBuffer_Release(&b[1]);
    return PyLong_FromSsize_t(count);
}

/* codes(a, uniq, out) -> bool: the index in uniq (sorted, distinct) of every
 * value of a (sorted), by one walk; False when a value is not in uniq. */
static PyObject *
codes(PyObject *self, PyObject *args)
{
    PyObject *o[3];
    Py_buffer b[3];
    int got = 0, ok = 1;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2]))
        return NULL;
    for (; got < 3; got++)
        if (take(o[got], &b[got], 8, got == 2, got == 0 ? "a" : got == 1 ? "uniq" : "out") < 0)
            goto fail;
    Py_ssize_t n = b[0].len / 8, u = b[1].len / 8;
    if (b[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "codes: out and a differ in length");
        goto fail;
    }
    const int64_t *a = b[0].buf, *uniq = b[1].buf;
    int64_t *out = b[2].buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        while (j < u && uniq[j] < a[i])
            j++;
        if (j == u || uniq[j] != a[i]) {
            ok = 0;
            break;
        }
        out[i] = j;
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ok);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

/* user_walk(a, rank, out_values, out_starts) -> (count, in_order): one walk
 * along a column of user ids (int64) giving what runs(), codes() and
 * in_order() each walked it for: the value of each run and the row it starts
 * at (out_values, out_starts; both None: the order only checked), count -1
 * when a does not ascend, -2 when the outputs hold fewer runs than a has
 * (nothing else is then known); and in_order, whether
 * rank (4- or 8-byte signed integers, one per row) strictly ascends within
 * every run, i.e. the rows are in list order by rank (False when rank is None
 * or a does not ascend). */
#define WALK_BLOCK 16

/* The walk of user_walk() (its outputs as there; *ordered and *full updated).
 * Built also for AVX2 where the compiler can (the int64 comparisons of the
 * branch-free loops vectorise only from SSE4.2 on), chosen at load time. */
CLONED static Py_ssize_t
walk(const int64_t *a, const int32_t *r32, const int64_t *r64, Py_ssize_t n, int64_t *values,
     int64_t *starts, Py_ssize_t cap, int *ordered_out, int *full_out)
{
    Py_ssize_t count = 0;
    int ordered = *ordered_out, full = 0;
    if (!values && !r32 && !r64) {
        /* the order only: one branch-free pass (vectorised) */
        int64_t down = 0, changes = 0;
        for (Py_ssize_t i = 1; i < n; i++) {
            down |= a[i] < a[i - 1];
            changes += a[i] != a[i - 1];
        }
        count = down ? -1 : (n ? 1 + changes : 0);
    } else {
        int64_t prev = 0;
        Py_ssize_t i = 0;
        while (i < n) {
            /* a block of WALK_BLOCK rows all of the previous row's user (most
             * blocks, lists being long): tested, and its ranks checked, in
             * branch-free loops; any other block row by row */
            if (i > 0 && i + WALK_BLOCK <= n) {
                int64_t other = 0;
                for (Py_ssize_t j = i; j < i + WALK_BLOCK; j++)
                    other |= a[j] ^ prev;
                if (!other) {
                    int ok = 1;
                    if (r32)
                        for (Py_ssize_t j = i; j < i + WALK_BLOCK; j++)
                            ok &= r32[j] > r32[j - 1];
                    else if (r64)
                        for (Py_ssize_t j = i; j < i + WALK_BLOCK; j++)
                            ok &= r64[j] > r64[j - 1];
                    ordered &= ok;
                    i += WALK_BLOCK;
                    continue;
                }
            }
            Py_ssize_t end = i + WALK_BLOCK < n ? i + WALK_BLOCK : n;
            for (; i < end; i++) {
                int64_t x = a[i];
                if (i == 0 || x != prev) {
                    if (i && x < prev) {
                        count = -1;
                        break;
                    }
                    if (values) {
                        if (count >= cap) {
                            full = 1;
                            break;
                        }
                        values[count] = x;
                        starts[count] = i;
                    }
                    count++;
                    prev = x;
                } else if (r32) {
                    ordered &= r32[i] > r32[i - 1];
                } else if (r64) {
                    ordered &= r64[i] > r64[i - 1];
                }
            }
            if (count < 0 || full)
                break;
        }
    }
    *ordered_out = ordered;
    *full_out = full;
    return count;
}

static PyObject *
user_walk(PyObject *self, PyObject *args)
{
    PyObject *o[4];
    Py_buffer b[4] = {{0}};
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3]))
        return NULL;
    if (take(o[0], &b[0], 8, 0, "a") < 0)
        return NULL;
    Py_ssize_t rank_size = 8;
    if (o[1] != Py_None) {
        if (PyObject_GetBuffer(o[1], &b[1], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            goto fail;
        rank_size = b[1].itemsize;
        if ((rank_size != 4 && rank_size != 8) || b[1].ndim > 1 || b[1].format == NULL ||
            strchr("ilq", b[1].format[strlen(b[1].format) - 1]) == NULL) {
            PyErr_SetString(PyExc_ValueError,
                            "rank: expected a 1-d array of 4- or 8-byte signed integers");
            goto fail;
        }
    }
    if (o[2] != Py_None && take(o[2], &b[2], 8, 1, "out_values") < 0)
        goto fail;
    if (o[3] != Py_None && take(o[3], &b[3], 8, 1, "out_starts") < 0)
        goto fail;
    Py_ssize_t n = b[0].len / 8;
    if ((b[1].obj && b[1].len / rank_size != n) || (b[2].obj == NULL) != (b[3].obj == NULL)) {
        PyErr_SetString(PyExc_ValueError,
                        "user_walk: give a rank per row, and both outputs or neither");
        goto fail;
    }
    Py_ssize_t cap = b[2].obj ? (b[2].len < b[3].len ? b[2].len : b[3].len) / 8 : 0;
    const int64_t *a = b[0].buf;
    const int32_t *r32 = b[1].obj && rank_size == 4 ? b[1].buf : NULL;
    const int64_t *r64 = b[1].obj && rank_size == 8 ? b[1].buf : NULL;
    int64_t *values = b[2].buf, *starts = b[3].buf;
    Py_ssize_t count = 0;
    int ordered = b[1].obj != NULL, full = 0;
    Py_BEGIN_ALLOW_THREADS
    count = walk(a, r32, r64, n, values, starts, cap, &ordered, &full);
    Py_END_ALLOW_THREADS
    if (full)
        count = -2;
    result = Py_BuildValue("(nO)", count, count >= 0 && ordered ? Py_True : Py_False);
fail:
    for (int i = 0; i < 4; i++)
        release(&b[i]);
    return result;
}

/* spread(values, starts, out): out[starts[k] .. starts[k + 1] - 1] = values[k]
 * (the last run to the end of out); starts ascending from 0. */
static PyObject *
spread(PyObject *self, PyObject *args)
{
    PyObject *o[3];
    Py_buffer b[3];
    int got = 0, bad = 0;
    PyObject *result = NULL;
    static const char *names[3] = {"values", "starts", "out"};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2]))
        return NULL;
    for (; got < 3; got++)
        if (take(o[got], &b[got], 8, got == 2, names[got]) < 0)
            goto fail;
    Py_ssize_t k = b[0].len / 8, n = b[2].len / 8;
    if (b[1].len / 8 != k || (k == 0) != (n == 0)) {
        PyErr_SetString(PyExc_ValueError, "spread: values and starts differ in length");
        goto fail;
    }
    const int64_t *values = b[0].buf, *starts = b[1].buf;
    int64_t *out = b[2].buf;
    Py_BEGIN_ALLOW_THREADS
    if (k && starts[0] != 0)
        bad = 1;
    for (Py_ssize_t j = 0; j < k && !bad; j++) {
        int64_t s = starts[j], e = j + 1 < k ? starts[j + 1] : n, v = values[j];
        if (e < s || e > n) {
            bad = 1;
            break;
        }
        for (int64_t i = s; i < e; i++)
            out[i] = v;
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "spread: starts must ascend from 0 within out");
    else
        result = Py_NewRef(Py_None);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

static void sort_ascending(double *x, int64_t len);

/* The grades of one user descending in place when every one is a whole
 * number from 1 to 64 (stars, levels: the usual grades), by counting them;
 * else 0, nothing changed. */
static int
small_grades_descending(double *x, int64_t len)
{
    int32_t count[65];
    int top = 0;
    memset(count, 0, sizeof(count));
    for (int64_t i = 0; i < len; i++) {
        double v = x[i];
        if (!(v >= 1.0 && v <= 64.0) || v != (double)(int)v)
            return 0;
        int c = (int)v;
        count[c]++;
        top = c > top ? c : top;
    }
    int64_t at = 0;
    for (int c = top; c >= 1; c--)
        for (int32_t k = count[c]; k > 0; k--)
            x[at++] = (double)c;
    return 1;
}

/* ideal(tu, grades, users, threshold, out_grades, out_off) -> count: the
 * grades >= threshold and > 0 of each user, sorted descending, users in code
 * order (out_off: users + 1 offsets). */
static PyObject *
ideal(PyObject *self, PyObject *args)
{
    PyObject *o[4];
    long long users;
    double threshold;
    Py_buffer b[4];
    int got = 0;
    Py_ssize_t count = -1;
    static const char *names[4] = {"tu", "grades", "out_grades", "out_off"};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLdOO", &o[0], &o[1], &users, &threshold, &o[2], &o[3]))
        return NULL;
    for (; got < 4; got++)
        if (take(o[got], &b[got], 8, got >= 2, names[got]) < 0)
            goto fail;
    Py_ssize_t m = b[0].len / 8;
    if (users < 0 || b[1].len / 8 != m || b[2].len / 8 < m || b[3].len / 8 != users + 1) {
        PyErr_SetString(PyExc_ValueError, "ideal: array lengths do not match");
        goto fail;
    }
    const int64_t *tu = b[0].buf;
    const double *g = b[1].buf;
    double *out = b[2].buf;
    int64_t *off = b[3].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    /* users ascending (the usual truth): one pass, each kept grade written
     * in place, branch-free; else a counting sort by user */
    int64_t last = 0, kept = 0;
    Py_ssize_t j = 0;
    off[0] = 0;
    for (; j < m; j++) {
        int64_t x = tu[j];
        if (x < last || x >= users)
            break;
        while (last < x)
            off[++last] = kept;
        out[kept] = g[j];
        kept += g[j] >= threshold && g[j] > 0.0;
    }
    if (j == m) {
        while (last < users)
            off[++last] = kept;
    } else if (tu[j] < 0 || tu[j] >= users) {
        bad = 1;
    } else {
        memset(off, 0, ((size_t)users + 1) * sizeof(int64_t));
        for (j = 0; j < m; j++) {
            if (tu[j] < 0 || tu[j] >= users) {
                bad = 1;
                break;
            }
            if (g[j] >= threshold && g[j] > 0.0)
                off[tu[j] + 1]++;
        }
        if (!bad) {
            for (int64_t u = 0; u < users; u++)
                off[u + 1] += off[u];
            int64_t *at = malloc(((size_t)users + 1) * sizeof(int64_t));
            if (at == NULL) {
                bad = 2;
            } else {
                memcpy(at, off, ((size_t)users + 1) * sizeof(int64_t));
                for (j = 0; j < m; j++)
                    if (g[j] >= threshold && g[j] > 0.0)
                        out[at[tu[j]]++] = g[j];
                free(at);
            }
        }
    }
    if (!bad) {
        for (int64_t u = 0; u < users; u++) {
            /* ascending by sorting networks and min/max insertion (no
             * mispredicted branches on the usual few grades), then reversed:
             * the one descending sequence of the values */
            double *x = out + off[u];
            int64_t len = off[u + 1] - off[u];
            if (len > 4 && small_grades_descending(x, len))
                continue;
            sort_ascending(x, len);
            for (int64_t i = 0, k = len - 1; i < k; i++, k--) {
                double v = x[i];
                x[i] = x[k];
                x[k] = v;
            }
        }
        count = off[users];
    }
    Py_END_ALLOW_THREADS
    if (bad == 1)
        PyErr_SetString(PyExc_ValueError, "ideal: a user code is out of range");
    else if (bad == 2)
        PyErr_NoMemory();
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return count < 0 ? NULL : PyLong_FromSsize_t(count);
}

/* The few values of one user ascending, in place. Up to 4 or 8, a sorting
 * network (sort4, sort8); up to 16, a branchless insertion: inserting v into the sorted a[0..i-1] gives b[0] = min(a[0], v),
 * b[k] = max(a[k-1], min(a[k], v)) and b[i] = max(a[i-1], v), written from
 * the top down (only minimum and maximum instructions: random weights cost no
 * mispredicted branches). Beyond 16, Shell sort (Ciura's gaps, then 2.25x).
 * Values compare as numbers (no NaN): the result is the one sorted sequence,
 * whatever the input order. */
/* a < b ? a : b and a > b ? a : b: one minimum or maximum instruction each */
static inline double
lesser(double a, double b)
{
    return a < b ? a : b;
}

static inline double
greater(double a, double b)
{
    return a > b ? a : b;
}

#define CE(a, b)                                                                   \
    do {                                                                           \
        double a_ = v[a], b_ = v[b];                                               \
        v[a] = lesser(a_, b_);                                                     \
        v[b] = greater(a_, b_);                                                    \
    } while (0)

/* Up to 8 values ascending: padded with +inf to 8, then Batcher's odd-even
 * merge network (19 compare-exchanges, each a minimum and a maximum: no
 * branch on the data). */
static void
sort8(double *x, int64_t len)
{
    double v[8];
    for (int i = 0; i < 8; i++)
        v[i] = i < len ? x[i] : HUGE_VAL;
    CE(0, 1); CE(2, 3); CE(4, 5); CE(6, 7);
    CE(0, 2); CE(1, 3); CE(4, 6); CE(5, 7);
    CE(1, 2); CE(5, 6);
    CE(0, 4); CE(1, 5); CE(2, 6); CE(3, 7);
    CE(2, 4); CE(3, 5);
    CE(1, 2); CE(3, 4); CE(5, 6);
    for (int i = 0; i < len; i++)
        x[i] = v[i];
}

/* Up to 4 values ascending: padded with +inf to 4, then a 5-exchange network. */
static void
sort4(double *x, int64_t len)
{
    double v[4];
    for (int i = 0; i < 4; i++)
        v[i] = i < len ? x[i] : HUGE_VAL;
    CE(0, 1); CE(2, 3);
    CE(0, 2); CE(1, 3);
    CE(1, 2);
    for (int i = 0; i < len; i++)
        x[i] = v[i];
}
#undef CE

static void
sort_ascending(double *x, int64_t len)
{
    if (len <= 4) {
        sort4(x, len);
        return;
    }
    if (len <= 8) {
        sort8(x, len);
        return;
    }
    if (len <= 16) {
        for (int64_t i = 1; i < len; i++) {
            double v = x[i];
            x[i] = greater(x[i - 1], v);
            for (int64_t k = i - 1; k > 0; k--)
                x[k] = greater(x[k - 1], lesser(x[k], v));
            x[0] = lesser(x[0], v);
        }
        return;
    }
    static const int64_t ciura[] = {1, 4, 10, 23, 57, 132, 301, 701, 1750};
    int64_t gaps[64], count = 0;
    for (int i = 0; i < 9 && ciura[i] < len; i++)
        gaps[count++] = ciura[i];
    while (count < 64 && (double)gaps[count - 1] * 2.25 < (double)len)
        gaps[count] = (int64_t)((double)gaps[count - 1] * 2.25), count++;
    for (int64_t g = count - 1; g >= 0; g--) {
        int64_t gap = gaps[g];
        for (int64_t i = gap; i < len; i++) {
            double v = x[i];
            int64_t k = i;
            for (; k >= gap && x[k - gap] > v; k -= gap)
                x[k] = x[k - gap];
            x[k] = v;
        }
    }
}

/* The relevant rows' weights when their users come in ascending order (the
 * usual case: one pass). Returns 0, or -1 at the first relevant row whose
 * user is below the last one's (then the caller groups them:
 * relevant_grouped). */
static int
relevant_in_order(const int64_t *tu, const double *g, const double *p, Py_ssize_t m,
                  int64_t users, double threshold, double *w, int64_t *wu, int64_t *off,
                  Py_ssize_t *count, Py_ssize_t *missing, Py_ssize_t *first)
{
    int64_t cu = 0; /* off[0..cu] are written */
    Py_ssize_t c = 0, lost = 0, at = -1;
    off[0] = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (!(g[j] >= threshold && g[j] > 0.0))
            continue;
        int64_t u = tu[j];
        if (u < cu)
            return -1;
        while (cu < u)
            off[++cu] = c;
        if (p[j] != p[j] && lost++ == 0)
            at = j;
        w[c] = p[j];
        wu[c] = u;
        c++;
    }
    while (cu < users)
        off[++cu] = c;
    *count = c;
    *missing = lost;
    *first = at;
    return 0;
}

/* The same for users in any order: counted, then placed (a counting sort,
 * rows of a user in their order). */
static int
relevant_grouped(const int64_t *tu, const double *g, const double *p, Py_ssize_t m,
                 int64_t users, double threshold, double *w, int64_t *wu, int64_t *off,
                 Py_ssize_t *count, Py_ssize_t *missing, Py_ssize_t *first)
{
    memset(off, 0, ((size_t)users + 1) * sizeof(int64_t));
    *missing = 0;
    *first = -1;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (!(g[j] >= threshold && g[j] > 0.0))
            continue;
        if (p[j] != p[j] && (*missing)++ == 0)
            *first = j;
        off[tu[j] + 1]++;
    }
    for (int64_t u = 0; u < users; u++)
        off[u + 1] += off[u];
    int64_t *at = malloc(((size_t)users + 1) * sizeof(int64_t));
    if (at == NULL)
        return NO_MEMORY;
    memcpy(at, off, ((size_t)users + 1) * sizeof(int64_t));
    for (Py_ssize_t j = 0; j < m; j++)
        if (g[j] >= threshold && g[j] > 0.0) {
            int64_t c = at[tu[j]]++;
            w[c] = p[j];
            wu[c] = tu[j];
        }
    free(at);
    *count = off[users];
    return OK;
}

/* relevant_weights(tu, grades, weights, users, threshold, out_w, out_user,
 * out_off) -> (status, count, missing, first): the weight (1/p) of every
 * relevant truth row (grade >= threshold and > 0), grouped by user in code
 * order, each user's in the truth's order (sort_runs then sorts them):
 * out_w[c], its user out_user[c], user u's weights out_off[u]..out_off[u+1]-1.
 * missing: the relevant rows whose weight is NaN (no propensity given),
 * first: the first of them (the caller raises). Status: 0 done, 4 a user
 * code out of range, 5 out of memory. */
static PyObject *
relevant_weights(PyObject *self, PyObject *args)
{
    PyObject *o[6];
    long long users;
    double threshold;
    Py_buffer b[6];
    int got = 0, status = OK;
    Py_ssize_t count = 0, missing = 0, first = -1;
    PyObject *result = NULL;
    static const char *names[6] = {"tu", "grades", "weights", "out_w", "out_user", "out_off"};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLdOOO", &o[0], &o[1], &o[2], &users, &threshold, &o[3],
                          &o[4], &o[5]))
        return NULL;
    for (; got < 6; got++)
        if (take(o[got], &b[got], 8, got >= 3, names[got]) < 0)
            goto fail;
    Py_ssize_t m = b[0].len / 8;
    if (users < 0 || b[1].len / 8 != m || b[2].len / 8 != m || b[3].len / 8 < m ||
        b[4].len / 8 < m || b[5].len / 8 != users + 1) {
        PyErr_SetString(PyExc_ValueError, "relevant_weights: array lengths do not match");
        goto fail;
    }
    const int64_t *tu = b[0].buf;
    const double *g = b[1].buf, *p = b[2].buf;
    double *w = b[3].buf;
    int64_t *wu = b[4].buf, *off = b[5].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < m; j++)
        if (tu[j] < 0 || tu[j] >= users) {
            status = OUT_OF_RANGE;
            break;
        }
    if (status == OK &&
        relevant_in_order(tu, g, p, m, (int64_t)users, threshold, w, wu, off, &count, &missing,
                          &first) < 0)
        status = relevant_grouped(tu, g, p, m, (int64_t)users, threshold, w, wu, off, &count,
                                  &missing, &first);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(lnnn)", (long)status, count, missing, first);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

/* sort_runs(off, values): each run values[off[u]..off[u+1]-1] sorted
 * ascending in place (sort_ascending): a user's weights in the one order
 * that does not depend on the truth's. */
static PyObject *
sort_runs(PyObject *self, PyObject *args)
{
    PyObject *o[2];
    Py_buffer b[2];
    int got = 0;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &o[0], &o[1]))
        return NULL;
    for (; got < 2; got++)
        if (take(o[got], &b[got], 8, got == 1, got == 0 ? "off" : "values") < 0)
            goto fail;
    const int64_t *off = b[0].buf;
    Py_ssize_t runs = b[0].len / 8 - 1, n = b[1].len / 8;
    if (runs < 0 || off[0] < 0 || off[runs] > n) {
        PyErr_SetString(PyExc_ValueError, "sort_runs: offsets outside the values");
        goto fail;
    }
    for (Py_ssize_t u = 0; u < runs; u++)
        if (off[u] > off[u + 1]) {
            PyErr_SetString(PyExc_ValueError, "sort_runs: offsets are not ascending");
            goto fail;
        }
    double *x = b[1].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t u = 0; u < runs; u++)
        if (off[u + 1] - off[u] > 1)
            sort_ascending(x + off[u], off[u + 1] - off[u]);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

/* A row of group_order: its keys (at most GROUP_KEYS, the first the most
 * significant; unused ones 0) as order_bits, and its index. */
#define GROUP_KEYS 3
typedef struct {
    uint64_t key[GROUP_KEYS];
    int64_t row;
} keyed_t;

/* A double as an unsigned integer of the same order as NumPy sorts doubles:
 * -0.0 equal to 0.0, NaN (any sign or payload) after every number and equal
 * to NaN. */
static inline uint64_t
order_bits(double x)
{
    if (x != x)
        return UINT64_MAX;
    if (x == 0.0)
        return 0x8000000000000000ULL; /* 0.0 and -0.0 */
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u >> 63) ? ~u : u | 0x8000000000000000ULL;
}

/* Whether a comes strictly before b, key by key. */
static inline int
keyed_before(const keyed_t *a, const keyed_t *b, int m)
{
    for (int j = 0; j < m; j++)
        if (a->key[j] != b->key[j])
            return a->key[j] < b->key[j];
    return 0;
}

/* x[0..len-1] sorted by keyed_before, stably (merge sort, insertion sort on
 * short runs; tmp: len / 2 slots). */
static void
keyed_sort(keyed_t *x, keyed_t *tmp, int64_t len, int m)
{
    if (len <= 24) {
        for (int64_t i = 1; i < len; i++) {
            keyed_t v = x[i];
            int64_t k = i;
            for (; k > 0 && keyed_before(&v, &x[k - 1], m); k--)
                x[k] = x[k - 1];
            x[k] = v;
        }
        return;
    }
    int64_t half = len / 2;
    keyed_sort(x, tmp, half, m);
    keyed_sort(x + half, tmp, len - half, m);
    if (!keyed_before(&x[half], &x[half - 1], m))
        return; /* already in order */
    memcpy(tmp, x, (size_t)half * sizeof(keyed_t));
    int64_t i = 0, j = half, k = 0;
    while (i < half && j < len)
        x[k++] = keyed_before(&x[j], &tmp[i], m) ? x[j++] : tmp[i++];
    while (i < half)
        x[k++] = tmp[i++];
}

/* group_order(groups, n_groups, out[, k0[, k1[, k2]]]) -> status: the rows
 * ordered by group (each in 0..n_groups-1), then by their keys k0, k1, k2
 * (float64 columns, k0 the most significant), into out (n int64): the
 * permutation np.lexsort((k2, k1, k0, groups)) gives (both are stable: rows
 * equal in the group and every key keep their order). A counting pass by
 * group; each row's keys (as order_bits) and index copied to its group's
 * next slot, reading the columns in order (32 bytes a row); then a stable
 * sort of each group's slots. Status: 0 done, 4 a group out of range, 5 out
 * of memory. */
static PyObject *
group_order(PyObject *self, PyObject *args)
{
    PyObject *o[5] = {NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t n_groups;
    Py_buffer b[5];
    int got = 0, status = OK;
    PyObject *result = NULL;
    static const char *names[5] = {"groups", "out", "k0", "k1", "k2"};
    (void)self;
    if (!PyArg_ParseTuple(args, "OnO|OOO", &o[0], &n_groups, &o[1], &o[2], &o[3], &o[4]))
        return NULL;
    for (; got < 5 && o[got] != NULL; got++)
        if (take(o[got], &b[got], 8, got == 1, names[got]) < 0)
            goto fail;
    Py_ssize_t n = b[0].len / 8;
    int m = got - 2;
    for (int j = 1; j < got; j++)
        if (b[j].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "group_order: array lengths do not match");
            goto fail;
        }
    if (n_groups < 0) {
        PyErr_SetString(PyExc_ValueError, "group_order: n_groups < 0");
        goto fail;
    }
    const int64_t *g = b[0].buf;
    int64_t *out = b[1].buf;
    const double *key[GROUP_KEYS] = {NULL, NULL, NULL};
    for (int j = 0; j < m; j++)
        key[j] = b[j + 2].buf;
    Py_BEGIN_ALLOW_THREADS
    int64_t *at = calloc((size_t)n_groups + 1, sizeof(int64_t));
    keyed_t *rows = NULL, *tmp = NULL;
    int64_t longest = 0;
    if (at == NULL)
        status = NO_MEMORY;
    for (Py_ssize_t i = 0; status == OK && i < n; i++) {
        if (g[i] < 0 || g[i] >= n_groups)
            status = OUT_OF_RANGE;
        else
            at[g[i] + 1]++;
    }
    for (Py_ssize_t u = 0; status == OK && u < n_groups; u++) {
        longest = at[u + 1] > longest ? at[u + 1] : longest;
        at[u + 1] += at[u]; /* at[u]: where group u's next row goes */
    }
    if (status == OK && m == 0) {
        for (Py_ssize_t i = 0; i < n; i++)
            out[at[g[i]]++] = i;
    } else if (status == OK) {
        rows = malloc(((size_t)n + 1) * sizeof(keyed_t));
        tmp = malloc((size_t)(longest / 2 + 1) * sizeof(keyed_t));
        if (rows == NULL || tmp == NULL)
            status = NO_MEMORY;
    }
    if (status == OK && m > 0) {
        for (Py_ssize_t i = 0; i < n; i++) {
            keyed_t *r = &rows[at[g[i]]++];
            for (int j = 0; j < GROUP_KEYS; j++)
                r->key[j] = j < m ? order_bits(key[j][i]) : 0;
            r->row = i;
        }
        int64_t lo = 0; /* at[u] is now group u's end */
        for (Py_ssize_t u = 0; u < n_groups; u++) {
            if (at[u] - lo > 1)
                keyed_sort(rows + lo, tmp, at[u] - lo, m);
            lo = at[u];
        }
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = rows[i].row;
    }
    free(tmp);
    free(rows);
    free(at);
    Py_END_ALLOW_THREADS
    result = PyLong_FromLong(status);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

/* user_sums(users, values, cap, out): out[u] = the sum of min(v, cap) over
 * the values of user u, added in their order from 0.0 (what
 * np.bincount(users, weights=np.minimum(values, cap)) adds, bit for bit),
 * in one pass; users in 0..len(out)-1. */
static PyObject *
user_sums(PyObject *self, PyObject *args)
{
    PyObject *o[3];
    double cap;
    Py_buffer b[3];
    int got = 0, bad = 0;
    PyObject *result = NULL;
    static const char *names[3] = {"users", "values", "out"};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOdO", &o[0], &o[1], &cap, &o[2]))
        return NULL;
    for (; got < 3; got++)
        if (take(o[got], &b[got], 8, got == 2, names[got]) < 0)
            goto fail;
    Py_ssize_t n = b[0].len / 8, size = b[2].len / 8;
    if (b[1].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "user_sums: array lengths do not match");
        goto fail;
    }
    const int64_t *u = b[0].buf;
    const double *v = b[1].buf;
    double *out = b[2].buf;
    Py_BEGIN_ALLOW_THREADS
    memset(out, 0, (size_t)size * sizeof(double));
    for (Py_ssize_t i = 0; i < n; i++) {
        if (u[i] < 0 || u[i] >= size) {
            bad = 1;
            break;
        }
        out[u[i]] += lesser(v[i], cap);
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "user_sums: a user is out of range");
        goto fail;
    }
    Py_INCREF(Py_None);
    result = Py_None;
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

/* row_sums(off, pos, terms, k, out): per row u of a Cells block (its cells
 * off[u]..off[u+1]-1), out[u] = the sum of terms over the cells at positions
 * < k, added in their order from 0.0: what np.bincount(user[pos < k],
 * weights=terms[pos < k]) adds, bit for bit, without the mask or the copies
 * (branch-free: a cell at k or beyond adds 0.0, which leaves a sum begun at
 * 0.0 as it is). With terms None, out (int64) counts those cells instead.
 * Returns 0, or -1 when the offsets do not ascend from 0 to the number of
 * cells. */
static PyObject *
row_sums(PyObject *self, PyObject *args)
{
    PyObject *o_off, *o_pos, *o_terms, *o_out;
    long long k;
    Py_buffer off = {0}, pos = {0}, terms = {0}, out = {0};
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLO", &o_off, &o_pos, &o_terms, &k, &o_out))
        return NULL;
    int counting = o_terms == Py_None;
    if (take(o_off, &off, 8, 0, "off") < 0 || take(o_pos, &pos, 8, 0, "pos") < 0 ||
        (!counting && take(o_terms, &terms, 8, 0, "terms") < 0) ||
        take(o_out, &out, 8, 1, "out") < 0)
        goto fail;
    Py_ssize_t m = off.len / 8 - 1, n = pos.len / 8;
    if (m < 0 || out.len / 8 != m || (!counting && terms.len / 8 != n)) {
        PyErr_SetString(PyExc_ValueError, "row_sums: array lengths do not match");
        goto fail;
    }
    const int64_t *o = off.buf, *p = pos.buf;
    int bad = o[0] != 0 || o[m] != n;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t u = 0; u < m && !bad; u++) {
        int64_t c0 = o[u], c1 = o[u + 1];
        if (c1 < c0) {
            bad = 1;
            break;
        }
        if (counting) {
            int64_t count = 0;
            for (int64_t c = c0; c < c1; c++)
                count += p[c] < k;
            ((int64_t *)out.buf)[u] = count;
        } else {
            const double *t = terms.buf;
            double sum = 0.0;
            for (int64_t c = c0; c < c1; c++)
                sum += p[c] < k ? t[c] : 0.0;
            ((double *)out.buf)[u] = sum;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLong(bad ? -1 : 0);
fail:
    release(&off);
    release(&pos);
    release(&terms);
    release(&out);
    return result;
}

/* fill(off, u0, u1, values, width, out): the values of users u0..u1-1 (user
 * u's rows off[u]..off[u+1]-1, in position order) into a column-major
 * (u1 - u0, width) block: out[p * (u1 - u0) + (u - u0)]. Positions from
 * width on are left out; cells without a value keep what out holds (the
 * padding). Any 8-byte values. */
static PyObject *
fill(PyObject *self, PyObject *args)
{
    PyObject *o[3];
    long long u0, u1, width;
    Py_buffer b[3];
    int got = 0;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OLLOLO", &o[0], &u0, &u1, &o[1], &width, &o[2]))
        return NULL;
    for (; got < 3; got++)
        if (take(o[got], &b[got], 8, got == 2, got == 0 ? "off" : got == 1 ? "values" : "out") <
            0)
            goto fail;
    const int64_t *off = b[0].buf;
    Py_ssize_t users = b[0].len / 8 - 1, n = b[1].len / 8;
    int64_t m = u1 - u0;
    if (u0 < 0 || u1 < u0 || u1 > users || width < 0 || b[2].len / 8 != m * width ||
        (users >= 0 && (off[u1] > n || off[u0] < 0))) {
        PyErr_SetString(PyExc_ValueError, "fill: users, widths or lengths do not match");
        goto fail;
    }
    for (int64_t u = u0; u < u1; u++) /* offsets ascending, within the values */
        if (off[u] > off[u + 1]) {
            PyErr_SetString(PyExc_ValueError, "fill: offsets are not ascending");
            goto fail;
        }
    const uint64_t *v = b[1].buf;
    uint64_t *out = b[2].buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t u = u0; u < u1; u++) {
        int64_t r0 = off[u], len = off[u + 1] - r0;
        if (len > width)
            len = width;
        uint64_t *col = out + (u - u0);
        for (int64_t p = 0; p < len; p++)
            col[p * m] = v[r0 + p];
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

/* cells(off, values, width, out_user, out_pos, out_value, out_off) -> count:
 * the nonzero values among the first `width` rows of each user (user u's rows
 * off[u]..off[u+1]-1, in position order), user by user in position order:
 * out_user[c] = u, out_pos[c] = the row's position, out_value[c] = the value,
 * and user u's cells are out_off[u]..out_off[u+1]-1. values are float64; the
 * outputs hold at least min(width, rows) cells per user. */
static PyObject *
cells(PyObject *self, PyObject *args)
{
    PyObject *o[6];
    long long width;
    Py_buffer b[6];
    int got = 0;
    static const char *names[6] = {"off", "values", "out_user", "out_pos", "out_value",
                                   "out_off"};
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLOOOO", &o[0], &o[1], &width, &o[2], &o[3], &o[4], &o[5]))
        return NULL;
    for (; got < 6; got++)
        if (take(o[got], &b[got], 8, got >= 2, names[got]) < 0)
            goto fail;
    const int64_t *off = b[0].buf;
    Py_ssize_t users = b[0].len / 8 - 1, n = b[1].len / 8, cap = b[2].len / 8;
    if (users < 0 || width < 0 || b[5].len / 8 != users + 1 || b[3].len / 8 != cap ||
        b[4].len / 8 != cap || (users > 0 && (off[0] < 0 || off[users] > n))) {
        PyErr_SetString(PyExc_ValueError, "cells: users, widths or lengths do not match");
        goto fail;
    }
    int64_t need = 0;
    for (Py_ssize_t u = 0; u < users; u++) { /* offsets ascending; room for every cell */
        int64_t len = off[u + 1] - off[u];
        if (len < 0) {
            PyErr_SetString(PyExc_ValueError, "cells: offsets are not ascending");
            goto fail;
        }
        need += len < width ? len : width;
    }
    if (need > cap) {
        PyErr_SetString(PyExc_ValueError, "cells: the outputs are too short");
        goto fail;
    }
    const double *v = b[1].buf;
    int64_t *out_user = b[2].buf, *out_pos = b[3].buf, *out_off = b[5].buf;
    double *out_value = b[4].buf;
    int64_t c = 0;
    Py_BEGIN_ALLOW_THREADS
    out_off[0] = 0;
    for (Py_ssize_t u = 0; u < users; u++) {
        int64_t r0 = off[u], len = off[u + 1] - r0;
        if (len > width)
            len = width;
        for (int64_t p = 0; p < len; p++) { /* branch-free: write, then keep if nonzero */
            double x = v[r0 + p];
            out_user[c] = u;
            out_pos[c] = p;
            out_value[c] = x;
            c += x != 0.0;
        }
        out_off[u + 1] = c;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(c);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

#define AS_IS(v) (v)
#define AS_BIT(v) ((v) != 0)
/* out[j * m + i] = out[(j - 1) * m + i] + x[j * m + i]: x of type S, out of T */
#define RUNNING_SUMS(S, T, CONV)                                                  \
    do {                                                                          \
        const S *x = b[0].buf;                                                    \
        T *out = b[1].buf;                                                        \
        for (Py_ssize_t i = 0; i < m; i++)                                        \
            out[i] = (T)CONV(x[i]);                                               \
        for (Py_ssize_t j = 1; j < w; j++)                                        \
            for (Py_ssize_t i = 0; i < m; i++)                                    \
                out[j * m + i] = out[(j - 1) * m + i] + (T)CONV(x[j * m + i]);     \
    } while (0)

/* cumsum(x, out, kind): running sums down the first axis of C-contiguous
 * (w, m) arrays — the columns of a column-major (m, w) block — so each of the
 * m sums is accumulated left to right, one position at a time, exactly as
 * np.cumsum(axis=1) does. kind 0: float64 -> float64, 1: int64 -> int64,
 * 2: bool -> int64. */
static PyObject *
cumsum(PyObject *self, PyObject *args)
{
    PyObject *o[2];
    int kind;
    long long m;
    Py_buffer b[2];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLi", &o[0], &o[1], &m, &kind))
        return NULL;
    if (kind < 0 || kind > 2) {
        PyErr_SetString(PyExc_ValueError, "cumsum: kind is 0, 1 or 2");
        return NULL;
    }
    if (PyObject_GetBuffer(o[0], &b[0], PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(o[1], &b[1], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&b[0]);
        return NULL;
    }
    Py_ssize_t cells = b[1].len / 8;
    if (b[1].itemsize != 8 || b[0].itemsize != (kind == 2 ? 1 : 8))
        cells = -1;
    if (m <= 0 || cells < 0 || cells % m != 0 || b[0].len != cells * (kind == 2 ? 1 : 8)) {
        PyBuffer_Release(&b[0]);
        PyBuffer_Release(&b[1]);
        PyErr_SetString(PyExc_ValueError, "cumsum: shapes do not match");
        return NULL;
    }
    Py_ssize_t w = cells / m;
    Py_BEGIN_ALLOW_THREADS
    if (kind == 0)
        RUNNING_SUMS(double, double, AS_IS);
    else if (kind == 1)
        RUNNING_SUMS(int64_t, int64_t, AS_IS);
    else
        RUNNING_SUMS(uint8_t, int64_t, AS_BIT);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b[0]);
    PyBuffer_Release(&b[1]);
    Py_RETURN_NONE;
}

/* One double added to its exponent's buckets (see exact_sum): its signed 53-bit
 * significand split at bit 26, to high[e] and low[e]. Returns e, or -1 for a
 * NaN or an infinity, counted in *nan, *pinf or *ninf and not added. */
static inline int
bucket_add(uint64_t bits, int64_t *high, int64_t *low, Py_ssize_t *nan, Py_ssize_t *pinf,
           Py_ssize_t *ninf)
{
    unsigned e = (unsigned)((bits >> 52) & 0x7FF);
    if (e == 0x7FF) {
        if (bits & 0xFFFFFFFFFFFFFULL)
            (*nan)++;
        else if (bits >> 63)
            (*ninf)++;
        else
            (*pinf)++;
        return -1;
    }
    uint64_t m = (bits & 0xFFFFFFFFFFFFFULL) | (e ? (1ULL << 52) : 0);
    int64_t h = (int64_t)(m >> 26), l = (int64_t)(m & 0x3FFFFFFULL);
    if (bits >> 63) {
        high[e] -= h;
        low[e] -= l;
    } else {
        high[e] += h;
        low[e] += l;
    }
    return (int)e;
}

/* exact_sum(x, out_high, out_low) -> (count, nan, pos_inf, neg_inf): adds each
 * finite double of x, as its signed 53-bit significand split at bit 26, to
 * out_high[e] and out_low[e] (int64, 2047 each) where e is its exponent field;
 * receval.exact turns the buckets into one exact integer. Counts the finite
 * values and the NaN/inf ones (not added). |high| < 2**27 and low < 2**26, so
 * the int64 sums cannot overflow below 2**36 values. */
static PyObject *
exact_sum(PyObject *self, PyObject *args)
{
    PyObject *o[3];
    Py_buffer b[3];
    Py_ssize_t count = 0, nan = 0, pinf = 0, ninf = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2]))
        return NULL;
    if (take(o[0], &b[0], 8, 0, "x") < 0)
        return NULL;
    if (take(o[1], &b[1], 8, 1, "out_high") < 0) {
        PyBuffer_Release(&b[0]);
        return NULL;
    }
    if (take(o[2], &b[2], 8, 1, "out_low") < 0) {
        PyBuffer_Release(&b[0]);
        PyBuffer_Release(&b[1]);
        return NULL;
    }
    if (b[1].len / 8 < 2047 || b[2].len / 8 < 2047) {
        for (int i = 0; i < 3; i++)
            PyBuffer_Release(&b[i]);
        PyErr_SetString(PyExc_ValueError, "exact_sum: out arrays need 2047 items");
        return NULL;
    }
    Py_ssize_t n = b[0].len / 8;
    const uint64_t *x = b[0].buf;
    int64_t *high = b[1].buf, *low = b[2].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (bucket_add(x[i], high, low, &nan, &pinf, &ninf) >= 0)
            count++;
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 3; i++)
        PyBuffer_Release(&b[i]);
    return Py_BuildValue("(nnnn)", count, nan, pinf, ninf);
}

/* ---- near-read: sums ------------------------------------------------------------------
 * exact_sums(x, rows, mask) -> [(scaled, count, nan, pos_inf, neg_inf)] per row: the
 * exact sums of receval.exact.ExactSum for each of the `rows` rows of x (float64, C
 * order, rows × n), of the columns where mask (uint8, n; None: every column) is
 * nonzero, the integer `scaled` (units of 2**-1074) built here rather than in Python.
 * Per row, the finite values are bucketed by exponent field as exact_sum does (signed
 * significand halves, int64), then each bucket's high and low halves are added, by
 * magnitude, into a positive or a negative little-endian multi-limb integer at bit
 * max(e, 1) - 1 (+ 26 for the high half); the difference becomes a Python int through
 * int.from_bytes (and the sign). Bounds: |bucket| < 2**63 needs fewer than 2**36 values; bit
 * 2045 + 26 + 63 plus 12 carry bits < SUM_LIMBS * 64. */
#define SUM_LIMBS 37

static void
limbs_add(uint64_t *acc, uint64_t v, unsigned shift)
{
    unsigned q = shift / 64, r = shift % 64;
    uint64_t lo = v << r, hi = r ? v >> (64 - r) : 0;
    uint64_t old = acc[q];
    acc[q] = old + lo;
    uint64_t carry = acc[q] < old;
    old = acc[q + 1];
    acc[q + 1] = old + (hi + carry); /* hi < 2**63: no wrap */
    carry = acc[q + 1] < old;
    for (unsigned i = q + 2; carry && i < SUM_LIMBS; i++)
        carry = ++acc[i] == 0;
}

static void
limbs_bucket(uint64_t *pos, uint64_t *neg, int64_t v, unsigned shift)
{
    if (v > 0)
        limbs_add(pos, (uint64_t)v, shift);
    else if (v < 0)
        limbs_add(neg, (uint64_t)0 - (uint64_t)v, shift);
}

/* pos - neg as a Python int (the magnitude's bytes little-endian, then the sign). */
static PyObject *
limbs_int(const uint64_t *pos, const uint64_t *neg, PyObject *from_bytes)
{
    unsigned char bytes[SUM_LIMBS * 8];
    int i = SUM_LIMBS - 1;
    while (i > 0 && pos[i] == neg[i])
        i--;
    int negative = pos[i] < neg[i];
    const uint64_t *a = negative ? neg : pos, *b = negative ? pos : neg;
    uint64_t borrow = 0;
    for (i = 0; i < SUM_LIMBS; i++) {
        uint64_t d = a[i] - b[i] - borrow;
        borrow = (a[i] < b[i]) || (a[i] == b[i] && borrow);
        for (int j = 0; j < 8; j++)
            bytes[i * 8 + j] = (unsigned char)(d >> (8 * j));
    }
    PyObject *raw = PyBytes_FromStringAndSize((const char *)bytes, sizeof bytes);
    if (raw == NULL)
        return NULL;
    PyObject *out = PyObject_CallFunction(from_bytes, "Os", raw, "little");
    Py_DECREF(raw);
    if (out != NULL && negative) {
        PyObject *flipped = PyNumber_Negative(out);
        Py_DECREF(out);
        out = flipped;
    }
    return out;
}

static PyObject *
exact_sums(PyObject *self, PyObject *args)
{
    PyObject *ox, *omask;
    Py_ssize_t rows;
    Py_buffer bx, bm;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnO", &ox, &rows, &omask))
        return NULL;
    if (take(ox, &bx, 8, 0, "x") < 0)
        return NULL;
    if (take_opt(omask, &bm, 1, "mask") < 0) {
        PyBuffer_Release(&bx);
        return NULL;
    }
    Py_ssize_t total = bx.len / 8;
    if (rows < 1 || total % rows || (bm.buf && bm.len != total / rows)) {
        release(&bm);
        PyBuffer_Release(&bx);
        PyErr_SetString(PyExc_ValueError,
                        "exact_sums: x must hold rows × n values and mask n bytes");
        return NULL;
    }
    Py_ssize_t n = total / rows;
    const uint64_t *x = bx.buf;
    const uint8_t *mask = bm.buf;
    int64_t *high = PyMem_Malloc(2 * 2047 * sizeof(int64_t)); /* one row's, reused */
    Py_ssize_t *tally = PyMem_Malloc(4 * sizeof(Py_ssize_t) * (size_t)rows);
    uint64_t *limbs = PyMem_Malloc(2 * SUM_LIMBS * sizeof(uint64_t) * (size_t)rows);
    PyObject *from_bytes = NULL, *out = NULL;
    if (high == NULL || tally == NULL || limbs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(high, 0, 2 * 2047 * sizeof(int64_t));
    memset(tally, 0, 4 * sizeof(Py_ssize_t) * (size_t)rows);
    memset(limbs, 0, 2 * SUM_LIMBS * sizeof(uint64_t) * (size_t)rows);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        const uint64_t *row = x + r * n;
        int64_t *hi = high, *lo = high + 2047;
        Py_ssize_t count = 0, nan = 0, pinf = 0, ninf = 0;
        unsigned emin = 2047, emax = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (mask && !mask[i])
                continue;
            int got = bucket_add(row[i], hi, lo, &nan, &pinf, &ninf);
            if (got < 0)
                continue;
            unsigned e = (unsigned)got;
            emin = e < emin ? e : emin;
            emax = e > emax ? e : emax;
            count++;
        }
        uint64_t *pos = limbs + r * 2 * SUM_LIMBS, *neg = pos + SUM_LIMBS;
        for (unsigned e = emin; e <= emax; e++) { /* then cleared for the next row */
            unsigned shift = (e ? e : 1) - 1;
            limbs_bucket(pos, neg, hi[e], shift + 26);
            limbs_bucket(pos, neg, lo[e], shift);
            hi[e] = lo[e] = 0;
        }
        Py_ssize_t *t = tally + 4 * r;
        t[0] = count;
        t[1] = nan;
        t[2] = pinf;
        t[3] = ninf;
    }
    Py_END_ALLOW_THREADS
    from_bytes = PyObject_GetAttrString((PyObject *)&PyLong_Type, "from_bytes");
    if (from_bytes == NULL)
        goto done;
    out = PyList_New(rows);
    if (out == NULL)
        goto done;
    for (Py_ssize_t r = 0; r < rows; r++) {
        const uint64_t *pos = limbs + r * 2 * SUM_LIMBS;
        PyObject *scaled = limbs_int(pos, pos + SUM_LIMBS, from_bytes);
        if (scaled == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        const Py_ssize_t *t = tally + 4 * r;
        PyObject *item = Py_BuildValue("(Nnnnn)", scaled, t[0], t[1], t[2], t[3]);
        if (item == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SetItem(out, r, item);
    }
done:
    Py_XDECREF(from_bytes);
    PyMem_Free(high);
    PyMem_Free(tally);
    PyMem_Free(limbs);
    release(&bm);
    PyBuffer_Release(&bx);
    return out;
}

/* ---- item-kNN (receval.workflow.baselines.ItemKNNRecommender) ------------------------ */

/* A candidate of a top-k: better = larger value, then smaller item. */
typedef struct {
    double v;
    int64_t j;
} cand_t;

static inline int
better(const cand_t *a, const cand_t *b)
{
    return a->v > b->v || (a->v == b->v && a->j < b->j);
}

/* Keeps the k best candidates in heap[0..*n) (heap[0] the worst of them). */
static inline void
offer(cand_t *heap, Py_ssize_t *n, Py_ssize_t k, double v, int64_t j)
{
    cand_t c = {v, j};
    Py_ssize_t i;
    if (*n < k) {
        i = (*n)++;
        while (i > 0) {
            Py_ssize_t up = (i - 1) / 2;
            if (!better(&heap[up], &c))
                break;
            heap[i] = heap[up];
            i = up;
        }
        heap[i] = c;
        return;
    }
    if (!better(&c, &heap[0]))
        return;
    i = 0;
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, w = i;
        const cand_t *worst = &c;
        if (l < *n && better(worst, &heap[l])) {
            w = l;
            worst = &heap[l];
        }
        if (r < *n && better(worst, &heap[r]))
            w = r;
        if (w == i)
            break;
        heap[i] = heap[w];
        i = w;
    }
    heap[i] = c;
}

/* Releases the n buffers; returns the status as an int, or NULL (an error is set)
 * when status < 0. */
static PyObject *
finish(Py_buffer *b, int n, int status)
{
    for (int i = 0; i < n; i++)
        PyBuffer_Release(&b[i]);
    return status < 0 ? NULL : PyLong_FromLong(status);
}

static int
cand_order(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    return better(x, y) ? -1 : better(y, x) ? 1 : 0;
}

/* knn_neighbors(item_ptr, item_users, user_ptr, user_items, norm, shrink, k, i0, i1,
 *               out_count, out_item, out_sim):
 * for each item i of i0..i1-1, its k most similar other items j by
 * sim = c_ij / (norm[i] * norm[j] + shrink), c_ij the users having both (counted
 * through i's users and their items), best first (sim descending, then j
 * ascending). Writes out_count[i - i0] and (i - i0) * k + n of out_item/out_sim.
 * Returns 0, or 5 when out of memory. */
static PyObject *
knn_neighbors(PyObject *self, PyObject *args)
{
    PyObject *o[5], *out[3];
    double shrink;
    long long k, i0, i1;
    Py_buffer b[8];
    int nb = 0, status = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOdLLLOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &shrink,
                          &k, &i0, &i1, &out[0], &out[1], &out[2]))
        return NULL;
    const char *names[8] = {"item_ptr", "item_users", "user_ptr", "user_items", "norm",
                            "out_count", "out_item", "out_sim"};
    for (; nb < 8; nb++) {
        PyObject *obj = nb < 5 ? o[nb] : out[nb - 5];
        if (take(obj, &b[nb], 8, nb >= 5, names[nb]) < 0)
            goto fail;
    }
    Py_ssize_t n_items = b[0].len / 8 - 1, n_users = b[2].len / 8 - 1;
    if (k < 1 || i0 < 0 || i1 < i0 || i1 > n_items || b[4].len / 8 != n_items ||
        b[5].len / 8 < i1 - i0 || b[6].len / 8 < (i1 - i0) * k || b[7].len / 8 < (i1 - i0) * k ||
        n_users < 0) {
        PyErr_SetString(PyExc_ValueError, "knn_neighbors: shapes do not match");
        goto fail;
    }
    const int64_t *iptr = b[0].buf, *iusers = b[1].buf, *uptr = b[2].buf, *uitems = b[3].buf;
    const double *norm = b[4].buf;
    int64_t *count_out = b[5].buf, *item_out = b[6].buf;
    double *sim_out = b[7].buf;
    Py_BEGIN_ALLOW_THREADS
    int64_t *cnt = calloc((size_t)n_items + 1, sizeof(int64_t));
    int64_t *touched = malloc(((size_t)n_items + 1) * sizeof(int64_t));
    cand_t *heap = malloc((size_t)k * sizeof(cand_t));
    if (!cnt || !touched || !heap)
        status = NO_MEMORY;
    for (Py_ssize_t i = i0; status == OK && i < i1; i++) {
        Py_ssize_t nt = 0, nh = 0;
        for (int64_t p = iptr[i]; p < iptr[i + 1]; p++) {
            int64_t u = iusers[p];
            for (int64_t q = uptr[u]; q < uptr[u + 1]; q++) {
                int64_t j = uitems[q];
                if (cnt[j]++ == 0)
                    touched[nt++] = j;
            }
        }
        for (Py_ssize_t t = 0; t < nt; t++) {
            int64_t j = touched[t];
            if (j != i)
                offer(heap, &nh, k, (double)cnt[j] / (norm[i] * norm[j] + shrink), j);
            cnt[j] = 0;
        }
        qsort(heap, (size_t)nh, sizeof(cand_t), cand_order);
        Py_ssize_t at = (i - i0) * k;
        for (Py_ssize_t h = 0; h < nh; h++) {
            item_out[at + h] = heap[h].j;
            sim_out[at + h] = heap[h].v;
        }
        count_out[i - i0] = nh;
    }
    free(cnt);
    free(touched);
    free(heap);
    Py_END_ALLOW_THREADS
    return finish(b, nb, status);
fail:
    return finish(b, nb, -1);
}

/* knn_top(user_ptr, user_items, sim_ptr, sim_item, sim_value, codes, fill, fill_order,
 *         k, exclude_seen, out_count, out_item, out_score):
 * the top-k list of each block row r (codes[r] the user's row, -1 unknown): the
 * items j with score s_j = sum over the user's items i, ascending, of sim(i, j)
 * (added in that order from 0.0) and s_j > 0, best first (score descending, then
 * j ascending), then, while the list is short, the items of fill_order (score
 * fill[j]) not yet listed; seen items never with exclude_seen. Writes
 * out_count[r] and r * k + n of out_item/out_score. Returns 0 or 5 (memory). */
static PyObject *
knn_top(PyObject *self, PyObject *args)
{
    PyObject *o[8], *out[3];
    long long k;
    int exclude;
    Py_buffer b[11];
    int nb = 0, status = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOOOLpOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &k, &exclude, &out[0], &out[1], &out[2]))
        return NULL;
    const char *names[11] = {"user_ptr", "user_items", "sim_ptr", "sim_item",
                             "sim_value", "codes", "fill", "fill_order",
                             "out_count", "out_item", "out_score"};
    for (; nb < 11; nb++) {
        PyObject *obj = nb < 8 ? o[nb] : out[nb - 8];
        if (take(obj, &b[nb], 8, nb >= 8, names[nb]) < 0)
            goto fail;
    }
    Py_ssize_t n_users = b[0].len / 8 - 1, n_items = b[2].len / 8 - 1, rows = b[5].len / 8;
    if (k < 1 || n_users < 0 || n_items < 0 || b[6].len / 8 != n_items ||
        b[7].len / 8 != n_items || b[8].len / 8 < rows || b[9].len / 8 < rows * k ||
        b[10].len / 8 < rows * k) {
        PyErr_SetString(PyExc_ValueError, "knn_top: shapes do not match");
        goto fail;
    }
    const int64_t *uptr = b[0].buf, *uitems = b[1].buf, *sptr = b[2].buf, *sitem = b[3].buf;
    const double *sval = b[4].buf, *fillv = b[6].buf;
    const int64_t *codes = b[5].buf, *forder = b[7].buf;
    int64_t *count_out = b[8].buf, *item_out = b[9].buf;
    double *score_out = b[10].buf;
    Py_BEGIN_ALLOW_THREADS
    double *acc = calloc((size_t)n_items + 1, sizeof(double));
    int64_t *mark = calloc((size_t)n_items + 1, sizeof(int64_t)); /* row + 1: touched */
    int64_t *seen = calloc((size_t)n_items + 1, sizeof(int64_t)); /* row + 1: seen */
    int64_t *touched = malloc(((size_t)n_items + 1) * sizeof(int64_t));
    cand_t *heap = malloc((size_t)k * sizeof(cand_t));
    if (!acc || !mark || !seen || !touched || !heap)
        status = NO_MEMORY;
    for (Py_ssize_t r = 0; status == OK && r < rows; r++) {
        int64_t u = codes[r], stamp = (int64_t)r + 1;
        Py_ssize_t nt = 0, nh = 0;
        if (u >= 0 && u < n_users) {
            for (int64_t q = uptr[u]; q < uptr[u + 1]; q++) {
                int64_t i = uitems[q];
                if (exclude)
                    seen[i] = stamp;
                for (int64_t p = sptr[i]; p < sptr[i + 1]; p++) {
                    int64_t j = sitem[p];
                    if (mark[j] != stamp) {
                        mark[j] = stamp;
                        acc[j] = 0.0;
                        touched[nt++] = j;
                    }
                    acc[j] += sval[p];
                }
            }
            for (Py_ssize_t t = 0; t < nt; t++) {
                int64_t j = touched[t];
                if (acc[j] > 0 && seen[j] != stamp)
                    offer(heap, &nh, k, acc[j], j);
            }
            qsort(heap, (size_t)nh, sizeof(cand_t), cand_order);
        }
        Py_ssize_t at = r * k, n = nh;
        for (Py_ssize_t h = 0; h < nh; h++) {
            item_out[at + h] = heap[h].j;
            score_out[at + h] = heap[h].v;
            mark[heap[h].j] = -stamp; /* listed */
        }
        for (Py_ssize_t f = 0; n < k && f < n_items; f++) {
            int64_t j = forder[f];
            if (seen[j] == stamp || mark[j] == -stamp)
                continue;
            item_out[at + n] = j;
            score_out[at + n] = fillv[j];
            n++;
        }
        count_out[r] = n;
    }
    free(acc);
    free(mark);
    free(seen);
    free(touched);
    free(heap);
    Py_END_ALLOW_THREADS
    return finish(b, nb, status);
fail:
    return finish(b, nb, -1);
}

/* group_tally(idx, user_off, user_keep, rank, gain, table, width, k, n_groups,
 * out_slots, out_hits, out_all) -> status: the item-group tallies of list rows
 * (receval.engines.driver._tally_groups). The rows of user u are
 * user_off[u]:user_off[u + 1], in list order; for every user with
 * user_keep[u], each row at a rank r < k (its position in the list, or
 * rank[i] when rank is given) counts one slot in out_all[r] and in
 * out_slots[g * k + r] for each group g of its item, and in out_hits too when
 * gain[i] > 0. The groups of item i are table[i * width ...], padded with
 * n_groups: a row of out_slots / out_hits past the groups (both hold
 * (n_groups + 1) * k counts) that takes the padding, so that every row does
 * the same work and no branch depends on the data. rank, gain and out_hits may
 * be None. Integer counts: the same numbers as the NumPy path. Status: 0
 * done, 4 an index out of range. */
static PyObject *
group_tally(PyObject *self, PyObject *args)
{
    PyObject *o[10];
    Py_buffer b[10];
    Py_buffer *at[10];
    int nb = 0, status = OK;
    long long k_arg, groups_arg, width_arg;
    static const Py_ssize_t size[10] = {8, 8, 1, 8, 8, 4, 8, 8, 8};
    static const int writable[10] = {0, 0, 0, 0, 0, 0, 1, 1, 1};
    static const int optional[10] = {0, 0, 0, 1, 1, 0, 0, 1, 0};
    static const char *names[10] = {"idx", "user_off", "user_keep", "rank", "gain", "table",
                                    "out_slots", "out_hits", "out_all"};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOLLLOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &width_arg, &k_arg, &groups_arg, &o[6], &o[7], &o[8]))
        return NULL;
    for (int i = 0; i < 9; i++) {
        at[i] = NULL;
        if (o[i] == Py_None) {
            if (!optional[i]) {
                PyErr_Format(PyExc_ValueError, "group_tally: %s is required", names[i]);
                return finish(b, nb, -1);
            }
            continue;
        }
        if (take(o[i], &b[nb], size[i], writable[i], names[i]) < 0)
            return finish(b, nb, -1);
        at[i] = &b[nb++];
    }
    Py_ssize_t n = at[0]->len / 8, n_users = at[1]->len / 8 - 1;
    int64_t k = (int64_t)k_arg, g_count = (int64_t)groups_arg, width = (int64_t)width_arg;
    Py_ssize_t cells = (Py_ssize_t)((g_count + 1) * k);
    if (n_users < 0 || at[2]->len != n_users || (at[3] && at[3]->len / 8 != n) ||
        (at[4] && at[4]->len / 8 != n) || at[6]->len / 8 != cells ||
        (at[7] && at[7]->len / 8 != cells) || at[8]->len / 8 != k || k < 0 || width < 1 ||
        g_count < 0 || (at[5]->len / 4) % width != 0) {
        PyErr_SetString(PyExc_ValueError, "group_tally: array lengths do not match");
        return finish(b, nb, -1);
    }
    Py_ssize_t n_items = at[5]->len / 4 / width;
    const int64_t *idx = at[0]->buf, *uoff = at[1]->buf;
    const uint8_t *keep = at[2]->buf;
    const int64_t *rank = at[3] ? at[3]->buf : NULL;
    const double *gain = at[4] ? at[4]->buf : NULL;
    const int32_t *table = at[5]->buf;
    int64_t *slots = at[6]->buf, *hits = at[7] ? at[7]->buf : NULL, *all = at[8]->buf;
    for (Py_ssize_t c = 0; c < n_items * width; c++) /* every group in range, once */
        if (table[c] < 0 || table[c] > g_count) {
            status = OUT_OF_RANGE;
            break;
        }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t u = 0; u < n_users && status == OK; u++) {
        if (!keep[u])
            continue;
        int64_t lo = uoff[u], hi = uoff[u + 1];
        if (lo < 0 || hi < lo || hi > n) {
            status = OUT_OF_RANGE;
            break;
        }
        if (rank == NULL && hi - lo > k)
            hi = lo + k; /* list order: the rows past k count nowhere */
        for (int64_t i = lo; i < hi; i++) {
            int64_t r = rank ? rank[i] : i - lo, item = idx[i];
            if (r < 0 || r >= k)
                continue;
            if (item < 0 || item >= n_items) {
                status = OUT_OF_RANGE;
                break;
            }
            all[r]++;
            const int32_t *gs = &table[item * width];
            for (int64_t m = 0; m < width; m++)
                slots[gs[m] * k + r]++;
            if (hits != NULL && gain != NULL && gain[i] > 0)
                for (int64_t m = 0; m < width; m++)
                    hits[gs[m] * k + r]++;
        }
    }
    Py_END_ALLOW_THREADS
    return finish(b, nb, status);
}

/* NumPy's bit generator interface (numpy/random/bitgen.h), whose address the
 * "BitGenerator" capsule of a Generator's bit_generator holds: a stable ABI that
 * NumPy documents for C users. Declared here so that building needs no NumPy header. */
typedef struct {
    void *state;
    uint64_t (*next_uint64)(void *st);
    uint32_t (*next_uint32)(void *st);
    double (*next_double)(void *st);
    uint64_t (*next_raw)(void *st);
} bitgen_t;

/* One draw in [0, rng] as NumPy's Generator.integers draws it for a range below
 * 2**32 (Lemire's method on 32-bit draws, with its rejection rule), so that the
 * stream, and the generator's state after it, are NumPy's. */
static inline uint32_t
lemire32(bitgen_t *g, uint32_t rng)
{
    const uint32_t excl = rng + 1;
    uint64_t m = (uint64_t)g->next_uint32(g->state) * excl;
    uint32_t leftover = (uint32_t)m;
    if (leftover < excl) {
        const uint32_t threshold = (UINT32_MAX - rng) % excl;
        while (leftover < threshold) {
            m = (uint64_t)g->next_uint32(g->state) * excl;
            leftover = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* boot_counts(capsule, n, out): rows of bootstrap counts, each row n draws in
 * [0, n) from the bit generator (the draws of Generator.integers(0, n, size=(m, n))
 * in the same order), counted in a row of 32-bit tallies and written as a float64
 * row of out (m rows of n). The caller holds the bit generator's lock. */
static PyObject *
boot_counts(PyObject *self, PyObject *args)
{
    PyObject *capsule, *o;
    Py_ssize_t n;
    Py_buffer b = {0};
    (void)self;
    if (!PyArg_ParseTuple(args, "OnO", &capsule, &n, &o))
        return NULL;
    bitgen_t *g = PyCapsule_GetPointer(capsule, "BitGenerator");
    if (g == NULL)
        return NULL;
    if (n < 1 || n > (Py_ssize_t)INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "boot_counts: n must be in [1, 2**31 - 1]");
        return NULL;
    }
    if (take(o, &b, 8, 1, "out") < 0)
        return NULL;
    Py_ssize_t total = b.len / 8;
    if (total % n) {
        PyErr_SetString(PyExc_ValueError, "boot_counts: out must hold whole rows of n");
        release(&b);
        return NULL;
    }
    double *out = b.buf;
    const uint32_t rng = (uint32_t)(n - 1);
    uint32_t *tally = calloc((size_t)n, sizeof(uint32_t)); /* one row, in cache */
    if (tally == NULL) {
        release(&b);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t start = 0; start < total; start += n) {
        double *row = out + start;
        if (rng != 0) /* NumPy draws nothing for a range of one value */
            for (Py_ssize_t i = 0; i < n; i++)
                tally[lemire32(g, rng)]++;
        else
            tally[0] = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            row[i] = (double)tally[i];
            tally[i] = 0;
        }
    }
    Py_END_ALLOW_THREADS
    free(tally);
    release(&b);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ backtest / train lookups
 *
 * The training pairs of each fold of a backtest (receval.io.items.TrainRows,
 * receval.metrics.context.TrainPairs): the log's rows ordered by (user, item,
 * row) by stable counting passes (pair_entries), a range's distinct pairs as
 * sorted keys with each item's count of them (range_keys), and which list
 * rows are training pairs, looked up among each user's own keys (train_found).
 * The NumPy paths (a sort, boolean masks, a global binary search per row)
 * give the same arrays. */

/* A 1-d array of 4- or 8-byte signed integers, read as it is (no cast). */
static int
take_ints(PyObject *obj, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if ((view->itemsize != 4 && view->itemsize != 8) || view->ndim > 1 || view->format == NULL ||
        strchr("ilq", view->format[strlen(view->format) - 1]) == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: expected a 1-d array of 4- or 8-byte signed integers",
                     name);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static inline int64_t
int_at(const Py_buffer *v, Py_ssize_t i)
{
    return v->itemsize == 4 ? (int64_t)((const int32_t *)v->buf)[i] : ((const int64_t *)v->buf)[i];
}

/* The first position in a[lo, hi) holding a value >= x (hi when none). */
static inline Py_ssize_t
lower_bound(const int64_t *a, Py_ssize_t lo, Py_ssize_t hi, int64_t x)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* lower_bound of a[lo, n) when every value before lo is < x: steps of 1, 2, 4, ...
 * from lo, then a binary search of the last step (cheap when the answer is near). */
static inline Py_ssize_t
gallop(const int64_t *a, Py_ssize_t lo, Py_ssize_t n, int64_t x)
{
    Py_ssize_t hi = lo, step = 1;
    while (hi < n && a[hi] < x) {
        lo = hi + 1;
        hi += step;
        step <<= 1;
    }
    return lower_bound(a, lo, hi < n ? hi : n, x);
}

#define RADIX_BITS 9
#define RADIX_BUCKETS (1 << RADIX_BITS)

/* One stable counting pass of (packed, user) rows into (out_packed, out_user), by
 * RADIX_BITS bits from shift of the user code (by_user) or of the item (packed's
 * high half). fill: RADIX_BUCKETS + 1 counters. */
static void
radix_pass(const uint64_t *packed, const int32_t *user, uint64_t *out_packed,
           int32_t *out_user, Py_ssize_t n, int by_user, int shift, int64_t *fill)
{
    const uint32_t mask = RADIX_BUCKETS - 1;
    memset(fill, 0, (RADIX_BUCKETS + 1) * sizeof(int64_t));
    for (Py_ssize_t j = 0; j < n; j++) {
        uint32_t v = by_user ? (uint32_t)user[j] : (uint32_t)(packed[j] >> 32);
        fill[((v >> shift) & mask) + 1]++;
    }
    for (int k = 1; k <= RADIX_BUCKETS; k++)
        fill[k] += fill[k - 1];
    for (Py_ssize_t j = 0; j < n; j++) {
        uint32_t v = by_user ? (uint32_t)user[j] : (uint32_t)(packed[j] >> 32);
        int64_t at = fill[(v >> shift) & mask]++;
        out_packed[at] = packed[j];
        out_user[at] = user[j];
    }
}

/* pair_entries(user_codes, item_codes, n_users, n_items, first_only, out_row, out_user,
 * out_item, out_prev) -> count: the index entries of receval.io.items.TrainRows — the
 * rows ordered by (user code, item code, row) — as 4-byte arrays: each entry's row,
 * user and item codes and (out_prev, unless None) the previous row of its pair (-1
 * for the pair's first row); with first_only, only the pairs' first rows. Stable
 * counting passes of RADIX_BITS bits, by item then by user (two per code up to
 * 262,144 distinct ids), in place of a sort of every row. -1 when a code is out of
 * range (nothing usable written). */
static PyObject *
pair_entries(PyObject *self, PyObject *args)
{
    PyObject *o[6];
    Py_ssize_t n_users, n_items;
    int first_only;
    Py_buffer b[6] = {{0}};
    PyObject *result = NULL;
    Py_ssize_t c = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOnnpOOOO", &o[0], &o[1], &n_users, &n_items, &first_only,
                          &o[2], &o[3], &o[4], &o[5]))
        return NULL;
    if (take(o[0], &b[0], 4, 0, "user_codes") < 0 || take(o[1], &b[1], 4, 0, "item_codes") < 0 ||
        take(o[2], &b[2], 4, 1, "out_row") < 0 || take(o[3], &b[3], 4, 1, "out_user") < 0 ||
        take(o[4], &b[4], 4, 1, "out_item") < 0 ||
        (o[5] != Py_None && take(o[5], &b[5], 4, 1, "out_prev") < 0))
        goto fail;
    Py_ssize_t n = b[0].len / 4;
    if (b[1].len / 4 != n || b[2].len / 4 < n || b[3].len / 4 < n || b[4].len / 4 < n ||
        (b[5].obj && b[5].len / 4 < n) || n_users < 0 || n_items < 0 || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "pair_entries: give two codes per row, room for each");
        goto fail;
    }
    const int32_t *uc = b[0].buf, *ic = b[1].buf;
    int32_t *out_row = b[2].buf, *out_user = b[3].buf, *out_item = b[4].buf, *out_prev = b[5].buf;
    uint64_t *packed[2] = {malloc(((size_t)n + 1) * sizeof(uint64_t)),
                           malloc(((size_t)n + 1) * sizeof(uint64_t))};
    int32_t *user[2] = {malloc(((size_t)n + 1) * sizeof(int32_t)),
                        malloc(((size_t)n + 1) * sizeof(int32_t))};
    int64_t *fill = malloc((RADIX_BUCKETS + 1) * sizeof(int64_t));
    if (!packed[0] || !packed[1] || !user[0] || !user[1] || !fill) {
        for (int k = 0; k < 2; k++) {
            free(packed[k]);
            free(user[k]);
        }
        free(fill);
        PyErr_NoMemory();
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        if (uc[r] < 0 || uc[r] >= n_users || ic[r] < 0 || ic[r] >= n_items) {
            c = -1;
            break;
        }
        packed[0][r] = ((uint64_t)(uint32_t)ic[r] << 32) | (uint32_t)r;
        user[0][r] = uc[r];
    }
    if (c == 0) {
        /* stable counting passes of RADIX_BITS bits: by item (low bits first), then
         * by user: the rows by (user, item, row) */
        int at = 0;
        for (int by_user = 0; by_user < 2; by_user++) {
            Py_ssize_t most = by_user ? n_users : n_items;
            for (int shift = 0; shift == 0 || ((Py_ssize_t)1 << shift) < most;
                 shift += RADIX_BITS) {
                radix_pass(packed[at], user[at], packed[1 - at], user[1 - at], n, by_user,
                           shift, fill);
                at = 1 - at;
            }
        }
        const uint64_t *x = packed[at];
        const int32_t *xu = user[at];
        for (Py_ssize_t j = 0; j < n; j++) {
            int32_t item = (int32_t)(x[j] >> 32), row = (int32_t)(x[j] & 0xFFFFFFFFu);
            int first = j == 0 || xu[j - 1] != xu[j] || (int32_t)(x[j - 1] >> 32) != item;
            if (first_only && !first)
                continue;
            out_row[c] = row;
            out_user[c] = xu[j];
            out_item[c] = item;
            if (out_prev)
                out_prev[c] = first ? -1 : (int32_t)(x[j - 1] & 0xFFFFFFFFu);
            c++;
        }
    }
    Py_END_ALLOW_THREADS
    for (int k = 0; k < 2; k++) {
        free(packed[k]);
        free(user[k]);
    }
    free(fill);
    result = PyLong_FromSsize_t(c);
fail:
    for (int k = 0; k < 6; k++)
        release(&b[k]);
    return result;
}

/* range_keys(entry_row, entry_prev, entry_user, entry_item, start, stop, slot, position,
 * width, out_keys, out_counts) -> count: of the index entries (rows by user, item,
 * row; entry_prev the pair's previous row, -1 for none, or None when the entries are
 * the pairs' first rows and start is 0), those that are the first row of their pair
 * within rows [start, stop), in order: out_keys[c] = position[user] * width +
 * slot[item] (int64), and out_counts[slot] (float64, zeroed by the caller) += 1.
 * -1 when a code or a slot is out of range. */
static PyObject *
range_keys(PyObject *self, PyObject *args)
{
    PyObject *o[8];
    long long start, stop, width;
    Py_buffer b[8] = {{0}};
    PyObject *result = NULL;
    Py_ssize_t c = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOLLOOLOO", &o[0], &o[1], &o[2], &o[3], &start, &stop, &o[4],
                          &o[5], &width, &o[6], &o[7]))
        return NULL;
    if (take_ints(o[0], &b[0], "entry_row") < 0 ||
        (o[1] != Py_None && take_ints(o[1], &b[1], "entry_prev") < 0) ||
        take_ints(o[2], &b[2], "entry_user") < 0 || take_ints(o[3], &b[3], "entry_item") < 0 ||
        take(o[4], &b[4], 8, 0, "slot") < 0 || take(o[5], &b[5], 8, 0, "position") < 0 ||
        take(o[6], &b[6], 8, 1, "out_keys") < 0 || take(o[7], &b[7], 8, 1, "out_counts") < 0)
        goto fail;
    Py_ssize_t n = b[0].len / b[0].itemsize;
    if ((b[1].obj && b[1].len / b[1].itemsize != n) || b[2].len / b[2].itemsize != n ||
        b[3].len / b[3].itemsize != n || b[6].len / 8 < n || b[7].len / 8 != width ||
        width < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "range_keys: give a row, a user and an item per entry, room for a key "
                        "per entry and a count per slot");
        goto fail;
    }
    const int64_t *slot = b[4].buf, *position = b[5].buf;
    const Py_ssize_t n_items = b[4].len / 8, n_users = b[5].len / 8;
    int64_t *keys = b[6].buf;
    double *counts = b[7].buf;
    const int ranged = b[1].obj != NULL;
    const int narrow = b[0].itemsize == 4 && b[2].itemsize == 4 && b[3].itemsize == 4;
    Py_BEGIN_ALLOW_THREADS
    if (!ranged && narrow) {
        /* first rows from row 0 (an expanding window), 4-byte codes: no branch on
         * whether the row is inside (each key is written, then kept or not) */
        const int32_t *row = b[0].buf, *user = b[2].buf, *item = b[3].buf;
        for (Py_ssize_t e = 0; e < n; e++) {
            int32_t u = user[e], i = item[e];
            if (u < 0 || u >= n_users || i < 0 || i >= n_items || slot[i] < 0 ||
                slot[i] >= width) {
                c = -1;
                break;
            }
            int inside = row[e] < stop;
            keys[c] = position[u] * width + slot[i];
            counts[slot[i]] += inside;
            c += inside;
        }
    } else {
        for (Py_ssize_t e = 0; e < n; e++) {
            int64_t row = int_at(&b[0], e);
            if (row >= stop || (ranged && (row < start || int_at(&b[1], e) >= start)))
                continue;
            int64_t u = int_at(&b[2], e), i = int_at(&b[3], e);
            if (u < 0 || u >= n_users || i < 0 || i >= n_items || slot[i] < 0 ||
                slot[i] >= width) {
                c = -1;
                break;
            }
            keys[c++] = position[u] * width + slot[i];
            counts[slot[i]] += 1.0;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(c);
fail:
    for (int k = 0; k < 8; k++)
        release(&b[k]);
    return result;
}

/* Is key in the sorted, distinct a[0, n)? A binary search without branches on
 * the comparisons (n > 0). */
static inline int
holds(const int64_t *a, Py_ssize_t n, int64_t key)
{
    while (n > 1) {
        Py_ssize_t half = n / 2;
        a = a[half] <= key ? a + half : a;
        n -= half;
    }
    return *a == key;
}

/* train_found(users, keys, width, row_users, row_items, out): out[r] (bool) whether
 * (row_users[r], row_items[r]) is a training pair: users the sorted distinct training
 * users, keys the sorted pair keys position * width + item. Each run of rows of one
 * user finds the user once (a gallop from the last one when users ascend), then its
 * rows are looked up among that user's keys only: stamped in a table by item when
 * the user has few keys beside the run's rows, else searched. A key outside the
 * user's (an item outside [0, width)) is searched among all, as the NumPy path does. */
static PyObject *
train_found(PyObject *self, PyObject *args)
{
    PyObject *o[5];
    long long width;
    Py_buffer b[5] = {{0}};
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLOOO", &o[0], &o[1], &width, &o[2], &o[3], &o[4]))
        return NULL;
    if (take(o[0], &b[0], 8, 0, "users") < 0 || take(o[1], &b[1], 8, 0, "keys") < 0 ||
        take(o[2], &b[2], 8, 0, "row_users") < 0 || take(o[3], &b[3], 8, 0, "row_items") < 0 ||
        take(o[4], &b[4], 1, 1, "out") < 0)
        goto fail;
    Py_ssize_t n = b[2].len / 8, nu = b[0].len / 8, nk = b[1].len / 8;
    if (b[3].len / 8 != n || b[4].len != n || width < 1) {
        PyErr_SetString(PyExc_ValueError, "train_found: give a user, an item and an out per row");
        goto fail;
    }
    const int64_t *users = b[0].buf, *keys = b[1].buf, *ru = b[2].buf, *ri = b[3].buf;
    char *out = b[4].buf;
    /* the stamp table: per item, the last run that stamped it (bounded by the input) */
    uint32_t *stamp = NULL, run = 0;
    if (width <= 2 * (long long)n + 65536)
        stamp = calloc((size_t)width, sizeof(uint32_t));
    Py_BEGIN_ALLOW_THREADS
    int64_t last = 0;
    /* where the next user's searches start (users ascending: from the last one) */
    Py_ssize_t from_user = 0, from_key = 0;
    for (Py_ssize_t r = 0, r1; r < n; r = r1) {
        int64_t u = ru[r];
        for (r1 = r + 1; r1 < n && ru[r1] == u;)
            r1++;
        if (r && u < last)
            from_user = from_key = 0;
        last = u;
        Py_ssize_t p = gallop(users, from_user, nu, u);
        from_user = p;
        if (p >= nu || users[p] != u) {
            memset(out + r, 0, (size_t)(r1 - r));
            continue;
        }
        int64_t base = (int64_t)p * width;
        Py_ssize_t lo = gallop(keys, from_key, nk, base);
        Py_ssize_t hi = gallop(keys, lo, nk, base + width);
        from_key = hi;
        int stamped = stamp != NULL && hi - lo <= 4 * (r1 - r) + 16;
        if (stamped) {
            if (++run == 0) { /* 2**32 runs: start the stamps again */
                memset(stamp, 0, (size_t)width * sizeof(uint32_t));
                run = 1;
            }
            for (Py_ssize_t k = lo; k < hi; k++)
                stamp[keys[k] - base] = run;
        }
        for (Py_ssize_t j = r; j < r1; j++) {
            int64_t item = ri[j];
            if (item < 0 || item >= width) {
                int64_t key = (int64_t)((uint64_t)base + (uint64_t)item);
                Py_ssize_t at = lower_bound(keys, 0, nk, key);
                out[j] = at < nk && keys[at] == key;
            } else if (stamped) {
                out[j] = stamp[item] == run;
            } else {
                out[j] = hi > lo && holds(keys + lo, hi - lo, base + item);
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(stamp);
    result = Py_None;
    Py_INCREF(result);
fail:
    for (int k = 0; k < 5; k++)
        release(&b[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"cumsum", cumsum, METH_VARARGS,
     "cumsum(x, out, m, kind): running sums down the first axis of (w, m) arrays."},
    {"in_order", in_order, METH_VARARGS,
     "in_order(ru, rank, score, key) -> bool: rows in list order (rank, or score and key)."},
    {"runs", runs, METH_VARARGS,
     "runs(a, out_values) -> count: distinct values of a sorted array; -1 if not sorted."},
    {"user_walk", user_walk, METH_VARARGS,
     "user_walk(a, rank, out_values, out_starts) -> (count, in_order): the runs of a sorted\n"
     "int64 column (values, starts; count -1 if not sorted) and whether rank ascends in each."},
    {"spread", spread, METH_VARARGS,
     "spread(values, starts, out): out[starts[k]:starts[k + 1]] = values[k]."},
    {"codes", codes, METH_VARARGS,
     "codes(a, uniq, out) -> bool: index in uniq of each value of sorted a."},
    {"ideal", ideal, METH_VARARGS,
     "ideal(tu, grades, users, threshold, out_grades, out_off) -> count: relevant grades\n"
     "of each user sorted descending."},
    {"fill", fill, METH_VARARGS,
     "fill(off, u0, u1, values, width, out): 8-byte values of users u0..u1-1 into a\n"
     "column-major (u1 - u0, width) block."},
    {"cells", cells, METH_VARARGS,
     "cells(off, values, width, out_user, out_pos, out_value, out_off) -> count: the\n"
     "nonzero float64 values among each user's first width rows, user by user."},
    {"join", join, METH_VARARGS,
     "join(ru, ri, tu, ti, tg, users, threshold, out_grade, out_gain, out_off[, hit_row,\n"
     "hit_truth[, hit_pos[, offsets_given]]]) -> status, or (status, hits) with hit_row\n\n"
     "offsets_given true: out_off already holds the list offsets (only checked).\n"
     "out_grade may be None (not written). hit_row, hit_truth, hit_pos: the list row, truth\n"
     "row and position of each row whose gain is > 0 (hits of them, in list order).\n"
     "Grades and gains of ordered list rows (user codes ascending), and the\n"
     "list offsets per user. Status: 0 done, 1 an item twice in a list, 2 an item twice in a\n"
     "user's truth, 3 user codes not ascending, 4 a user code out of range, 5 out of memory."},
    {"relevant_weights", relevant_weights, METH_VARARGS,
     "relevant_weights(tu, grades, weights, users, threshold, out_w, out_user, out_off)\n"
     "-> (status, count, missing, first): the weight of each relevant truth row, grouped\n"
     "by user."},
    {"user_sums", user_sums, METH_VARARGS,
     "user_sums(users, values, cap, out): out[u] = the sum of min(v, cap) over user u's\n"
     "values, in their order (np.bincount's sums)."},
    {"row_sums", row_sums, METH_VARARGS,
     "row_sums(off, pos, terms, k, out) -> 0 or -1: per row, the sum of terms (or, terms\n"
     "None, the count) over its cells at positions < k, in their order (np.bincount's)."},
    {"group_order", group_order, METH_VARARGS,
     "group_order(groups, n_groups, out[, k0[, k1[, k2]]]) -> status: the rows by group,\n"
     "then by their float64 keys k0, k1, k2 (k0 the most significant) into out:\n"
     "the permutation of np.lexsort((k2, k1, k0, groups)) (both stable)."},
    {"sort_runs", sort_runs, METH_VARARGS,
     "sort_runs(off, values): each run values[off[u]..off[u+1]-1] sorted ascending, in place."},
    {"exact_sum", exact_sum, METH_VARARGS,
     "exact_sum(x, out_high, out_low) -> (count, nan, pos_inf, neg_inf): float64 values\n"
     "added exactly into per-exponent int64 buckets (see receval.exact)."},
    {"exact_sums", exact_sums, METH_VARARGS,
     "exact_sums(x, rows, mask) -> [(scaled, count, nan, pos_inf, neg_inf)]: the exact sum\n"
     "of each row of x (float64, rows x n) over the columns where mask (uint8; None: all)\n"
     "is nonzero, scaled an int in units of 2**-1074 (see receval.exact)."},
    {"knn_neighbors", knn_neighbors, METH_VARARGS,
     "knn_neighbors(item_ptr, item_users, user_ptr, user_items, norm, shrink, k, i0, i1,\n"
     "out_count, out_item, out_sim) -> status: each item's k most similar items (cosine\n"
     "of co-occurrence), best first."},
    {"knn_top", knn_top, METH_VARARGS,
     "knn_top(user_ptr, user_items, sim_ptr, sim_item, sim_value, codes, fill, fill_order,\n"
     "k, exclude_seen, out_count, out_item, out_score) -> status: each user's top-k items\n"
     "by summed similarity, then by the fill order."},
    {"boot_counts", boot_counts, METH_VARARGS,
     "boot_counts(capsule, n, out): rows of n bootstrap counts into out (float64), drawn\n"
     "from a NumPy bit generator as Generator.integers(0, n) draws them."},
    {"group_tally", group_tally, METH_VARARGS,
     "group_tally(idx, user_off, user_keep, rank, gain, table, width, k, n_groups,\n"
     "out_slots, out_hits, out_all) -> status: item-group slots (and hits) per (group,\n"
     "rank) of the list rows of the users kept; rank, gain and out_hits may be None."},
    /* backtest / train lookups */
    {"pair_entries", pair_entries, METH_VARARGS,
     "pair_entries(user_codes, item_codes, n_users, n_items, first_only, out_row, out_user,\n"
     "out_item, out_prev) -> count: the rows by (user, item, row), each with its pair's\n"
     "previous row; int32 codes."},
    {"range_keys", range_keys, METH_VARARGS,
     "range_keys(entry_row, entry_prev, entry_user, entry_item, start, stop, slot, position,\n"
     "width, out_keys, out_counts) -> count: the sorted pair keys of rows [start, stop)."},
    {"train_found", train_found, METH_VARARGS,
     "train_found(users, keys, width, row_users, row_items, out): which rows are training\n"
     "pairs, searched within each user's keys."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "receval's optional compiled plumbing (see numpy_engine).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&module);
}
