/* Every objects detail code with the class it is raised with
 * (CN_OBJ_DETAILS in cairn/objects.h), for the adapters' error-table tests:
 * cn_test_obj_details_walk() calls map() for each and fails the test for a
 * detail that maps to the adapter's fallback, naming it. */
#ifndef CN_OBJ_DETAILS_TEST_H
#define CN_OBJ_DETAILS_TEST_H

#include "cn_test.h"
#include "cairn/objects.h"

typedef struct {
    cn_obj_detail_t detail;
    cn_err_t cls;
} cn_test_obj_detail_t;

static const cn_test_obj_detail_t cn_test_obj_details[] = {
#define CN__TEST_OBJ_DETAIL(name, cls) { CN_OBJ_##name, cls },
    CN_OBJ_DETAILS(CN__TEST_OBJ_DETAIL)
#undef CN__TEST_OBJ_DETAIL
};

/* map(rq, err) is the adapter's table; fallback its generic code.  Each
 * detail is tried as the service raises it: rq->fail = (cls, detail), with
 * what NONE (a rule's row must not depend on what). */
static inline void cn_test_obj_details_walk(int (*map)(const cn_objects_req_t *, cn_err_t),
                                            int fallback)
{
    size_t n = sizeof cn_test_obj_details / sizeof cn_test_obj_details[0];
    CN_CHECK_EQ(n, CN_OBJ_DETAIL_COUNT - 1);
    for (size_t i = 0; i < n; i++) {
        cn_objects_req_t rq;
        memset(&rq, 0, sizeof rq);
        rq.fail.cls = cn_test_obj_details[i].cls;
        rq.fail.detail = (uint16_t)cn_test_obj_details[i].detail;
        int code = map(&rq, rq.fail.cls);
        if (code == fallback)
            fprintf(stderr, "# objects detail %s has no row in the table\n",
                    cn_obj_detail_name(cn_test_obj_details[i].detail));
        CN_CHECK(code != fallback);
        CN_CHECK_EQ(cn_test_obj_details[i].detail, i + 1);
    }
}

/* A failed call as the service leaves it: rq->what, rq->fail = (cls,
 * detail, message). */
static inline cn_objects_req_t cn_test_obj_req(cn_err_t cls, cn_objects_what_t what,
                                               cn_obj_detail_t detail, const char *message)
{
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    rq.what = what;
    cn_fail_set(&rq.fail, cls, (uint16_t)detail, "%s", message);
    return rq;
}

/* One expectation of an adapter's table: (err, what, detail, message) → want. */
typedef struct {
    cn_err_t err;
    cn_objects_what_t what;
    cn_obj_detail_t detail;
    const char *message;
    int want;
} cn_test_obj_row_t;

/* Checks each of rows[0..n) through map; the failure's class is the err,
 * except a row whose detail is raised with another class (a stale detail):
 * then fail.cls is that detail's class. */
static inline void cn_test_obj_rows(int (*map)(const cn_objects_req_t *, cn_err_t),
                                    const cn_test_obj_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cn_err_t cls = rows[i].err;
        if (rows[i].detail)
            cls = cn_test_obj_details[rows[i].detail - 1].cls;
        cn_objects_req_t rq = cn_test_obj_req(cls, rows[i].what, rows[i].detail,
                                              rows[i].message ? rows[i].message : "");
        int got = map(&rq, rows[i].err);
        if (got != rows[i].want)
            fprintf(stderr, "# row %zu (%s): got %d, want %d\n", i,
                    cn_obj_detail_name(rows[i].detail), got, rows[i].want);
        CN_CHECK_EQ(got, rows[i].want);
    }
}

#endif
